"""Faults that point home (issue 23): where a build fails, it says where.

* A failing cell is reported once, by the prefill, with its chapter, its code
  cell, the cell's first line, the failing line in the cell and in the file,
  the error's last line; the prefill then fails (exit code 1), so that
  ``make book`` stops before Sphinx would execute the chapter twice more
  (English, French) for the same error; and the chapter's pages of an earlier
  build are deleted in every language.
* A warning raised by a translated message (a glue key no cell glued, a broken
  reference) names the ``.po`` file, the message's line in it and the language.
* A page that warned in a strict build is deleted with its doctree: the next
  build reads it again and fails again, instead of succeeding with nothing to
  read (``bookbuild.execute.reports``).

The builds are of small books (``bookbuild.tools.testing``); the prefill's test
runs one kernel, no Sphinx.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from bookbuild.execute.prefill import failure_report, forget_pages
from bookbuild.i18n.locations import catalogue_line
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book, write_small_book

ROOT = Path(__file__).resolve().parents[2]

# -- a failing cell: one report, from the prefill, and the build stops ------------

CHAPTER = (
    MYST_NOTEBOOK
    + """
# Chapter

```{code-cell} ipython3
x = 1
```

Some prose.

```{code-cell} ipython3
:tags: [remove-cell]

def shape(n):
    return [0] * n

def check(y):  # a function's assert raises (a cell's own is a claim: test_claims)
    assert len(y) == 3, "three values expected"

check(shape(2))
```

```{code-cell} ipython3
print("never run")
```
"""
)
TOC = "format: jb-book\nroot: index\nchapters:\n  - file: chapter\n"


def line_of(text: str, needle: str) -> int:
    """The 1-based line of ``text`` where ``needle`` first appears."""
    return text[: text.index(needle)].count("\n") + 1


def failing_build(command: list[str], root: Path) -> str:
    """What ``command`` printed, run in ``root``, after checking it failed (1)."""
    done = subprocess.run(
        command, cwd=root, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    return done.stdout


def test_a_failing_cell_is_reported_once_where_it_failed_and_stops_the_build(
    small_book,
):
    root = small_book({"index": "# Home\n\nHello.\n", "chapter": CHAPTER}, toc=TOC)
    # Pages of an earlier, good build, in both languages and the student
    # edition, and their doctrees: none may stay as if current.
    stale = [
        "_build/html/chapter.html",
        "_build/html/fr/chapter.html",
        "_build/student/_build/html/chapter.html",
        "_build/.doctrees/chapter.doctree",
        "_build/.doctrees-fr/chapter.doctree",
    ]
    kept = ["_build/html/index.html", "_build/html/fr/index.html"]
    for name in stale + kept:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("an earlier build", encoding="utf-8")
    out = failing_build(
        [sys.executable, "-P", "-m", "bookbuild.execute.prefill", str(root)], root
    )
    failing = line_of(CHAPTER, "assert len(y)")
    first = line_of(CHAPTER, "def shape(n):")
    assert (
        f"prefill: chapter.md:{failing}: failed in code cell 2, line 5 of the "
        "cell: AssertionError: three values expected" in out
    ), out
    assert f"the cell begins (line {first}): def shape(n):" in out, out
    assert 'the failing line: assert len(y) == 3, "three values expected"' in out
    assert out.count("AssertionError") == 1, out  # one report, no traceback dump
    assert "the build stops here: fix chapter" in out, out
    assert not [name for name in stale if (root / name).exists()]
    assert all((root / name).exists() for name in kept)


def test_make_book_stops_when_the_prefill_fails():
    """The Makefile runs the prefill before the Sphinx builds (``site
    --with-prefill``) or as its own line before them (the student edition),
    errors not ignored, and moves the stamp only at the end: `make book` does
    not believe the site is built."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("$(BUILT):", "$(STUDENT_BUILT):"):
        recipe = makefile.split(f"\n{target}", 1)[1].split("\n\n", 1)[0]
        lines = [line.strip() for line in recipe.splitlines()[1:]]
        site = next(i for i, x in enumerate(lines) if "bookbuild.build site" in x)
        prefill = [i for i, x in enumerate(lines) if "execute.prefill" in x]
        if target == "$(BUILT):":
            assert not prefill and lines[site].endswith("--with-prefill"), lines
        else:
            assert prefill and prefill[0] < site, lines
            assert lines[prefill[0]].startswith("@$(BIN)/python")
        assert lines[site].startswith("@") and "$(BIN)/python -m" in lines[site]
        assert lines[-1] == "@mv $@.start $@", lines


