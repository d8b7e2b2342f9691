"""Citations in the text in the reader's language: "Hochreiter et Schmidhuber".

Problem: sphinxcontrib-bibtex's referencing styles write a citation in the text
(``{cite:t}``) with the English word between two authors, and before the last of
three or more when they are all named: a French page read "le LSTM, de
Hochreiter and Schmidhuber [HS97]".

Answer: in a build whose language is not the root one, the book's referencing
style (``bibtex_reference_style``, ``label`` by default) with those words taken
from :mod:`bookbuild.i18n.messages` is registered as ``<style>_<language>`` and
chosen (sphinxcontrib-bibtex reads the setting when the builder starts). The
list of references keeps its entries as the bibliography style writes them, as
French books do for English sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sphinx.application import Sphinx
from sphinx.config import Config

from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import base_language, gettext

GROUP = "sphinxcontrib.bibtex.style.referencing"


def reference_style(style: str, language: str) -> type:
    """The referencing style ``style`` with the joining words of ``language``."""
    from sphinxcontrib.bibtex.plugin import find_plugin
    from sphinxcontrib.bibtex.style.referencing import PersonStyle

    _ = gettext(language)

    def local_person() -> PersonStyle:
        return PersonStyle(sep2=_(" and "), last_sep=_(", and "))

    @dataclass
    class LocalReferenceStyle(find_plugin(GROUP, style)):
        person: PersonStyle = field(default_factory=local_person)

    return LocalReferenceStyle


def _choose_style(app: Sphinx, config: Config) -> None:
    from sphinxcontrib.bibtex.plugin import register_plugin

    # Without sphinxcontrib-bibtex (a book with no references) there is no style.
    style = getattr(config, "bibtex_reference_style", None)
    if not is_translation(config) or style is None:
        return
    language = base_language(config.language)
    name = f"{style}_{language}"
    register_plugin(GROUP, name, reference_style(style, language), force=True)
    config.bibtex_reference_style = name


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _choose_style)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
