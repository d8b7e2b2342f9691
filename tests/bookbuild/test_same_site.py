"""The same site every time: two clean builds are identical; an incremental build
keeps the search index whole and leaves no image behind; no machine path leaks.

A small book, built as ``make book`` builds (prefill in warm kernels, then the
strict build) with the book's own extensions, holds what used to differ between
builds: figures shown and glued, a printed set of words, text printed in pieces,
a traceback shown for teaching, a glossary, a chapter notebook. It is built from
scratch in two folders, then edited and built again incrementally. The same
check on the real book is a release check: `make release` (CI runs it), or
`make same-site` (two cold builds: minutes).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from bookbuild.site.stale_files import referenced_images
from bookbuild.tools import same_site
from bookbuild.tools.same_site import TIMED_PAGES, compare_sites
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book, write_small_book

ROOT = Path(__file__).resolve().parents[2]


CHAPTER = (
    MYST_NOTEBOOK
    + """
(chapter)=
# A chapter

{prose}

```{{code-cell}} ipython3
import matplotlib.pyplot as plt
import torch

import qkv
from qkv.page.plot import heatmap, use_book_style

use_book_style()
torch.manual_seed(0)
weights = torch.softmax(torch.randn(3, 3), dim=-1)
print({{"jardin", "arbre", "pomme", "semaines", "du"}})
for word in ["one", "two", "three"]:
    print(word, "attends")
```

```{{code-cell}} ipython3
fig = heatmap(weights * {scale}, ["a", "b", "c"], title="shown")
plt.show()
```

```{{code-cell}} ipython3
:tags: [remove-cell]

from qkv.page.glue import glue_figure

glue_figure("glued-heatmap", heatmap(weights, ["a", "b", "c"]))
```

```{{glue:figure}} glued-heatmap
:name: fig-glued
:alt: A heatmap of three weights per row.

The same weights, glued.
```

```{{code-cell}} ipython3
:tags: [raises-exception]

qkv.scaled_dot_product_attention(torch.randn(4, 8), torch.randn(6, 5), weights)
```

A {{term}}`query` looks for a {{term}}`key`.
"""
)

GLOSSARY = """\
# Glossary

```{glossary}
query
  What a position looks for.

key
  What a position offers.

value
  What a position gives.
```
"""

EXTENSIONS = [
    "bookbuild.site.quiet",
    "bookbuild.execute.kernel_config",
    "bookbuild.execute.cache",
    "bookbuild.site.notebooks",
    "bookbuild.site.search_index",
    "bookbuild.site.stale_files",
    "bookbuild.site.accessibility",
]

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Lessons
    numbered: true
    chapters:
      - file: chapter
  - caption: Back matter
    chapters:
      - file: glossary
"""


def write_book(root: Path, prose: str = "Some prose.", scale: float = 1.0) -> Path:
    return write_small_book(
        root,
        {
            "intro": "# A small book\n\nIts introduction.\n",
            "glossary": GLOSSARY,
            "chapter": CHAPTER.format(prose=prose, scale=scale),
        },
        title="same site test",
        toc=TOC,
        extensions=EXTENSIONS,
        sphinx_config="dependency_cache_paths: []",
    )


def edit_chapter(root: Path, prose: str, scale: float = 1.0) -> None:
    """Rewrite the chapter alone: Sphinx re-reads every file whose time changed."""
    (root / "chapter.md").write_text(CHAPTER.format(prose=prose, scale=scale))


def build(root: Path):
    result = build_book(root, env={"SOURCE_DATE_EPOCH": "1767225600"}, prefill=True)
    assert result.returncode == 0, result.output[-4000:]
    return result


def index_of(site: Path) -> dict:
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def site_text(site: Path) -> dict[str, str]:
    """Every page, notebook and the search index of a site, by path."""
    return {
        path.relative_to(site).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(site.rglob("*"))
        if path.suffix in {".html", ".ipynb", ".js", ".txt"}
        and "_static" not in path.parts
    }


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory):
    """The small book built from scratch in two folders."""
    folder = tmp_path_factory.mktemp("same-site")
    builds = {name: build(write_book(folder / name)) for name in ("a", "b")}
    return folder, builds


# One xdist group: in ``make test``'s first run (``--dist loadgroup``) the
# module's tests share one worker, so ``two_builds`` builds its two books once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("same-site")]


@pytest.mark.build
def test_two_clean_builds_give_the_same_site(two_builds):
    folder, builds = two_builds
    differences = compare_sites(builds["a"].html, builds["b"].html, timed={})
    assert not differences, "\n".join(map(str, differences))
    assert (builds["a"].html / "_notebooks" / "chapter.ipynb").is_file()
    assert len(list((builds["a"].html / "_images").iterdir())) == 2  # shown, glued


