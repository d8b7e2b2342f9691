"""The chapter notebooks linked from each page: readable in plain Jupyter (no raw
MyST left) and runnable top to bottom with `qkv` installed."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from bookbuild.toc import lessons

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"

pytestmark = pytest.mark.book

LESSONS = lessons(ROOT)
MYST_LEFTOVERS = re.compile(r"\{[\w:-]+\}`|```\{|^:::|^\([\w-]+\)=|^\$\$ \(", re.M)


def notebook_path(chapter: str) -> Path:
    return HTML / "_notebooks" / f"{Path(chapter).name}.ipynb"


def test_every_lesson_page_links_its_notebook(built_book):
    assert LESSONS
    for chapter in LESSONS:
        html = (HTML / f"{chapter}.html").read_text(encoding="utf-8")
        href = f"../_notebooks/{Path(chapter).name}.ipynb"
        assert f'href="{href}"' in html, chapter
        assert notebook_path(chapter).is_file(), chapter


def test_notebooks_are_valid_and_plain_markdown(built_book):
    for chapter in LESSONS:
        notebook = nbformat.read(notebook_path(chapter), as_version=4)
        nbformat.validate(notebook)
        markdown = [c.source for c in notebook.cells if c.cell_type == "markdown"]
        leftovers = [m for text in markdown for m in MYST_LEFTOVERS.findall(text)]
        assert not leftovers, f"{chapter}: raw MyST left: {leftovers[:5]}"
        assert any(c.get("attachments") for c in notebook.cells), f"{chapter}: figures"
        title = re.search(r"^# (.+)$", "\n".join(markdown), re.M)
        assert title, f"{chapter}: no title"


def test_notebooks_hold_no_bookkeeping(built_book):
    """No glue call and no myst_nb import: a notebook needs only qkv to run."""
    for chapter in LESSONS:
        notebook = nbformat.read(notebook_path(chapter), as_version=4)
        code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
        assert "myst_nb" not in code, chapter
        assert not re.search(r"\bglue\w*\(", code), chapter


def test_glued_numbers_are_filled_in(built_book):
    notebook = nbformat.read(notebook_path("book/attention-by-hand"), as_version=4)
    text = " ".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    text = re.sub(r"\s+", " ", text)
    from qkv.examples import six_word_embeddings

    x = six_word_embeddings()
    score = f"{float(x[1] @ x[0]):.4f}"  # the glued score of "Your" for "journey"
    assert re.search(rf"the {re.escape(score)} of equation \(\d+\.\d+\)", text)
    assert "Raschka (2024)" in text  # a citation


@pytest.mark.slow
def test_every_notebook_runs_top_to_bottom(built_book, tmp_path):
    env_backup = dict(os.environ)
    os.environ["OMP_NUM_THREADS"] = "1"  # two kernels at a time on two cores
    os.environ.pop("MPLBACKEND", None)

    def run(chapter: str) -> str:
        notebook = nbformat.read(notebook_path(chapter), as_version=4)
        client = NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(tmp_path)}},  # not the repository
        )
        client.execute()
        return chapter

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(run, LESSONS))
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    assert done == LESSONS
