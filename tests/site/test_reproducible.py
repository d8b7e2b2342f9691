"""The pieces that make the site the same every time and the build log quiet,
one by one (fast; the whole is built in tests/test_same_site.py)."""

from __future__ import annotations

import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest

from bookbuild.execute import kernel_config
from bookbuild.execute.cache import cache_path
from bookbuild.execute.kernels import WarmKernelManager
from bookbuild.execute.prefill import join_streams
from bookbuild.site.accessibility import list_item_roles
from bookbuild.site.build_info import build_time
from bookbuild.site.notebooks import stable_ids
from bookbuild.site.quiet import QuietFilter
from bookbuild.site.search_index import previous_entries
from bookbuild.site.stale_files import referenced_images, remove_unused
from bookbuild.tools.same_site import compare_sites


def stream(name: str, text: str) -> dict:
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_printed_pieces_are_joined_exactly_as_printed():
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("...")
    figure = nbformat.v4.new_output("display_data", data={"text/plain": "<fig>"})
    cell.outputs = [
        stream("stdout", "'starts' attends most to 'journey'"),
        stream("stdout", "\n'with' attends"),
        stream("stdout", " most to 'journey'\n"),
        stream("stderr", "careful\n"),
        figure,
        stream("stdout", "after\n"),
    ]
    notebook.cells = [cell, nbformat.v4.new_markdown_cell("text")]
    join_streams(notebook)
    assert [o.get("name", o.output_type) for o in cell.outputs] == [
        "stdout",
        "stderr",
        "display_data",
        "stdout",
    ]
    assert cell.outputs[0].text == (
        "'starts' attends most to 'journey'\n'with' attends most to 'journey'\n"
    )
    assert "outputs" not in notebook.cells[1]


def test_cell_ids_come_from_the_page_and_the_content():
    def cells():
        return [
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("x = 1"),  # the same content twice
            nbformat.v4.new_code_cell("print(x)"),
        ]

    first, second = cells(), cells()
    stable_ids("book/masking", first)
    stable_ids("book/masking", second)
    ids = [cell["id"] for cell in first]
    assert ids == [cell["id"] for cell in second], "not the same in every build"
    assert len(set(ids)) == 4 and ids[2] == f"{ids[1]}-2"
    other = cells()
    stable_ids("book/other", other)
    assert {cell["id"] for cell in other}.isdisjoint(ids)
    inserted = [nbformat.v4.new_code_cell("y = 2"), *cells()]
    stable_ids("book/masking", inserted)
    assert [cell["id"] for cell in inserted[1:]] == ids, "a cell added shifts ids"
    nbformat.validate(nbformat.v4.new_notebook(cells=first))


def test_previous_index_entries_are_read_back_for_the_pages_kept():
    frozen = {
        "docnames": ["book/glossary", "book/masking"],
        "indexentries": {
            "query": [[0, "term-query", True]],
            "mask": [[0, "term-mask", True], [1, "index-0", False]],
        },
    }
    entries = previous_entries(frozen, keep=["book/glossary"])
    main = "main"
    assert entries == {
        "book/glossary": [("mask", "term-mask", main), ("query", "term-query", main)]
    }
    assert previous_entries(frozen, keep=[]) == {}
    assert previous_entries({"docnames": ["a"]}, keep=["a"]) == {}


def write_site(root: Path, pages: dict[str, str], images: dict[str, str]) -> Path:
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "_images").mkdir(parents=True, exist_ok=True)
    for name, text in images.items():
        (root / "_images" / name).write_text(text)
    docnames = [name.removesuffix(".html") for name in pages]
    index = {"docnames": docnames, "terms": {"12": 0}, "titleterms": {}}
    (root / "searchindex.js").write_text(f"Search.setIndex({json.dumps(index)})")
    return root


def test_two_sites_compared_file_by_file(tmp_path):
    pages = {
        "book/a.html": '<img src="../_images/x.svg">',
        "book/timed.html": "took 3 s",
    }
    a = write_site(tmp_path / "a", pages, {"x.svg": "<svg/>"})
    b = write_site(tmp_path / "b", pages, {"x.svg": "<svg/>"})
    assert compare_sites(a, b, timed={}) == []

    (b / "book" / "timed.html").write_text('took 4 s <img src="../_images/t.svg">')
    (b / "_images" / "t.svg").write_text("<svg>4</svg>")
    found = compare_sites(a, b, timed={"book/timed": "it times things"})
    assert [(d.path, d.detail) for d in found] == [
        ("_images/t.svg", "only in b"),
        ("book/timed.html", "differs"),
    ]
    assert all(d.reason for d in found), found

    (b / "book" / "a.html").write_text('<img src="../_images/y.svg">')
    (b / "_images" / "x.svg").write_text("<svg>other</svg>")
    unexplained = [d for d in compare_sites(a, b, {"book/timed": "t"}) if not d.reason]
    assert {d.path for d in unexplained} == {"book/a.html", "_images/x.svg"}
    assert "NOT EXPLAINED" in str(unexplained[0])


