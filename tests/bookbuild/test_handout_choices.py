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
