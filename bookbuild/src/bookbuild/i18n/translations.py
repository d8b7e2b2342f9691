"""The translations of the book: build, refresh, count and check them.

``python -m bookbuild.i18n.translations COMMAND`` from the book's folder:

* ``build [--path-output DIR]``: each language of ``book_languages`` but the
  first, built strictly into ``<DIR>/_build/html/<code>`` (default DIR: the
  book's folder), with the same page paths as the root language. This runs
  Jupyter Book's own pipeline (its ``_config.yml`` translation and
  ``build_sphinx``), as ``jupyter-book build`` does, with the language set and
  the output folder chosen. Chapters come from the execution cache: nothing is
  executed again.
* ``site [--path-output DIR]``: the whole site, as ``make book`` builds it
  once the chapters are in the execution cache: the root language
  (``jupyter-book build . -W -n --keep-going``) and ``build`` side by side,
  two processes (a Sphinx build uses one core; the two read the same cache and
  write to different folders). The root language's log shows as it comes, the
  translations' when they end; fails when either fails. With ``--log-dir DIR``
  (``make book``), each build's whole log goes to a file instead,
  ``DIR/build-<code>.log`` (the translations' in one, ``build-fr.log``), and
  what is printed is a summary: per language, the time, the pages written and
  the warnings; for a build that failed, its warning and error lines, the end
  of its log and the log's path (:func:`summary`). With ``--with-prefill``
  (``make book``), the prefill runs beside the builds
  (:class:`bookbuild.execute.prefill.Beside`): each build reads a page once its
  chapter is in the cache, and a chapter that fails stops them (the prefill
  says where; what they wrote into the site is removed); the prefill's list of
  the claims that did not hold on this machine (:mod:`bookbuild.execute.claims`)
  is printed again at the end. Before anything, the
  environment is checked (:mod:`bookbuild.execute.environment`: Sphinx executes
  a chapter the cache lacks). Ctrl-C stops both builds and the kernels they
  started (:func:`stop_builds`), removes every file they had written into the
  site (:func:`remove_written`), prints one line and exits with 130.
* ``extract``: the messages of every page, ``_build/gettext/<page>.pot``
  (Sphinx's gettext builder, ``gettext_compact: false``: one file per page).
* ``update`` (``make translations``): ``extract``, then ``sphinx-intl update
  --no-obsolete``: ``locales/<code>/LC_MESSAGES/<page>.po`` created or merged
  (a changed paragraph becomes ``#, fuzzy``), then ``stats``.
* ``stats``: per page, the messages, how many are translated, fuzzy, missing.
* ``check``: fails when a page listed as translated in ``book_translated``
  (or every page, with ``all``) has a missing or fuzzy message, or when any
  translated message lost or changed a role, a math span, a glued value, a
  footnote reference, inline code, a link or a number of its source
  (:func:`markup_problems`). Extracts first (``--no-extract`` to skip).

Also used by :mod:`bookbuild.site.notebooks` (:func:`translate_markdown`: a chapter's
Markdown in another language) and :mod:`bookbuild.tools.handouts` (page titles).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

LOCALES = "locales"
GETTEXT = Path("_build") / "gettext"
ALL = "all"
#: The line ``site`` prints before the translations' log.
TRANSLATIONS_LOG = "site: what the build of the translations printed:"
#: The exit code of an interrupted ``site`` (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


# -- the book's settings ----------------------------------------------------------


def sphinx_config(root: Path) -> dict:
    """``sphinx.config`` of ``_config.yml``."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    return ((config or {}).get("sphinx") or {}).get("config") or {}


def languages(root: Path) -> dict[str, str]:
    """``{code: name}``, the root language first."""
    return dict(sphinx_config(root).get("book_languages") or {"en": "English"})


def translated_languages(root: Path) -> list[str]:
    """Every language but the root one."""
    return list(languages(root))[1:]


def strict_pages(root: Path, language: str) -> set[str] | str:
    """The pages whose translation must be complete (or ``"all"``)."""
    listed = (sphinx_config(root).get("book_translated") or {}).get(language) or []
    return ALL if listed == ALL else set(listed)


def po_path(root: Path, language: str, page: str) -> Path:
    return Path(root) / LOCALES / language / "LC_MESSAGES" / f"{page}.po"


# -- catalogues ---------------------------------------------------------------------


@dataclass
class Message:
    msgid: str
    msgstr: str
    fuzzy: bool
    where: str  # "book/intro.md:12", for the reports

    @property
    def translated(self) -> bool:
        return bool(self.msgstr.strip()) and not self.fuzzy


