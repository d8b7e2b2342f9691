"""The chapters' code in the page's language (bookbuild.i18n.code): the comments
and strings a reader reads are messages of the page's catalogue; a translation
executes its own chapter, whose code prints and draws in its language."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from bookbuild.i18n import code
from bookbuild.tools.testing import MYST_NOTEBOOK

CELL = """\
import qkv

# The weights of each word, one row per query:
#   rows are queries, columns keys
weights = [0.25, 0.75]  # two keys
names = {"dot": 1}  # a key the code reads: one word, not shown
print(f"largest weight: {max(weights):.2f}")
label = "it's short"
"""


def messages_of(cell: str, shown: bool = True) -> list[tuple[str, str]]:
    return [(u.kind, u.msgid) for u in code.units(cell, shown=shown)]


def test_a_cell_has_its_comments_and_the_strings_a_reader_reads():
    assert messages_of(CELL) == [
        (
            "comment",
            "The weights of each word, one row per query:\n  rows are "
            "queries, columns keys",
        ),
        ("comment", "two keys"),
        ("comment", "a key the code reads: one word, not shown"),
        ("string", "largest weight: {max(weights):.2f}"),
        ("string", "it's short"),
    ]
    # A cell the page does not show: its strings only (labels, printed text).
    hidden = messages_of(CELL, shown=False)
    assert [kind for kind, _ in hidden] == ["string", "string"]
    # One word given to what shows text is a message; a key is not.
    labels = 'ax.set_xlabel("step")\nplot(x, label="loss")\nd["loss"]\n'
    assert messages_of(labels) == [("string", "step"), ("string", "loss")]


def test_prose_comments_are_joined_and_rewrapped():
    block = "# one two\n# three four\nx = 1\n"
    assert messages_of(block) == [("comment", "one two three four")]
    long = "un " * 40
    translated = code.translate_cell(block, {"one two three four": long.strip()})
    lines = translated.splitlines()
    assert len(lines) > 2 and all(len(line) <= code.SHOWN_WIDTH for line in lines)
    assert all(line.startswith("# ") for line in lines[:-1])
    assert lines[-1] == "x = 1"


def test_a_translated_cell_is_still_python():
    french = {
        "largest weight: {max(weights):.2f}": "plus grand poids : {max(weights):.2f}",
        "it's short": 'c\'est "court"',
        "two keys": "deux clés",
        "a key the code reads: one word, not shown": "une clé",
        "The weights of each word, one row per query:\n  rows are queries, "
        "columns keys": "Les poids de chaque mot, une ligne par requête :\n  "
        "lignes : requêtes, colonnes : clés",
    }
    translated = code.translate_cell(CELL, french)
    tree = ast.parse(translated)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    assert 'c\'est "court"' in strings
    assert "# Les poids de chaque mot, une ligne par requête :" in translated
    assert "#   lignes : requêtes, colonnes : clés" in translated
    assert "weights = [0.25, 0.75]  # deux clés" in translated
    assert 'f"plus grand poids : {max(weights):.2f}"' in translated
    assert 'names = {"dot": 1}' in translated  # the code is untouched


def test_a_translated_page_sets_qkv_s_language_in_its_first_cell():
    page = (
        MYST_NOTEBOOK + "# Lesson\n\n```{code-cell} ipython3\nx = 1  # one\n```\n\n"
        "```{code-cell} ipython3\nprint('two words')\n```\n"
    )
    translated = code.translate_code(page, {"one": "un"}, "fr")
    cells = [m.group("code") for m, _, _ in code.code_cells(translated)]
    assert cells[0] == 'import qkv\nqkv.set_language("fr")\n\nx = 1  # un\n'
    imports = "import torch\n\nimport qkv\n\ntorch.manual_seed(0)\n"
    assert code.with_language(imports, "fr") == (
        'import torch\n\nimport qkv\n\nqkv.set_language("fr")\n\ntorch.manual_seed(0)\n'
    )
    assert cells[1] == "print('two words')\n"  # no translation: kept


def test_the_check_names_what_a_translation_breaks(tmp_path):
    cell = "```{code-cell} ipython3\nprint(f'{n} steps done')\n```\n"
    page = MYST_NOTEBOOK + "# L\n\n" + cell
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "lesson.md").write_text(page, encoding="utf-8")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/lesson\n", encoding="utf-8"
    )
    write_code_catalogue(tmp_path, "book/lesson", {"{n} steps done": "{m} étapes"})
    found = code.problems(tmp_path, "fr")
    assert [what for _, what, _ in found] == ["f-string fields differ"]
    write_code_catalogue(tmp_path, "book/lesson", {})
    found = code.problems(tmp_path, "fr")
    assert [what for _, what, _ in found] == ["code message not translated"]
    wide = "{n} étapes" + " " * 80 + "x"
    write_code_catalogue(tmp_path, "book/lesson", {"{n} steps done": wide})
    found = code.problems(tmp_path, "fr")
    assert [what.split(" (")[0] for _, what, _ in found] == ["line of 101 characters"]


def write_code_catalogue(
    root: Path,
    page: str,
    code_messages: dict[str, str],
    prose: dict[str, str] | None = None,
) -> None:
    catalogue = Catalog(locale="fr")
    for msgid, msgstr in (prose or {}).items():
        catalogue.add(msgid, msgstr)
    for msgid, msgstr in code_messages.items():
        catalogue.add(msgid, msgstr, context=code.CONTEXT)
    po = root / "locales" / "fr" / "LC_MESSAGES" / f"{page}.po"
    po.parent.mkdir(parents=True, exist_ok=True)
    with open(po, "wb") as handle:
        write_po(handle, catalogue)


# -- a small book: its French page runs French code ----------------------------------

LESSON = (
    MYST_NOTEBOOK
    + """
