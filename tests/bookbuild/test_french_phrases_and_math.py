"""No silent English, and French numbers in formulas (issue 24).

A glued phrase chosen by the machine (a :class:`qkv.page.verdicts.Phrase`)
carries its whole table; the French build fails (a warning under ``-W``) when
any phrase of the table has no translation, not only the one this machine
measured. Formulas on a French page write ``2{,}3``, ``4\\,096`` and separate a
list of decimals with a semicolon; a translated share may be shown as a
percentage (``:.3f`` -> ``:.1%``). Unit tests first (no build), then one small
book built in French with a phrase of the table missing (that a complete table
passes, the unit tests and the book's own strict build show).
"""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from bookbuild.i18n.checks import markup_problems
from bookbuild.i18n.glue import PHRASES_MIME, untranslated
from bookbuild.i18n.messages import NNBSP
from bookbuild.i18n.numbers import localise_math
from bookbuild.tools.testing import MYST_NOTEBOOK

SPEED = ("{0} times faster than", "about as fast as", "{0} times slower than")
FRENCH_SPEED = {
    "{0} times faster than": "{0} fois plus rapide que",
    "about as fast as": "à peu près aussi rapide que",
    "{0} times slower than": "{0} fois moins rapide que",
}


# -- formulas --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("english", "french"),
    [
        ("2.3", "2{,}3"),
        (r"e^{0.5} \approx", r"e^{0{,}5} \approx"),
        (r"\mathbf{v} = (1.0, 0.0, 0.5)", r"\mathbf{v} = (1{,}0\,; 0{,}0\,; 0{,}5)"),
        (
            r"\begin{bmatrix} 0.43 & -0.15 \end{bmatrix}",
            r"\begin{bmatrix} 0{,}43 & -0{,}15 \end{bmatrix}",
        ),
        ("T = 4,096", r"T = 4\,096"),
        ("(2, 6)", "(2, 6)"),  # integers: a comma still separates them
        ("x_{i,j} = 1", "x_{i,j} = 1"),
        ("2.13.0", "2.13.0"),  # a version
        (r"\sqrt{12.5}", r"\sqrt{12{,}5}"),
    ],
)
def test_formulas_have_french_numbers(english, french):
    assert localise_math(english, "fr") == french
    assert localise_math(english, "fr_CA") == french
    assert localise_math(english, "en") == english


def test_a_translated_share_may_become_a_percentage():
    source = "right {glue:text}`acc:.3f` of the time"
    assert markup_problems(source, "juste dans {glue:text}`acc:.1%` des cas") == []
    assert markup_problems(source, "juste dans {glue:text}`other:.1%` des cas")
    assert markup_problems("{glue:text}`n:,` words", "{glue:text}`n` mots")


# -- glued phrases without a translation -------------------------------------------


def glued(text: str, table: tuple[str, ...] | None = None) -> dict:
    data = {"text/markdown": text}
    if table is not None:
        data[PHRASES_MIME] = {"phrases": list(table)}
    return {"data": data}


def test_every_phrase_of_a_declared_table_needs_a_translation():
    data = {"speed": glued("3.8 times faster than", SPEED)}
    assert untranslated(data, ["speed"], FRENCH_SPEED) == {}
    # The phrase this machine measured is translated, another one is not:
    # another machine would show English.
    partial = {k: v for k, v in FRENCH_SPEED.items() if "slower" not in k}
    assert untranslated(data, ["speed"], partial) == {
        "speed": ["{0} times slower than"]
    }
    # A key no {glue:md} role shows needs nothing.
    assert untranslated(data, [], partial) == {}


