"""Two clean builds of the book give the same site (``make same-site``).

Problem: a lecturer who rebuilds the book, or a reviewer who compares two
versions of the site, should see only what changed. Builds used to differ in
every figure (a creation date and random ids in each SVG), every notebook
(random cell ids) and a printed set (string hashes salted per process), which
hid the real changes among hundreds of irrelevant ones.

Answer: this command (``make same-site``) copies the book's sources into two
folders, ``_build/same-site/a`` and ``b``, builds each from scratch as ``make
book`` does (prefill, then the strict build; the same ``SOURCE_DATE_EPOCH`` for
both), and compares the two sites file by file. Building in two folders also
catches a machine path that leaks into a page. ``--first SITE`` takes a clean
build made already (the test session's, in the book's own folder) as the first
of the two: one cold build instead of two. ``--results FOLDER`` gives each
copy the trained results of another build (``_build/results``, keyed on the
code): every chapter still executes from scratch, but the models are not
trained again (the test session's seed tests and first build trained them;
this command checks the build, not the training). It prints every file that
differs, and why when it is expected, and fails when a difference is not
explained.

Expected: the pages that show timings measured while the book is built
(:data:`TIMED_PAGES`, by name, with the reason), their notebooks, the figures
only they show, and their words in the search index (numbers are words there).
Everything else must be identical, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bookbuild.site.build_info import commit
from bookbuild.site.stale_files import IMAGE_REFERENCE, IMAGES
from bookbuild.tools.testing import build_book

#: Pages whose content depends on the time things took while the book was built.
TIMED_PAGES = {
    "book/attention-by-hand": "times Python loops against one matrix product",
    "book/attention-on-images": "reports how long the vision model took to train",
    "book/how-attention-learns": "reports how long the training took",
    "book/cost-of-attention": "measures the run time and memory of attention",
    "book/decoders": "reports how long the induction model took to train",
    "book/writing": "reports how long the five writers took to train",
    "book/cross-attention": "reports how long the translators took to train",
    "book/positions": "reports how long the five position models took to train",
    "book/scaled-dot-product": "its notebook says how long the lookup task trained",
    "book/faq": "pastes the slopes that the cost chapter measured",
    "book/build-info": "gives when each chapter was executed and how long it took",
}
#: Never copied into the two builds.
SKIP = {
    "_build",
    ".venv",
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    "node_modules",
}
SEARCH_INDEX = "searchindex.js"


@dataclass(frozen=True)
class Difference:
    """A file that differs between the two sites, and why, if expected."""

    path: str
    detail: str  # "differs", "only in a", "only in b"
    reason: str = ""  # empty: not explained

    def __str__(self) -> str:
        why = f"expected: {self.reason}" if self.reason else "NOT EXPLAINED"
        return f"{self.path} ({self.detail}): {why}"


def source_files(root: Path) -> list[Path]:
    """The book's files, relative to ``root``: what git tracks or would track
    (edits not yet committed included), else every file outside :data:`SKIP`."""
    done = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
    )
    if done.returncode == 0 and done.stdout:
        names = [name for name in done.stdout.decode().split("\0") if name]
        return sorted(Path(name) for name in names if (Path(root) / name).is_file())
    return sorted(
        path.relative_to(root)
        for path in Path(root).rglob("*")
        if path.is_file() and not SKIP.intersection(path.relative_to(root).parts)
    )


def copy_book(root: Path, target: Path) -> Path:
    """A fresh copy of the book's sources in ``target`` (replaced if it exists)."""
    shutil.rmtree(target, ignore_errors=True)
    for name in source_files(root):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(root) / name, target / name)
    return target


def _files(site: Path) -> set[str]:
    return {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}


def _editions(site: Path) -> set[str]:
    """The folders of the site that hold another edition (``fr``): each has
    its own pages, images, notebooks and search index."""
    return {index.parent.name for index in Path(site).glob(f"*/{SEARCH_INDEX}")}


def _split_edition(path: str, editions: set[str]) -> tuple[str, str]:
    """``("fr", "book/faq.html")`` for ``fr/book/faq.html``; ``("", path)``
    for a file of the English edition."""
    first, _, rest = path.partition("/")
    return (first, rest) if rest and first in editions else ("", path)


def _image_pages(site: Path) -> dict[tuple[str, str], set[str]]:
    """(edition, image name) -> the pages (without ``.html`` or the edition's
    folder) that show it."""
    editions = _editions(site)
    shown: dict[tuple[str, str], set[str]] = {}
    for page in site.rglob("*.html"):
        if "_static" in page.parts:
            continue
        edition, name = _split_edition(page.relative_to(site).as_posix(), editions)
        name = name[: -len(".html")]
        for image in IMAGE_REFERENCE.findall(page.read_text(encoding="utf-8")):
            shown.setdefault((edition, image), set()).add(name)
    return shown


