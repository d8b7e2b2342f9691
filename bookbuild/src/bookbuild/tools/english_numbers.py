"""``python -m bookbuild.tools.english_numbers [SITE] [--language fr|en] [--json]``:
the numbers written against the book's one number rule (:mod:`qkv.page.numbers`)
on a site: in French, the English way in what the pages' code printed (issue
37); in both languages, Python's e-notation and ungrouped thousands. A sibling
of :mod:`bookbuild.tools.english_words`, whose page reader it shares
(:func:`~bookbuild.tools.english_words.read_site`).

Problem: a chapter prints with Python's format specs, which write numbers the
English way (``0.976``, ``79972``, ``3.4e-09``, ``100.0%``) beside prose and
tables that write them the French way (``0,976``, ``79 972``).

Answer: a count, on each French page's outputs (``div.cell_output``, the
``outputs`` place of :func:`bookbuild.tools.english_words.page_pieces`), line by
line, of four kinds:

- ``decimal points``: a point between two digits (``0.976``), but not in a
  version (``2.13.0``: two points or more) nor in a name (``model.pt``);
- ``thousands``: an integer of five digits or more, ungrouped (``79972``);
  four-digit ones (``4096``) are grouped by :func:`qkv.page.numbers.number`
  too, but a year or an identifier has four digits, so they are not counted;
- ``e-notation``: a power of ten written with an ``e`` (``3,4e-09``);
- ``units``: an English binary unit (``KiB``, ``MiB``, ``GiB``, ``TiB``) on
  the whole page (prose, tables and outputs): French is Kio, Mio, Gio, Tio.

And in the prose and tables of a page (glued values, tables built by code),
on the French site and on the English one (``--language en``): ``e-notation``
(``1.2e+05``: the rule writes ``1.2 × 10⁵``) and ``thousands`` (an ungrouped
integer of five digits or more, ``79972``: the rule writes ``79,972``). On the
English site, that is all that is counted (its decimal points and units are
its own).

Not counted: the repr of a tensor, an array or a list (a line that starts with
``tensor(``, ``array(``, ``[`` or ``(`` or continues one, and a list or tensor
inside a line), and the value a cell ends with, shown by its repr
(``div.output.text_plain``): Python's notation, not the page's.
:data:`bookbuild.tools.english_words.NOT_COUNTED`
pages are left out as there.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bookbuild.tools.english_words import (
    built_folder,
    pages_of,
    ranked_pages,
    read_site,
    site_arguments,
)

__all__ = ["KINDS", "PROSE_KINDS", "count_site", "count_text", "main", "pages_of"]

KINDS = ("decimal points", "thousands", "e-notation", "units")
#: What is counted in the prose and tables of a page, on either site.
PROSE_KINDS = ("thousands", "e-notation")

#: A number with a decimal point, not a version or a dotted name.
DECIMAL_POINT = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\.\d)(?!\.?[A-Za-z_])")
#: An integer of 5+ digits, not part of a longer token (a hash, a name) nor an
#: issue number (``#131863``).
THOUSANDS = re.compile(r"(?<![\w.,#\u202f])\d{5,}(?![\w.,]|\u202f\d)")
#: Scientific notation with an e.
E_NOTATION = re.compile(r"(?<![\w])\d+(?:[.,]\d+)?[eE][-+]?\d+\b")
#: An English binary unit.
UNITS = re.compile(r"\b[KMGTP]iB\b")
#: A list, or a tensor or an array written by Python, innermost first.
INNER_REPR = re.compile(r"\[[^\[\]]*\]|\b(?:tensor|array)\([^()]*\)")
#: A line that is (or continues) a tensor, array or list repr.
REPR_START = re.compile(r"^\s*(?:tensor\(|array\(|Parameter containing|\[|\()")


@dataclass
class Hit:
    page: str
    kind: str
    text: str
    line: str
    place: str = "outputs"


@dataclass
class Report:
    counts: dict[str, int]
    pages: dict[str, dict[str, int]]
    hits: list[Hit] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "counts": self.counts,
            "pages": self.pages,
            "hits": [vars(hit) for hit in self.hits],
        }


def output_lines(text: str) -> list[str]:
    """The lines of a printed output that are not a tensor, array or list repr
    (a repr's continuation lines, indented, go with it)."""
    lines, in_repr = [], False
    for line in text.splitlines():
        if REPR_START.match(line) or (in_repr and line[:1].isspace()):
            in_repr = True
            continue
        in_repr = False
        lines.append(line)
    return lines


def without_reprs(line: str) -> str:
    """``line`` without the lists and tensors it shows as Python writes them
    (``[0.665, 0.245]``, ``tensor([0.7381, 0.6431])``)."""
    while True:
        shorter = INNER_REPR.sub(" ", line)
        if shorter == line:
            return line
        line = shorter


def without_values(html: str) -> str:
    """``html`` without the values that cells end with, which Jupyter shows by
    their repr (``div.output.text_plain``: ``22.25``, ``(0.5, 1.5)``, a
    dict): Python's notation, as a tensor's; what a cell prints stays."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for value in soup.select("div.cell_output div.text_plain"):
        value.decompose()
    return str(soup)


def count_text(
    text: str, units_only: bool = False, kinds: Iterable[str] = KINDS
) -> dict[str, list[str]]:
    """The English-format numbers in ``text``, by kind (of ``kinds`` only;
    ``units_only``: the units alone)."""
    found: dict[str, list[str]] = {kind: [] for kind in KINDS}
    kinds = set(kinds)
    if "units" in kinds:
        found["units"] = UNITS.findall(text)
    if units_only:
        return found
    text = without_reprs(text)
    if "decimal points" in kinds:
        found["decimal points"] = DECIMAL_POINT.findall(text)
    if "thousands" in kinds:
        found["thousands"] = THOUSANDS.findall(text)
    if "e-notation" in kinds:
        found["e-notation"] = E_NOTATION.findall(text)
    return found


def english(language: str) -> bool:
    """Whether ``language`` names the English site (``""`` or ``"en"``)."""
    return language in {"", "en"}


def _found(place: str, line: str, language: str) -> dict[str, list[str]]:
    """What counts in ``line`` of ``place`` on the site of ``language``."""
    if english(language):  # the rule's own conventions: e-notation, thousands
        return count_text(line, kinds=PROSE_KINDS)
    if place == "outputs":
        return count_text(line)
    return count_text(line, kinds=(*PROSE_KINDS, "units"))


def count_site(
    site: Path, root: Path, language: str = "fr", pages: Iterable[str] | None = None
) -> Report:
    """Count the numbers written against the rule on the pages of
    ``site/<language>/`` (``""`` or ``"en"``: the English site, the root; by
    default every page of the book)."""
    per_page: dict[str, dict[str, int]] = {}
    hits: list[Hit] = []
    for page in read_site(site, root, language, pages, html=without_values):
        counts = dict.fromkeys(KINDS, 0)
        per_page[page.name] = counts
        for place, text in page.pieces:
            lines = output_lines(text) if place == "outputs" else [text]
            for line in lines:
                for kind, texts in _found(place, line, language).items():
                    counts[kind] += len(texts)
                    hits += [
                        Hit(page.name, kind, t, line.strip()[:160], place)
                        for t in texts
                    ]
    totals = {kind: sum(c[kind] for c in per_page.values()) for kind in KINDS}
    return Report(totals, per_page, hits)


def main(argv: list[str] | None = None) -> int:
    parser = site_arguments(
        "english_numbers",
        "Numbers written against the book's number rule: the English way on the "
        "French site, e-notation and ungrouped thousands on both.",
    )
    parser.add_argument("--all", action="store_true", help="list every hit")
    args = parser.parse_args(argv)
    folder = built_folder("english_numbers", args.site, args.language)
    if folder is None:
        return 2
    report = count_site(args.site, args.root, args.language)
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=1))
        return 0
    total = sum(report.counts.values())
    print(
        f"english-numbers: {total} numbers against the rule on {folder}: "
        + ", ".join(f"{kind} {report.counts[kind]}" for kind in KINDS)
    )
    for page, n, detail in ranked_pages(report.pages):
        print(f"  {n:5d}  {page}  ({detail})")
    shown = report.hits if args.all else report.hits[:40]
    for hit in shown:
        print(f"  {hit.page} ({hit.place}) [{hit.kind}] {hit.text}: {hit.line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
