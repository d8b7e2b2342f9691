"""`make pdf`'s choices, without a browser: the default handouts hold no
solution and say so on their first page, in their language; the handouts with
solutions (``SOLUTIONS=1``) go to a folder of their own; the student edition
with solutions is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookbuild.tools import handouts

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_is_without_solutions():
    assert handouts.options([]) == ("full", False, [])
    assert handouts.options(["book/masking"]) == ("full", False, ["book/masking"])
    assert handouts.options(["--solutions", "book/masking"]) == (
        "full",
        True,
        ["book/masking"],
    )
    assert handouts.options(["--edition", "student"]) == ("student", False, [])


def test_the_student_edition_has_no_solutions_to_print():
    with pytest.raises(ValueError, match="student"):
        handouts.options(["--edition", "student", "--solutions"])
    with pytest.raises(SystemExit, match="student edition has no solution"):
        handouts.main(["--solutions", "--edition", "student"], ROOT)


def test_handouts_with_solutions_never_land_where_the_handouts_are(tmp_path):
    folders = {
        (edition, solutions, language): handouts.pdf_folder(
            tmp_path, language, edition, solutions
        )
        for edition, solutions in handouts.EDITIONS
        for language in ["", "fr"]
    }
    assert folders["full", False, ""] == tmp_path / "_build" / "pdf"
    assert folders["full", True, ""] == tmp_path / "_build" / "pdf" / "solutions"
    assert folders["full", True, "fr"] == tmp_path / "_build/pdf/solutions/fr"
    assert folders["student", False, "fr"] == tmp_path / "_build/pdf/student/fr"
    assert len(set(folders.values())) == len(folders)
    # No folder of handouts without solutions is inside the one with them.
    with_solutions = folders["full", True, ""]
    for (_, solutions, _), folder in folders.items():
        if not solutions:
            assert with_solutions not in folder.parents


def test_the_first_page_says_which_edition_in_its_language():
    english = {key: handouts.edition_label(*key) for key in handouts.EDITIONS}
    french = {key: handouts.edition_label(*key, "fr") for key in handouts.EDITIONS}
    assert english["full", False] == "Handout without solutions"
    assert "with solutions" in english["full", True]
    assert "Student edition" in english["student", False]
    assert french["full", False] == "Polycopié sans les solutions"
    assert "avec les solutions" in french["full", True]
    assert len(set(english.values())) == len(set(french.values())) == 3
    assert not set(french.values()) & set(english.values())


def blank_prints(folder: Path, lengths: list[int]) -> list[Path]:
    """Unnumbered A4 prints of ``lengths`` pages, as Chromium leaves them."""
    from pypdf import PdfWriter

    prints = []
    for index, length in enumerate(lengths):
        writer = PdfWriter()
        for _ in range(length):
            writer.add_blank_page(width=595.92, height=842.88)
        path = folder / handouts.UNNUMBERED / f"chapter-{index}.pdf"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            writer.write(out)
        prints.append(path)
    return prints


def test_the_whole_book_is_numbered_across_its_chapters(tmp_path):
    """Each handout numbers its own pages; the whole book numbers its pages
    from its first to its last ("12 / 14", not the chapter's "3 / 5"), at the
    right of the footer, inside the margin."""
    from pypdf import PdfReader

    lengths = [4, 5, 3, 2]
    prints = blank_prints(tmp_path, lengths)
    numbered = [
        handouts.number_pages([plain], tmp_path / plain.name) for plain in prints
    ]
    for path, length in zip(numbered, lengths, strict=True):
        texts = [page.extract_text() for page in PdfReader(path).pages]
        assert texts == [f"{n} / {length}" for n in range(1, length + 1)], path
    assert handouts.unnumbered(numbered[0]) == prints[0]
    book = PdfReader(
        handouts.whole_book(numbered, ["A", "B", "C", "D"], tmp_path / "book.pdf")
    )
    total = sum(lengths)
    assert [page.extract_text() for page in book.pages] == [
        f"{n} / {total}" for n in range(1, total + 1)
    ]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    marks = [(m.title, book.get_destination_page_number(m)) for m in book.outline]
    assert marks == list(zip("ABCD", starts, strict=True))
    assert book.metadata.title == "Attention, Computed"
    spans = []
    book.pages[11].extract_text(
        visitor_text=lambda text, cm, tm, font, size: (
            text.strip() and spans.append((text, tm[4], tm[5]))
        )
    )
    ((text, x, y),) = spans
    assert text == "12 / 14"
    width = sum(handouts.HELVETICA[c] for c in text) * handouts.NUMBER_SIZE / 1000
    assert x + width == pytest.approx(595.92 - handouts.NUMBER_RIGHT, abs=0.1)
    assert y == pytest.approx(handouts.NUMBER_BASELINE)  # on the footer's baseline


PAGE = """<html><body><article>
<h1>{title}</h1>
<p class="qkv-notebook-link"><a href="../_notebooks/{name}.ipynb" download>Download
this chapter as a notebook</a></p>
<p>Read <span class="qkv-book-pdf">the whole book as one PDF</span>. {body}</p>
</article></body></html>
"""


def small_site(root: Path) -> dict[str, Path]:
    """A built site of two pages (an introduction and a chapter) and their
    printed PDFs, as ``make pdf`` leaves them (recorded, not yet linked)."""
    (root / "_config.yml").write_text("title: Small\n")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\n"
        "parts:\n  - caption: One\n    numbered: true\n"
        "    chapters:\n      - file: book/masking\n"
    )
    html = handouts.site(root)
    (html / "book").mkdir(parents=True)
    (html / "index.html").write_text("<html></html>")
    for name in ["intro", "masking"]:
        page = html / "book" / f"{name}.html"
        page.write_text(PAGE.format(title=name, name=name, body="Text."))
    out = handouts.pdf_folder(root)
    out.mkdir(parents=True)
    printed = {}
    for name in ["intro", "masking", "book"]:
        (out / f"{name}.pdf").write_bytes(b"%PDF-1.7 " + name.encode())
        printed[name] = out / f"{name}.pdf"
    fingerprints = {
        page: handouts.fingerprint(html / f"{page}.html")
        for page in ["book/intro", "book/masking"]
    }
    handouts.record(out, {"pages": fingerprints, "book": fingerprints})
    return printed


def links(html: Path) -> dict[str, list[str]]:
    import re

    return {
        page.stem: re.findall(
            r'<a class="qkv-[a-z-]*" href="([^"]*\.pdf)"', page.read_text()
        )
        for page in sorted((html / "book").glob("*.html"))
    }


def test_a_pdf_is_linked_only_while_it_prints_its_page(tmp_path):
    """``make book`` (``--link``) after ``make pdf``: every PDF linked; after an
    edit rebuilt the chapter, its handout and the whole book are unlinked and
    leave the site (the introduction keeps its own), with one line saying what
    to run; printed again, linked again. Linking changes no page's fingerprint
    nor its time."""
    import os

    html = handouts.site(tmp_path)
    small_site(tmp_path)
    masking = html / "book" / "masking.html"
    before = handouts.fingerprint(masking)
    os.utime(masking, ns=(1_000_000_000, 1_000_000_000))
    linked, stale = handouts.sync_links(tmp_path)
    assert stale == [] and "book/masking" in linked
    assert links(html) == {
        "intro": ["../book.pdf"],
        "masking": ["../_pdf/masking.pdf", "../book.pdf"],
    }
    assert (html / "_pdf" / "masking.pdf").is_file() and (html / "book.pdf").is_file()
    assert handouts.fingerprint(masking) == before
    assert masking.stat().st_mtime_ns == 1_000_000_000
    assert handouts.sync_links(tmp_path)[1] == []  # twice: the same, no link doubled
    assert links(html)["masking"] == ["../_pdf/masking.pdf", "../book.pdf"]

    # An edit: the build writes the chapter again (without links), differently.
    masking.write_text(PAGE.format(title="masking", name="masking", body="New."))
    handouts.main(["--link"], tmp_path)
    assert links(html) == {"intro": [], "masking": []}
    assert not (html / "_pdf" / "masking.pdf").exists()
    assert not (html / "book.pdf").exists()
    assert "qkv-book-pdf" in (html / "book" / "intro.html").read_text()

    # Printed again (make pdf records what it printed): linked again.
    new = {
        page: handouts.fingerprint(html / f"{page}.html")
        for page in ["book/intro", "book/masking"]
    }
    handouts.record(handouts.pdf_folder(tmp_path), {"pages": new, "book": new})
    handouts.sync_links(tmp_path)
    assert links(html)["masking"] == ["../_pdf/masking.pdf", "../book.pdf"]


def test_make_book_says_which_pdfs_are_stale(tmp_path, capsys):
    small_site(tmp_path)
    masking = handouts.site(tmp_path) / "book" / "masking.html"
    masking.write_text(masking.read_text().replace("Text.", "Edited."))
    handouts.main(["--link"], tmp_path)
    out = capsys.readouterr().out
    assert "1 handout(s)" in out and "`make pdf`" in out
