"""A notebook whose cells train says, before its first training cell, how long
training takes (the build's own measured time, in the notebook's language);
where one seed is the lesson (*A model that writes*), it trains seed 0 unless
``ALL_SEEDS = True`` at its top, the book's five seeds one flag away. The
book's own chapter is not changed: its build trains seeds 0-4."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from myst_nb.core.read import read_myst_markdown_notebook

from bookbuild.i18n.messages import gettext
from bookbuild.site.notebooks import (
    ALL_SEEDS_COMMENT,
    ALL_SEEDS_NOTE,
    CELL_NOTE,
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
    assert "writing" in TRAINING and "decoders" in TRAINING


#: A call that trains, in a chapter's code: a ``train`` function of
#: qkv.experiments (``toy.train(``, ``tr.train(``, ``toy.train_lookup(``...;
#: not a module's ``.train()`` mode) or the positions' ``extrapolation(``.
TRAINS = re.compile(r"\.train\w*\((?!\))|\bextrapolation\(")


def test_every_chapter_whose_notebook_trains_says_how_long():
    """A chapter whose notebook (its cells but the bookkeeping) trains is in
    TRAINING, and its first training cell is the one TRAINING marks."""
    for path in sorted((ROOT / "book").glob("*.md")):
        cells = notebook_cells(path.stem)[1:]
        code = [c.source for c in cells if c.cell_type == "code"]
        trains = [source for source in code if TRAINS.search(source)]
        if not trains:
            assert path.stem not in TRAINING, path.stem
            continue
        assert path.stem in TRAINING, path.stem
        assert TRAINING[path.stem].marker in trains[0], path.stem


@pytest.mark.parametrize("page", sorted(TRAINING))
def test_the_time_of_a_note_is_glued_by_its_chapter(page):
    """The key of a note's time is glued by its chapter, in a cell the
    notebook leaves out (a measured time, not a number of the text)."""
    text = (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8")
    key = TRAINING[page].per_seed
    hidden = [
        cell.source
        for cell in read_myst_markdown_notebook(text).cells
        if "remove-cell" in cell.get("metadata", {}).get("tags", [])
    ]
    assert any(f'glue("{key}", ' in source for source in hidden), key


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize(
    "page",
    [
        "how-attention-learns",
        "scaled-dot-product",
        "cross-attention",
        "attention-on-images",
    ],
)
def test_a_notebook_whose_first_training_is_one_run_says_its_time(page, language):
    """Its first training cell trains seed 0 (and, for *Scaled dot-product*,
    with and without scaling): the note gives that cell's time, no total."""
    training = TRAINING[page]
    assert training.models == 1 and training.seeds is None
    cells = notebook_cells(page)
    values = {training.per_seed: {"text/plain": "2.31"}}
    noted = with_training_notes(page, cells, values, language)
    assert len(noted) == len(cells) + 1  # the note; no flag
    assert not any("ALL_SEEDS" in c.source for c in noted)
    at = training_index(noted, training.marker)
    note = noted[at - 1]
    assert note.cell_type == "markdown"
    assert note.source == gettext(language)(CELL_NOTE).format(seconds=3)
    space = NARROW if language == "fr" else " "
    assert f"3{space}s" in note.source
    assert noted[at].source == cells[at - 1].source  # the cell itself unchanged


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_positions_notebook_says_how_long_its_five_seeds_take(language):
    """The chapter gives each encoding's lowest and highest accuracy over the
    five seeds: all five train, and the note says so."""
    cells = notebook_cells("positions")
    values = {"pos-cpu-max": {"text/plain": "12.0"}}
    noted = with_training_notes("positions", cells, values, language)
    assert len(noted) == len(cells) + 1
    at = training_index(noted, "extrapolation(")
    assert "seeds = range(5)" in noted[at].source
    assert noted[at - 1].source == gettext(language)(ALL_SEEDS_NOTE).format(
        seconds=12, models=5, total=60
    )


def test_no_note_promises_a_time_on_the_readers_machine():
    """The notes give the build's measured times, on the machine that built
    the book, and promise none here (issue 39)."""
    for note in (ONE_SEED_NOTE, ALL_SEEDS_NOTE, CELL_NOTE):
        assert "the machine that built the book" in note
        assert "count on" not in note and "here (" not in note
        for language in ("en", "fr"):
            translated = gettext(language)(note)
            assert translated != note or language == "en"
            assert "comptez" not in translated
