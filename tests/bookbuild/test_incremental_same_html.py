"""An incremental build writes the same HTML as a clean one. Sphinx adds
``?v=<checksum>`` to an asset a page links only if the file is already in the
output as the page is written: the files written when the build ends (myst-nb's
stylesheet, MathJax's component) were linked bare by a clean build and with
``?v=`` by the next one (``make same-site`` compares two clean builds and could
not see it). ``bookbuild.site.assets`` writes them first; here a small book is
built clean, a page edited and built again, and every HTML file compared with a
clean build of the edited book; without the extension, the same steps differ."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.tools.testing import write_small_book

PAGES = {
    "index": "# Home\n\nThe score $q \\cdot k$.\n",
    "two": "# Two\n\n$$\\mathrm{softmax}(x)_i = e^{x_i} / \\sum_j e^{x_j}$$\n",
}
TOC = "format: jb-book\nroot: index\nchapters:\n  - file: two\n"
EXTENSIONS = ["bookbuild.site.mathjax", "bookbuild.site.style", "sphinx_exercise"]


def build(root: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root)]
        + ["-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


def html(root: Path) -> dict[str, str]:
    site = root / "_build" / "html"
    found = {
        str(path.relative_to(site)): path.read_text(encoding="utf-8")
        for path in sorted(site.rglob("*.html"))
    }
    assert {"index.html", "two.html"} <= found.keys(), sorted(found)
    return found


def incremental_and_clean(tmp_path: Path, extensions: list[str]):
    """The HTML of the edited book built incrementally, and built clean."""
    options = dict(toc=TOC, extensions=extensions, extra_config="")
    root = write_small_book(tmp_path / "incremental", PAGES, **options)
    config = root / "_config.yml"
    config.write_text(
        config.read_text().replace(
            "execute_notebooks: cache", "execute_notebooks: 'off'"
        )
    )
    build(root)
    edited = {"two": PAGES["two"] + "\nOne more sentence.\n"}
    write_small_book(root, edited, **options)
    build(root)
    clean = tmp_path / "clean"
    shutil.copytree(root, clean, ignore=shutil.ignore_patterns("_build"))
    build(clean)
    return html(root), html(clean)


def versions(text: str) -> set[str]:
    return set(re.findall(r"[\w./-]+\?v=\w+", text))


@pytest.mark.build
@pytest.mark.slow
def test_an_incremental_build_writes_the_html_of_a_clean_build(tmp_path):
    incremental, clean = incremental_and_clean(
        tmp_path / "fixed", [*EXTENSIONS, "bookbuild.site.assets"]
    )
    assert incremental.keys() == clean.keys()
    for page, text in clean.items():
        assert versions(incremental[page]) == versions(text), page
        assert incremental[page] == text, page
    # the assets of the difference are linked with their checksum in both
    two = clean["two.html"]
    assert re.search(r"_static/mystnb\.\w+\.css\?v=\w+", two)
    assert re.search(r"_static/mathjax/tex-mml-chtml\.js\?v=\w+", two)
    assert re.search(r"_static/exercise\.css\?v=\w+", two)


@pytest.mark.build
@pytest.mark.slow
def test_without_the_fix_the_same_steps_write_different_html(tmp_path):
    """The book above reproduces the difference: without bookbuild.site.assets,
    myst-nb's stylesheet (written when the build ends) is linked bare by the
    clean build and with ``?v=`` by the incremental one. (MathJax's component is
    now written before the pages by bookbuild.site.mathjax itself: the fixed
    test above sees it linked with ``?v=`` in the clean build.)"""
    incremental, clean = incremental_and_clean(tmp_path / "bare", EXTENSIONS)
    two = versions(incremental["two.html"]) - versions(clean["two.html"])
    assert any("/mystnb." in name for name in two), two
    assert any("/exercise.css" in name for name in two), two
    assert incremental["two.html"] != clean["two.html"]
