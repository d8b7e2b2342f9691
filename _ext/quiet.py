"""Sphinx extension: a build log without configuration dumps.

The code is in :mod:`bookbuild.quiet`, installed with the project.
"""

from bookbuild.quiet import setup

__all__ = ["setup"]
