"""Translated messages parsed at the cost of their own text (the French pass's speed).

Problem: Sphinx parses every translated message (about 2,500 in the French
edition) as a small document of its own. For each one, MyST-Parser 3 builds a
new Markdown parser with all its plugins, and a throwaway docutils document
whose default settings come from docutils' option parser (built anew each
time): about a quarter of the French pass went to work whose result is the
same for every message.

Answer, in a build whose language is not the root one:

* a translated message (its source ends in ``<translated>``) is parsed by one
  Markdown parser per MyST configuration, made once, instead of a new one;
  pages themselves are parsed as before;
* MyST's throwaway document takes a copy of docutils' default settings, made
  once. MyST makes such a document in two places and uses neither's settings
  (it is replaced by the page's document, or given the page's settings).

Both replacements are applied by :mod:`bookbuild.patches`. The result is the
same site: the French edition's tests check its pages.
"""

from __future__ import annotations

import copy
import functools

from sphinx.application import Sphinx

TRANSLATED = "<translated>"


@functools.cache
def _default_settings(parser_cls):
    from docutils.frontend import get_default_settings

    return get_default_settings(parser_cls)


def make_document(source_path="notset", parser_cls=None):
    """MyST's ``make_document``, with default settings made once."""
    from docutils.parsers.rst import Parser as RSTParser
    from docutils.utils import new_document

    settings = copy.copy(_default_settings(parser_cls or RSTParser))
    return new_document(source_path, settings=settings)


def settings_made_once(make_document_of_myst):
    """The replacement of MyST's ``make_document``: :func:`make_document`
    (MyST's own is not called: it only differs in making the settings anew)."""
    return make_document


_parsers: dict[int, tuple[object, object]] = {}


def _markdown_parser(config):
    """One MyST Markdown parser per configuration (kept alive with it)."""
    from myst_parser.mdit_to_docutils.sphinx_ import SphinxRenderer
    from myst_parser.parsers.mdit import create_md_parser

    config_and_parser = _parsers.get(id(config))
    if config_and_parser is None or config_and_parser[0] is not config:
        config_and_parser = (config, create_md_parser(config, SphinxRenderer))
        _parsers[id(config)] = config_and_parser
    return config_and_parser[1]


def reusing_parser(parse):
    """Wrap MyST-Parser's ``MystParser.parse``: a translated message is
    parsed by a shared Markdown parser (a message has no front matter)."""

    def parse_reusing_parser(self, inputstring, document):
        if not document.current_source.endswith(TRANSLATED):
            return parse(self, inputstring, document)
        parser = _markdown_parser(document.settings.env.myst_config)
        parser.options["document"] = document
        try:
            parser.render(inputstring)
        finally:
            parser.options.pop("document", None)

    return parse_reusing_parser


def setup(app: Sphinx) -> dict:
    # Applies settings_made_once and reusing_parser, in translations only.
    app.setup_extension("bookbuild.patches")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
