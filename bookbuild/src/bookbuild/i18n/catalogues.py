"""The book's translation catalogues, read: the languages and settings of
``_config.yml``, each page's ``.po`` file (:func:`read_catalogue`,
:func:`page_messages`), and a chapter's Markdown translated with them
(:func:`translate_markdown`: the notebooks, the student edition, the handouts).
Reads only; :mod:`bookbuild.i18n.translations` writes them (``make
translations``) and :mod:`bookbuild.i18n.checks` checks them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from bookbuild.toc import pages

LOCALES = "locales"
GETTEXT = Path("_build") / "gettext"
ALL = "all"


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


def message_files(root: Path, language: str) -> dict[str, Path]:
    """page -> .pot (freshly extracted) or .po, for every page with messages.
    A ``.pot`` left by a page that has left the book is not one."""
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
