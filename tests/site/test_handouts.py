"""`make pdf`: one PDF per chapter, math typeset, figures present, head views
replaced by their static figure. Needs Chromium (skips without it, fails under CI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from bookbuild.toc import pages
from bookbuild.tools import handouts
from bookbuild.tools.testing import require_chromium

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


pytestmark = [pytest.mark.book, pytest.mark.browser]


@pytest.fixture(scope="module")
def pdfs(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    require_chromium()
    return {path.stem: path for path in handouts.print_pages(pages(ROOT), ROOT)}


def test_every_chapter_is_printed(pdfs):
    assert set(pdfs) == {page.split("/")[-1] for page in pages(ROOT)}
    for name, path in pdfs.items():
        reader = PdfReader(path)
        assert len(reader.pages) >= 1, name
        assert path.read_bytes()[:5] == b"%PDF-"


def test_handout_has_its_title_text_and_figures(pdfs):
    reader = PdfReader(pdfs["attention-by-hand"])
    text = "".join(page.extract_text() for page in reader.pages)
    assert "Attention by hand" in text and "Exercises" in text
    html = (HTML / "book" / "attention-by-hand.html").read_text(encoding="utf-8")
    figures = set(re.findall(r"Fig\. \d+\.\d+", re.sub(r"<[^>]+>", "", html)))
    assert figures, "the page has numbered figures"
    for figure in figures:  # every figure's caption is printed (the script checks
        assert figure in text, figure  # that every image loaded)


def test_head_view_prints_as_its_static_figure(pdfs):
    reader = PdfReader(pdfs["pretrained-model"])
    text = "".join(page.extract_text() for page in reader.pages)
    assert "Inside a pretrained model" in text
    assert "Hover or focus" not in text  # the interactive part is hidden in print
    assert sum(len(page.images) for page in reader.pages) >= 1  # the static PNG


def test_the_whole_book_has_every_chapter_in_order_with_a_bookmark_each(pdfs, tmp_path):
    """``make pdf``'s ``book.pdf``: the handouts in the order of ``_toc.yml``, one
    bookmark per chapter on its first page, the book's title."""
    from bookbuild.site.citation import title_of

    order = pages(ROOT)
    handouts_in_order = [pdfs[page.split("/")[-1]] for page in order]
    titles = [title_of(ROOT, page) for page in order]
    book = PdfReader(
        handouts.whole_book(handouts_in_order, titles, tmp_path / "book.pdf")
    )
    lengths = [len(PdfReader(path).pages) for path in handouts_in_order]
    assert len(book.pages) == sum(lengths)
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    marks = [
        (item.title, book.get_destination_page_number(item)) for item in book.outline
    ]
    assert marks == list(zip(titles, starts, strict=True))
    assert book.metadata.title == "Attention, Computed"


def test_french_handouts_are_printed_from_the_french_pages(built_book, tmp_path):
    require_chromium()
    chosen = ["book/intro", "book/self-attention"]
    printed = handouts.print_pages(chosen, ROOT, "fr")
    assert [p.parent for p in printed] == [ROOT / "_build" / "pdf" / "fr"] * 2
    text = " ".join(page.extract_text() for page in PdfReader(printed[1]).pages)
    text = " ".join(text.split())
    assert "auto-attention comme couche" in text and "Exercice 5.1" in text
    book = handouts.whole_book(
        printed, ["Introduction", "Auto"], tmp_path / "b.pdf", "L’attention, calculée"
    )
    assert PdfReader(book).metadata.title == "L’attention, calculée"