def read_catalogue(path: Path) -> dict[str, Message]:
    """The messages of a ``.po`` or ``.pot`` file (header and obsolete left out)."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        catalogue = read_po(handle, charset="utf-8")
    messages = {}
    for message in catalogue:
        if not message.id or not isinstance(message.id, str):
            continue  # the header; plural forms are not used by Sphinx
        if message.context:
            continue  # a code message (bookbuild.i18n.code), not prose
        where = ", ".join(f"{f}:{n}" for f, n in message.locations[:1])
        messages[message.id] = Message(
            message.id, message.string or "", message.fuzzy, where
        )
    return messages


def page_messages(root: Path, language: str, page: str) -> dict[str, str]:
    """What Sphinx uses for a page: the translated, non-fuzzy messages."""
    path = po_path(root, language, page)
    if not path.is_file():
        return {}
    return {m.msgid: m.msgstr for m in read_catalogue(path).values() if m.translated}


def translate_message(root: Path, language: str, page: str, text: str) -> str:
    """``text`` (a message of ``page``, such as its title) in ``language``."""
    if language not in translated_languages(root):
        return text
    key = " ".join(text.split())
    return page_messages(root, language, page).get(key, text)


# -- a chapter's Markdown, translated (for the notebooks) ----------------------------

#: What may stand before a message on its first line, between the line's start
#: and the message's first word: indentation, then a heading, list or quote
#: marker, a directive's name, an option, a footnote label, a definition's
#: colon, or a table cell's bar.
_PREFIX = re.compile(
    r"[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+|\d+[.)][ \t]+|>[ \t]*"
    r"|(?:`{3,}|:{3,})\{[\w:-]+\}[ \t]+|:[\w-]+:[ \t]+|\[\^[^\]]+\]:[ \t]*"
    r"|:[ \t]+|(?:[^\n|]*\|)+[ \t]*)?"
)
#: What may follow a message on its last line: spaces, then a table cell's bar
#: or the end of the line.
_END = re.compile(r"[ \t]*(?:\||\n|\Z)")
_SPACE = re.compile(r"\s+")


def _squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` with each run of white space made one space, and the position in
    ``text`` of each character of the result."""
    pieces, where, at = [], [], 0
    for space in _SPACE.finditer(text):
        pieces.append(text[at : space.start()])
        where.extend(range(at, space.start()))
        pieces.append(" ")
        where.append(space.start())
        at = space.end()
    pieces.append(text[at:])
    where.extend(range(at, len(text)))
    return "".join(pieces), where


def _message_spans(text: str, squeezed: str, where: list[int], msgid: str):
    """The places ``(start, end)`` in ``text`` where ``msgid`` (its words, white
    space between them, any) stands whole: from the start of a line (after
    what :data:`_PREFIX` allows) to the end of one (or a table cell's bar)."""
    at = squeezed.find(msgid)
    while at >= 0:
        start = where[at]
        end = where[at + len(msgid) - 1] + 1
        line = text.rfind("\n", 0, start) + 1
        if _PREFIX.fullmatch(text, line, start) and _END.match(text, end):
            yield start, end
            at = squeezed.find(msgid, at + len(msgid))
        else:
            at = squeezed.find(msgid, at + 1)


def translate_markdown(text: str, messages: dict[str, str]) -> str:
    """``text`` (MyST Markdown) with each block whose text is a message (a
    paragraph, heading, list item, table cell, title, caption) replaced by its
    translation. Messages are matched whole, from the start of a line to the
    end of one, whatever the line breaks; longest first; a translation is
    never translated again. One pass over the text per message found in it
    (``str.find`` on the text with its white space squeezed), not one regular
    expression per message."""
    squeezed, where = _squeezed(text)
    taken: list[tuple[int, int, str]] = []  # (start, end, translation)
    claimed = bytearray(len(text) + 1)
    for msgid in sorted(messages, key=len, reverse=True):
        key = " ".join(msgid.split())
        if not key or messages[msgid] == msgid or key not in squeezed:
            continue
        for start, end in _message_spans(text, squeezed, where, key):
            if any(claimed[start:end]):
                continue  # inside a longer message's place: translated already
            claimed[start:end] = b"\1" * (end - start)
            taken.append((start, end, messages[msgid]))
    pieces, at = [], 0
    for start, end, translation in sorted(taken):
        pieces += [text[at:start], translation]
        at = end
    return "".join(pieces) + text[at:]


# -- the markup a translation must keep -------------------------------------------

ROLE = re.compile(r"\{([\w:.+-]+)\}`([^`]*)`")
MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$([^$\n]+?)\$", re.S)
LITERAL = re.compile(r"``(.+?)``|`([^`]+)`")
FOOTNOTE = re.compile(r"\[\^([^\]\s]+)\]")
LINK = re.compile(r"\]\(([^)\s]+)\)|href=\"([^\"]+)\"")
PLACEHOLDER = re.compile(r"\{(\d+)\}")
#: The format of a glued share, as a decimal or a percentage (``:.3f``, ``:.1%``).
SHARE_FORMAT = re.compile(r":\.\d+[f%]$")
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?:e[-+]?\d+)?(?![\w])")
#: A number as French writes it: groups of three digits after a no-break space
#: (U+00A0 or U+202F), a decimal comma: "1\u202f024", "0,5".
FRENCH_NUMBER = re.compile(
    r"(?<![\w.,])\d{1,3}(?:[\u00a0\u202f]\d{3})+(?:,\d+)?(?![\w])"
    r"|(?<![\w.,])\d+(?:\.\d+){2,}(?![\w])"  # a version: 2.13.0
    r"|(?<![\w.,])\d+(?:[.,]\d+)?(?:e[-+]?\d+)?(?![\w])"
)
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


