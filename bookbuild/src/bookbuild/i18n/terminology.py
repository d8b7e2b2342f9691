"""The French edition's core terms, one each: a check of the translations.

Problem: a term translated two ways reads as two notions (« un softmax » on one
page, « la softmax » on the next; « normalisation en entrée » where the rest of
the book says « pré-normalisation »), and a review finds it only by reading.

Answer: ``locales/<language>/terminology.toml`` lists each core term with its
English and the variants the book does not use (regular expressions, matched as
whole words, case-blind). :func:`problems` reads every translation of the
language's catalogues (prose and code messages) outside code spans, math and
*italics* (where the English glosses are), and reports each forbidden variant;
``python -m bookbuild.i18n.translations check`` fails on them.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

#: Where a language's list is, under the root of the book.
LIST = "locales/{language}/terminology.toml"
#: What is not prose in a message: a role with its target, a code span, math,
#: an English gloss in italics (not **bold**).
_NOT_PROSE = re.compile(
    r"\{[\w:-]+\}`[^`]*`|``[^`]*``|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$"
    r"|(?<![*\w])\*(?!\*)[^*]+\*(?!\*)",
    re.S,
)


@dataclass(frozen=True)
class Term:
    """A core term: its French, its English, the variants the book avoids."""

    fr: str
    en: str
    forbidden: tuple[re.Pattern, ...]


def terms(root: Path, language: str) -> list[Term]:
    """The terms of ``language`` (none when it has no list)."""
    path = Path(root) / LIST.format(language=language)
    if not path.is_file():
        return []
    listed = tomllib.loads(path.read_text(encoding="utf-8")).get("term", [])
    return [
        Term(
            item["fr"],
            item["en"],
            tuple(
                re.compile(rf"(?<!\w)(?:{pattern})(?!\w)", re.I)
                for pattern in item.get("forbidden", [])
            ),
        )
        for item in listed
    ]


def prose(text: str) -> str:
    """``text`` without what is not prose (code, math, roles, italics)."""
    return _NOT_PROSE.sub(" ", text)


def problems(root: Path, language: str) -> list[tuple[str, str]]:
    """Each forbidden variant in a translation, as ``(page, line)``."""
    from babel.messages.pofile import read_po

    listed = terms(root, language)
    if not listed:
        return []
    messages = Path(root) / "locales" / language / "LC_MESSAGES"
    found = []
    for po in sorted(messages.rglob("*.po")):
        page = po.relative_to(messages).with_suffix("").as_posix()
        with open(po, "rb") as handle:
            catalogue = read_po(handle, charset="utf-8")
        for message in catalogue:
            if not message.id or not isinstance(message.string, str):
                continue
            text = prose(message.string)
            for term in listed:
                for pattern in term.forbidden:
                    for match in pattern.finditer(text):
                        where = ", ".join(f"{f}:{n}" for f, n in message.locations[:1])
                        found.append(
                            (
                                page,
                                f"{language}: {page}: terminology: « {match.group(0)} »"
                                f" where the book says « {term.fr} » ({term.en})"
                                f" ({where})",
                            )
                        )
    return found
