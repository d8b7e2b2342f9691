"""The BibTeX the built pages show (bookbuild.site.citation): version and commit
in every entry, the French edition's entries marked as such. Reads the session's
build; the addresses (set by `make addresses`) are checked on a small book in
tests/bookbuild/test_urls.py."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
import yaml

from bookbuild.site.build_info import commit
from bookbuild.toc import lessons

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.book


def entries(path: Path) -> list[str]:
    """The BibTeX entries of a page, as a reader copies them."""
    text = unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))
    return re.findall(r"@\w+\{attention-computed[^@]*?\n\}", text)


def test_every_entry_carries_the_version_and_the_commit(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    version = yaml.safe_load((ROOT / "CITATION.cff").read_text("utf-8"))["version"]
    built = commit(ROOT)
    assert built != "unknown"
    chapters = lessons(ROOT)
    cite = entries(HTML / "book" / "cite.html")
    assert len(cite) == len(chapters) + 1, len(cite)  # the book, each chapter
    boxes = [entries(HTML / f"{page}.html") for page in chapters[:3]]
    for entry in cite + [box[0] for box in boxes]:
        assert f"Version {version}, commit {built}" in entry, entry
        assert "language =" not in entry and "Édition" not in entry, entry


def test_footer_build_info_and_bibtex_name_the_same_commit(built_book):
    """One marker on the built site, in both languages: the footer (which the
    PDFs print), the build-info page and the BibTeX entries."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    for site in (HTML, HTML / "fr"):
        footer = (site / "book" / "masking.html").read_text(encoding="utf-8")
        markers = set(re.findall(r"· commit (\S+) ·", footer))
        info = (site / "book" / "build-info.html").read_text(encoding="utf-8")
        markers |= set(re.findall(r'"pre">([0-9a-f]{7,40}(?:\+changes)?)<', info))
        cite = entries(site / "book" / "cite.html")
        markers |= {m for e in cite for m in re.findall(r"commit (\S+)\}", e)}
        assert markers == {commit(ROOT)}, (site, markers)


def test_the_french_entries_say_they_cite_the_french_edition(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    chapters = lessons(ROOT)
    cite = entries(HTML / "fr" / "book" / "cite.html")
    assert len(cite) == len(chapters) + 1, len(cite)
    box = entries(HTML / "fr" / f"{chapters[0]}.html")
    for entry in cite + box:
        assert "note = {Édition française. " in entry, entry
        assert "language = {french}," in entry, entry
        assert "commit " in entry, entry


def test_jupyter_books_one_page_build_works_from_the_cache(built_book, tmp_path):
    """`jupyter-book build book/masking.md` (a quick look at one page): no crash
    in our extensions (they find the book's folder above the page's), the
    chapter read from the book's execution cache, not a warning."""
    import os
    import subprocess
    import sys

    assert built_book.returncode == 0, built_book.output[-3000:]
    env = {**os.environ}
    env.pop("MPLBACKEND", None)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build"]
        + ["book/masking.md", "--path-output", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)
    assert done.returncode == 0, log[-3000:]
    assert "Using cached notebook" in log and "Executed notebook" not in log, log
    assert "WARNING" not in log and "build succeeded." in log, log[-3000:]
    page = tmp_path / "_build" / "_page" / "masking" / "html" / "masking.html"
    assert "qkv-cite" not in page.read_text(encoding="utf-8")  # no chapter number
    assert not (ROOT / "book" / "_build").exists()