def english_number(number: str) -> str:
    """``"1,024"`` -> ``"1024"``: the value an English number stands for."""
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", number)


def french_number(number: str) -> str:
    """``"1\u202f024"`` -> ``"1024"``, ``"0,5"`` -> ``"0.5"`` (``"0.5"`` is
    accepted as it is: a value copied from code keeps its point)."""
    return re.sub(r"[\u00a0\u202f]", "", number).replace(",", ".")


#: Words in math (``\text{nose}``), which a translation translates (``\text{nez}``).
MATH_WORDS = re.compile(r"\\text\{[^{}$]*\}")


def markup(text: str, language: str = "en") -> Counter:
    """What a translation must keep of ``text``: roles (by target; glued values
    whole), math spans, inline code, footnote references, link targets, the
    placeholders of a glued phrase (``{0}``) and every number. A glued share may
    change its format between a decimal and a percentage (``:.3f``, ``:.1%``:
    "0,976" reads better as "97,6 %" in French)."""
    kept: Counter = Counter()
    for role, content in ROLE.findall(text):
        if not role.startswith("glue"):
            explicit = EXPLICIT.match(content)
            content = explicit.group(2) if explicit else content
            if role == "term":
                content = content.lower()
        elif role == "glue:text":
            content = SHARE_FORMAT.sub(":share", content.strip())
        kept[f"{{{role}}}`{content.strip()}`"] += 1
    rest = ROLE.sub(" ", text)
    for display, inline in MATH.findall(rest):
        math = MATH_WORDS.sub(r"\\text{…}", display or inline)  # words: translated
        kept["$" + " ".join(math.split()) + "$"] += 1
    rest = MATH.sub(" ", rest)
    for double, single in LITERAL.findall(rest):
        kept[f"`{double or single}`"] += 1
    rest = LITERAL.sub(" ", rest)
    for label in FOOTNOTE.findall(rest):
        kept[f"[^{label}]"] += 1
    for link, href in LINK.findall(rest):
        kept[f"-> {link or href}"] += 1
    rest = LINK.sub(" ", rest)
    for number in PLACEHOLDER.findall(rest):
        kept[f"{{{number}}}"] += 1
    rest = PLACEHOLDER.sub(" ", rest)
    if language == "fr":
        for number in FRENCH_NUMBER.findall(rest):
            kept[french_number(number)] += 1
    else:
        for number in NUMBER.findall(rest):
            kept[english_number(number)] += 1
    return kept


def markup_problems(msgid: str, msgstr: str, language: str = "fr") -> list[str]:
    """How ``msgstr`` differs from ``msgid`` in markup ([] when it keeps all).
    Numbers are compared by value, each written as its language writes it: the
    English "1,024" is the French "1\u202f024" (and "1,024" in French is 1.024)."""
    source, translation = markup(msgid), markup(msgstr, language)
    problems = [f"lost {item}" for item in sorted(source - translation)]
    problems += [f"added {item}" for item in sorted(translation - source)]
    return problems


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

        from bookbuild.i18n.code import english_line

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
        from bookbuild.i18n.code import english_line

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

    from bookbuild.i18n.languages import is_translation

    if not is_translation(app.config):
        return
    for handler in logging.getLogger(NAMESPACE).handlers:
        if isinstance(handler, WarningStreamHandler) and not any(
            isinstance(f, CatalogueLocations) for f in handler.filters
        ):
            handler.filters.insert(0, CatalogueLocations(app))


# -- the commands ------------------------------------------------------------------


