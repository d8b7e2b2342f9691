"""Sphinx extension: images no page uses are removed after each build.

The code is in :mod:`bookbuild.stale_files`, installed with the project.
"""

from bookbuild.stale_files import setup

__all__ = ["setup"]
