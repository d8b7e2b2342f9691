"""Sphinx extension: MathJax served by the site itself, not by a CDN.

The code is in :mod:`bookbuild.mathjax`, installed with the project.
"""

from bookbuild.mathjax import setup

__all__ = ["setup"]