@pytest.mark.build
def test_the_pages_show_what_the_kernels_were_set_up_for(two_builds):
    _, builds = two_builds
    page = (builds["a"].html / "chapter.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    # The traceback shown for teaching: the error alone.
    shown = re.search(r'<div class="output traceback.*?</pre>', page, re.S)
    assert shown, "no traceback shown"
    assert html.unescape(re.sub(r"<[^>]+>", "", shown.group(0))).strip() == (
        "ValueError: query and key must have the same feature size (last dim), "
        "got query (4, 8) and key (6, 5)"
    )
    # The set of words prints in the order the fixed string hashes give.
    assert re.search(r"\{'\w+', '\w+', '\w+', '\w+', '\w+'\}", text)
    # Text printed in pieces shows as printed, without blank lines.
    assert "one attends\ntwo attends\nthree attends\n" in text


@pytest.mark.build
def test_no_machine_path_in_the_site(two_builds):
    folder, builds = two_builds
    for name, result in builds.items():
        for path, text in site_text(result.html).items():
            assert str(folder) not in text, f"{name}/{path} holds the build folder"
            assert "/site-packages/" not in text, f"{name}/{path} holds a path"


@pytest.mark.build
def test_the_build_log_is_quiet(two_builds):
    _, builds = two_builds
    log = builds["a"].output
    assert "prefill: [1/1] chapter" in log, log[-2000:]  # progress per chapter
    assert "1 forked from the warm process" in log or "1 ordinary" in log
    for noise in ("running over TCP", "ParserConfig(", "[etoc]", "KeyboardInterrupt"):
        assert noise not in log, f"{noise!r} in the build log"


@pytest.mark.build
def test_an_incremental_build_keeps_the_search_index_and_drops_stale_images(
    two_builds,
):
    folder, builds = two_builds
    root, site = folder / "a", builds["a"].html
    clean = index_of(site)
    terms = {"query", "key", "value"}
    assert terms <= set(clean["indexentries"]), clean["indexentries"]

    # Prose only: the glossary is not read again, its entries stay in the index.
    edit_chapter(root, prose="Other prose, with a zebra.")
    incremental = build(root)
    assert "reading sources... [100%] chapter" in re.sub(
        r"\x1b\[[0-9;]*m", "", incremental.output
    )
    again = index_of(site)
    assert again["indexentries"] == clean["indexentries"]
    assert "zebra" in again["terms"]

    # Other numbers: the chapter runs again and draws a new figure; the old
    # image leaves the site and myst-nb's output folder.
    before = set(os.listdir(site / "_images"))
    edit_chapter(root, prose="Other prose, with a zebra.", scale=2.0)
    build(root)
    after = set(os.listdir(site / "_images"))
    assert after != before and len(after) == 2, (before, after)
    assert after == referenced_images(site)
    outputs = root / "_build" / "jupyter_execute"
    images = {p.name for p in outputs.iterdir() if p.suffix in {".svg", ".png"}}
    assert images == after, (images, after)


REAL_BOOK = os.environ.get("CI") == "true" or os.environ.get("QKV_SAME_SITE") == "1"


@pytest.mark.book
@pytest.mark.release  # two cold builds of the whole book: make release
@pytest.mark.skipif(
    not REAL_BOOK,
    reason="two cold builds of the book (minutes): runs in CI, in `make release` "
    "(QKV_SAME_SITE=1), or as `make same-site`",
)
@pytest.mark.build
def test_the_real_book_builds_the_same_site_twice(built_book, capsys):
    """Two clean builds of the whole book, in two folders, give the same site.
    When the session's build was clean (``pytest -m release`` on a fresh
    clone), it is the first of the two: same commit, same SOURCE_DATE_EPOCH,
    same command, another folder; only the second build runs (one cold build
    saved). Otherwise (`make release` after `make test`, as in CI) both are
    built here, as `make same-site` does. Both read the session's trained
    results instead of training every model again."""
    assert set(TIMED_PAGES) <= set(_pages()), "a timed page left the book"
    assert built_book.returncode == 0, built_book.output[-3000:]
    first = ["--first", str(built_book.html)] if built_book.clean else []
    # the models the seed tests and the first build trained (keyed on the code)
    first += ["--results", str(ROOT / "_build" / "results")]
    code = same_site.main([str(ROOT), *first])
    report = capsys.readouterr().out
    assert code == 0, report[-6000:]
    shutil.rmtree(ROOT / "_build" / "same-site", ignore_errors=True)


def _pages() -> list[str]:
    from bookbuild.toc import pages

    return pages(ROOT)


def test_a_commit_during_the_builds_is_reported_not_compared(tmp_path, monkeypatch):
    """Each page's footer names the commit: two builds either side of a commit
    differ everywhere, which says nothing about the build; the command says so."""
    commits = iter(["aaaaaaa", "bbbbbbb"])
    monkeypatch.setattr(same_site, "commit", lambda root: next(commits))
    monkeypatch.setattr(same_site, "copy_book", lambda root, target: target)

    def fake_build(copy, env, prefill):
        site = Path(copy) / "html"
        site.mkdir(parents=True)
        (site / "index.html").write_text(f"built from {copy.name}")
        return type("Built", (), {"returncode": 0, "output": "", "html": site})

    monkeypatch.setattr(same_site, "build_book", fake_build)
    assert same_site.main([str(tmp_path)]) == 3
