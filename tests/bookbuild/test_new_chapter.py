"""`make new-chapter NAME=...` (bookbuild.tools.new_chapter): in a copy of the
book's sources, the chapter it writes passes every test of
``tests/test_chapters.py`` and the ruff check of the chapters' code, and takes
its place at the end of the last numbered part; a bad name is refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.i18n import terminology
from bookbuild.site import slides
from bookbuild.toc import lessons
from bookbuild.tools import chapter_code, new_chapter
from bookbuild.tools.testing import wheel_files

ROOT = Path(__file__).resolve().parents[2]

# Runs the chapter tests (every chapter, in a subprocess) and ruff on a copy.
pytestmark = pytest.mark.slow


@pytest.fixture
def copy(tmp_path):
    """The book's sources (what the chapter tests read) in ``tmp_path``."""
    for name in ["_toc.yml", "_config.yml", "references.bib", "pyproject.toml"]:
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ["book", "locales"]:
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_chapters.py", tmp_path / "tests")
    return tmp_path


def test_a_new_chapter_passes_every_chapter_test(copy):
    before = lessons(copy)
    written = new_chapter.new_chapter(copy, "sparse-attention", "Sparse attention")
    assert copy / "book" / "sparse-attention.md" in written
    assert lessons(copy) == [*before, "book/sparse-attention"]
    text = (copy / "book" / "sparse-attention.md").read_text(encoding="utf-8")
    assert "(sparse-attention)=\n# Sparse attention\n" in text and "@@" not in text
    items = slides.chosen_items(copy / "book" / "sparse-attention.md")
    assert items == ["fig-sparse-attention-weights", "sparse-attention-ex1"]
    for label in items:  # its deck's items are its own (test_slides' rule)
        assert f":name: {label}\n" in text or f":label: {label}\n" in text
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "sparse-attention",
            "tests/test_chapters.py",
        ],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "sparse-attention" not in done.stdout.split(
        "short test summary"
    )[-1].replace("passed", "")
    code, output = chapter_code.check(copy)
    assert code == 0, output


def test_its_french_catalogue_translates_every_message(copy):
    """The catalogue written beside it: every message translated, its title
    (quotes escaped), French typography (a narrow no-break space, never a
    plain one, before : ; ? !), the chapter's keys in its messages. Its
    messages are those the French build extracts from the template (checked
    against an extraction when the template was written; the French check of
    ``make test`` checks a committed chapter's)."""
    import re

    from babel.messages.pofile import read_po

    new_chapter.new_chapter(copy, "sparse-attention", 'A "sparse" one', "Éparse")
    po = copy / "locales" / "fr" / "LC_MESSAGES" / "book" / "sparse-attention.po"
    with po.open("rb") as file:
        messages = [m for m in read_po(file) if m.id]
    translations = {m.id: m.string for m in messages}
    assert len(messages) >= 20 and "@@" not in po.read_text(encoding="utf-8")
    assert translations['A "sparse" one'] == "Éparse"
    assert all(m.string and not m.fuzzy for m in messages), po
    for text in translations.values():
        assert not re.search(r" [:;?!]", text), text
    found = terminology.problems(copy, "fr")
    assert not [problem for problem in found if "sparse" in problem[0]], found
    text = (copy / "book" / "sparse-attention.md").read_text(encoding="utf-8")
    for key in re.findall(r"`(sparse-attention-[a-z]+)", " ".join(translations)):
        assert key in text, key


def test_bad_names_and_parts_are_refused(copy):
    for name in ["Sparse", "sparse_attention", "3-heads", "", "masking"]:
        with pytest.raises(ValueError, match="name="):
            new_chapter.new_chapter(copy, name)
    with pytest.raises(ValueError, match="part='Part IX'"):
        new_chapter.new_chapter(copy, "sparse", part="Part IX")
    assert not (copy / "book" / "sparse.md").exists()
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert (copy / "_toc.yml").read_text(encoding="utf-8") == toc
    assert new_chapter.main(["Bad Name"], copy) == 2


def test_a_part_can_be_chosen():
    toc = (
        "parts:\n  - caption: A\n    numbered: true\n    chapters:\n"
        "      - file: book/a\n  - caption: B\n    numbered: true\n"
        "    chapters:\n      - file: book/b\n"
    )
    assert "book/a\n      - file: book/new\n" in new_chapter.add_to_toc(toc, "new", "A")
    assert toc.replace("book/b\n", "book/b\n      - file: book/new\n") == (
        new_chapter.add_to_toc(toc, "new")
    )


@pytest.mark.slow
def test_the_wheel_of_bookbuild_holds_the_templates(tmp_path):
    """A non-editable install of bookbuild can make a chapter: its wheel holds
    the templates (package data) and the compiled catalogue, built from a copy
    of the sources (the build leaves nothing in the repository)."""
    names = wheel_files(ROOT / "bookbuild", ["pyproject.toml"], "bookbuild", tmp_path)
    for template in sorted(new_chapter.TEMPLATES.iterdir()):
        assert f"bookbuild/tools/templates/{template.name}" in names, template.name
    assert "bookbuild/locale/fr/LC_MESSAGES/bookbuild.mo" in names
