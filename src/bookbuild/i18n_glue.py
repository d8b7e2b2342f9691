"""Glued values inside translated paragraphs (the first gap of the French edition).

Problem: Sphinx translates a paragraph by parsing its ``msgstr`` as a small
document of its own (source ``...:<translated>``). myst-nb parses it as plain
MyST, without the notebook: its glue roles (``{glue:text}``, ``{glue}``,
``{glue:md}``) look for the notebook renderer on that small document, find
nothing, and render empty with the warning "No key ... found".

Answer: while myst-nb parses a notebook page, the renderer it drops at the end
of the parse is kept in ``env.temp_data`` (which Sphinx clears after each page);
each translated sub-parse of that page borrows it, so the roles find the page's
glued values and render them exactly as in the root language. Installed only
in a build whose language is not the root one.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.config import Config

KEY = "bookbuild_nb_renderer"


class _KeepRenderer(dict):
    """A document's attributes that hand the notebook renderer to ``env`` when
    myst-nb removes it at the end of the parse."""

    def __init__(self, attributes: dict, env) -> None:
        super().__init__(attributes)
        self.env = env

    def pop(self, key, *default):
        value = super().pop(key, *default)
        if key == "nb_renderer" and value is not None:
            self.env.temp_data[KEY] = value
        return value


def lending(parse):
    """Wrap myst-nb's ``Parser.parse``: keep the renderer, lend it to the
    translated sub-parses of the same page."""

    def parse_with_renderer(self, inputstring, document):
        env = document.settings.env
        if document.current_source.endswith("<translated>"):
            renderer = env.temp_data.get(KEY)
            if renderer is None or "nb_renderer" in document:
                return parse(self, inputstring, document)
            document["nb_renderer"] = renderer
            try:
                return parse(self, inputstring, document)
            finally:
                document.attributes.pop("nb_renderer", None)
        document.attributes = _KeepRenderer(document.attributes, env)
        try:
            return parse(self, inputstring, document)
        finally:
            document.attributes = dict(document.attributes)

    parse_with_renderer.bookbuild_lends_renderer = True
    return parse_with_renderer


def install() -> None:
    from myst_nb.sphinx_ import Parser

    if not getattr(Parser.parse, "bookbuild_lends_renderer", False):
        Parser.parse = lending(Parser.parse)


def _install_if_translated(app: Sphinx, config: Config) -> None:
    from bookbuild.i18n import is_translation

    if is_translation(config):
        install()


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _install_if_translated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
