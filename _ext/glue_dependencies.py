"""Sphinx extension: a page that pastes another page's values is re-read with it.

The code is in :mod:`bookbuild.glue_dependencies`, installed with the project.
"""

from bookbuild.glue_dependencies import setup

__all__ = ["setup"]