def test_a_glued_phrase_needs_its_own_translation():
    data = {
        "said": glued('the winner is "cat"'),
        "sum": glued("0.25 + 0.5 = 0.75"),  # no words: nothing to translate
        "shape": glued("`(2, 6)`"),
    }
    keys = ["said", "sum", "shape"]
    assert untranslated(data, keys, {}) == {"said": ["the winner is {0}"]}
    assert untranslated(data, keys, {"the winner is {0}": "le gagnant est {0}"}) == {}
    # A translation asking for a value the phrase does not have shows English.
    wrong = {"the winner is {0}": "le gagnant est {0} ({1})"}
    assert untranslated(data, keys, wrong) == {"said": ["the winner is {0}"]}


# -- a small book, built in French -------------------------------------------------

LESSON = (
    MYST_NOTEBOOK
    + """
# Lesson

```{code-cell} ipython3
:tags: [remove-cell]

from myst_nb import glue
from qkv.page.verdicts import Phrase

SPEED = ("{0} times faster than", "about as fast as", "{0} times slower than")
glue("speed", Phrase(SPEED, 0, "3.8"), display=False)
glue("share", 1.0, display=False)
```

"""
)
PARAGRAPH = (
    "The fused kernel is {glue:md}`speed` the naive one, at $T = 4,096$ with "
    "scores $2.3$ and $0.5$, right {glue:text}`share:.3f` of the time."
)
LESSON += PARAGRAPH + "\n"
FRENCH = {
    "Home": "Accueil",
    "Lesson": "Leçon",
    PARAGRAPH: (
        "Le noyau fusionné est {glue:md}`speed` la version naïve, pour "
        "$T = 4,096$ avec les scores $2.3$ et $0.5$, juste dans "
        "{glue:text}`share:.0%` des cas."
    ),
    **FRENCH_SPEED,
}
TOC = """\
format: jb-book
root: index
chapters:
  - file: lesson
"""


def write_catalogue(root: Path, page: str, messages: dict[str, str]) -> None:
    catalogue = Catalog(locale="fr")
    for msgid, msgstr in messages.items():
        catalogue.add(msgid, msgstr)
    po = root / "locales" / "fr" / "LC_MESSAGES" / f"{page}.po"
    po.parent.mkdir(parents=True, exist_ok=True)
    with open(po, "wb") as handle:
        write_po(handle, catalogue)


def build_french(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bookbuild.build", "build"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_french_build_fails_on_a_phrase_of_the_table_left_in_english(small_book):
    root = small_book(
        {"index": "# Home\n", "lesson": LESSON},
        toc=TOC,
        extensions=["bookbuild.i18n.languages"],
        sphinx_config=(
            "locale_dirs: [locales]\ngettext_compact: false\n"
            "book_languages: {en: English, fr: Français}\n"
        ),
    )
    write_catalogue(root, "index", {"Home": "Accueil"})
    # This machine measured "faster", translated; "slower" is not.
    lacking = {k: v for k, v in FRENCH.items() if "slower" not in k}
    write_catalogue(root, "lesson", lacking)
    failed = build_french(root)
    log = failed.stdout + failed.stderr
    assert failed.returncode != 0, log[-3000:]
    assert "glued phrase 'speed' has no fr translation" in log, log[-3000:]
    assert "{0} times slower than" in log
    assert "about as fast as" not in log  # translated: not reported

    # --keep-going: the page is written all the same, French where translated.
    html = (root / "_build" / "html" / "fr" / "lesson.html").read_text("utf-8")
    page = unescape(re.sub(r"<[^>]+>", "", html))
    assert "3,8 fois plus rapide que la version naïve" in page
    assert r"T = 4\,096" in page and r"2{,}3" in page and r"0{,}5" in page
    assert f"juste dans 100{NNBSP}% des cas" in page


def test_a_french_notebook_writes_its_formulas_the_french_way():
    from bookbuild.site.notebooks import localise_formulas

    text = "Scores $2.3$ and $0.5$, $$T = 4,096$$; 2.5 outside, $(2, 6)$."
    assert localise_formulas(text, "fr") == (
        r"Scores $2{,}3$ and $0{,}5$, $$T = 4\,096$$; 2.5 outside, $(2, 6)$."
    )
    assert localise_formulas(text, "en") == text
