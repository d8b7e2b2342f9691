"""Build-speed benchmark: ``make bench`` (``python -m bookbuild.tools.bench``, minutes).

Measures, on this machine, with the virtual environment already installed:
a cold `make book` (empty execution cache), `make book` with nothing changed,
after editing the prose of one chapter, and after editing `src/qkv` (which must
re-execute every chapter); then prints each chapter's execution time. Every edit
is undone, and the build after the undo is measured too (the previous cache is
kept, so it is fast). `make book` also builds the translations (one more Sphinx
pass each, executing nothing): their time is shown apart, and the targets apply
to the rest.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bookbuild.execute.prefill import runtimes_path

ROOT = Path(".").resolve()  # run from the book's folder, as the Makefile does
TARGETS = {"cold": 60.0, "nothing changed": 5.0, "prose edited": 10.0}


def make_book() -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(["make", "book"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"make book failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def translation_seconds(output: str) -> float:
    """The time of the translations' passes, from what they print."""
    return sum(
        float(s) for s in re.findall(r"translations: \w+ built in ([\d.]+) s", output)
    )


def executed(output: str) -> int:
    match = re.search(r"prefill: (\d+) executed", output)
    return int(match.group(1)) if match else 0


def edited(path: Path, extra: str):
    time.sleep(1.0)  # an edit in the same clock tick as the last build looks old
    original = path.read_text(encoding="utf-8")
    path.write_text(original + extra, encoding="utf-8")
    return original


def main() -> int:
    results: list[tuple[str, float, int, float]] = []
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    seconds, out = make_book()
    results.append(("cold", seconds, executed(out), translation_seconds(out)))
    seconds, out = make_book()
    results.append(("nothing changed", seconds, executed(out), 0.0))

    for name, path, extra in [
        ("prose", ROOT / "book" / "masking.md", "\nAn added sentence of prose.\n"),
        ("src/qkv", ROOT / "src" / "qkv" / "__init__.py", "\n# an edit\n"),
    ]:
        original = edited(path, extra)
        try:
            seconds, out = make_book()
            results.append(
                (f"{name} edited", seconds, executed(out), translation_seconds(out))
            )
        finally:
            path.write_text(original, encoding="utf-8")
        seconds, out = make_book()
        results.append(
            (f"{name} restored", seconds, executed(out), translation_seconds(out))
        )

    print(
        f"{'make book':<20}{'seconds':>9}{'of which translations':>23}"
        f"{'chapters executed':>19}{'target':>10}"
    )
    ok = True
    for name, seconds, n, translated in results:
        target = TARGETS.get(name)
        mark = "" if target is None else f"<= {target:.0f}"
        if target is not None and seconds - translated > target:
            mark += " MISSED"
            ok = False
        print(f"{name:<20}{seconds:>9.1f}{translated:>23.1f}{n:>19}{mark:>10}")
    n_chapters = results[0][2]
    if {r[0]: r[2] for r in results}["src/qkv edited"] != n_chapters:
        print("an edit to src/qkv did not re-execute every chapter")
        ok = False
    runtimes = json.loads(runtimes_path(ROOT).read_text())
    print("\nexecution time of each chapter (s, one torch thread, two at a time):")
    for name, seconds in sorted(runtimes.items(), key=lambda item: -item[1]):
        print(f"  {name:<24}{seconds:>6.1f}")
    print(f"  {'total':<24}{sum(runtimes.values()):>6.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
