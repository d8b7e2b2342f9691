"""Sphinx extension: the student edition, the same book without the solutions.

The code is in :mod:`bookbuild.edition`, installed with the project.
"""

from bookbuild.edition import setup

__all__ = ["setup"]
