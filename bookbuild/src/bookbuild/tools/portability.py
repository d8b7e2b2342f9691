"""The book's claims on other CPUs (``make portability``).

Problem: a sentence about a trained model was true on the machine that wrote
it, by a hair, and false on a reader's: training is chaotic, and one ulp of
difference in a CPU's kernels changes where a run ends (PyTorch does not promise
the same results across platforms). ``make book`` on one machine cannot see it.

Answer: one machine emulates others. Set before torch is imported,
``ATEN_CPU_CAPABILITY`` chooses ATen's kernels (softmax, reductions, the
optimisers' arithmetic), ``MKL_ENABLE_INSTRUCTIONS`` MKL's and
``ONEDNN_MAX_CPU_ISA`` oneDNN's (:data:`CONFIGURATIONS`; PyTorch's own CI runs
its tests under several capabilities). This command executes every chapter
(English: the French runs the same code) under each configuration, from a copy
of the book's sources in ``_build/portability/<configuration>``, with the
prefill of ``make book`` (:mod:`bookbuild.execute.prefill`): every model trained
again (trained results are keyed on the CPU's kernels; the copies share the
book's ``_build/results``, so the native configuration reads what ``make book``
trained), every ``assert`` recorded instead of raised
(:mod:`bookbuild.execute.claims`). Then it reports, for every configuration,
every claim that failed, and every order comparison (``<``, ``<=``, ``>``,
``>=``) whose margin ``|a-b|/max(|a|,|b|)`` is below :data:`MARGIN` on one of
them (CONTRIBUTING, *Claims about trained runs*: a bound sits 5 % away from the
worst value measured) when its values differ between configurations: a claim
the CPU moves, on a knife edge. Such a claim, or a failed one, fails the
command; a thin margin that no configuration moves (a computation the kernels
do not change) is listed, not failed.

``python -m bookbuild.tools.portability [--configurations native,avx2,default]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bookbuild.execute.claims import CLAIM_MARGINS, FAILED_CLAIMS
from bookbuild.execute.kernel_config import CPU_VARIABLES
from bookbuild.tools.same_site import copy_book

#: The CPUs a build emulates (besides its own): variables set before torch is
#: imported (``../shared/PLATFORM.md`` has their measured effects).
CONFIGURATIONS = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    },
    "default": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
}
#: The smallest margin a claim the CPU moves may hold by (CONTRIBUTING).
MARGIN = 0.05
#: Where the copies are built, in the book's ``_build``.
FOLDER = Path("_build") / "portability"


#: The time a cell may take in the copies. An emulated CPU can train many times
#: slower than the real one: on an Intel Xeon (AVX-512), one induction model took
#: 16 s natively and 170 s under ``default``, and the decoders chapter's cell
#: that trains five of them outran the book's 600 s.
TIMEOUT = 3600


def english_only(copy: Path) -> None:
    """The copy's ``_config.yml`` without its other languages (the prefill
    runs the English chapters only) and with a cell timeout of
    :data:`TIMEOUT` seconds."""
    path = copy / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    languages = (config.get("sphinx") or {}).get("config") or {}
    languages.pop("book_languages", None)
    config.setdefault("execute", {})["timeout"] = TIMEOUT
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")


def execute(root: Path, name: str) -> tuple[int, str, float]:
    """Every chapter of the book in ``root`` executed under configuration
    ``name``, in its copy; the prefill's exit code, what it printed, seconds."""
    copy = copy_book(root, Path(root) / FOLDER / name)
    english_only(copy)
    results = Path(root) / "_build" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (copy / "_build").mkdir(parents=True, exist_ok=True)
    (copy / "_build" / "results").symlink_to(results.resolve())
    environment = {k: v for k, v in os.environ.items() if k not in CPU_VARIABLES}
    environment.update(CONFIGURATIONS[name])
    environment.pop("QKV_CLAIMS", None)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "bookbuild.execute.prefill", str(copy)],
        env=environment,
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout + done.stderr, time.perf_counter() - start


