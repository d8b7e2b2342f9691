"""What a translation must keep, and the problems of the catalogues: the
markup a translated message keeps from its source (roles, math, glued values,
footnotes, inline code, links, numbers: :func:`markup_problems`), the pages
whose catalogue is missing or broken (:func:`catalogue_problems`), and every
problem ``python -m bookbuild.i18n.translations check`` reports, with the advice
it prints (:func:`find_problems`, :func:`advice`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bookbuild.i18n import code as code_messages
from bookbuild.i18n import terminology
from bookbuild.i18n.catalogues import (
    ALL,
    GETTEXT,
    message_files,
    po_path,
    read_catalogue,
    strict_pages,
    translated_languages,
)
from bookbuild.i18n.glue import GLUED_SUFFIX
from bookbuild.toc import pages

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
    r"(?<![\w.,])\d+(?:,\d+)?[\u00a0\u202f ]?×[\u00a0\u202f ]?10⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+"
    r"|(?<![\w.,])\d{1,3}(?:[\u00a0\u202f]\d{3})+(?:,\d+)?(?![\w])"
    r"|(?<![\w.,])\d+(?:\.\d+){2,}(?![\w])"  # a version: 2.13.0
    r"|(?<![\w.,])\d+(?:[.,]\d+)?(?:e[-+]?\d+)?(?![\w])"
)
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


#: A power of ten: Python's ``e-06``, or as the book writes it, ``× 10⁻⁶``.
_EXPONENT = re.compile(
    r"[eE]([-+]?\d+)$|[\u00a0\u202f ]?×[\u00a0\u202f ]?10(⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)$"
)
_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def _exponent(number: str) -> str:
    """``number`` with its power of ten written one way, ``e-06``."""
    match = _EXPONENT.search(number)
    if match is None:
        return number
    power = int(match.group(1) or match.group(2).translate(_DIGITS))
    return f"{number[: match.start()]}e{power:+03d}"


def english_number(number: str) -> str:
    """``"1,024"`` -> ``"1024"``: the value an English number stands for
    (``"1e-6"`` -> ``"1e-06"``)."""
    return _exponent(re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", number))


def french_number(number: str) -> str:
    """``"1\u202f024"`` -> ``"1024"``, ``"0,5"`` -> ``"0.5"``, ``"1,0 × 10⁻⁶"``
    -> ``"1.0e-06"`` (``"0.5"`` is accepted as it is: a value copied from code
    keeps its point)."""
    number = _exponent(number)
    return re.sub(r"[\u00a0\u202f]", "", number).replace(",", ".")


#: Words in math (``\\text{nose}``), which a translation translates (``\\text{nez}``).
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


def catalogue_problems(root: Path, language: str) -> list[str]:
    """A line for each page of the book whose catalogue must be complete and
    is missing, or is not a readable ``.po`` file: Sphinx would build such a
    page in English, or keep its last French page, without a warning."""
    from babel.messages.pofile import PoFileError, read_po

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


def _short(text: str, width: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def glued_phrases(root: Path, page: str) -> set[str]:
    """The messages of ``page`` that are glued phrases (as last extracted)."""

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
        sources = message_files(root, language)
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

        for where, what, msgid in code_messages.problems(root, language):
            page = where.split(".md:", 1)[0]
            if strict != ALL and page not in strict:
                continue
            kind = "untranslated" if what.endswith("not translated") else "markup"
            line = f"{language}: {where}: {what}: {_short(msgid)}"
            found.append(Problem(language, page, kind, line))
        found += [  # one word for each core term (bookbuild.i18n.terminology)
            Problem(language, page, "terminology", line)
            for page, line in terminology.problems(root, language)
        ]
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
