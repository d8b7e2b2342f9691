"""`make pdf`: one PDF per chapter, math typeset, figures present, head views
replaced by their static figure; page numbers, the version and commit on the first
page, code wrapped, folded boxes printed open or left out; the site links a PDF only
once it exists. Needs Chromium (skips without it, fails under CI)."""

from __future__ import annotations

import html as html_text
import re
import shutil
import unicodedata
from functools import cache
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from pypdf import PdfReader

from bookbuild.toc import pages
from bookbuild.tools import handouts
from bookbuild.tools.testing import require_chromium

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


# Every chapter printed in both languages: a release check (make release).
pytestmark = [pytest.mark.book, pytest.mark.browser, pytest.mark.release]


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
    total = len(book.pages)
    for number in {1, starts[-1] + 1, total // 2, total}:  # numbered across
        text = " ".join(book.pages[number - 1].extract_text().split())
        assert f"{number} / {total}" in text, number


def test_french_handouts_are_printed_from_the_french_pages(built_book, tmp_path):
    require_chromium()
    chosen = ["book/intro", "book/self-attention"]
    printed = handouts.print_pages(chosen, ROOT, "fr")
    assert [p.parent for p in printed] == [ROOT / "_build" / "pdf" / "fr"] * 2
    text = " ".join(page.extract_text() for page in PdfReader(printed[1]).pages)
    text = " ".join(text.split())
    assert "auto-attention comme couche" in text and "Exercice 5.1" in text
    first = " ".join(PdfReader(printed[1]).pages[0].extract_text().split())
    assert "· construit le " in first  # the French footer of the site, on top
    book = handouts.whole_book(
        printed, ["Introduction", "Auto"], tmp_path / "b.pdf", "L’attention, calculée"
    )
    assert PdfReader(book).metadata.title == "L’attention, calculée"


@cache
def page_texts(path: Path) -> tuple[str, ...]:
    """The text of each page of a PDF (pypdf reads about 5 pages a second: the
    tests below read a few handouts, not all)."""
    return tuple(page.extract_text() for page in PdfReader(path).pages)


def squeezed(text: str) -> str:
    """``text`` without any white space (a wrapped line reads as one) nor
    ligatures (the PDF's "ﬁ" is "fi")."""
    return "".join(unicodedata.normalize("NFKC", text).split())


#: Handouts read whole: short ones, and a chapter with solutions and hidden cells.
READ_WHOLE = ["intro", "faq", "references", "masking", "motivation"]


def test_every_printed_page_has_its_number(pdfs):
    """Chromium's footer: "page / pages" of the handout on each page."""
    for name in READ_WHOLE:
        texts = page_texts(pdfs[name])
        for number, text in enumerate(texts, start=1):
            assert f"{number} / {len(texts)}" in text, (name, number)


def test_the_first_page_names_the_book_its_version_and_commit(pdfs):
    """Under the chapter's title (with its number), the footer line of the site:
    the book, its version, the commit, the build date."""
    from importlib.metadata import version

    from bookbuild.site.build_info import commit

    provenance = f"Attention, Computed {version('qkv')} · commit"
    sha = commit(ROOT)
    for name, path in pdfs.items():
        # NFKC: a font's ligatures ("ﬀ" for "ff", in a sha like 12ffbc0) as letters
        text = unicodedata.normalize("NFKC", PdfReader(path).pages[0].extract_text())
        first = " ".join(text.split())
        assert provenance in first and sha in first, (name, first[:300])
    masking = PdfReader(pdfs["masking"]).pages[0].extract_text()
    assert re.match(r"\d+\. Masking\n", masking), masking[:100]  # its number too


def test_folded_boxes_are_printed_open_or_left_out(pdfs):
    """No "Show code cell source" (a hidden cell's source is left out, its output
    stays); each chapter's "Cite this chapter" box is printed with its BibTeX;
    the default handouts hold no solution and say so on their first page; with
    ``solutions=True`` (``make pdf SOLUTIONS=1``) a solution is printed, not only
    its title, into a folder of its own."""
    for name in READ_WHOLE:
        text = "".join(page_texts(pdfs[name]))
        assert "Show code cell" not in text and "Hide code cell" not in text, name
        if "Cite this chapter" in text:
            after = text.split("Cite this chapter", 1)[1]
            assert "@incollection{" in after, name
    page = (HTML / "book" / "masking.html").read_text(encoding="utf-8")
    assert page.count('<details class="admonition hide above-input"') >= 2
    solution = re.search(
        r'<div class="solution dropdown admonition"[^>]*>.*?</p>\s*<section[^>]*>'
        r"\s*<p>(.*?)</p>",
        page,
        re.S,
    )
    assert solution, "masking has a solution with a paragraph"
    words = squeezed(html_text.unescape(re.sub(r"<[^>]+>", "", solution[1]))[:60])
    assert words not in squeezed("".join(page_texts(pdfs["masking"])))
    for name, path in pdfs.items():
        text = "".join(page_texts(path)) if name in READ_WHOLE else ""
        assert "Solution to" not in text, name
        first = " ".join(PdfReader(path).pages[0].extract_text().split())
        assert "Handout without solutions" in first, name
    (answers,) = handouts.print_pages(["book/masking"], ROOT, solutions=True)
    assert answers.parent == ROOT / "_build" / "pdf" / "solutions"
    printed = squeezed(
        "".join(
            PdfReader(answers).pages[i].extract_text()
            for i in range(len(PdfReader(answers).pages))
        )
    )
    assert words in printed and squeezed("Edition with solutions") in printed


def code_lines(page: str) -> list[str]:
    """Every line of code or text output a printed handout shows: the source of
    a hidden cell, the solutions and the answers of the "Question" boxes are
    left out of it (``handouts.PREPARE``)."""
    soup = BeautifulSoup(page, "html.parser")
    left_out = ".solution, .question details.sd-dropdown, details.hide.above-input"
    for element in soup.select(left_out):
        element.decompose()
    return [
        line for pre in soup.find_all("pre") for line in pre.get_text().splitlines()
    ]


#: Lines far wider than A4 holds (about 90 characters of code), one with
#: spaces (a printed list) and one without (a long token).
WIDE_LINES = (
    "wide = [" + ", ".join(f"{i:03d}" for i in range(40)) + "]",
    "0123456789abcdefghij" * 10,
)


def with_wide_lines(page: str) -> str:
    """A built page with :data:`WIDE_LINES` added to its first block of code
    that is printed (not in a solution or a folded cell)."""
    soup = BeautifulSoup(page, "html.parser")
    left_out = soup.select(
        ".solution, .question details.sd-dropdown, details.hide.above-input"
    )
    printed = (
        pre
        for pre in soup.select(".cell_input pre")
        if not any(pre in box.descendants for box in left_out)
    )
    block = next(printed)
    block.append("\n" + "\n".join(WIDE_LINES))
    return str(soup)


def test_a_line_wider_than_the_paper_wraps_at_the_margin(built_book, tmp_path):
    """Code wraps at the margin instead of running off the paper: lines of
    200 characters and more, put in a copy of a built page, are printed whole
    (printed without the handout's style, they are clipped). The test makes
    its own lines: no chapter's output is relied on to be that wide."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    require_chromium()
    assert all(len(line) >= 200 for line in WIDE_LINES)
    site = handouts.site(tmp_path)
    site.mkdir(parents=True)
    for entry in HTML.iterdir():  # the built site, but for one page more
        if entry.name != "book":
            (site / entry.name).symlink_to(entry)
    (site / "book").mkdir()
    for entry in (HTML / "book").iterdir():
        (site / "book" / entry.name).symlink_to(entry)
    masking = (HTML / "book" / "masking.html").read_text(encoding="utf-8")
    wide = with_wide_lines(masking)
    assert set(WIDE_LINES) <= set(code_lines(wide))
    (site / "book" / "wide-lines.html").write_text(wide, encoding="utf-8")
    [pdf] = handouts.print_pages(["book/wide-lines"], tmp_path)
    printed = squeezed("".join(page_texts(pdf)))
    for line in WIDE_LINES:
        assert squeezed(line) in printed, line


def test_no_line_of_code_is_clipped_at_the_margin(pdfs):
    """The three longest lines of code or output of masking are printed
    whole (the wrapping itself: the test above)."""
    page = "book/masking"
    html = (HTML / f"{page}.html").read_text(encoding="utf-8")
    longest = sorted(code_lines(html), key=len)[-3:]
    printed = squeezed("".join(page_texts(pdfs["masking"])))
    for line in longest:
        assert squeezed(line) in printed, (page, line)


def built_links(site: Path) -> list[tuple[Path, str]]:
    """Every (page, href) of a ``.pdf`` file in the pages of ``site``."""
    return [
        (path, href)
        for path in site.rglob("*.html")
        for href in re.findall(
            r'(?:href|src)="([^"#?]+\.pdf)"', path.read_text(encoding="utf-8")
        )
        if not re.match(r"[a-z][a-z0-9+.-]*:", href)  # not another site's PDF
    ]


def test_the_site_links_no_missing_pdf(built_book):
    """After ``make book`` (and after ``make pdf`` too): every PDF a page links is
    a file of the site. ``make book`` writes no link to a PDF: the introduction's
    words wait for ``make pdf`` to become a link."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    for path, href in built_links(HTML):
        assert (path.parent / href).resolve().is_file(), (path, href)
    for language in ["", "fr"]:
        intro = (HTML / language / "book" / "intro.html").read_text(encoding="utf-8")
        assert 'class="qkv-book-pdf"' in intro, language


def test_make_pdf_links_each_chapter_to_its_handout(pdfs, tmp_path):
    """On a copy of two built pages (English and French): the chapter gets a link
    to its PDF beside its notebook link, the introduction's words link the whole
    book, only to files copied into the site; a second run adds no second link,
    and without a PDF nothing is linked."""
    for language in ["", "fr"]:
        site = tmp_path / (language or "en")
        (site / "book").mkdir(parents=True)
        for page in ["intro", "masking"]:
            shutil.copy(HTML / language / "book" / f"{page}.html", site / "book")
        chapters = ["book/masking"]
        changed = handouts.link_handouts(site, {}, None, chapters, language)
        assert changed == [] and built_links(site) == []
        printed = {"book/masking": pdfs["masking"], "book/intro": pdfs["intro"]}
        for _ in range(2):
            handouts.link_handouts(site, printed, pdfs["intro"], chapters, language)
        links = built_links(site)
        assert sorted(href for _, href in links) == [
            "../_pdf/masking.pdf",
            "../book.pdf",
        ], links
        for path, href in links:
            assert (path.parent / href).resolve().is_file(), (path, href)
        masking = (site / "book" / "masking.html").read_text(encoding="utf-8")
        label = {
            "": "Download this chapter as a PDF",
            "fr": "Télécharger ce chapitre en PDF",
        }
        assert f'href="../_pdf/masking.pdf">{label[language]}</a>' in masking