def kept(copy: Path) -> list[dict]:
    """Every claim kept in the copy's execution cache: its order comparisons
    with their worst margin, and its failures."""
    from jupyter_cache import get_cache

    found = []
    for folder in sorted((copy / "_build" / ".jupyter_cache").glob("deps-*")):
        cache = get_cache(folder)
        for record in cache.list_cache_records():
            data = record.data or {}
            seen = set()
            for claim in [*data.get(FAILED_CLAIMS, []), *data.get(CLAIM_MARGINS, [])]:
                where = (claim["file"], claim["line"], claim["check"])
                if where not in seen:
                    seen.add(where)
                    found.append(claim)
    return found


def compare(measured: dict[str, list[dict]], margin: float = MARGIN) -> dict:
    """``{"failed": [...], "thin": [...], "steady": [...]}``: the claims (one
    line each, every configuration's value) that failed on a configuration,
    that hold by less than ``margin`` on one where the configurations disagree,
    and that hold by less than ``margin`` the same way everywhere."""
    claims: dict[tuple, dict[str, dict]] = {}
    for name, found in measured.items():
        for claim in found:
            where = (claim["file"], claim["line"], claim["check"])
            claims.setdefault(where, {})[name] = claim
    report: dict[str, list[str]] = {"failed": [], "thin": [], "steady": []}
    for (file, line, check), by_name in sorted(claims.items()):
        shown = "; ".join(
            f"{name}: {_value(claim)}" for name, claim in sorted(by_name.items())
        )
        text = f"{file}:{line}: {check}  [{shown}]"
        margins = [c["margin"] for c in by_name.values() if c["margin"] is not None]
        if any(c["failures"] for c in by_name.values()):
            report["failed"].append(text)
        elif margins and min(margins) < margin - 1e-9:  # 5 % is enough
            values = {c.get("worst") for c in by_name.values()}
            steady = len(values) == 1 and len(by_name) == len(measured)
            report["steady" if steady else "thin"].append(text)
    return report


def _value(claim: dict) -> str:
    if claim["failures"]:
        return f"FAILED ({claim['measured'] or 'false'})"
    if claim["margin"] is None:
        return "held"
    return f"{claim['worst']} (margin {100 * claim['margin']:.1f} %)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=".", type=Path)
    parser.add_argument(
        "--configurations",
        default=",".join(CONFIGURATIONS),
        help="comma-separated, of: " + ", ".join(CONFIGURATIONS),
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    names = [name for name in args.configurations.split(",") if name]
    unknown = sorted(set(names) - set(CONFIGURATIONS))
    if unknown:
        parser.error(f"unknown configuration(s): {', '.join(unknown)}")
    measured = {}
    for name in names:
        code, output, seconds = execute(root, name)
        print(f"portability: {name}: executed in {seconds:.0f} s", flush=True)
        if code:
            print(output, flush=True)
            print(f"portability: {name}: the prefill failed (exit code {code})")
            return 1
        measured[name] = kept(root / FOLDER / name)
    report = compare(measured)
    for kind, title in [
        ("failed", "failed on a configuration"),
        ("thin", f"hold by less than {MARGIN:.0%} where the CPU moves them"),
        ("steady", f"hold by less than {MARGIN:.0%}, the same on every configuration"),
    ]:
        if report[kind]:
            print(f"portability: {len(report[kind])} claim(s) {title}:")
            print("\n".join(f"  {line}" for line in report[kind]))
    n_claims = len({(c["file"], c["line"]) for f in measured.values() for c in f})
    bad = len(report["failed"]) + len(report["thin"])
    print(
        f"portability: {n_claims} compared claims on {', '.join(names)}: "
        + (f"{bad} to fix (CONTRIBUTING, Claims about trained runs)" if bad else "ok")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
