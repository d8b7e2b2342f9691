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
