"""A notebook whose cells train says, before its first training cell, how long
training takes (the build's own measured time, in the notebook's language);
where one seed is the lesson (*A model that writes*), it trains seed 0 unless
``ALL_SEEDS = True`` at its top, the book's five seeds one flag away. The
book's own chapter is not changed: its build trains seeds 0-4."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from myst_nb.core.read import read_myst_markdown_notebook

from bookbuild.i18n.messages import gettext
from bookbuild.site.notebooks import (
    ALL_SEEDS_COMMENT,
    ALL_SEEDS_NOTE,
    ONE_SEED,
    ONE_SEED_NOTE,
    TRAINING,
    install_cell,
    with_training_notes,
)

ROOT = Path(__file__).resolve().parents[2]
NARROW = "\u202f"


def notebook_cells(page: str) -> list:
    """The cells of a chapter's notebook before its notes: the install cell,
    then the chapter's cells without its bookkeeping."""
    text = (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8")
    cells = [
        cell
        for cell in read_myst_markdown_notebook(text).cells
        if "remove-cell" not in cell.get("metadata", {}).get("tags", [])
    ]
    return [install_cell("https://example.org/book"), *cells]


def training_index(cells: list, marker: str) -> int:
    return next(
        i for i, c in enumerate(cells) if c.cell_type == "code" and marker in c.source
    )


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_writing_notebook_trains_one_seed_unless_asked(language):
    _ = gettext(language)
    cells = notebook_cells("writing")
    values = {"wr-cpu-max": {"text/plain": "15.3"}}
    noted = with_training_notes("writing", cells, values, language)
    assert len(noted) == len(cells) + 2  # the flag and the note
    # the flag, at the top, after the install cell: off
    assert noted[0].source == cells[0].source
    assert noted[1].cell_type == "code"
    assert noted[1].source == _(ALL_SEEDS_COMMENT) + "ALL_SEEDS = False"
    at = training_index(noted, "writer.train(")
    assert "for seed in " + ONE_SEED in noted[at].source
    assert "range(5)" not in noted[at].source
    # the note, just before it: 16 s for one seed, 80 s for the five
    note = noted[at - 1]
    assert note.cell_type == "markdown"
    space = NARROW if language == "fr" else " "
    assert f"16{space}s" in note.source and f"80{space}s" in note.source
    assert note.source == _(ONE_SEED_NOTE).format(
        seconds=16, models=5, last=4, total=80
    )
    assert "`ALL_SEEDS = True`" in note.source
    # the book itself still trains the five seeds
    book = (ROOT / "book" / "writing.md").read_text(encoding="utf-8")
    assert "runs = [writer.train(seed) for seed in range(5)]" in book
    # with ALL_SEEDS, the training cell's seeds are the book's
    namespace = {"ALL_SEEDS": True}
    assert list(eval(ONE_SEED, namespace)) == [0, 1, 2, 3, 4]
    assert list(eval(ONE_SEED, {"ALL_SEEDS": False})) == [0]


def test_the_writing_notebook_runs_on_one_seed():
    """Every code cell of the writing notebook after the training cell reads
    ``runs`` as a list of any length (no fifth seed assumed)."""
    cells = with_training_notes("writing", notebook_cells("writing"), {}, "en")
    at = training_index(cells, "writer.train(")
    later = "\n".join(c.source for c in cells[at:] if c.cell_type == "code")
    for indexed in ("runs[1]", "runs[2]", "runs[3]", "runs[4]", "range(5)"):
        assert indexed not in later


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_decoders_notebook_says_how_long_its_five_seeds_take(language):
    cells = notebook_cells("decoders")
    values = {"dec-cpu-max": {"text/plain": "41"}}
    noted = with_training_notes("decoders", cells, values, language)
    assert len(noted) == len(cells) + 1  # the note; no flag: the seeds compared
    assert not any("ALL_SEEDS" in c.source for c in noted)
    at = training_index(noted, "induction.train(")
    assert "range(5)" in noted[at].source
    assert noted[at - 1].source == gettext(language)(ALL_SEEDS_NOTE).format(
        seconds=41, models=5, total=205
    )


def test_a_chapter_that_does_not_train_is_unchanged():
    cells = notebook_cells("masking")
    assert with_training_notes("masking", cells, {}, "en") == cells


def test_a_training_cell_that_moved_fails_the_build():
    """A chapter of TRAINING whose training cell lost its marker or its seeds
    stops the build (the note would go nowhere)."""
    cells = [install_cell(""), nbformat.v4.new_code_cell("x = 1")]
    with pytest.raises(ValueError, match="writer.train"):
        with_training_notes("writing", cells, {}, "en")
    cells.append(nbformat.v4.new_code_cell("runs = [writer.train(0)]"))
    with pytest.raises(ValueError, match="range"):
        with_training_notes("writing", cells, {}, "en")
    assert set(TRAINING) == {"writing", "decoders"}
