"""A translated message's warnings point at its catalogue: Sphinx parses a
translated message as a document of its own, and a warning raised there would
name the English page; :class:`CatalogueLocations` (a logging filter,
installed by :func:`point_warnings_at_catalogues`) rewrites it to the ``.po``
file and line where the message is, so that a translator can act on it.
"""

from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from bookbuild.i18n.catalogues import LOCALES
from bookbuild.i18n.code import english_line
from bookbuild.i18n.languages import is_translation

# -- a translated message's warnings point at its catalogue --------------------------

#: Where Sphinx parses a translated message, as a document of its own: the
#: page's source and the English line, ``/book/masking.md:24:<translated>``
#: (then, for a node of it, ``:<its line in the message>``).
TRANSLATED_SOURCE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):<translated>(?::\d+)?$")
#: The attribute of a warning raised while a translated message was parsed:
#: (the message's source, as above, and its text).
PARSED = "bookbuild_translated_message"


class _Tag(logging.Filter):
    """Marks each record with the message being parsed (Sphinx holds the
    warnings of a page being read until it is read: the mark travels with
    them)."""

    def __init__(self, source: str, text: str) -> None:
        super().__init__()
        self.message = (source, text)

    def filter(self, record) -> bool:
        setattr(record, PARSED, self.message)
        return True


@contextmanager
def parsing_message(source: str, text: str):
    """While a translated message is parsed (``bookbuild.i18n.glue``): the
    warnings it raises are marked, to be reported at its line of the catalogue."""
    tag = _Tag(source, text)
    handlers = list(logging.getLogger("sphinx").handlers)
    for handler in handlers:
        handler.filters.insert(0, tag)  # before CatalogueLocations reads it
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(tag)


@cache
def _entries(po: Path, mtime: float) -> list[tuple[int, set[int], str]]:
    """The translated messages of a catalogue: (the msgid's line in it, the
    English lines it comes from, the msgstr)."""
    from babel.messages.pofile import read_po

    with open(po, "rb") as handle:
        catalogue = read_po(handle, charset="utf-8")
    return [
        (m.lineno, {line for _, line in m.locations}, m.string)
        for m in catalogue
        if m.id and isinstance(m.string, str) and m.string.strip() and not m.fuzzy
    ]


def catalogue_line(
    po: Path, text: str | None, english_line: int | None, words: list[str] = ()
) -> int | None:
    """The line of the message in ``po`` whose translation is ``text`` (as
    Sphinx parsed it: a title underlined); without the text, the message that
    holds the ``words`` of the warning (a reference's target) and comes from
    that English line, or the nearest to it (the catalogue's lines may be
    those of an older English); None when none is found."""
    if not Path(po).is_file():
        return None
    entries = _entries(Path(po), Path(po).stat().st_mtime)
    found: list[tuple[int, set[int], str]] = []
    if text is not None:
        lines = text.rstrip().splitlines()
        if len(lines) > 1 and set(lines[-1].strip()) == {"="}:
            lines = lines[:-1]  # Sphinx's underline of a translated title
        wanted = " ".join(" ".join(lines).split())
        found = [e for e in entries if " ".join(e[2].split()) == wanted]
    if not found:
        holding = [e for e in entries if words and all(w in e[2] for w in words)]
        at_line = [e for e in entries if english_line in e[1]]
        found = [e for e in holding if e in at_line] or holding or at_line
    if len(found) > 1 and english_line is not None:
        found.sort(
            key=lambda e: min((abs(n - english_line) for n in e[1]), default=1e9)
        )
    return found[0][0] if found else None


class CatalogueLocations(logging.Filter):
    """On Sphinx's warnings of a translated build (first of its filters): a
    warning raised by a translated message is reported at the message's line
    in its catalogue, with the language and the English source line:
    ``locales/fr/LC_MESSAGES/book/masking.po:123 (fr): WARNING: No key 'x' ...
    (translation of book/masking.md:24)``; the same warning twice (Sphinx
    parses a translated message twice) is reported once."""

    def __init__(self, app) -> None:
        super().__init__()
        self.app = app
        self.seen: set[tuple[str, str]] = set()

    def source(self, record) -> tuple[str, str | None] | None:
        """(the source of the translated message, its text when known)."""
        from docutils import nodes
        from docutils.utils import get_source_line

        if hasattr(record, PARSED):  # raised while the message was parsed
            return getattr(record, PARSED)
        location = getattr(record, "location", None)
        if isinstance(location, nodes.Node):  # raised later, by one of its nodes
            location = get_source_line(location)[0] or ""
        if isinstance(location, str) and TRANSLATED_SOURCE.match(location):
            match = TRANSLATED_SOURCE.match(location)
            return f"{match['path']}:{match['line']}:<translated>", None
        return None

    def english_line(self, record) -> bool:
        """A warning at a line of a page whose code the build read translated
        (bookbuild.i18n.code): at the English source's line instead."""
        from docutils import nodes
        from docutils.utils import get_source_line

        location = getattr(record, "location", None)
        if isinstance(location, nodes.Node):
            path, line = get_source_line(location)
        elif isinstance(location, tuple) and len(location) == 2:
            path, line = location
            path = self.app.env.doc2path(path) if path else path
        else:
            return True
        docname = self.app.env.path2doc(str(path)) if path else None
        if docname and line:
            record.location = f"{path}:{english_line(self.app.env, docname, line)}"
        return True

    def filter(self, record) -> bool:
        try:
            return self.rewrite(record)
        except Exception:  # a report must never break the build
            return True

    def rewrite(self, record) -> bool:
        """Point ``record`` at the catalogue; False for a warning already shown."""
        found = self.source(record)
        if found is None:
            return self.english_line(record)
        source, text = found
        match = TRANSLATED_SOURCE.match(source)
        root, language = Path(self.app.srcdir), self.app.config.language
        docname = self.app.env.path2doc(match["path"]) if match else None
        if not docname:
            return True
        english = Path(match["path"])
        english = english.relative_to(root) if english.is_relative_to(root) else english

        # the line of the English source (the build read its code translated)
        line_number = english_line(self.app.env, docname, int(match["line"]))
        folders = [root / d for d in self.app.config.locale_dirs] or [root / LOCALES]
        po = next(
            (
                p
                for d in folders
                if (p := d / language / "LC_MESSAGES" / f"{docname}.po").is_file()
            ),
            folders[0] / language / "LC_MESSAGES" / f"{docname}.po",
        )
        message = record.msg % record.args if record.args else str(record.msg)
        line = catalogue_line(po, text, line_number, re.findall(r"'([^']+)'", message))
        shown = po.relative_to(root) if po.is_relative_to(root) else po
        at = f":{line} ({language})" if line else f" ({language}: message not found)"
        record.location = shown.as_posix() + at
        record.bookbuild_docname = docname  # the page (bookbuild.execute.reports)
        record.msg = f"{message} (translation of {english.as_posix()}:{line_number})"
        record.args = ()
        if (record.location, record.msg) in self.seen:
            return False
        self.seen.add((record.location, record.msg))
        return True


def point_warnings_at_catalogues(app) -> None:
    """In a translated build, :class:`CatalogueLocations` first on Sphinx's
    warnings (``builder-inited``, connected by ``bookbuild.i18n.glue``)."""
    from sphinx.util.logging import NAMESPACE, WarningStreamHandler

    if not is_translation(app.config):
        return
    for handler in logging.getLogger(NAMESPACE).handlers:
        if isinstance(handler, WarningStreamHandler) and not any(
            isinstance(f, CatalogueLocations) for f in handler.filters
        ):
            handler.filters.insert(0, CatalogueLocations(app))