def test_the_french_edition_is_compared_as_its_own_site(tmp_path):
    """``fr/`` holds a second edition: its timed pages, their figures, notebooks
    and search-index words are explained as the English ones are; the rest of
    it must be identical."""
    pages = {"book/a.html": "same", "book/timed.html": "took 3 s"}
    a, b = tmp_path / "a", tmp_path / "b"
    for site in (a, b):
        write_site(site, pages, {})
        write_site(site / "fr", pages, {})
    (b / "fr" / "book" / "timed.html").write_text('4 s <img src="../_images/t.svg">')
    (b / "fr" / "_images" / "t.svg").write_text("<svg>4</svg>")
    (b / "fr" / "_notebooks").mkdir()
    (b / "fr" / "_notebooks" / "timed.ipynb").write_text("{}")
    index = {"docnames": ["book/a", "book/timed"], "terms": {"12": 0, "4": 1}}
    index["titleterms"] = {}
    (b / "fr" / "searchindex.js").write_text(f"Search.setIndex({json.dumps(index)})")
    found = compare_sites(a, b, timed={"book/timed": "it times things"})
    assert {d.path for d in found} == {
        "fr/_images/t.svg",
        "fr/_notebooks/timed.ipynb",
        "fr/book/timed.html",
        "fr/searchindex.js",
    }
    assert all(d.reason for d in found), found

    (b / "fr" / "book" / "a.html").write_text("changed")
    unexplained = [d for d in compare_sites(a, b, {"book/timed": "t"}) if not d.reason]
    assert [d.path for d in unexplained] == ["fr/book/a.html"]


def test_only_unused_images_are_removed(tmp_path):
    site = write_site(
        tmp_path,
        {"a.html": '<img src="_images/used.svg" srcset="_images/2x.png 2x">'},
        {"used.svg": "", "2x.png": "", "stale.svg": "", "listed.svg": ""},
    )
    assert referenced_images(site) == {"used.svg", "2x.png"}
    removed = remove_unused(site / "_images", referenced_images(site) | {"listed.svg"})
    assert [p.name for p in removed] == ["stale.svg"]
    assert sorted(os.listdir(site / "_images")) == ["2x.png", "listed.svg", "used.svg"]
    (site / "_images" / "notes.txt").write_text("")
    assert remove_unused(site / "_images", set(), {".svg"})[0].name == "listed.svg"
    assert (site / "_images" / "notes.txt").exists()


def record(message: str, *args, level=logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("sphinx.x", level, __file__, 1, message, args, None)


def test_the_quiet_filter_drops_dumps_and_never_a_warning():
    quiet = QuietFilter()
    config = "\x1b[01mmyst-nb v%s:\x1b[39;49;00m %s"
    assert not quiet.filter(record(config, "1.4.0", "NbParserConfig(a=1)"))
    assert not quiet.filter(record("myst v3.0.1: MdParserConfig(x=2)"))
    assert not quiet.filter(record("[etoc] Changing master_doc to 'book/intro'"))
    assert not quiet.filter(
        record("[etoc] missing index.html written as redirect to 'a.html'")
    )
    assert quiet.filter(record("reading sources... [ 50%] book/masking"))
    assert quiet.filter(record("build succeeded."))
    warning = record("myst v3.0.1: MdParserConfig(bad)", level=logging.WARNING)
    assert quiet.filter(warning)


def test_the_kernel_environment_is_written_and_keys_the_cache(tmp_path, monkeypatch):
    settings = kernel_config.environment(tmp_path / "_build")
    assert settings["PYTHONHASHSEED"] == "0"
    config = Path(settings["IPYTHONDIR"]) / "profile_default"
    text = (config / "ipython_kernel_config.py").read_text()
    assert 'xmode = "Minimal"' in text
    compile(text, "ipython_kernel_config.py", "exec")  # valid Python
    before = cache_path(tmp_path, tmp_path / "_build", [])
    assert cache_path(tmp_path, tmp_path / "_build", []) == before
    monkeypatch.setattr(kernel_config, "KERNEL_CONFIG", text + "# another\n")
    assert cache_path(tmp_path, tmp_path / "_build", []) != before, (
        "a new kernel configuration must re-execute the chapters"
    )


def test_the_build_time_follows_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    assert build_time() == datetime(2026, 1, 1, tzinfo=UTC)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert abs((build_time() - datetime.now(UTC)).total_seconds()) < 60


def test_citation_entries_become_list_items():
    body = (
        '<div role="list" class="citation-list">'
        '<div class="citation" id="id1" role="doc-biblioentry">A</div></div>'
    )
    fixed = list_item_roles(body)
    assert 'role="listitem"' in fixed and "doc-biblioentry" not in fixed


@pytest.mark.skipif(sys.platform == "win32", reason="no IPC on Windows")
def test_warm_kernels_talk_over_ipc_at_an_absolute_address():
    manager = WarmKernelManager()
    assert manager.transport == "ipc"
    assert os.path.isabs(manager.ip), manager.ip
    assert manager.ip != WarmKernelManager().ip, "each kernel its own sockets"


def test_the_same_figure_gives_the_same_svg(monkeypatch):
    """Shown or glued, a figure goes through IPython's SVG formatter."""
    import matplotlib

    monkeypatch.setitem(matplotlib.rcParams, "backend", "agg")
    from IPython.core.interactiveshell import InteractiveShell

    import qkv.page.plot

    shell = InteractiveShell.instance()
    try:
        with matplotlib.rc_context():
            qkv.page.plot.use_book_style()
            svgs = []
            for _ in range(2):
                figure = qkv.page.plot.heatmap([[0.2, 0.8], [0.6, 0.4]], ["a", "b"])
                data, _ = shell.display_formatter.format(figure)
                svgs.append(data["image/svg+xml"])
                matplotlib.pyplot.close(figure)
    finally:
        InteractiveShell.clear_instance()
    assert svgs[0] == svgs[1]
    assert "<dc:date>" not in svgs[0] and "clip-path" in svgs[0]


def test_every_test_starts_from_the_same_random_state():
    """conftest seeds the generators before each test (unseeded draws repeat)."""
    import random

    import numpy as np
    import torch

    assert torch.equal(
        torch.rand(3), torch.rand(3, generator=torch.Generator().manual_seed(0))
    )
    assert np.random.rand() == np.random.RandomState(0).rand()
    assert random.random() == random.Random(0).random()
