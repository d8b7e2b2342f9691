"""Sphinx extension: no execution report left by an earlier build.

The code is in :mod:`bookbuild.reports`, installed with the project.
"""

from bookbuild.reports import setup

__all__ = ["setup"]
