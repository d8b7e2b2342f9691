"""The tests' own helpers (bookbuild.tools.testing): the whole book built once
for every worker of a run."""

from __future__ import annotations

import threading
from pathlib import Path

from bookbuild.tools.testing import BuildResult, built_once


def test_a_result_built_once_is_read_back_by_the_next_caller(tmp_path):
    calls = []

    def build() -> BuildResult:
        calls.append(1)
        return BuildResult(0, "built", tmp_path / "html", "translated", True)

    kept = tmp_path / "built.json"
    first = built_once(kept, build)
    again = built_once(kept, build)
    assert calls == [1]
    assert again == first
    assert isinstance(again.html, Path)


def test_two_workers_at_once_build_once_and_read_the_same_result(tmp_path):
    """Two threads stand for two workers: the second waits for the first's
    lock, then reads what it kept; a failed build is kept as it is."""
    calls = []

    def build() -> BuildResult:
        calls.append(1)
        return BuildResult(2, "failed", tmp_path / "html")

    kept = tmp_path / "built.json"
    results = []
    workers = [
        threading.Thread(target=lambda: results.append(built_once(kept, build)))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert calls == [1]
    assert [r.returncode for r in results] == [2, 2]
    assert results[0] == results[1]
