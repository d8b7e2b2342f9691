"""Shared fixtures: the book, built once per test session (incrementally, cached);
and the same random state at the start of every test.

Tiers (see CONTRIBUTING.md): ``make check`` runs every test that builds no book
and starts no browser, selected by ``-m "not build and not browser and not slow"``;
``make test`` runs every other one but the release checks, in two runs:
``-m "not book"`` on two workers (small books and test pages in a browser
included), then ``-m "book and not release"``; ``make release`` (CI runs it after
``make test``) runs ``-m release``: the checks that build the whole book again or
install an environment (two clean builds compared, the notebooks in a fresh
environment, the student edition, the PDFs), and the audits that load every page
or every deck in Chromium (offline, accessibility, widths, projector, decks;
AUDIT_FIXTURES or ``@pytest.mark.release``): make test keeps the browser checks
of each widget and page kind, make release every page. A test that builds a book, the
whole one or a small one, is marked ``build`` here, from the fixtures it uses
(BUILD_FIXTURES), or by hand with ``@pytest.mark.build`` when it calls
``build_book`` itself; ``release`` implies ``book``, which implies ``build``."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bookbuild.tools.testing import (
    BuildResult,
    build_book,
    require_chromium,
    write_small_book,
)

ROOT = Path(__file__).resolve().parents[1]


# Fixtures that build a book (the real one or a small one in tmp): a test using
# one of them, directly or through another fixture, is marked ``build``.
BUILD_FIXTURES = {"built_book", "student_site", "small_book", "small_book_built"}


def pytest_configure(config: pytest.Config) -> None:
    """The kept versions of qkv's trainings and measurements installed, as in the
    book's kernels (:func:`bookbuild.execute.results.install`): before the test
    modules import them, and idle until a test sets ``QKV_RESULTS`` (fixture
    ``trained_results``). Under pytest-xdist (``make check``: two workers on two
    cores), one torch thread per worker: two workers of two threads each would
    fight for the cores."""
    from bookbuild.execute import results

    results.install()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


# Fixtures that build the whole book: a test using one of them is marked ``book``.
WHOLE_BOOK_FIXTURES = {"built_book", "student_site"}
# Fixtures that build the whole book a second time (another edition): a test
# using one of them is a release check, marked ``release`` (``make release``).
RELEASE_FIXTURES = {"student_site"}
# Fixtures that load every page of both languages in Chromium (the whole-site
# audits, minutes each): a test using one of them is a release check too.
AUDIT_FIXTURES = {"survey", "projected"}


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``build`` every test that uses a fixture building a book; a test
    marked ``book`` (checks of the built book) builds it too, and so does a test
    that uses the whole book's fixtures, marked ``book`` here; a test that uses
    the student edition or a whole-site audit is marked ``release``, and every
    ``release`` test
    ``book``. (A module whose
    tests share a fixture that builds small books names an xdist group: in
    ``make test``'s first run, ``--dist loadgroup``, they share one worker and
    the fixture builds once.)"""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & (RELEASE_FIXTURES | AUDIT_FIXTURES):
            item.add_marker(pytest.mark.release)
        if fixtures & WHOLE_BOOK_FIXTURES or item.get_closest_marker("release"):
            item.add_marker(pytest.mark.book)
        if fixtures & BUILD_FIXTURES or item.get_closest_marker("book"):
            item.add_marker(pytest.mark.build)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Seed Python's, NumPy's and torch's generators before every test: a test
    that draws without seeding (a module's initial weights, say) draws the same
    numbers in every run and whatever ran before it. A hook, not an autouse
    fixture, so that Hypothesis's tests keep their own randomness."""
    import numpy as np
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)


@pytest.fixture(scope="module")
def site(built_book) -> Iterator[str]:
    """The built site served on 127.0.0.1 (a free port), as a base URL."""
    from bookbuild.tools.browser import serve

    assert built_book.returncode == 0, built_book.output[-3000:]
    with serve(ROOT / "_build" / "html") as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, through playwright's synchronous API."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    from bookbuild.tools.browser import launch

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def built_book() -> BuildResult:
    """The book built strictly from this checkout into _build/html, dated by the
    last commit (``SOURCE_DATE_EPOCH``), as ``make same-site`` dates its builds:
    on a fresh clone (CI) this clean build is the first of the two that
    tests/bookbuild/test_same_site.py compares."""
    from bookbuild.tools.same_site import source_date

    return build_book(ROOT, env={"SOURCE_DATE_EPOCH": source_date(ROOT)}, prefill=True)


@pytest.fixture(scope="session")
def student_site(built_book):
    """The student edition, where `make book EDITION=student` puts it (its French
    edition in ``fr/``)."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    out = ROOT / "_build" / "student"
    env = {**os.environ, "QKV_EDITION": "student"}
    env.pop("MPLBACKEND", None)
    done = subprocess.run(  # the student edition and its French edition (html/fr)
        [sys.executable, "-m", "bookbuild.build", "site"] + ["--path-output", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "Executed notebook" not in done.stdout  # the cache is shared
    return out / "_build" / "html"


@pytest.fixture
def small_book(tmp_path):
    """A small book written into ``tmp_path`` (or ``tmp_path / folder``): call it
    with the pages and options of ``bookbuild.tools.testing.write_small_book``
    (``folder=`` for a second book of the same test); it returns the book's
    folder. A test using it is marked ``build``."""

    def write(pages: dict[str, str], *, folder: str = "", **options) -> Path:
        return write_small_book(tmp_path / folder, pages, **options)

    return write


@pytest.fixture
def trained_results(monkeypatch):
    """For a test that trains a chapter's model on seeds 0-4 (the claims that
    must hold on every seed): ``QKV_RESULTS`` names the build's ``_build/results``
    and torch uses one thread, as in the book's kernels. The same call with the
    same code then trains once, in the test or in the build, whichever comes
    first, and the other reads it back (``bookbuild.execute.results``); a change
    of ``qkv`` trains again, in both."""
    import torch

    monkeypatch.setenv("QKV_RESULTS", str(ROOT / "_build" / "results"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
