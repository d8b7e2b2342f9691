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

Glued prose too. A chapter glues whole phrases built from its measurements
(``{glue:md}`sa-perm-same```: "the same output vectors as the original ...");
in a French sentence they would stay English. Each phrase a ``{glue:md}`` role
shows is a message of its page: the gettext build extracts it as a template,
its numbers and quoted words replaced by ``{0}``, ``{1}``... (so a translation
survives new measurements and never types a number), and in a translated
paragraph the phrase is read through the catalogue, the values put back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config

KEY = "bookbuild_nb_renderer"
MESSAGES = "bookbuild_glue_messages"

# -- glued prose as messages ---------------------------------------------------------

#: What a template leaves to the data: quoted words, then numbers.
VARIABLE = re.compile(
    r'"[^"\n]*"|“[^”\n]*”|(?<![\w{])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?(?![\w}])'
)
GLUE_MD_ROLE = re.compile(r"\{glue:md\}`([\w.-]+)(?::[\w-]+)?`")


def template(text: str) -> tuple[str, list[str]]:
    """A glued phrase as a message, and the values it leaves out:
    ``'"dog" gets 2 votes'`` -> ``('{0} gets {1} votes', ['"dog"', '2'])``."""
    values: list[str] = []

    def hole(match: re.Match) -> str:
        values.append(match.group(0))
        return f"{{{len(values) - 1}}}"

    return " ".join(VARIABLE.sub(hole, text).split()), values


def fill(translation: str, values: list[str]) -> str:
    """A translated template with its values put back (``{0}`` -> values[0])."""
    return re.sub(r"\{(\d+)\}", lambda m: values[int(m.group(1))], translation)


def is_prose(text: str) -> bool:
    """True for a phrase worth translating (not a shape, a number, a quoted word)."""
    from bookbuild.i18n import has_words

    return has_words(template(text)[0].replace("{", " ").replace("}", " "))


def translate_glued(text: str, messages: dict[str, str]) -> str:
    """A glued phrase in the catalogue's language (unchanged if not translated)."""
    message, values = template(text)
    translation = messages.get(message)
    if not translation:
        return text
    try:
        return fill(translation, values)
    except IndexError:  # a placeholder the phrase does not have: keep English
        return text


def _extract_glued_prose(app: Sphinx, doctree: nodes.document, docname: str):
    """In the gettext build: each phrase a ``{glue:md}`` role of the page shows,
    as a template, added to the page's messages."""
    if app.builder.name != "gettext":
        return
    path = Path(app.env.doc2path(docname))
    source = path.read_text(encoding="utf-8")
    keys = dict.fromkeys(GLUE_MD_ROLE.findall(source))
    glue_file = Path(app.env.mystnb_config.output_folder) / f"{docname}.glue.json"
    if not keys or not glue_file.is_file():
        return
    glue = json.loads(glue_file.read_text(encoding="utf-8"))
    for key in keys:
        text = glue.get(key, {}).get("data", {}).get("text/markdown")
        if not isinstance(text, str) or not is_prose(text):
            continue
        message = template(text)[0]
        paragraph = nodes.paragraph(message, message)
        paragraph.source = str(path)
        paragraph.line = source[: source.index(f"`{key}")].count("\n") + 1
        paragraph.uid = ""  # the gettext builder skips nodes without one
        doctree += paragraph


class _With:
    """An object seen through a few replaced attributes."""

    def __init__(self, wrapped, **replaced) -> None:
        self._wrapped = wrapped
        self.__dict__.update(replaced)

    def __getattr__(self, name: str):
        return getattr(self._wrapped, name)


def in_language(renderer, messages: dict[str, str]):
    """The notebook renderer with its glued Markdown read through ``messages``."""
    client = renderer.renderer.nb_client
    glue = {}
    for key, entry in client.glue_data.items():
        text = entry.get("data", {}).get("text/markdown")
        if isinstance(text, str):
            data = {**entry["data"], "text/markdown": translate_glued(text, messages)}
            entry = {**entry, "data": data}
        glue[key] = entry
    inner = _With(renderer.renderer, nb_client=_With(client, glue_data=glue))
    return _With(renderer, renderer=inner)


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
            if MESSAGES not in env.temp_data:
                from bookbuild.i18n import catalogue

                messages = catalogue(env, env.config, env.docname)
                env.temp_data[MESSAGES] = in_language(renderer, messages)
            document["nb_renderer"] = env.temp_data[MESSAGES]
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
    app.connect("doctree-resolved", _extract_glued_prose)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