def _page_of(path: str, pages: set[str]) -> str | None:
    """The page a file of the site belongs to (a page, its notebook, its source)."""
    if path.endswith(".html"):
        return path[: -len(".html")]
    if path.startswith("_notebooks/") and path.endswith(".ipynb"):
        stem = Path(path).stem
        return next((page for page in pages if Path(page).name == stem), None)
    if path.startswith("_sources/"):
        return path[len("_sources/") :].split(".", 1)[0]  # book/faq.md -> book/faq
    return None


def _search_index(site: Path, leave_out: set[str]) -> dict:
    """The search index, without the words of the pages ``leave_out``."""
    text = (site / SEARCH_INDEX).read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    dropped = {i for i, name in enumerate(index["docnames"]) if name in leave_out}
    for key in ("terms", "titleterms"):
        kept = {}
        for word, docs in index[key].items():
            docs = [docs] if isinstance(docs, int) else docs
            docs = [d for d in docs if d not in dropped]
            if docs:
                kept[word] = docs
        index[key] = kept
    return index


def compare_sites(a: Path, b: Path, timed: dict[str, str]) -> list[Difference]:
    """Every file that differs between the sites ``a`` and ``b``, explained
    when it belongs to a page of ``timed`` (page -> why it changes), in any
    edition (``fr/book/faq.html`` is the French ``book/faq``)."""
    a, b = Path(a), Path(b)
    files_a, files_b = _files(a), _files(b)
    shown = {"a": _image_pages(a), "b": _image_pages(b)}
    editions = _editions(a) | _editions(b)
    differences = []
    for path in sorted(files_a | files_b):
        if path in files_a and path in files_b:
            if (a / path).read_bytes() == (b / path).read_bytes():
                continue
            detail, side = "differs", "a"
        else:
            detail, side = ("only in a", "a") if path in files_a else ("only in b", "b")
        edition, inner = _split_edition(path, editions)
        reason = ""
        page = _page_of(inner, set(timed))
        if page in timed:
            reason = timed[page]
        elif inner.startswith(f"{IMAGES}/"):
            pages = shown[side].get((edition, inner[len(IMAGES) + 1 :]), set())
            if pages and pages <= set(timed):
                reason = f"a figure of {', '.join(sorted(pages))} only"
        elif inner == SEARCH_INDEX and detail == "differs":
            index_a = _search_index(a / edition, set(timed))
            if index_a == _search_index(b / edition, set(timed)):
                reason = "the words (numbers) of the timed pages; the rest is equal"
        differences.append(Difference(path, detail, reason))
    return differences


def source_date(root: Path) -> str:
    """The ``SOURCE_DATE_EPOCH`` of a build of ``root``: the environment's, else
    the time of the last commit (else now)."""
    return os.environ.get("SOURCE_DATE_EPOCH", "").strip() or _source_date(root)


def _source_date(root: Path) -> str:
    done = subprocess.run(
        ["git", "log", "-1", "--format=%ct"], cwd=root, capture_output=True, text=True
    )
    stamp = done.stdout.strip()
    return stamp if done.returncode == 0 and stamp.isdigit() else str(int(time.time()))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=".", type=Path)
    parser.add_argument(
        "--first",
        type=Path,
        help="the site of a clean build of this commit already made, with the "
        "same SOURCE_DATE_EPOCH, in another folder (the test session's): it is "
        "the first build, and only the second one runs",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="trained results to give each copy (another build's _build/results): "
        "the chapters execute again, the models are not trained again",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    folder = root / "_build" / "same-site"
    env = {"SOURCE_DATE_EPOCH": source_date(root)}
    sites, commit_before = [], commit(root)
    if args.first:
        print(f"same site: the first build is {args.first}", flush=True)
        sites.append(args.first.resolve())
    for name in ("a", "b")[len(sites) :]:
        copy = copy_book(root, folder / name)
        if args.results and args.results.is_dir():
            shutil.copytree(args.results, copy / "_build" / "results")
        print(f"same site: building a clean copy in {copy} ...", flush=True)
        start = time.perf_counter()
        build = build_book(copy, env=env, prefill=True)
        if build.returncode != 0:
            print(build.output[-4000:])
            print(f"same site: the build in {copy} failed")
            return 2
        print(f"same site: built in {time.perf_counter() - start:.0f} s", flush=True)
        sites.append(build.html)
    commit_after = commit(root)
    if commit_after != commit_before:
        # Every page's footer names the commit: the comparison would show nothing.
        print(
            f"same site: the commit changed during the builds ({commit_before} -> "
            f"{commit_after}): every page differs; run again without committing "
            "or editing"
        )
        return 3
    differences = compare_sites(*sites, TIMED_PAGES)
    unexplained = [d for d in differences if not d.reason]
    total = len(_files(sites[0]) | _files(sites[1]))
    print(f"same site: {total} files, {len(differences)} differ")
    for difference in differences:
        print(f"  {difference}")
    if unexplained:
        print(f"same site: {len(unexplained)} difference(s) not explained")
        return 1
    print("same site: the two builds are the same but for the timed pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
