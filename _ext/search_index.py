"""Sphinx extension: the search index keeps every page's index entries after an
incremental build.

The code is in :mod:`bookbuild.search_index`, installed with the project.
"""

from bookbuild.search_index import setup

__all__ = ["setup"]