# Lesson

```{code-cell} ipython3
import qkv

n = 3  # three steps
print(f"{n} steps done in {qkv.get_language()}")
```
"""
)
TOC = "format: jb-book\nroot: index\nchapters:\n  - file: lesson\n"


@pytest.mark.build
def test_a_french_page_shows_what_its_french_code_printed(small_book):
    root = small_book(
        {"index": "# Home\n", "lesson": LESSON},
        toc=TOC,
        extensions=["bookbuild.execute.cache", "bookbuild.i18n.languages"],
        sphinx_config=(
            "locale_dirs: [locales]\ngettext_compact: false\n"
            "book_languages: {en: English, fr: Français}\n"
        ),
    )
    from bookbuild.tools.testing import build_book

    write_code_catalogue(root, "index", {}, {"Home": "Accueil"})
    write_code_catalogue(
        root,
        "lesson",
        {
            "three steps": "trois étapes",
            "{n} steps done in {qkv.get_language()}": (
                "{n} étapes faites en {qkv.get_language()}"
            ),
        },
        {"Lesson": "Leçon"},
    )
    built = build_book(root, prefill=True)
    assert built.returncode == 0, built.output[-3000:]
    assert "fr/lesson" in built.output  # the French chapter ran in the prefill
    assert "Executing" not in built.output  # Sphinx read it from the cache

    def text(path: Path) -> str:
        from bs4 import BeautifulSoup

        html = path.read_text(encoding="utf-8")
        return BeautifulSoup(html, "html.parser").get_text()

    french = text(root / "_build" / "html" / "fr" / "lesson.html")
    assert "3 étapes faites en fr" in french
    assert "# trois étapes" in french and 'qkv.set_language("fr")' in french
    page = text(root / "_build" / "html" / "lesson.html")
    assert "3 steps done in en" in page and "set_language" not in page


def test_a_literal_that_is_a_message_is_translated_everywhere_but_as_a_key():
    """A label somewhere, a list of labels elsewhere: both translated; a name
    as a key (of a dict, of a subscript) is code, and stays; a label as a key
    is translated with its other uses."""
    cell = (
        'ax.set_title("loss")\ncurves = ["loss", "accuracy"]\n'
        'settings = {"loss": 1}\nprint(settings["loss"])\n'
        'change = {"no mask": 1}\nprint(change["no mask"])\n'
    )
    assert messages_of(cell)[0] == ("string", "loss")  # the title
    translated = code.translate_cell(cell, {"loss": "perte", "no mask": "sans masque"})
    assert translated == (
        'ax.set_title("perte")\ncurves = ["perte", "accuracy"]\n'
        'settings = {"loss": 1}\nprint(settings["loss"])\n'
        'change = {"sans masque": 1}\nprint(change["sans masque"])\n'
    )


def test_a_glued_string_is_the_prose_s_not_the_code_s():
    """A phrase pasted into the prose is translated by the page's catalogue,
    from its English: the code keeps it."""
    cell = 'glue("place", f"row {row}, column {col}")\nprint("two words")\n'
    assert messages_of(cell) == [("string", "two words")]


def test_a_translated_line_is_reported_at_its_english_line():
    english = "# a\n```{code-cell} ipython3\nimport os\n\nx = 1  # one\n```\ntext\n"
    translated = code.translate_code(english, {"one": "un"}, "fr")
    lines = code.line_map(english, translated)
    new = translated.split("\n")
    assert new[lines.index(6)] == "text"  # after the added lines: its own
    assert 2 <= lines[new.index('qkv.set_language("fr")')] <= 4  # in its cell
    assert lines[new.index("x = 1  # un")] == 4  # a translated line: its own
