"""The execution cache follows the code the chapters import (bookbuild.execute.cache).

jupyter-cache keys a notebook by its code cells only, so without the extension an
edit to ``src/qkv`` would leave stale outputs in the book. These tests build a
one-page book whose page prints a file of its "package", and edit that file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bookbuild.execute.cache import dependency_hash
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book, write_small_book

ROOT = Path(__file__).resolve().parents[2]


PAGE = (
    MYST_NOTEBOOK
    + """
# Page

{prose}

```{{code-cell}} ipython3
from pathlib import Path
print("value:", Path("pkg/value.txt").read_text().strip())
```
"""
)

EXTENSIONS = ["bookbuild.execute.cache"]
SPHINX_CONFIG = "dependency_cache_paths: [pkg]"


def write_book(root: Path, value: str, prose: str = "Some prose.") -> None:
    write_small_book(
        root,
        {"page": PAGE.format(prose=prose)},
        title="cache test",
        toc="format: jb-book\nroot: page\n",
        extensions=EXTENSIONS,
        sphinx_config=SPHINX_CONFIG,
        files={"pkg/value.txt": value},
    )


def page_html(root: Path) -> str:
    return (root / "_build" / "html" / "page.html").read_text(encoding="utf-8")


def test_hash_follows_contents_and_names(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    first = dependency_hash(tmp_path, ["pkg"])
    assert dependency_hash(tmp_path, ["pkg"]) == first
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert dependency_hash(tmp_path, ["pkg"]) == first, "bytecode must not count"
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    second = dependency_hash(tmp_path, ["pkg"])
    assert second != first
    (tmp_path / "pkg" / "b.py").write_text("")
    assert dependency_hash(tmp_path, ["pkg"]) != second
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")
    assert dependency_hash(tmp_path, ["pkg", "requirements.txt"]) != dependency_hash(
        tmp_path, ["pkg"]
    )


def rebuild(root: Path, value: str, prose: str) -> tuple[bool, str]:
    """Write the book, build it; return (whether it executed, the page's HTML)."""
    write_book(root, value, prose=prose)
    build = build_book(root)
    assert build.returncode == 0, build.output[-3000:]
    return "Executed notebook" in build.output, page_html(root)


def caches(root: Path) -> list[Path]:
    return list((root / "_build" / ".jupyter_cache").glob("deps-*"))


@pytest.mark.slow
@pytest.mark.build
def test_editing_the_package_reexecutes_and_prose_does_not(tmp_path):
    executed, html = rebuild(tmp_path, "first", "Some prose.")
    assert executed and "value: first" in html

    # Prose only: the page is re-read, but its outputs come from the cache.
    executed, html = rebuild(tmp_path, "first", "Other prose.")
    assert not executed and "Other prose." in html

    # The package: the page is executed again and shows the new value.
    executed, html = rebuild(tmp_path, "second", "Other prose.")
    assert executed and "value: second" in html and "value: first" not in html
    assert len(caches(tmp_path)) == 2, "expected the current and the previous cache"

    # Undo the edit: the previous cache is still there, nothing executes.
    executed, html = rebuild(tmp_path, "first", "Other prose.")
    assert not executed and "value: first" in html

    # A third version: the oldest cache goes.
    executed, html = rebuild(tmp_path, "third", "Other prose.")
    assert executed and "value: third" in html
    assert len(caches(tmp_path)) == 2, f"stale caches left behind: {caches(tmp_path)}"


COMPUTING_PAGE = (
    MYST_NOTEBOOK
    + """
# Computing

```{{code-cell}} ipython3
from myst_nb import glue
glue("answer", {value}, display=False)
```

The answer is {{glue:text}}`answer`.
"""
)

PASTING_PAGE = (
    MYST_NOTEBOOK
    + """
# Pasting

The other page found {glue:text}`computing.md::answer:d`.
"""
)


@pytest.mark.slow
@pytest.mark.build
def test_a_page_pasting_glued_values_follows_the_page_that_computes_them(small_book):
    root = small_book(
        {"pasting": PASTING_PAGE},
        title="cache test",
        toc="format: jb-book\nroot: computing\nchapters:\n- file: pasting\n",
        extensions=[*EXTENSIONS, "bookbuild.site.glue_dependencies"],
        sphinx_config=SPHINX_CONFIG,
    )
    (root / "pkg").mkdir()
    pasting = root / "_build" / "html" / "pasting.html"
    for value in (41, 42):
        (root / "computing.md").write_text(COMPUTING_PAGE.format(value=value))
        build = build_book(root)
        assert build.returncode == 0, build.output[-3000:]
        text = re.sub(r"<[^>]+>", "", pasting.read_text(encoding="utf-8"))
        assert f"The other page found {value}." in text


def test_pasted_documents_are_found_relative_to_the_page():
    from bookbuild.site.glue_dependencies import pasted_docnames

    text = (
        "{glue:text}`cost.md::slope:.2f` and {glue:md}`../intro.md::x`\n"
        "```{glue:figure} sub/a.ipynb::fig\n```"
    )
    assert pasted_docnames("book/faq", text) == {"book/cost", "intro", "book/sub/a"}


def test_asking_for_the_cache_path_deletes_nothing(tmp_path):
    from bookbuild.execute.cache import cache_path, prune_caches

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "value.txt").write_text("1")
    caches = tmp_path / "_build" / ".jupyter_cache"
    old = [caches / f"deps-old{i}" for i in range(3)]
    for age, folder in enumerate(old):
        folder.mkdir(parents=True)
        os.utime(folder, (1_000_000 + age, 1_000_000 + age))
    current = cache_path(tmp_path, tmp_path / "_build", ["pkg"])
    assert current.parent == caches and not current.exists()
    assert all(folder.is_dir() for folder in old), "a path was asked, not a clean-up"
    removed = prune_caches(current)
    assert sorted(removed) == old[:2]
    assert [f.name for f in caches.iterdir()] == ["deps-old2"]  # the most recent


def test_the_cache_follows_the_cpu_emulation(monkeypatch):
    """A build under ATEN_CPU_CAPABILITY=avx2 (CONTRIBUTING, "Claims about
    trained runs") executes the chapters again: trained results differ."""
    from bookbuild.execute import kernel_config
    from bookbuild.execute import results as _results

    assert kernel_config.CPU_VARIABLES is _results.CPU_VARIABLES
    for name in kernel_config.CPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    native = kernel_config.fingerprint()
    assert kernel_config.fingerprint() == native
    for name, value in [
        ("ATEN_CPU_CAPABILITY", "avx2"),
        ("ONEDNN_MAX_CPU_ISA", "SSE41"),
    ]:
        monkeypatch.setenv(name, value)
        assert kernel_config.fingerprint() != native, name
        monkeypatch.delenv(name)
    assert kernel_config.fingerprint() == native
