"""Sphinx extension: build date and commit on the build-info page and in every footer.

The code is in :mod:`bookbuild.build_info`, installed with the project.
"""

from bookbuild.build_info import setup

__all__ = ["setup"]
