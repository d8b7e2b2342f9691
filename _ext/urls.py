"""Sphinx extension: the book's public addresses, when it has them.

The code is in :mod:`bookbuild.urls`, installed with the project.
"""

from bookbuild.urls import setup

__all__ = ["setup"]
