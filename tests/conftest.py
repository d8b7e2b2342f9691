"""Shared fixtures: the book, built once per test session (incrementally, cached)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
HTML = BUILD / "html"
BIN = Path(sys.executable).parent

sys.path.insert(0, str(ROOT / "_ext"))
from book_toc import is_notebook, lessons, pages  # noqa: E402, F401


@dataclass
class BuildResult:
    returncode: int
    output: str
    html: Path


def build_book(
    source: Path, env: dict[str, str] | None = None, prefill: bool = False
) -> BuildResult:
    """Run the book's strict build on ``source``; with ``prefill``, execute the
    chapters in parallel first, as `make book` does."""
    env = {**os.environ, **(env or {})}
    env.pop("MPLBACKEND", None)  # a headless backend would hide every figure
    prefill_output = ""
    if prefill:
        done = subprocess.run(
            [sys.executable, str(ROOT / "_ext" / "prefill_cache.py"), str(source)],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        prefill_output = done.stdout + done.stderr
    result = subprocess.run(
        [str(BIN / "jupyter-book"), "build", str(source), "-W", "-n", "--keep-going"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return BuildResult(
        result.returncode,
        prefill_output + result.stdout + result.stderr,
        source / "_build" / "html",
    )


@pytest.fixture(scope="session")
def built_book() -> BuildResult:
    """The book built strictly from this checkout into _build/html."""
    return build_book(ROOT, prefill=True)


def toc_files() -> list[str]:
    """Every page listed in _toc.yml, as paths without suffix, in reading order."""
    return pages(ROOT)
