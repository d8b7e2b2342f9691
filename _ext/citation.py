"""Sphinx extension: how to cite the book and each chapter, from CITATION.cff.

The code is in :mod:`bookbuild.citation`, installed with the project.
"""

from bookbuild.citation import setup

__all__ = ["setup"]
