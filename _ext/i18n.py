"""Sphinx extension: the book in several languages (menu, overrides, fixes).

The code is in :mod:`bookbuild.i18n`, installed with the project.
"""

from bookbuild.i18n import setup

__all__ = ["setup"]
