"""The gaps of this stack in a French edition, each on a page that has it.

The book's chapters have no exercise title and no footnote yet, so a small book
of two pages is built here in English and in French, strictly, with every
construct a translated page can hold: a glued number and a glued phrase in a
translated paragraph, an exercise with a title and its gated solution, a
footnote, a part caption of ``_toc.yml``, a glued figure and a figure with alt
texts, glued numbers of every format (written the French way on French pages),
a value glued from another page. Its catalogues are extracted with
``python -m bookbuild.i18n.translations extract`` and filled here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
from babel.messages.pofile import read_po, write_po

from bookbuild.i18n.messages import NBSP, NNBSP
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book, write_small_book

pytestmark = [pytest.mark.book, pytest.mark.slow]


LESSON = (
    MYST_NOTEBOOK
    + """
# Lesson

```{code-cell} ipython3
:tags: [remove-cell]

from IPython.display import Markdown
from myst_nb import glue

glue("answer", 42, display=False)
glue("verdict", Markdown('the winner is "cat" with 0.75 of 12,288'), display=False)
glue("sum", Markdown("0.25 + 0.5 = 0.75 (`x = 0.5`)"), display=False)
```

The answer is {glue:text}`answer` and {glue:md}`verdict`.

{glue:md}`verdict`

The sum is {glue:md}`sum`.

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

```{code-cell} ipython3
:tags: [remove-cell]

import matplotlib.pyplot as plt

glue("big", 3168, display=False)
glue("share", 0.17412, display=False)
glue("tiny", 1e-6, display=False)
glue("rate", 0.125, display=False)
glue("count", 1024, display=False)
glue("torch", "2.13.0", display=False)
glue("word", "cat", display=False)
figure, axes = plt.subplots(figsize=(2, 1))
axes.bar([0, 1], [0.25, 0.75])
glue("bars", figure, display=False)
plt.close(figure)
```

The model has {glue:text}`big:,` weights, a share of {glue:text}`share:.3f`, an
error of {glue:text}`tiny:.1e`, a rate of {glue:text}`rate:.1%`,
{glue:text}`count` tokens, version {glue:text}`torch` and the word
{glue:text}`word`.

```{glue:figure} bars
:name: fig-bars
:alt: Two bars, the second one three times as tall as the first.

Two weights; the first is {glue:text}`share:.3f`.
```

```{figure} square.svg
:name: fig-square
:alt: A grey square.

A square drawn by hand.
```
"""
)

INDEX = """\
# Home

Welcome.

The lesson has {glue:text}`lesson.md::big:,` weights.
"""

SQUARE = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    '<rect width="10" height="10" fill="grey"/></svg>'
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

EXTENSIONS = ["sphinx_exercise", "bookbuild.execute.cache", "bookbuild.i18n.languages"]
SPHINX_CONFIG = """\
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
    "the winner is {0} with {1} of {2}": "le gagnant est {0} avec {1} sur {2}",
    "The sum is {glue:md}`sum`.": "La somme vaut {glue:md}`sum`.",
    "This sentence has a footnote.[^note]": "Cette phrase a une note.[^note]",
    "The note itself.": "La note elle-même.",
    "Softmax rows": "Lignes de la softmax",
    "Compute the rows.": "Calculez les lignes.",
    "The rows add up to one.": "Les lignes ont pour somme un.",
    "The model has {glue:text}`big:,` weights, a share of {glue:text}`share:.3f`, "
    "an error of {glue:text}`tiny:.1e`, a rate of {glue:text}`rate:.1%`, "
    "{glue:text}`count` tokens, version {glue:text}`torch` and the word "
    "{glue:text}`word`.": (
        "Le modèle a {glue:text}`big:,` poids, une part de {glue:text}`share:.3f`,"
        " une erreur de {glue:text}`tiny:.1e`, un taux de {glue:text}`rate:.1%`, "
        "{glue:text}`count` jetons, la version {glue:text}`torch` et le mot "
        "{glue:text}`word`."
    ),
    "Two bars, the second one three times as tall as the first.": (
        "Deux barres, la seconde trois fois plus haute que la première."
    ),
    "Two weights; the first is {glue:text}`share:.3f`.": (
        "Deux poids ; le premier vaut {glue:text}`share:.3f`."
    ),
    "A grey square.": "Un carré gris.",
    "A square drawn by hand.": "Un carré dessiné à la main.",
    "The lesson has {glue:text}`lesson.md::big:,` weights.": (
        "La leçon a {glue:text}`lesson.md::big:,` poids."
    ),
}
INDEX_MESSAGES = {
    "Home",
    "Welcome.",
    "Part One: Basics",
    "The lesson has {glue:text}`lesson.md::big:,` weights.",
}


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bookbuild.i18n.translations", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    root = write_small_book(
        tmp_path_factory.mktemp("gaps"),
        {"index": INDEX, "lesson": LESSON},
        title="gaps",
        toc=TOC,
        extensions=EXTENSIONS,
        sphinx_config=SPHINX_CONFIG,
        files={"square.svg": SQUARE},
    )
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
    # As make book: the prefill executes the chapters, in English and in French
    # (its code runs in French: bookbuild.i18n.code), then Sphinx reads them.
    built = build_book(root, prefill=True)
    assert built.returncode == 0, built.output[-4000:]
    return root, messages, built


