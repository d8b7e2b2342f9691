"""Sphinx extension: chapters re-executed when the code they import changes.

The code is in :mod:`bookbuild.cache`, installed with the project.
"""

from bookbuild.cache import setup

__all__ = ["setup"]
