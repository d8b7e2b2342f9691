"""The book's own CSS and script, added to every page.

A Sphinx extension: the folder ``static`` beside this module joins
``html_static_path``, and ``bookbuild.css`` and ``bookbuild.js`` are linked from
every page (the script gives a tab stop to code that scrolls in a box opened
after the page loaded; see its comments).
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parent / "static"


def _add_folder(app, config) -> None:
    config.html_static_path = [*config.html_static_path, str(FOLDER)]


def setup(app) -> dict:
    app.connect("config-inited", _add_folder)
    app.add_css_file("bookbuild.css")
    app.add_js_file("bookbuild.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