def test_a_failing_chapter_stops_the_build_before_sphinx_starts(small_book):
    """As `make book` runs it: the failure reported once, by the prefill; no
    Sphinx build started; nothing written into the site."""
    import psutil

    root = small_book({"index": "# Home\n\nHello.\n", "chapter": CHAPTER}, toc=TOC)
    site = [sys.executable, "-m", "bookbuild.build", "site"]
    out = failing_build(
        site + ["--log-dir", str(root / "logs"), "--with-prefill"], root
    )
    assert out.count("AssertionError") == 1, out
    assert "the build stops here: fix chapter" in out, out
    assert "built side by side" not in out, out  # site's line when they start
    assert not (root / "logs" / "build-en.log").exists()
    assert not (root / "_build" / "html" / "chapter.html").exists()
    assert not (root / "_build" / "html" / "fr" / "chapter.html").exists()
    builds = [
        p
        for p in psutil.process_iter(["cmdline"])
        if str(root) in " ".join(p.info["cmdline"] or [])
    ]
    assert not builds, builds


def test_the_report_finds_the_cell_and_the_line_in_the_file(tmp_path):
    """Without a kernel: the cell's first line found from the reader's source
    map, after its options; a timeout; an error that names no cell."""
    from myst_nb.core.read import read_myst_markdown_notebook

    chapter = tmp_path / "chapter.md"
    chapter.write_text(CHAPTER, encoding="utf-8")
    notebook = read_myst_markdown_notebook(CHAPTER, add_source_map=True)
    chapter_nb = SimpleNamespace(uri=str(chapter), nb=notebook)
    error = SimpleNamespace(
        ename="AssertionError", evalue="three values expected", failed_cell=3
    )
    error.failed_line = 2
    report = failure_report(chapter_nb, error, tmp_path)
    second = line_of(CHAPTER, "    return [0] * n")
    assert report.splitlines()[0] == (
        f"prefill: chapter.md:{second}: failed in code cell 2, line 2 of the cell: "
        "AssertionError: three values expected"
    )

    class CellTimeoutError(Exception):
        pass

    timeout = CellTimeoutError("A cell timed out while it was being executed")
    timeout.failed_cell = 3
    report = failure_report(chapter_nb, timeout, tmp_path)
    start = line_of(CHAPTER, "def shape(n):")
    assert report.startswith(f"prefill: chapter.md:{start}: timed out in code cell 2")
    assert failure_report(chapter_nb, RuntimeError("Kernel died"), tmp_path) == (
        "prefill: chapter.md failed: RuntimeError: Kernel died"
    )


def test_forget_pages_deletes_only_that_page(tmp_path):
    for name in ("html/book/a.html", "html/fr/book/a.html", "html/book/b.html"):
        (tmp_path / "_build" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "_build" / name).write_text("x")
    deleted = forget_pages(tmp_path, "book/a")
    assert sorted(p.relative_to(tmp_path / "_build").as_posix() for p in deleted) == [
        "html/book/a.html",
        "html/fr/book/a.html",
    ]
    assert (tmp_path / "_build" / "html" / "book" / "b.html").exists()


# -- a translated message's warnings point at its catalogue ---------------------------


def test_a_message_is_found_by_its_translation_or_its_english_line(tmp_path):
    catalogue = Catalog(locale="fr")
    catalogue.add("Title", "Titre", locations=[("../../page.md", 3)])
    catalogue.add("See {ref}`a`.", "Voir {ref}`b`.", locations=[("../../page.md", 5)])
    catalogue.add("Two {ref}`c`.", "Deux {ref}`d`.", locations=[("../../page.md", 5)])
    catalogue.add("Old.", "Vieux.", locations=[("../../page.md", 9)], flags=["fuzzy"])
    po = tmp_path / "page.po"
    with open(po, "wb") as handle:
        write_po(handle, catalogue)
    with open(po, "rb") as handle:
        lines = {m.id: m.lineno for m in read_po(handle) if m.id}
    assert catalogue_line(po, "Titre\n==========", 3) == lines["Title"]
    assert catalogue_line(po, "Voir   {ref}`b`.", None) == lines["See {ref}`a`."]
    assert catalogue_line(po, None, 5, ["d"]) == lines["Two {ref}`c`."]
    # The catalogue's lines are those of an older English: the target decides.
    assert catalogue_line(po, None, 7, ["d"]) == lines["Two {ref}`c`."]
    assert catalogue_line(po, None, 4, []) is None  # no line, no target: no guess
    assert catalogue_line(po, None, 9) is None  # a fuzzy message is not used
    assert catalogue_line(tmp_path / "none.po", "Titre", 3) is None


