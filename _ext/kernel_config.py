"""Sphinx extension: the book's kernels (same string hashes, short tracebacks,
no TCP notice).

The code is in :mod:`bookbuild.kernel_config`, installed with the project.
"""

from bookbuild.kernel_config import setup

__all__ = ["setup"]
