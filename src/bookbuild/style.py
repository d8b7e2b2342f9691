"""The book's own CSS (and, later, scripts), added to every page.

A Sphinx extension: the folder ``static`` beside this module joins
``html_static_path``, and ``bookbuild.css`` is linked from every page.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parent / "static"


def _add_folder(app, config) -> None:
    config.html_static_path = [*config.html_static_path, str(FOLDER)]


def setup(app) -> dict:
    app.connect("config-inited", _add_folder)
    app.add_css_file("bookbuild.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
