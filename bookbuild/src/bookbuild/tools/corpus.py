"""``python -m bookbuild.tools.corpus`` (``make corpus``): the book's own prose,
in English and in French, as the training text of the model that writes
(``qkv.experiments.writer``, the chapter *writing*).

Read from the French catalogues of the lessons (the pages of the numbered parts
of ``_toc.yml``, the chapter *writing* itself left out): each prose message's
``msgid`` is the English, its ``msgstr`` the French, so both languages are the
same paragraphs, stripped the same way. Code messages (``msgctxt "code"``) are
left out; in a message, math, inline code and roles are dropped, except the
text a role shows ({term}`softmax`, {term}`requête <query>`) and a link's text;
emphasis marks are removed, their words kept. A message of fewer than
``MIN_WORDS`` words (a label, a title of one word) is left out.

Written to ``src/qkv/experiments/prose/{en,fr}.txt``, one paragraph a line:
package data of ``qkv``, so a reader's notebook trains with ``qkv`` alone, and
nothing is downloaded. A snapshot, refreshed by hand (the trained results'
key holds its text: a refreshed corpus trains again).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from bookbuild.toc import lessons

#: The page whose model reads the corpus: not part of it.
LEFT_OUT = frozenset({"book/writing"})
#: A message with fewer words is a label, not prose.
MIN_WORDS = 4
#: Where the snapshot goes, relative to the repository.
TARGET = Path("src/qkv/experiments/prose")


def prose(text: str) -> str:
    """The prose of one message: markup out, the words a reader sees kept, on
    one line."""
    gap = "\0"  # where a dropped piece was
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", gap, text, flags=re.S)  # math
    text = re.sub(r"\{term\}`([^`<]*?)\s*<[^`>]*>`", r"\1", text)
    text = re.sub(r"\{term\}`([^`]*)`", r"\1", text)  # shows its own text
    text = re.sub(r"\{[\w:.-]+\}`[^`]*`", gap, text)  # other roles
    text = re.sub(r"``.*?``|`[^`]*`", gap, text, flags=re.S)  # inline code
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"<[^>]*>", gap, text)  # HTML
    text = text.replace("**", "").replace("\\", "")
    text = re.sub(r"(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])", "", text)
    text = re.sub(r"\s+", " ", text)
    # what a dropped piece leaves: "the ( )", "word ,"
    text = re.sub(f" ?[{gap}]+ ?", gap, text)
    text = re.sub(f" ?\\({gap}(?:[,;:]{gap}?)?\\)", gap, text)
    text = re.sub(f"{gap}(?=[,.)])", "", text)
    return re.sub(" +", " ", text.replace(gap, " ")).strip()


def _keep(text: str) -> bool:
    return len(re.findall(r"[^\W\d_]{2,}", text)) >= MIN_WORDS


def paragraphs(root: Path) -> dict[str, list[str]]:
    """The prose paragraphs of the lessons, ``{"en": [...], "fr": [...]}``, in
    the book's order; a message is kept in both languages or in neither."""
    from babel.messages.pofile import read_po

    found: dict[str, list[str]] = {"en": [], "fr": []}
    for page in lessons(root):
        if page in LEFT_OUT:
            continue
        po = root / "locales" / "fr" / "LC_MESSAGES" / f"{page}.po"
        with open(po, "rb") as handle:
            catalogue = read_po(handle, charset="utf-8")
        for message in catalogue:
            if not message.id or not isinstance(message.id, str):
                continue  # the header
            if message.context or message.fuzzy or not message.string:
                continue  # code, or French not written yet
            english, french = prose(message.id), prose(message.string)
            if _keep(english) and _keep(french):
                found["en"].append(english)
                found["fr"].append(french)
    return found


def write(root: Path) -> dict[str, Path]:
    """Write the snapshot under ``root / TARGET``; the paths written."""
    folder = root / TARGET
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for language, lines in paragraphs(root).items():
        path = folder / f"{language}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written[language] = path
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    for language, path in write(args.root).items():
        text = path.read_text(encoding="utf-8")
        print(
            f"corpus: {path} ({language}): {len(text)} characters, "
            f"{len(set(text))} distinct, {text.count(chr(10))} paragraphs"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
