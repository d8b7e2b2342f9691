"""Sphinx extension: the site's front door, index.html, a real page that redirects.

The code is in :mod:`bookbuild.site_root`, installed with the project.
"""

from bookbuild.site_root import setup

__all__ = ["setup"]
