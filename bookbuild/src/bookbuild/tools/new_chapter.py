"""A new chapter that passes every chapter test: ``make new-chapter NAME=...``.

Problem: a chapter of a numbered part must have a label equal to its file name,
a "You will learn" box, a citation, a named figure with alt text referred to by
number, glued numbers backed by asserts, a summary, at least three exercises
whose gated solutions run code that asserts, a place in ``_toc.yml`` and a
French catalogue with every message translated (``tests/test_chapters.py``,
the French check). Started from an empty page, three of those tests fail.

Answer: :func:`new_chapter` writes ``book/<name>.md`` from the template
``templates/chapter.md`` (a small, complete chapter: a self-attention layer on
six words, its weights glued and plotted, three exercises), with ``<name>`` as
its label and the prefix of its glue keys, figure and exercise labels; adds it
to ``_toc.yml`` at the end of the last numbered part (or of the part whose
caption is given); and, when the template's French catalogue
(``templates/chapter.fr.po``) exists, writes
``locales/fr/LC_MESSAGES/book/<name>.po`` from it (the chapter's title in French
as given, the English one otherwise). The author then replaces the computation
and the text, and ``make translations`` merges their messages into the
catalogue (CONTRIBUTING.md, "Add a chapter").

Usage, from the book's folder: ``python -m bookbuild.tools.new_chapter NAME
[--title TITLE] [--title-fr TITRE] [--part CAPTION]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: A chapter's label: its file name, kebab-case, no number.
LABEL = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def fill(template: str, name: str, title: str) -> str:
    return template.replace("@@NAME@@", name).replace("@@TITLE@@", title)


def po_string(text: str) -> str:
    """``text`` as it is written between the quotes of a ``.po`` file."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


def title_of(name: str) -> str:
    """The default title of chapter ``name``: its words, the first capitalised."""
    return name.replace("-", " ").capitalize()


def add_to_toc(toc: str, name: str, part: str | None = None) -> str:
    """``_toc.yml``'s text with ``book/<name>`` as the last chapter of the part
    whose caption is ``part`` (default: the last numbered part); comments and
    layout kept."""
    lines = toc.splitlines(keepends=True)
    parts = [i for i, line in enumerate(lines) if re.match(r"\s*- caption:", line)]
    chosen = None
    for start in parts:
        end = next((p for p in parts if p > start), len(lines))
        block = "".join(lines[start:end])
        caption = re.match(r"\s*- caption:\s*(.*?)\s*$", lines[start])[1].strip("\"'")
        if part is not None and caption == part:
            chosen = (start, end)
        elif part is None and re.search(r"^\s*numbered:\s*true\s*$", block, re.M):
            chosen = (start, end)
    if chosen is None:
        raise ValueError(
            f"part={part!r}: no such part in _toc.yml"
            if part is not None
            else "_toc.yml has no numbered part"
        )
    start, end = chosen
    files = [i for i in range(start, end) if re.match(r"\s*- file:", lines[i])]
    if not files:
        raise ValueError(f"part {lines[start].strip()!r} has no chapter to follow")
    last = files[-1]
    indent = re.match(r"(\s*)", lines[last])[1]
    lines.insert(last + 1, f"{indent}- file: book/{name}\n")
    return "".join(lines)


def new_chapter(
    root: Path,
    name: str,
    title: str | None = None,
    title_fr: str | None = None,
    part: str | None = None,
) -> list[Path]:
    """Write chapter ``name`` into the book in ``root``; return the files
    written or changed."""
    root = Path(root)
    if not isinstance(name, str) or not LABEL.fullmatch(name):
        raise ValueError(
            f"name={name!r}: a chapter's name is its label, kebab-case "
            "(lower-case letters, digits, hyphens), such as 'sparse-attention'"
        )
    page = root / "book" / f"{name}.md"
    toc_path = root / "_toc.yml"
    toc = toc_path.read_text(encoding="utf-8")
    if page.exists() or re.search(
        rf"^\s*- file: book/{re.escape(name)}\s*$", toc, re.M
    ):
        raise ValueError(f"name={name!r}: book/{name}.md or its _toc.yml entry exists")
    title = title or title_of(name)
    new_toc = add_to_toc(toc, name, part)
    written = []
    page.write_text(
        fill((TEMPLATES / "chapter.md").read_text(encoding="utf-8"), name, title),
        encoding="utf-8",
    )
    written.append(page)
    toc_path.write_text(new_toc, encoding="utf-8")
    written.append(toc_path)
    french = TEMPLATES / "chapter.fr.po"
    if french.exists():
        po = root / "locales" / "fr" / "LC_MESSAGES" / "book" / f"{name}.po"
        po.parent.mkdir(parents=True, exist_ok=True)
        text = fill(french.read_text(encoding="utf-8"), name, po_string(title))
        text = text.replace("@@TITLE_FR@@", po_string(title_fr or title))
        po.write_text(text, encoding="utf-8")
        written.append(po)
    return written


def main(argv: list[str], root: Path = Path(".")) -> int:
    parser = argparse.ArgumentParser(prog="make new-chapter NAME=...")
    parser.add_argument("name", help="the chapter's label and file name")
    parser.add_argument("--title", help="its title (default: from the name)")
    parser.add_argument("--title-fr", help="its French title (default: the title)")
    parser.add_argument(
        "--part", help="the caption of its part (default: the last numbered)"
    )
    args = parser.parse_args(argv)
    try:
        written = new_chapter(root, args.name, args.title, args.title_fr, args.part)
    except ValueError as error:
        print(f"new-chapter: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"new-chapter: wrote {path}")
    print(
        "new-chapter: next, `make book` (executes it), then replace its text and "
        "computation; `make translations` and CONTRIBUTING.md, 'Add a chapter'"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
