"""The translations of the book: refresh, count and check them.

``python -m bookbuild.i18n.translations COMMAND`` from the book's folder:

* ``extract``: the messages of every page, ``_build/gettext/<page>.pot``
  (Sphinx's gettext builder, ``gettext_compact: false``: one file per page).
* ``update`` (``make translations``): ``extract``, then ``sphinx-intl update
  --no-obsolete``: ``locales/<code>/LC_MESSAGES/<page>.po`` created or merged
  (a changed paragraph becomes ``#, fuzzy``), the same for ``qkv``'s and
  ``bookbuild``'s catalogues (their ``.mo`` compiled), then ``stats``.
* ``stats``: per page, the messages, how many are translated, fuzzy, missing.
* ``check``: fails when a message of ``qkv``'s or ``bookbuild``'s own
  catalogue (:mod:`bookbuild.i18n.domains`) is untranslated or fuzzy, when a
  page listed as translated in ``book_translated`` (or every page, with
  ``all``) has a missing or fuzzy message, or when any
  translated message lost or changed a role, a math span, a glued value, a
  footnote reference, inline code, a link or a number of its source
  (:mod:`bookbuild.i18n.checks`). Extracts first (``--no-extract`` to skip).

The catalogues are read by :mod:`bookbuild.i18n.catalogues`; the book (and its
translations) is built by :mod:`bookbuild.build`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bookbuild.build import run_sphinx
from bookbuild.i18n import code as code_messages
from bookbuild.i18n import domains
from bookbuild.i18n.catalogues import (
    ALL,
    GETTEXT,
    LOCALES,
    languages,
    message_files,
    po_path,
    read_catalogue,
    strict_pages,
    translated_languages,
)
from bookbuild.i18n.checks import UPDATE_COMMAND, advice, find_problems
from bookbuild.i18n.code import code_messages as messages_of_code
from bookbuild.toc import pages


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

    book_pages = set(pages(root))
    for pot in target.rglob("*.pot"):
        if pot.relative_to(target).with_suffix("").as_posix() not in book_pages:
            pot.unlink()
    if not code:  # the chapters' comments and strings, beside their prose
        code_messages.extract(root, target)
        domains.extract(root, target)  # qkv's and bookbuild's own words
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
    domains.update(root)  # qkv's and bookbuild's catalogues, and their .mo
    return stats(root)


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
    for page, source in message_files(root, language).items():
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

        code_wanted, code_have = messages_of_code(source), messages_of_code(po)
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
    in_domains = domains.problems(root)  # qkv's and bookbuild's own words
    print("\n".join(in_domains))
    if found:
        print("\n".join(advice(root, found)))
    elif in_domains:
        print(f"Then `{UPDATE_COMMAND}` and translate them in the .po named above.")
    else:
        print("translations: 0 problem(s)")
    return 1 if found or in_domains else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("extract", help="the .pot files, in _build/gettext")
    commands.add_parser("update", help="extract, merge into the .po files, stats")
    commands.add_parser("stats", help="messages translated, fuzzy, missing")
    checking = commands.add_parser("check", help="completeness and markup")
    checking.add_argument("--no-extract", action="store_true")
    args = parser.parse_args(argv)
    root = Path(".").resolve()
    if args.command == "check":
        return check(root, extract_first=not args.no_extract)
    return {"extract": extract, "update": update, "stats": stats}[args.command](root)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
