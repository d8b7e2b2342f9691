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
in a build whose language is not the root one, by :mod:`bookbuild.patches`.

Glued prose too. A chapter glues whole phrases built from its measurements
(``{glue:md}`sa-perm-same```: "the same output vectors as the original ...");
in a French sentence they would stay English. Each phrase a ``{glue:md}`` role
shows is a message of its page: the gettext build extracts it as a template,
its numbers and quoted words replaced by ``{0}``, ``{1}``... (so a translation
survives new measurements and never types a number). On a page of another
language, myst-nb's renderer is held in that language while the page is read:
wherever a ``{glue:md}`` role shows a phrase (in a translated paragraph, or in
a paragraph of its own, which is no message), the phrase is read through the
catalogue and its values put back, written the way of the language (numbers
and quotes, :mod:`bookbuild.i18n.numbers`; inside code or math as written). A
phrase of no words (``0.05 + 0.24 = 0.29``) only has its values written again.
A phrase whose choice depends on the machine declares every phrase its code
could choose (``{"phrases": [...]}`` as :data:`PHRASES_MIME`,
:class:`qkv.page.verdicts.Phrase`): each is a message of the page, and the
check fails on one that has no translation, whichever this machine measured.

No silent English: a phrase without a translation would show English in the
middle of a translated paragraph, so the translated build warns (an error under
``-W``: the book's build fails) for every phrase a ``{glue:md}`` role of the
page could show untranslated: every phrase of a declared table, whichever this
machine measured, and the shown phrase itself (:func:`untranslated`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from bookbuild.i18n.languages import catalogue, has_words, is_translation
from bookbuild.i18n.locations import parsing_message, point_warnings_at_catalogues
from bookbuild.i18n.numbers import has_own_numbers, localise_value

logger = logging.getLogger(__name__)

KEY = "bookbuild_nb_renderer"
#: Where a glued phrase lists every phrase its code can choose (qkv's verdicts).
PHRASES_MIME = "application/vnd.qkv.phrases+json"
#: Beside each page's ``.pot``: the messages that are glued phrases.
GLUED_SUFFIX = ".glued.json"

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


#: Where a value stays as the code wrote it: inline code, math.
_AS_WRITTEN = r"`[^`\n]*`|\$[^$\n]*\$"
_PLACEHOLDERS = re.compile(rf"({_AS_WRITTEN})|\{{(\d+)\}}")
_VALUES = re.compile(rf"({_AS_WRITTEN})|{VARIABLE.pattern}")


def fill(translation: str, values: list[str], language: str | None = None) -> str:
    """A translated template with its values put back (``{0}`` -> values[0]),
    written as ``language`` writes numbers and quotes
    (:func:`~bookbuild.i18n.numbers.localise_value`), except inside inline code
    or math."""

    def put_back(match: re.Match) -> str:
        if match.group(1):  # code or math: each value as written
            return re.sub(
                r"\{(\d+)\}", lambda m: values[int(m.group(1))], match.group(1)
            )
        return localise_value(values[int(match.group(2))], language)

    return _PLACEHOLDERS.sub(put_back, translation)


def localise_phrase(text: str, language: str | None) -> str:
    """A glued phrase that is not a message (``0.05 + 0.24 = 0.29``,
    ``"journey"``) with its numbers and quoted words written the way of
    ``language``, except inside inline code or math."""

    if not has_own_numbers(language):
        return text
    return _VALUES.sub(
        lambda m: m.group(0) if m.group(1) else localise_value(m.group(0), language),
        text,
    )


def is_prose(text: str) -> bool:
    """True for a phrase worth translating (not a shape, a number, a quoted word)."""

    return has_words(template(text)[0].replace("{", " ").replace("}", " "))


def translate_glued(
    text: str, messages: dict[str, str], language: str | None = None
) -> str:
    """A glued phrase in the catalogue's language, its values written the way of
    ``language``. A phrase that is not a message only has its values written
    again; a phrase not translated yet stays English, as it is."""
    if not is_prose(text):
        return localise_phrase(text, language)
    message, values = template(text)
    translation = messages.get(message)
    if not translation:
        return text
    try:
        return fill(translation, values, language)
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
    glued = []
    for key in keys:
        data = glue.get(key, {}).get("data", {})
        text = data.get("text/markdown")
        if not isinstance(text, str):
            continue
        # A phrase that declares every phrase its code can choose (``{"phrases":
        # [...]}``, qkv.page.verdicts.Phrase): all of them are messages that
        # must be translated, whichever this machine measured (even none).
        declared = (data.get(PHRASES_MIME) or {}).get("phrases") or []
        messages = [p for p in declared if is_prose(p)]
        if is_prose(text) and template(text)[0] not in declared:
            glued.append(template(text)[0])
            messages.insert(0, glued[-1])
        if not messages:
            continue
        line = source[: source.index(f"`{key}")].count("\n") + 1
        for message in dict.fromkeys(messages):
            paragraph = nodes.paragraph(message, message)
            paragraph.source = str(path)
            paragraph.line = line
            paragraph.uid = ""  # the gettext builder skips nodes without one
            doctree += paragraph
    # Which messages are glued phrases not declared: the check only notes one
    # it does not find in the catalogue; the translated build fails on it
    # (_warn_untranslated), as on any phrase of a declared table left untranslated.
    listing = Path(app.outdir) / f"{docname}{GLUED_SUFFIX}"
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text(json.dumps(glued, ensure_ascii=False), encoding="utf-8")


# -- no silent English: a glued phrase without a translation fails the build ---------


def untranslated(
    glue_data: dict, keys, messages: dict[str, str]
) -> dict[str, list[str]]:
    """For each of ``keys`` (shown by ``{glue:md}``) whose glued phrase would
    show English on a page of the catalogue's language: the messages it lacks.
    A phrase that declares its table (:data:`PHRASES_MIME`) needs every phrase
    of the table, not only the one this machine measured; any phrase needs its
    own template (one that matches no declared phrase, or whose translation
    asks for a value it does not have, falls back to English too)."""
    lacking: dict[str, list[str]] = {}
    for key in keys:
        data = glue_data.get(key, {}).get("data", {})
        text = data.get("text/markdown")
        if not isinstance(text, str):
            continue
        declared = (data.get(PHRASES_MIME) or {}).get("phrases") or []
        missing = [p for p in declared if is_prose(p) and not messages.get(p)]
        if is_prose(text):
            message, values = template(text)
            try:
                shown = bool(messages.get(message)) and fill(messages[message], values)
            except IndexError:  # the translation asks for a value it lacks
                shown = False
            if not shown and message not in missing:
                missing.append(message)
        if missing:
            lacking[key] = missing
    return lacking


def _warn_untranslated(app: Sphinx, doctree: nodes.document) -> None:
    """On a page of a translation: a warning (an error under ``-W``) for each
    phrase a ``{glue:md}`` role of the page could show in English, whichever
    phrase of its table this machine measured."""

    env = app.env
    if not is_translation(app.config):
        return
    path = Path(env.doc2path(env.docname))
    if not path.is_file():
        return
    keys = dict.fromkeys(GLUE_MD_ROLE.findall(path.read_text(encoding="utf-8")))
    glue_file = Path(env.mystnb_config.output_folder) / f"{env.docname}.glue.json"
    if not keys or not glue_file.is_file():
        return
    glue_data = json.loads(glue_file.read_text(encoding="utf-8"))
    messages = catalogue(env, app.config, env.docname)
    for key, missing in untranslated(glue_data, keys, messages).items():
        for message in missing:
            logger.warning(
                "glued phrase %r has no %s translation (it would show in English): "
                "%r; translate it in the page's catalogue",
                key,
                app.config.language,
                message,
                location=env.docname,
                type="bookbuild",
                subtype="glued-phrase",
            )


class _With:
    """An object seen through a few replaced attributes."""

    def __init__(self, wrapped, **replaced) -> None:
        self._wrapped = wrapped
        self.__dict__.update(replaced)

    def __getattr__(self, name: str):
        return getattr(self._wrapped, name)


def in_language(glue_data: dict, messages: dict[str, str], language: str | None):
    """``glue_data`` of a notebook with its glued Markdown read through
    ``messages`` (its values written the way of ``language``)."""
    glue = {}
    for key, entry in glue_data.items():
        text = entry.get("data", {}).get("text/markdown")
        if isinstance(text, str):
            translated = translate_glued(text, messages, language)
            entry = {**entry, "data": {**entry["data"], "text/markdown": translated}}
        glue[key] = entry
    return glue


class _GlueInLanguage:
    """The Markdown renderer of a notebook page, its glued values seen in the
    page's language (read when a role asks: the notebook may still be running)."""

    def __init__(self, renderer, messages: dict[str, str], language: str) -> None:
        self._wrapped = renderer
        self._messages = messages
        self._language = language

    @property
    def nb_client(self):
        client = self._wrapped.nb_client
        glue = in_language(client.glue_data, self._messages, self._language)
        return _With(client, glue_data=glue)

    def __getattr__(self, name: str):
        return getattr(self._wrapped, name)


def lent_renderer(renderer, env):
    """myst-nb's notebook renderer of the page being read, its glued phrases
    in the build's language."""

    messages = catalogue(env, env.config, env.docname)
    inner = _GlueInLanguage(renderer.renderer, messages, env.config.language)
    return _With(renderer, renderer=inner)


class _KeepRenderer(dict):
    """A document's attributes that, when myst-nb puts its notebook renderer
    there, hold it in the page's language instead, and hand it to ``env`` when
    myst-nb removes it at the end of the parse."""

    def __init__(self, attributes: dict, env) -> None:
        super().__init__(attributes)
        self.env = env

    def __setitem__(self, key, value) -> None:
        if key == "nb_renderer" and value is not None:
            value = lent_renderer(value, self.env)
        super().__setitem__(key, value)

    def pop(self, key, *default):
        value = super().pop(key, *default)
        if key == "nb_renderer" and value is not None:
            self.env.temp_data[KEY] = value
        return value


def lending(parse):
    """Wrap myst-nb's ``Parser.parse``: glued phrases in the page's language,
    and the renderer kept and lent to the translated sub-parses of the page
    (applied by :mod:`bookbuild.patches`)."""

    def parse_with_renderer(self, inputstring, document):
        env = document.settings.env
        if document.current_source.endswith("<translated>"):
            # Its warnings (a glue key no cell glued) point at its catalogue.
            with parsing_message(document.current_source, inputstring):
                return parse_translated(self, inputstring, document, env)
        document.attributes = _KeepRenderer(document.attributes, env)
        try:
            return parse(self, inputstring, document)
        finally:
            document.attributes = dict(document.attributes)

    def parse_translated(self, inputstring, document, env):
        renderer = env.temp_data.get(KEY)
        if renderer is None or "nb_renderer" in document:
            return parse(self, inputstring, document)
        document["nb_renderer"] = renderer
        try:
            return parse(self, inputstring, document)
        finally:
            document.attributes.pop("nb_renderer", None)

    return parse_with_renderer


def setup(app: Sphinx) -> dict:
    app.setup_extension("bookbuild.patches")  # applies lending, translations only
    app.connect("doctree-resolved", _extract_glued_prose)
    app.connect("doctree-read", _warn_untranslated)
    # A translated message's warnings at its line of the catalogue.
    app.connect("builder-inited", point_warnings_at_catalogues)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
