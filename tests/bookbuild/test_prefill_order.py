"""The prefill's order (issue 34): longest chapters first, on a fresh clone too.

A fresh clone has no ``_build/results/runtimes.json``; the times of a cold
build kept in the repository (``prefill.COLD_TIMES``) give it the order a
second build would have. Without them it ordered by source size and ran the
second-longest chapter last: one core idle for a minute at the end.
"""

from __future__ import annotations

import math
from pathlib import Path

from bookbuild.execute.prefill import cold_times, expected_seconds
from bookbuild.i18n.catalogues import translated_languages
from bookbuild.i18n.code import CODE_CELL
from bookbuild.toc import is_notebook, pages

ROOT = Path(__file__).resolve().parents[2]


def executed_runs(root: Path) -> set[str]:
    """The runs the prefill of a fresh clone executes, by their names
    (``masking``, ``fr/masking``): every notebook page, and, for a page with
    code, each translation."""
    runs = set()
    for page in pages(root):
        if not is_notebook(root, page):
            continue
        stem = Path(page).stem
        runs.add(stem)
        if CODE_CELL.search((root / f"{page}.md").read_text(encoding="utf-8")):
            runs.update(f"{language}/{stem}" for language in translated_languages(root))
    return runs


def test_the_cold_times_name_every_run_of_the_book_and_no_other():
    kept, runs = set(cold_times()), executed_runs(ROOT)
    assert kept == runs, (
        f"cold_times.json lacks {sorted(runs - kept)}, names gone runs "
        f"{sorted(kept - runs)}: refresh it after a cold build "
        "(python -m bookbuild.execute.prefill --keep-cold-times)"
    )
    assert all(seconds > 0 for seconds in cold_times().values())


def longest_first_makespan(times: dict[str, float], cores: int = 2) -> float:
    """When the last of ``cores`` ends, chapters given longest first to the
    core that is free first, as the prefill's pool does."""
    ends = [0.0] * cores
    for seconds in sorted(times.values(), reverse=True):
        ends[ends.index(min(ends))] += seconds
    return max(ends)


def test_longest_first_by_the_cold_times_keeps_both_cores_busy_to_the_end():
    chapters: dict[str, float] = {}
    for name, seconds in cold_times().items():
        chapter = name.split("/")[-1]
        chapters[chapter] = chapters.get(chapter, 0.0) + seconds
    ideal = sum(chapters.values()) / 2
    # Within 5 % of a perfect split of the work over two cores.
    assert longest_first_makespan(chapters) <= 1.05 * ideal


def test_a_chapter_is_expected_to_take_its_longer_time():
    last = {"decoders": 13.0, "fr/decoders": 5.0, "masking": 4.0}
    cold = {"decoders": 119.0, "fr/decoders": 2.8, "masking": 2.6}
    # Results read back (short last time): the cold time still counts.
    both = ["decoders", "fr/decoders"]
    assert math.isclose(expected_seconds(both, last, cold), 119.0 + 5.0)
    # A chapter slower than it was when the cold times were kept.
    assert math.isclose(expected_seconds(["masking"], last, cold), 4.0)
    # Known to one of them only.
    assert math.isclose(expected_seconds(["decoders"], {}, cold), 119.0)
    # Known to neither: first of all.
    assert expected_seconds(["new-chapter"], last, cold) == math.inf
