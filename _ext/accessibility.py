"""Sphinx extension: citation lists with list items; the book's CSS.

The code is in :mod:`bookbuild.accessibility`, installed with the project.
"""

from bookbuild.accessibility import setup

__all__ = ["setup"]