def run_sphinx(
    root: Path, builder: str, outdir: Path, doctrees: Path, overrides: dict
) -> int:
    """Jupyter Book's Sphinx build of the book in ``root``, strict (``-W -n
    --keep-going``), into ``outdir``; 0 on success."""
    from jupyter_book.sphinx import build_sphinx

    root = Path(root).resolve()
    settings = {
        "external_toc_path": (root / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "nitpicky": True,
        **overrides,
    }
    result = build_sphinx(
        root,
        Path(outdir).resolve(),
        noconfig=True,
        path_config=str(root / "_config.yml"),
        confoverrides=settings,
        doctreedir=Path(doctrees).resolve(),
        builder=builder,
        warningiserror=True,
        keep_going=True,
    )
    return result if isinstance(result, int) else 1


def catalogue_problems(root: Path, language: str) -> list[str]:
    """A line for each page of the book whose catalogue must be complete and
    is missing, or is not a readable ``.po`` file: Sphinx would build such a
    page in English, or keep its last French page, without a warning."""
    from babel.messages.pofile import PoFileError, read_po

    from bookbuild.toc import pages

    strict = strict_pages(root, language)
    found = []
    for page in pages(root):
        if strict != ALL and page not in strict:
            continue
        path = po_path(root, language, page)
        if not path.is_file():
            found.append(f"{path.relative_to(root)}: missing")
            continue
        try:
            with open(path, "rb") as handle:
                catalogue = read_po(handle, charset="utf-8", abort_invalid=True)
        except (PoFileError, UnicodeDecodeError, ValueError) as error:
            found.append(f"{path.relative_to(root)}: unreadable ({error})")
            continue
        if not len(catalogue):
            found.append(f"{path.relative_to(root)}: empty")
    return found


def build(root: Path, path_output: Path | None = None) -> int:
    """Every translated language into ``<path_output>/_build/html/<code>``;
    none when a catalogue is missing or unreadable."""
    base = Path(path_output or root) / "_build"
    for language in translated_languages(root):
        if wrong := catalogue_problems(Path(root), language):
            print(
                "translations: the catalogues of these pages are missing or "
                "broken (restore them from git, or `make translations` writes a "
                "missing one to translate):\n  " + "\n  ".join(wrong)
            )
            return 1
        print(f"== {languages(root)[language]}: {base / 'html' / language}")
        start, cpu = time.perf_counter(), time.process_time()
        code = run_sphinx(
            root,
            "html",
            base / "html" / language,
            base / f".doctrees-{language}",
            {"language": language},
        )
        if code:
            return code
        print(
            f"translations: {language} built in {time.perf_counter() - start:.1f} s "
            f"({time.process_time() - cpu:.1f} s CPU)"
        )
    return 0


def site(
    root: Path, path_output: Path | None = None, with_prefill: bool = False
) -> int:
    """The root language and every translation, built side by side (``site``);
    ``with_prefill``: the prefill runs beside them (:func:`start_prefill`)."""
    import tempfile

    output = ["--path-output", str(path_output)] if path_output else []
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    root_build = [str(jupyter_book), "build", str(root), "-W", "-n", "--keep-going"]
    others_build = [sys.executable, "-m", "bookbuild.i18n.translations", "build"]
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log, StopOnCtrlC() as stop:
        beside = start_prefill(root, with_prefill, "")
        environment = beside.environment if beside else None
        builds = [
            subprocess.Popen(
                others_build + output,
                cwd=root,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=0,  # a Ctrl-C is for `site` to handle (StopOnCtrlC)
                env=environment,
            )
        ]
        try:
            sys.stdout.flush()
            builds.append(  # its log shows as it comes
                subprocess.Popen(
                    root_build + output, cwd=root, process_group=0, env=environment
                )
            )
            while not stop.interrupted and (
                any(build.poll() is None for build in builds)
                or (beside and beside.code is None)
            ):
                if prefill_failed(beside, ""):
                    break
                time.sleep(0.2)
            others_code, root_code = (build.poll() for build in builds)
        finally:
            for build in builds:
                if build.poll() is None:
                    build.terminate()
        if stop.interrupted:
            return interrupted(root, path_output, stop.started)
        if beside is not None and beside.code:
            return stopped_by_the_prefill(root, path_output, stop.started, beside.code)
        log.seek(0)
        print(TRANSLATIONS_LOG)
        sys.stdout.write(log.read())
        sys.stdout.flush()
    if root_code or others_code:
        failed = ["the root language"] * bool(root_code)
        failed += ["the translations"] * bool(others_code)
        print(f"site: the build of {' and '.join(failed)} failed")
    say_claims_again(beside)
    return root_code or others_code


class StopOnCtrlC:
    """A ``with`` block (or :meth:`install` to :meth:`restore`) during which a
    Ctrl-C stops every process this one started, and all they started, at
    once (:func:`stop_builds`), and sets ``interrupted``: the block's waits
    then return. The builds run in process groups of their own (``process_group=0``),
    so the terminal's Ctrl-C reaches this process only: no build is left half
    stopped, nor prints a traceback."""

    def __init__(self) -> None:
        self.interrupted = False
        self.started = time.time()
        self._previous = None

    def install(self) -> StopOnCtrlC:
        """Handle Ctrl-C from now on (in the main thread only: elsewhere
        Python cannot)."""
        import threading

        self.started = time.time()
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._stop)
        return self

    def _stop(self, *_) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits
        self.interrupted = True
        stop_builds()

    def restore(self) -> None:
        """Ctrl-C as before :meth:`install`."""
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def __enter__(self) -> StopOnCtrlC:
        return self.install()

    def __exit__(self, *_) -> None:
        self.restore()


def stop_builds() -> int:
    """Stop every process this one started, and everything they started (the
    kernels in which Sphinx executes chapters run in sessions of their own):
    each child's process group is frozen (SIGSTOP: it starts nothing more),
    every descendant listed, then all are killed and waited for. Returns how
    many processes were killed."""
    import psutil

    me = psutil.Process()
    children = me.children()
    for child in children:  # a child that leads a group (not this one's)
        _signal_group(child.pid, signal.SIGSTOP)
    family = me.children(recursive=True)
    for child in children:
        _signal_group(child.pid, signal.SIGKILL)
    for member in family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=5)
    return len(family)


