"""Sphinx extension: a plain Jupyter notebook of every chapter, linked from its page.

The code is in :mod:`bookbuild.notebooks`, installed with the project.
"""

from bookbuild.notebooks import setup

__all__ = ["setup"]
