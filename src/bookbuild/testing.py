"""What the tests share: the book's strict build, and the browser they need.

``tests/conftest.py`` builds the book once per test session with
:func:`build_book`; the tests of the cache and of the warm kernels build small
books of their own the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bookbuild.browser import CHROMIUM


@dataclass
class BuildResult:
    """A finished build: its exit code, everything it printed, its site (and
    what the build of its translations printed, also part of ``output``)."""

    returncode: int
    output: str
    html: Path
    translations_output: str = ""


def build_book(
    source: Path, env: dict[str, str] | None = None, prefill: bool = False
) -> BuildResult:
    """Run the book's strict build on ``source``, then its translations'; with
    ``prefill``, execute the chapters in parallel first, as ``make book`` does."""
    env = {**os.environ, **(env or {})}
    env.pop("MPLBACKEND", None)  # a headless backend would hide every figure
    prefill_output = ""
    if prefill:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "bookbuild.prefill", str(source)],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        prefill_output = done.stdout + done.stderr
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    result = subprocess.run(
        [str(jupyter_book), "build", str(source), "-W", "-n", "--keep-going"],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    translations = ""
    if result.returncode == 0:
        done = subprocess.run(
            [sys.executable, "-m", "bookbuild.translations", "build"],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        translations = done.stdout + done.stderr
        result.returncode = done.returncode
    return BuildResult(
        result.returncode,
        prefill_output + result.stdout + result.stderr + translations,
        Path(source) / "_build" / "html",
        translations,
    )


def require_chromium() -> None:
    """Skip the calling test without Chromium; under ``CI=true``, fail it."""
    import pytest

    if shutil.which(CHROMIUM) or os.path.exists(CHROMIUM):
        return
    reason = f"Chromium not found at {CHROMIUM}: apt-get install -y chromium"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def make_variable(root: Path, name: str) -> str:
    """The value of a variable of the book's Makefile (``make print-NAME``)."""
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", f"print-{name}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