def _signal_group(pgid: int, signum: int) -> None:
    if pgid == os.getpgrp():
        return  # never this process's own group
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def remove_written(folder: Path, since: float) -> int:
    """Delete every file under ``folder`` modified at or after ``since`` (a
    time from :func:`time.time`): what a stopped build wrote, some of it
    half-written. Sphinx writes again the pages whose file is missing, so the
    next build writes them whole. Returns how many files were deleted."""
    removed = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(directory, name)
            try:
                if os.stat(path).st_mtime >= since:
                    os.unlink(path)
                    removed += 1
            except OSError:
                pass
    return removed


def interrupted(root: Path, path_output: Path | None, started: float) -> int:
    """After a Ctrl-C stopped the builds: delete what they wrote into the
    site, say so on one line; :data:`INTERRUPTED`."""
    site_folder = Path(path_output or root) / "_build" / "html"
    removed = remove_written(site_folder, started - 1)  # coarse file times
    print(
        f"site: interrupted: the builds and their kernels were stopped, the "
        f"{removed} file(s) they had written into {site_folder} removed; nothing "
        "half-written was kept",
        flush=True,
    )
    return INTERRUPTED


ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A page Sphinx writes: "writing output... [ 40%] book/masking".
WRITTEN = re.compile(r"^writing output\.\.\. \[\s*\d+%\] (\S+)", re.M)
#: What a reader of a failed build needs: Sphinx's warnings and errors.
TROUBLE = re.compile(r"WARNING|ERROR|Error|Exception|Traceback|failed")
#: Sphinx's progress lines, left out of the end of a failed build's log.
PROGRESS = re.compile(
    r"^(copying images|reading sources|writing output|copying |dumping |"
    r"loading |checking |preparing |generating |pickling |updating |looking for "
    r"|building \[|.*\[mystnb\]$)"
)
#: How many lines of a failed build's log the summary shows at most.
TAIL, TROUBLES = 15, 40


def summary(name: str, log: Path, code: int, seconds: float) -> list[str]:
    """What ``site --log-dir`` prints of one build: a line when it succeeded;
    when it failed, also its warning and error lines and the end of its log."""
    text = log.read_text(encoding="utf-8", errors="replace")
    written = len(set(WRITTEN.findall(text)))
    warnings = len(re.findall(r"WARNING:", text))
    state = "built" if code == 0 else f"FAILED (exit code {code})"
    lines = [
        f"site: {name} {state} in {seconds:.0f} s: {written} page(s) written, "
        f"{warnings} warning(s); full log: {log}"
    ]
    # The translations' own lines, one per language: "translations: fr built in".
    lines += [f"  {line}" for line in re.findall(r"^translations: .*$", text, re.M)]
    if code == 0:
        return lines
    troubles = [line for line in text.splitlines() if TROUBLE.search(line)]
    if troubles:
        lines.append(f"  its warning and error lines ({len(troubles)}):")
        lines += [f"    {line}" for line in troubles[:TROUBLES]]
        if len(troubles) > TROUBLES:
            lines.append(f"    ... {len(troubles) - TROUBLES} more in {log}")
    lines.append(f"  the end of its log ({log}), progress lines left out:")
    lines += [
        f"    {line}"
        for line in text.splitlines()
        if line.strip() and not PROGRESS.match(line)
    ][-TAIL:]
    return lines


def start_prefill(root: Path, with_prefill: bool, started: str):
    """With ``with_prefill``, start the prefill beside the builds
    (:class:`bookbuild.execute.prefill.Beside`: each build reads a page once
    its chapter is cached) and return it; print ``started`` now without it."""
    if not with_prefill:
        if started:
            print(started, flush=True)
        return None
    from bookbuild.execute.prefill import Beside

    sys.stdout.flush()
    return Beside(root)


def prefill_failed(beside, started: str) -> bool:
    """True once the prefill beside the builds failed: the caller stops the
    builds. Prints ``started`` when it ended well (after the prefill's lines)."""
    if beside is None:
        return False
    if beside.code is None and beside.poll() == 0 and started:
        print(started, flush=True)
    return bool(beside.code)


def say_claims_again(beside) -> None:
    """At the end, what the prefill beside the builds said of the claims that
    did not hold on this machine (:mod:`bookbuild.execute.claims`): the builds'
    output came after it."""
    text = beside.claims_message() if beside is not None else ""
    if text:
        print(text, flush=True)


def stopped_by_the_prefill(
    root: Path, path_output: Path | None, since: float, code: int
) -> int:
    """After the prefill beside the builds failed (it said where): stop the
    builds, delete what they wrote into the site, say so; the prefill's code."""
    stop_builds()
    site_folder = Path(path_output or root) / "_build" / "html"
    removed = remove_written(site_folder, since - 1)  # coarse file times
    print(
        f"site: the prefill failed: the builds beside it were stopped, the "
        f"{removed} file(s) they had written into {site_folder} removed",
        flush=True,
    )
    return code