def html(root: Path, page: str, language: str = "") -> str:
    return (root / "_build" / "html" / language / f"{page}.html").read_text("utf-8")


def text(page: str) -> str:
    body = re.sub(r"<script.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def words(page: str) -> str:
    """The text of a page as a reader sees it: tags removed, entities read,
    runs of ASCII spaces as one (no-break spaces kept)."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"[ \t\r\n]+", " ", unescape(re.sub(r"<[^>]+>", "", body)))


def test_every_construct_is_extracted(book):
    _, messages, _ = book
    assert set(messages["lesson"]) == set(FRENCH) - INDEX_MESSAGES, (
        "exercise title (gap 2), glued phrase as a template, alt texts (gap 6)"
    )
    assert set(messages["index"]) == INDEX_MESSAGES


def test_the_french_build_is_strict_and_executes_nothing(book):
    _, _, built = book
    assert "build succeeded" in built.translations_output
    assert "WARNING" not in built.translations_output
    assert "Executed notebook" not in built.translations_output


def test_gap1_glued_values_in_a_translated_paragraph(book):
    root, _, _ = book
    french = words(html(root, "lesson", "fr"))
    assert (
        f"La réponse est 42 et le gagnant est «{NBSP}cat{NBSP}» avec 0,75 sur "
        f"12{NNBSP}288." in french
    )
    english = words(html(root, "lesson"))
    assert "The answer is 42 and the winner is “cat” with 0.75 of 12,288." in english


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


def test_gap6_figure_alt_texts_are_messages_translated_on_french_pages(book):
    root, messages, _ = book
    alts = {"Two bars, the second one three times as tall as the first.": "bars"}
    alts["A grey square."] = "square"
    for alt in alts:
        assert alt in messages["lesson"], alt
    french, english = html(root, "lesson", "fr"), html(root, "lesson")
    french_alts = re.findall(r'<img [^>]*alt="([^"]*)"', french)
    english_alts = re.findall(r'<img [^>]*alt="([^"]*)"', english)
    assert sorted(english_alts) == sorted(alts), english_alts
    assert sorted(french_alts) == [
        "Deux barres, la seconde trois fois plus haute que la première.",
        "Un carré gris.",
    ]


def test_glued_numbers_are_written_the_french_way_on_french_pages(book):
    root, _, _ = book
    french, english = words(html(root, "lesson", "fr")), words(html(root, "lesson"))
    assert (
        "The model has 3,168 weights, a share of 0.174, an error of "
        f"1.0{NNBSP}×{NNBSP}10⁻⁶, a rate of 12.5%, 1,024 tokens, version 2.13.0 and "
        "the word cat." in english
    )  # one rule on both sites: powers of ten, thousands from four digits
    assert (
        f"Le modèle a 3{NNBSP}168 poids, une part de 0,174, une erreur de "
        f"1,0{NNBSP}×{NNBSP}10⁻⁶, un taux de 12,5{NNBSP}%, 1{NNBSP}024 jetons, la "
        "version 2.13.0 et le mot cat." in french
    )
    assert "Deux poids ; le premier vaut 0,174." in french.replace(NNBSP, " ")
    assert "Two weights; the first is 0.174." in english
    # Pasted from another page (myst-nb resolves it after the page is read).
    assert f"La leçon a 3{NNBSP}168 poids." in words(html(root, "index", "fr"))
    assert "The lesson has 3,168 weights." in words(html(root, "index"))


def test_glued_phrases_on_french_pages_have_french_numbers_and_quotes(book):
    root, _, _ = book
    french, english = words(html(root, "lesson", "fr")), words(html(root, "lesson"))
    # Not a message (no words): only its numbers, never inside code.
    assert "La somme vaut 0,25 + 0,5 = 0,75 (x = 0.5)." in french
    assert "The sum is 0.25 + 0.5 = 0.75 (x = 0.5)." in english
    # A glued phrase alone in its paragraph is translated too.
    assert french.count(f"le gagnant est «{NBSP}cat{NBSP}» avec 0,75 sur ") == 2
