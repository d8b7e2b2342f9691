"""The five gaps of this stack in a French edition, each on a page that has it.

The book's chapters have no exercise title and no footnote yet, so a small book
of two pages is built here in English and in French, strictly, with every
construct a translated page can hold: a glued number and a glued phrase in a
translated paragraph, an exercise with a title and its gated solution, a
footnote, a part caption of ``_toc.yml``. Its catalogues are extracted with
``python -m bookbuild.translations extract`` and filled here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po, write_po

from bookbuild.testing import build_book

pytestmark = [pytest.mark.book, pytest.mark.slow]

HEADER = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

LESSON = (
    HEADER
    + """
# Lesson

```{code-cell} ipython3
:tags: [remove-cell]

from IPython.display import Markdown
from myst_nb import glue

glue("answer", 42, display=False)
glue("verdict", Markdown('the winner is "cat" with 0.75'), display=False)
```

The answer is {glue:text}`answer` and {glue:md}`verdict`.

This sentence has a footnote.[^note]

[^note]: The note itself.

```{exercise} Softmax rows
:label: lesson-ex1

Compute the rows.
```

````{solution-start} lesson-ex1
:class: dropdown
````

The rows add up to one.

````{solution-end}
````
"""
)

TOC = """\
format: jb-book
root: index
parts:
  - caption: "Part One: Basics"
    numbered: true
    chapters:
      - file: lesson
"""

CONFIG = """\
title: gaps
only_build_toc_files: true
execute:
  execute_notebooks: cache
sphinx:
  extra_extensions:
    - sphinx_exercise
    - bookbuild.i18n
  config:
    numfig: true
    locale_dirs: [locales]
    gettext_compact: false
    book_languages: {en: English, fr: Français}
    book_translated: {fr: all}
"""

FRENCH = {
    "Home": "Accueil",
    "Welcome.": "Bienvenue.",
    "Part One: Basics": "Première partie : les bases",
    "Lesson": "Leçon",
    "The answer is {glue:text}`answer` and {glue:md}`verdict`.": (
        "La réponse est {glue:text}`answer` et {glue:md}`verdict`."
    ),
    "the winner is {0} with {1}": "le gagnant est {0} avec {1}",
    "This sentence has a footnote.[^note]": "Cette phrase a une note.[^note]",
    "The note itself.": "La note elle-même.",
    "Softmax rows": "Lignes de la softmax",
    "Compute the rows.": "Calculez les lignes.",
    "The rows add up to one.": "Les lignes ont pour somme un.",
}


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bookbuild.translations", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = tmp_path_factory.mktemp("gaps")
    (root / "_config.yml").write_text(CONFIG)
    (root / "_toc.yml").write_text(TOC)
    (root / "index.md").write_text("# Home\n\nWelcome.\n")
    (root / "lesson.md").write_text(LESSON)
    extracted = run(root, "extract")
    assert extracted.returncode == 0, extracted.stdout[-3000:] + extracted.stderr
    pots = {p.stem: p for p in (root / "_build" / "gettext").glob("*.pot")}
    messages = {}
    for page, pot in pots.items():
        with open(pot, "rb") as handle:
            catalogue = read_po(handle)
        messages[page] = [m.id for m in catalogue if m.id]
        for message in catalogue:
            if message.id:
                message.string = FRENCH[message.id]
        po = root / "locales" / "fr" / "LC_MESSAGES" / f"{page}.po"
        po.parent.mkdir(parents=True, exist_ok=True)
        with open(po, "wb") as handle:
            write_po(handle, catalogue)
    built = build_book(root)
    assert built.returncode == 0, built.output[-4000:]
    return root, messages, built


def html(root: Path, page: str, language: str = "") -> str:
    return (root / "_build" / "html" / language / f"{page}.html").read_text("utf-8")


def text(page: str) -> str:
    body = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_every_construct_is_extracted(book):
    _, messages, _ = book
    assert set(messages["lesson"]) == set(FRENCH) - {"Home", "Welcome."} - {
        "Part One: Basics"
    }, "exercise title (gap 2) and glued phrase as a template"
    assert "Part One: Basics" in messages["index"]


def test_the_french_build_is_strict_and_executes_nothing(book):
    _, _, built = book
    assert "build succeeded" in built.translations_output
    assert "WARNING" not in built.translations_output
    assert "Executed notebook" not in built.translations_output


def test_gap1_glued_values_in_a_translated_paragraph(book):
    root, _, _ = book
    french = text(html(root, "lesson", "fr"))
    assert "La réponse est 42 et le gagnant est « cat » avec 0.75." in french
    english = text(html(root, "lesson"))
    assert "The answer is 42 and the winner is “cat” with 0.75." in english


def test_gap2_the_exercise_title_is_translated(book):
    root, _, _ = book
    french = text(html(root, "lesson", "fr"))
    assert "Exercice 1.1 (Lignes de la softmax)" in french
    assert "Softmax rows" not in french


def test_gap3_the_solution_title_in_french(book):
    root, _, _ = book
    page = html(root, "lesson", "fr")
    words = re.sub(r"<[^>]+>", "", page)
    assert "Solution de l’exercice 1.1 (Lignes de la softmax)" in words
    assert "Solution de Exercice" not in words
    assert re.search(r'href="#lesson-ex1">exercice 1\.1 \(Lignes de la softmax\)', page)
    assert "Solution to Exercise 1.1 (Softmax rows)" in text(html(root, "lesson"))


def test_gap4_a_footnote_reference_in_a_translated_paragraph(book):
    root, _, _ = book
    page = html(root, "lesson", "fr")
    assert "[^note]" not in page
    paragraph = re.search(r"<p>Cette phrase a une note\.(.*?)</p>", page, re.S)
    assert paragraph and 'class="footnote-reference' in paragraph.group(1)
    assert "La note elle-même." in text(page)


def test_gap5_the_part_caption_is_translated(book):
    root, _, _ = book
    for page in ("index", "lesson"):
        assert "Première partie" in text(html(root, page, "fr")), page
    assert "Part One: Basics" in text(html(root, "index"))


def test_the_check_passes_then_catches_a_lost_footnote(book):
    root, _, _ = book
    assert run(root, "check", "--no-extract").returncode == 0
    po = root / "locales" / "fr" / "LC_MESSAGES" / "lesson.po"
    original = po.read_text(encoding="utf-8")
    try:
        po.write_text(original.replace("une note.[^note]", "une note."), "utf-8")
        done = run(root, "check", "--no-extract")
        assert done.returncode == 1 and "lost [^note]" in done.stdout, done.stdout
    finally:
        po.write_text(original, encoding="utf-8")