def site_logged(
    root: Path,
    log_dir: Path,
    path_output: Path | None = None,
    with_prefill: bool = False,
) -> int:
    """``site``, each build's log in a file of ``log_dir``, a summary printed;
    ``with_prefill``: the prefill runs beside the builds (:func:`start_prefill`)."""
    output = ["--path-output", str(path_output)] if path_output else []
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    codes = list(languages(root))
    names = languages(root)
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    builds = {
        names[codes[0]]: (
            [str(jupyter_book), "build", str(root), "-W", "-n", "--keep-going"],
            log_dir / f"build-{codes[0]}.log",
        )
    }
    if codes[1:]:
        builds[", ".join(names[c] for c in codes[1:])] = (
            [sys.executable, "-m", "bookbuild.i18n.translations", "build"],
            log_dir / f"build-{'-'.join(codes[1:])}.log",
        )
    started = (
        f"site: {' and '.join(builds)} built side by side, logs in {log_dir}/ "
        "(a few minutes when pages changed)"
    )
    start = time.perf_counter()
    running, handles, ended = {}, [], {}
    stop = StopOnCtrlC().install()
    beside = None
    try:
        beside = start_prefill(root, with_prefill, started)
        for name, (command, log) in builds.items():
            handle = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            handles.append(handle)
            running[name] = subprocess.Popen(
                command + output,
                cwd=root,
                stdout=handle,
                stderr=subprocess.STDOUT,
                process_group=0,  # a Ctrl-C is for `site` to handle (StopOnCtrlC)
                env=beside.environment if beside else None,
            )
        while not stop.interrupted and (
            len(ended) < len(running) or (beside and beside.code is None)
        ):
            if prefill_failed(beside, started):
                break
            for name, process in running.items():
                if name not in ended and process.poll() is not None:
                    ended[name] = (process.returncode, time.perf_counter() - start)
            time.sleep(0.2)
    finally:
        stop.restore()
        for process in running.values():
            if process.poll() is None:
                process.terminate()
        for handle in handles:
            handle.close()
    if stop.interrupted:
        return interrupted(root, path_output, stop.started)
    if beside is not None and beside.code:
        return stopped_by_the_prefill(root, path_output, stop.started, beside.code)
    lines = []
    for name, (_, log) in builds.items():
        log.write_text(  # plain text: Sphinx colours even a file
            ANSI.sub("", log.read_text(encoding="utf-8", errors="replace")),
            encoding="utf-8",
        )
        code, seconds = ended[name]
        lines += summary(name, log, code, seconds)
    print("\n".join(lines), flush=True)
    failed = [name for name, (code, _) in ended.items() if code]
    if failed:
        print(
            f"site: the build of {' and '.join(failed)} failed (strict: one "
            "warning fails it); what failed is above, all of it in the log"
        )
    say_claims_again(beside)
    return next((code for code, _ in ended.values() if code), 0)


def extract(root: Path) -> int:
    """``_build/gettext/<page>.pot`` for every page."""
    target = Path(root) / GETTEXT
    code = run_sphinx(
        root, "gettext", target, Path(root) / "_build" / ".doctrees-gettext", {}
    )
    # The theme's template strings: the theme's own catalogues translate them.
    (target / "sphinx.pot").unlink(missing_ok=True)
    # A page that left the book keeps its old .pot: sphinx-intl would make it
    # a catalogue again, and the check would ask for its translation.
    from bookbuild.toc import pages

    book_pages = set(pages(root))
    for pot in target.rglob("*.pot"):
        if pot.relative_to(target).with_suffix("").as_posix() not in book_pages:
            pot.unlink()
    if not code:  # the chapters' comments and strings, beside their prose
        from bookbuild.i18n import code as code_messages

        code_messages.extract(root, target)
    return code


def update(root: Path) -> int:
    """Extract, then create or merge every language's ``.po`` files."""
    code = extract(root)
    if code:
        return code
    for language in translated_languages(root):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "sphinx_intl", "update"),
                *("--pot-dir", str(Path(root) / GETTEXT)),
                *("--locale-dir", str(Path(root) / LOCALES)),
                *("--language", language, "--no-obsolete", "--jobs", "1"),
            ],
            capture_output=True,
            text=True,
        )
        lines = done.stdout.splitlines()
        print("\n".join(line for line in lines if not line.startswith("Not Changed")))
        if done.returncode:
            print(done.stderr)
            return done.returncode
    return stats(root)


def _pages(root: Path, language: str) -> dict[str, Path]:
    """page -> .pot (freshly extracted) or .po, for every page with messages.
    A ``.pot`` left by a page that has left the book is not one."""
    from bookbuild.toc import pages

    pots = Path(root) / GETTEXT
    if pots.is_dir() and any(pots.rglob("*.pot")):
        book_pages = set(pages(root))
        extracted = {
            p.relative_to(pots).with_suffix("").as_posix(): p
            for p in sorted(pots.rglob("*.pot"))
        }
        return {page: p for page, p in extracted.items() if page in book_pages}
    folder = Path(root) / LOCALES / language / "LC_MESSAGES"
    return {
        p.relative_to(folder).with_suffix("").as_posix(): p
        for p in sorted(folder.rglob("*.po"))
    }


@dataclass
class PageCount:
    page: str
    messages: int
    translated: int
    fuzzy: int

    @property
    def missing(self) -> int:
        return self.messages - self.translated - self.fuzzy


