"""`make book EDITION=student`: the same book, without solutions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bookbuild.toc import lessons, pages

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


pytestmark = [pytest.mark.book, pytest.mark.slow]


def test_student_edition_has_no_solution(student_site):
    for page in pages(ROOT):
        html = (student_site / f"{page}.html").read_text(encoding="utf-8")
        assert not re.search(r'class="[^"]*\bsolution\b', html), page
        assert "Solution to" not in html, page
        for box in re.findall(
            r'<div class="question admonition">(.*?)</div>\s*</div>', html, re.S
        ):
            assert "sd-dropdown" not in box, page


def test_student_edition_keeps_everything_else(student_site):
    for page in pages(ROOT):
        full = (HTML / f"{page}.html").read_text(encoding="utf-8")
        student = (student_site / f"{page}.html").read_text(encoding="utf-8")
        assert full.count('class="exercise') == student.count('class="exercise')
        assert full.count("_images/") == student.count("_images/"), page
        if 'class="solution' in full:
            assert len(student) < len(full)
    lesson = (student_site / "book" / "scaled-dot-product.html").read_text("utf-8")
    assert "Question: what happens without the scaling?" in lesson


def solution_code(chapter: str) -> list[str]:
    """The code cells of a chapter's gated solutions, from its source."""
    from bookbuild.tools.chapter_code import code_cells

    text = (ROOT / f"{chapter}.md").read_text(encoding="utf-8")
    blocks = re.findall(r"\{solution-start\}.*?\{solution-end\}", text, re.S)
    return [code for block in blocks for code in code_cells(block)]


def test_student_notebooks_have_no_solution_and_no_answer(student_site):
    import nbformat

    from bookbuild.toc import lessons

    hidden = 0
    for chapter in lessons(ROOT):
        name = f"{Path(chapter).name}.ipynb"
        full = nbformat.read(HTML / "_notebooks" / name, as_version=4)
        student = nbformat.read(student_site / "_notebooks" / name, as_version=4)
        code = [c.source for c in student.cells if c.cell_type == "code"]
        text = "\n".join(c.source for c in student.cells if c.cell_type == "markdown")
        solutions = solution_code(chapter)
        assert solutions, f"{chapter} has no solution code"
        for solution in solutions:
            assert solution.strip() not in code, f"{chapter}: a solution is left"
        hidden += len(solutions)
        assert "**Solution.**" not in text and "**Answer**" not in text, chapter
        assert "**Exercise.**" in text, f"{chapter}: the exercises must stay"
        full_code = [c.source for c in full.cells if c.cell_type == "code"]
        assert set(code) <= set(full_code), chapter
    assert hidden >= 3 * len(lessons(ROOT))


def test_french_student_edition_has_no_solution(student_site):
    french = student_site / "fr"
    for page in pages(ROOT):
        html = (french / f"{page}.html").read_text(encoding="utf-8")
        assert '<html lang="fr"' in html, page
        assert not re.search(r'class="[^"]*\bsolution\b', html), page
        assert "Solution de" not in html and "Solution to" not in html, page
    lesson = (french / "book" / "self-attention.html").read_text("utf-8")
    assert "Exercice 5.1" in lesson and "Question" in lesson
    import nbformat

    for chapter in lessons(ROOT):
        notebook = nbformat.read(
            french / "_notebooks" / f"{Path(chapter).name}.ipynb", as_version=4
        )
        text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        assert "**Solution.**" not in text, chapter
        assert "**Exercice.**" in text, chapter