LESSON = (
    MYST_NOTEBOOK
    + """
(lesson-top)=
# Lesson

```{code-cell} ipython3
:tags: [remove-cell]

from myst_nb import glue

glue("answer", 42, display=False)
```

The answer is {glue:text}`answer`.

See the section {ref}`lesson-top` again.

A paragraph of three lines, left in English,
that refers, on its third line,
to {ref}`no-such-label`, which does not exist.
"""
)
FRENCH = {
    "Home": "Accueil",
    "Welcome.": "Bienvenue.",
    "Lesson": "Leçon",
    "The answer is {glue:text}`answer`.": "La réponse est {glue:text}`no_such_key`.",
    "See the section {ref}`lesson-top` again.": (
        "Revoir la section {ref}`lesson-nowhere`."
    ),
}
SPHINX_CONFIG = """\
locale_dirs: [locales]
gettext_compact: false
book_languages: {en: English, fr: Français}
"""


@pytest.fixture(scope="module")
def faulty_french(tmp_path_factory):
    """A two-page book whose French catalogue glues a key no cell glued and
    refers to a label that does not exist, built once and then again."""
    root = write_small_book(
        tmp_path_factory.mktemp("faults"),
        {"index": "# Home\n\nWelcome.\n", "lesson": LESSON},
        toc="format: jb-book\nroot: index\nchapters:\n  - file: lesson\n",
        extensions=["bookbuild.execute.reports", "bookbuild.i18n.languages"],
        sphinx_config=SPHINX_CONFIG,
    )
    extracted = subprocess.run(
        [sys.executable, "-m", "bookbuild.i18n.translations", "extract"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # (it fails, strict, on the English reference: its messages are written)
    assert (root / "_build" / "gettext" / "lesson.pot").is_file(), extracted.stdout
    for pot in (root / "_build" / "gettext").glob("*.pot"):
        with open(pot, "rb") as handle:
            catalogue = read_po(handle)
        for message in catalogue:
            if message.id:
                message.string = FRENCH.get(message.id, "")
        po = root / "locales" / "fr" / "LC_MESSAGES" / f"{pot.stem}.po"
        po.parent.mkdir(parents=True, exist_ok=True)
        with open(po, "wb") as handle:
            write_po(handle, catalogue)
    first = build_book(root)
    pages = {
        name: (root / "_build" / "html" / name).exists()
        for name in ("lesson.html", "fr/lesson.html", "index.html", "fr/index.html")
    }
    again = build_book(root)
    return root, first, pages, again


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.build
@pytest.mark.xdist_group("small-books")  # the module's book, built once
def test_a_translated_messages_warnings_name_the_catalogue_its_line_and_language(
    faulty_french,
):
    root, first, _, _ = faulty_french
    assert first.returncode != 0
    po = (root / "locales" / "fr" / "LC_MESSAGES" / "lesson.po").read_text("utf-8")
    glue_line = line_of(po, 'msgid "The answer is')
    ref_line = line_of(po, 'msgid "See the section')
    french = plain(first.translations_output)
    glue_warning = (
        f"locales/fr/LC_MESSAGES/lesson.po:{glue_line} (fr): WARNING: No key "
        "'no_such_key' found in glue data"
    )
    assert french.count(glue_warning) == 1, french[-3000:]  # parsed twice, once
    english_glue = line_of(LESSON, "The answer is")
    assert f"(translation of lesson.md:{english_glue})" in french
    assert (
        f"locales/fr/LC_MESSAGES/lesson.po:{ref_line} (fr): WARNING: undefined "
        "label: 'lesson-nowhere'" in french
    ), french[-3000:]
    assert "<translated>" not in french
    assert "lesson.md:1: WARNING" not in french
    # The others: the English reference, on its own line (not its paragraph's).
    english = line_of(LESSON, "to {ref}`no-such-label`")
    assert english == line_of(LESSON, "A paragraph of three lines") + 2
    warnings = re.findall(r"^(.*?): WARNING: .*$", plain(first.output), re.M)
    assert {w.split(" (fr)")[0].replace(str(root), "") for w in warnings} == {
        f"locales/fr/LC_MESSAGES/lesson.po:{glue_line}",
        f"locales/fr/LC_MESSAGES/lesson.po:{ref_line}",
        f"/lesson.md:{english}",
    }, warnings


@pytest.mark.build
@pytest.mark.xdist_group("small-books")  # the module's book, built once
def test_a_page_that_warned_leaves_the_site_and_fails_the_next_build_again(
    faulty_french,
):
    """Sphinx would read nothing again and succeed: the broken page is read
    again, warns again, and is not left in the site as if current."""
    _, first, pages, again = faulty_french
    assert pages == {
        "lesson.html": False,
        "fr/lesson.html": False,
        "index.html": True,
        "fr/index.html": True,
    }
    assert again.returncode != 0, again.output[-3000:]
    warnings = sorted(re.findall(r"^.*WARNING: .*$", plain(again.output), re.M))
    assert warnings == sorted(re.findall(r"^.*WARNING: .*$", plain(first.output), re.M))
    assert len(warnings) == 4  # the English reference in both languages
