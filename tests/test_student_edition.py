"""`make book EDITION=student`: the same book, without solutions."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.toc import pages

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
BIN = Path(sys.executable).parent


pytestmark = [pytest.mark.book, pytest.mark.slow]


@pytest.fixture(scope="module")
def student_site(built_book, tmp_path_factory):
    assert built_book.returncode == 0, built_book.output[-3000:]
    out = tmp_path_factory.mktemp("student")
    env = {**os.environ, "QKV_EDITION": "student"}
    env.pop("MPLBACKEND", None)
    done = subprocess.run(
        [
            str(BIN / "jupyter-book"),
            "build",
            str(ROOT),
            "-W",
            "-n",
            "--keep-going",
            "--path-output",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "Executed notebook" not in done.stdout  # the cache is shared
    return out / "_build" / "html"


def test_student_edition_has_no_solution(student_site):
    for page in pages(ROOT):
        html = (student_site / f"{page}.html").read_text(encoding="utf-8")
        assert not re.search(r'class="[^"]*\bsolution\b', html), page
        assert "Solution to" not in html, page
        for box in re.findall(
            r'<div class="question admonition">(.*?)</div>\s*</div>', html, re.S
        ):
            assert "sd-dropdown" not in box, page


def test_student_edition_keeps_everything_else(student_site):
    for page in pages(ROOT):
        full = (HTML / f"{page}.html").read_text(encoding="utf-8")
        student = (student_site / f"{page}.html").read_text(encoding="utf-8")
        assert full.count('class="exercise') == student.count('class="exercise')
        assert full.count("_images/") == student.count("_images/"), page
        if 'class="solution' in full:
            assert len(student) < len(full)
    lesson = (student_site / "book" / "scaled-dot-product.html").read_text("utf-8")
    assert "Question: what happens without the scaling?" in lesson