def count(root: Path, language: str) -> list[PageCount]:
    """Per page: its messages (as extracted, its code's too), translated, fuzzy."""
    counts = []
    for page, source in _pages(root, language).items():
        wanted = read_catalogue(source)
        po = po_path(root, language, page)
        have = read_catalogue(po) if po.is_file() else {}
        translated = fuzzy = 0
        for msgid in wanted:
            message = have.get(msgid)
            if message is not None and message.msgstr.strip():
                fuzzy += message.fuzzy
                translated += not message.fuzzy
        # and its code messages (bookbuild.i18n.code)
        from bookbuild.i18n.code import code_messages

        code_wanted, code_have = code_messages(source), code_messages(po)
        for msgid in code_wanted:
            text, is_fuzzy = code_have.get(msgid, ("", False))
            if text.strip():
                fuzzy += is_fuzzy
                translated += not is_fuzzy
        total = len(wanted) + len(code_wanted)
        counts.append(PageCount(page, total, translated, fuzzy))
    return counts


def stats(root: Path) -> int:
    for language in translated_languages(root):
        strict = strict_pages(root, language)
        print(f"\n{languages(root)[language]} ({language}): * = listed as translated")
        print(
            f"{'page':<28}{'messages':>9}{'translated':>11}{'fuzzy':>7}{'missing':>8}"
        )
        counts = count(root, language)
        for c in counts:
            mark = "*" if strict == ALL or c.page in strict else " "
            print(
                f"{mark}{c.page:<27}{c.messages:>9}{c.translated:>11}"
                f"{c.fuzzy:>7}{c.missing:>8}"
            )
        total = PageCount(
            "total",
            sum(c.messages for c in counts),
            sum(c.translated for c in counts),
            sum(c.fuzzy for c in counts),
        )
        print(
            f" {total.page:<27}{total.messages:>9}{total.translated:>11}"
            f"{total.fuzzy:>7}{total.missing:>8}"
        )
    return 0


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def glued_phrases(root: Path, page: str) -> set[str]:
    """The messages of ``page`` that are glued phrases (as last extracted)."""
    from bookbuild.i18n.glue import GLUED_SUFFIX

    listing = Path(root) / GETTEXT / f"{page}{GLUED_SUFFIX}"
    if not listing.is_file():
        return set()
    return set(json.loads(listing.read_text(encoding="utf-8")))


@dataclass
class Problem:
    """One thing ``check`` reports: where, what kind, and the line it prints."""

    language: str
    page: str  # "" for a problem of _config.yml
    kind: str  # untranslated, fuzzy, markup, no catalogue, not a page
    line: str
    glued: bool = False  # a phrase glued by the code (its branch may be measured)

    def __str__(self) -> str:
        return self.line


def problems(root: Path, notices: list[str] | None = None) -> list[str]:
    """Everything ``check`` reports (empty when the translations are sound).
    A glued phrase that is in no catalogue (a measurement took a branch the
    translators have not seen) goes to ``notices`` instead: the catalogues
    are not wrong, but the translated build fails on it (bookbuild.i18n.glue)
    until it is translated."""
    return [str(problem) for problem in find_problems(root, notices)]


def find_problems(root: Path, notices: list[str] | None = None) -> list[Problem]:
    """:func:`problems`, each with its language, page and kind."""
    from bookbuild.toc import pages

    notices = [] if notices is None else notices
    found: list[Problem] = []
    book_pages = set(pages(root))
    for language in translated_languages(root):
        strict = strict_pages(root, language)
        if strict != ALL:
            for page in sorted(strict - book_pages):
                found.append(
                    Problem(
                        language,
                        "",
                        "not a page",
                        f"{language}: {page} is listed as translated, not a page",
                    )
                )
        sources = _pages(root, language)
        for page, source in sources.items():
            po = po_path(root, language, page)
            have = read_catalogue(po) if po.is_file() else {}
            if strict == ALL or page in strict:
                glued = glued_phrases(root, page)
                for msgid, wanted in read_catalogue(source).items():
                    message = have.get(msgid)
                    if message is None and msgid in glued:
                        notices.append(
                            f"{language}: {page}: a glued phrase this build measured, "
                            f"not in the catalogue yet (the French build fails on it): "
                            f"{_short(msgid)}"
                        )
                        continue
                    if message is None or not message.msgstr.strip():
                        state = "untranslated"
                    elif message.fuzzy:
                        state = "fuzzy"
                    else:
                        continue
                    found.append(
                        Problem(
                            language,
                            page,
                            state,
                            f"{language}: {page}: {state} ({wanted.where}): "
                            f"{_short(msgid)}",
                            glued=msgid in glued,
                        )
                    )
            for message in have.values():
                if not message.translated:
                    continue
                for problem in markup_problems(message.msgid, message.msgstr, language):
                    found.append(
                        Problem(
                            language,
                            page,
                            "markup",
                            f"{language}: {page}: {problem} ({message.where}): "
                            f"{_short(message.msgstr)}",
                        )
                    )
        from bookbuild.i18n import code as code_messages
        from bookbuild.i18n import terminology

        for where, what, msgid in code_messages.problems(root, language):
            page = where.split(".md:", 1)[0]
            if strict != ALL and page not in strict:
                continue
            kind = "untranslated" if what.endswith("not translated") else "markup"
            line = f"{language}: {where}: {what}: {_short(msgid)}"
            found.append(Problem(language, page, kind, line))
        found += terminology.found(root, language)  # bookbuild.i18n.terminology
        if strict != ALL:
            for page in sorted(strict & book_pages):
                if not po_path(root, language, page).is_file() and page in sources:
                    found.append(
                        Problem(
                            language,
                            page,
                            "no catalogue",
                            f"{language}: {page}: no catalogue",
                        )
                    )
    return found


