"""`make book EDITION=student`: the same book, without solutions."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from bookbuild.toc import lessons, pages

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


# The student edition is built again from the cache: a release check (make release).
pytestmark = [pytest.mark.book, pytest.mark.slow, pytest.mark.release]


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


SOLUTION = re.compile(r"\{solution-start\}.*?\{solution-end\}", re.S)
ANSWER = re.compile(r"^(:{3,})\{dropdown\} Answer\n(.*?)^\1$", re.S | re.M)


def solution_lines() -> dict[str, tuple[set[str], set[str]]]:
    """Per chapter, the lines only its solutions and answers hold (stripped, at
    least 25 characters, found nowhere else: not in any chapter outside its
    solutions, nor in the package a page may show): (code, prose)."""
    from bookbuild.tools.chapter_code import code_cells

    hidden, elsewhere = {}, set()
    for chapter in lessons(ROOT):
        text = (ROOT / f"{chapter}.md").read_text(encoding="utf-8")
        blocks = [m.group(0) for m in SOLUTION.finditer(text)]
        hidden[chapter] = blocks + [m.group(2) for m in ANSWER.finditer(text)]
        rest = ANSWER.sub("", SOLUTION.sub("", text))
        elsewhere |= {line.strip() for line in rest.splitlines()}
    for module in (ROOT / "src" / "qkv").rglob("*.py"):
        text = module.read_text(encoding="utf-8")
        elsewhere |= {line.strip() for line in text.splitlines()}

    def own(lines) -> set[str]:
        return {
            line.strip()
            for line in lines
            if len(line.strip()) >= 25 and line.strip() not in elsewhere
        }

    found = {}
    for chapter, blocks in hidden.items():
        cells = [cell for block in blocks for cell in code_cells(block)]
        code = own(line for cell in cells for line in cell.splitlines())
        prose = own(line for block in blocks for line in block.splitlines()) - code
        found[chapter] = (code, prose)
    return found


def readable_text(path: Path) -> str | None:
    """What a reader of ``path`` can read: an HTML page's text (tags removed,
    entities resolved), a notebook's cells, a text file as it is; None for the
    rest (images, fonts, compressed inventories)."""
    if path.suffix == ".html":
        return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))
    if path.suffix == ".ipynb":
        import nbformat

        notebook = nbformat.read(path, as_version=4)
        return "\n".join(cell.source for cell in notebook.cells)
    if path.suffix in (".md", ".txt", ".js", ".json", ".py", ".tex", ".bib"):
        return path.read_text(encoding="utf-8", errors="replace")
    return None


def test_no_file_of_the_student_site_holds_a_solution(student_site):
    """Every file of the student edition, both languages (pages, notebooks,
    sources, search index, scripts): no line that only a solution or an answer
    holds. Code lines are looked for everywhere, prose lines in the files that
    keep the source's markup (a page renders roles and math)."""
    fingerprints = solution_lines()
    code = set().union(*(c for c, _ in fingerprints.values()))
    prose = set().union(*(p for _, p in fingerprints.values()))
    assert len(code) > 100 and len(prose) > 50, (len(code), len(prose))
    # The fingerprints find what they look for: in the full edition's page of a
    # chapter, its solutions' code is there.
    full_page = readable_text(HTML / "book" / "masking.html").splitlines()
    full_lines = {line.strip() for line in full_page}
    assert len(full_lines & fingerprints["book/masking"][0]) > 5

    leaks, files = [], 0
    for path in sorted(student_site.rglob("*")):
        text = readable_text(path) if path.is_file() else None
        if text is None:
            continue
        files += 1
        lines = {line.strip() for line in text.splitlines()}
        raw = path.suffix not in (".html", ".ipynb")
        found = sorted(lines & (code | prose if raw else code))
        if found:
            where = path.relative_to(student_site)
            leaks.append(f"{where}: {len(found)} solution lines, e.g. {found[0]!r}")
    assert files > 100, files
    assert not leaks, "\n".join(leaks)


def test_the_student_pages_offer_no_source_download(student_site):
    """No "download the source" button (it served _sources/, solutions and all),
    and no _sources/ folder; the notebook link stays."""
    assert not (student_site / "_sources").exists()
    assert not (student_site / "fr" / "_sources").exists()
    for page in lessons(ROOT):
        for site in (student_site, student_site / "fr"):
            text = (site / f"{page}.html").read_text(encoding="utf-8")
            assert "download-source-button" not in text, page
            assert "_sources/" not in text, page
            assert "_notebooks/" in text, page
    full = (HTML / "book" / "masking.html").read_text(encoding="utf-8")
    assert "download-source-button" in full  # the full edition keeps it


def test_student_decks_hold_no_solution(student_site):
    """The lecture decks of the student edition (bookbuild.site.slides), in both
    languages: the exercises as questions, no solution; the full edition's decks
    have the solutions the student's lack."""
    checked = 0
    for language, label in (("", "Solution to"), ("fr", "Solution de")):
        folder = student_site / language / "slides"
        decks = sorted(folder.glob("*.html"))
        assert len(decks) == len(lessons(ROOT)), folder
        for deck in decks:
            text = deck.read_text(encoding="utf-8")
            assert 'data-qkv-kind="solution"' not in text, deck
            assert not re.search(r'class="[^"]*\bsolution\b', text), deck
            assert label not in text and "Solution to" not in text, deck
            full = (HTML / language / "slides" / deck.name).read_text("utf-8")
            assert text.count('data-qkv-kind="exercise"') == full.count(
                'data-qkv-kind="exercise"'
            )
            checked += 'data-qkv-kind="solution"' in full
    assert checked >= 6  # three marked chapters, two languages