#: The command that brings every catalogue up to date with the English source.
UPDATE_COMMAND = "make translations"


def advice(root: Path, found: list[Problem]) -> list[str]:
    """What ``check`` prints after the problems: per page, how many of each
    kind, and what to do about them, the one command first."""
    if not found:
        return []
    by_page: dict[tuple[str, str], Counter] = {}
    for problem in found:
        by_page.setdefault((problem.language, problem.page), Counter())[
            problem.kind
        ] += 1
    lines = [f"translations: {len(found)} problem(s) in {len(by_page)} catalogue(s):"]
    to_translate, to_fix, config = [], [], False
    measured = [
        po_path(Path("."), language, page).as_posix()
        for language, page in by_page
        if page
        and all(p.glued for p in found if (p.language, p.page) == (language, page))
    ]
    for (language, page), kinds in by_page.items():
        if not page:
            config = True
            continue
        where = po_path(Path("."), language, page).as_posix()
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        lines.append(f"  {where}: {counts}")
        if kinds.keys() & {"untranslated", "fuzzy", "no catalogue"}:
            to_translate.append(where)
        if "markup" in kinds:
            to_fix.append(where)
    if to_translate:
        lines.append(
            f"To fix: run `{UPDATE_COMMAND}`, then translate the messages marked "
            "fuzzy or left empty in " + ", ".join(to_translate) + " (write the "
            "msgstr, delete the `#, fuzzy` line; keep roles, math, glued values "
            "and inline code as they are)."
        )
    if to_fix:
        lines.append(
            "Fix the translations listed above in " + ", ".join(to_fix) + ": each "
            "must keep the roles, math, glued values, code, links and numbers of "
            "its English source."
        )
    if measured:
        lines.append(
            "In " + ", ".join(measured) + " only phrases glued by the code are "
            "left: a measurement of this machine may have chosen another phrase "
            "than the catalogue's. If you did not edit that page, restore its "
            "catalogue (`git checkout -- " + " ".join(measured) + "`): the "
            "check then only notes the phrase."
        )
    if config:
        lines.append(
            "Remove the pages that are not pages from `book_translated` in _config.yml."
        )
    lines.append(
        "Then run the check again: `.venv/bin/python -m bookbuild.i18n.translations "
        'check`. How: CONTRIBUTING.md, "Editing the book".'
    )
    return lines


def check(root: Path, extract_first: bool = True) -> int:
    if extract_first:
        code = extract(root)
        if code:
            return code
    notices: list[str] = []
    found = find_problems(root, notices)
    for notice in notices:
        print(f"note: {notice}")
    for problem in found:
        print(problem)
    if found:
        print("\n".join(advice(root, found)))
    else:
        print("translations: 0 problem(s)")
    return 1 if found else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    building = commands.add_parser("build", help="the translated sites")
    building.add_argument("--path-output", type=Path, default=None)
    whole = commands.add_parser("site", help="root language and translations")
    whole.add_argument("--path-output", type=Path, default=None)
    whole.add_argument(
        "--log-dir", type=Path, default=None, help="logs in files, a summary printed"
    )
    whole.add_argument(
        "--with-prefill",
        action="store_true",
        help="execute the chapters beside the builds (make book)",
    )
    commands.add_parser("extract", help="the .pot files, in _build/gettext")
    commands.add_parser("update", help="extract, merge into the .po files, stats")
    commands.add_parser("stats", help="messages translated, fuzzy, missing")
    checking = commands.add_parser("check", help="completeness and markup")
    checking.add_argument("--no-extract", action="store_true")
    args = parser.parse_args(argv)
    root = Path(".").resolve()
    if args.command == "build":
        return build(root, args.path_output)
    if args.command == "site":
        from bookbuild.execute import environment

        try:
            code = environment.require(root)
        except KeyboardInterrupt:  # while checking: nothing started yet
            print("site: interrupted before the builds started", flush=True)
            return INTERRUPTED
        if code:
            return code
    if args.command == "site" and args.log_dir:
        return site_logged(root, args.log_dir, args.path_output, args.with_prefill)
    if args.command == "site":
        return site(root, args.path_output, args.with_prefill)
    if args.command == "check":
        return check(root, extract_first=not args.no_extract)
    return {"extract": extract, "update": update, "stats": stats}[args.command](root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
