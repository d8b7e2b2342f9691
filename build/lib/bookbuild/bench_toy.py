"""Benchmark of qkv.toy against the targets of the chapter "How attention learns".

Trains twice with the same seed and prints held-out accuracy, the designated
head's attention from the slot to the subject before and after training, the
training time, and whether the two runs gave the same numbers. Exits 1 if a target
is missed. Run with ``make bench-toy`` (``python -m bookbuild.bench_toy``).
"""

from __future__ import annotations

import sys

import torch

from qkv import toy

TARGETS = {"accuracy": 0.95, "attention_after": 0.8, "seconds": 20.0}


def main() -> int:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    runs = [toy.train(seed=0) for _ in range(2)]
    first, second = runs
    same = (
        first.history == second.history
        and first.accuracy == second.accuracy
        and first.attention_after == second.attention_after
    )
    print(f"held-out accuracy        {first.accuracy:.4f}  (target >= 0.95)")
    print(f"designated head          {first.head}")
    print(
        f"attention before         {first.attention_before:.4f}  "
        f"(uniform {first.uniform:.4f})"
    )
    print(f"attention after          {first.attention_after:.4f}  (target >= 0.8)")
    for i, run in enumerate(runs, 1):
        print(f"training time, run {i}    {run.seconds:.2f} s  (target <= 20 s)")
    print(f"same numbers on two runs {same}")
    ok = (
        same
        and first.accuracy >= TARGETS["accuracy"]
        and first.attention_after >= TARGETS["attention_after"]
        and max(r.seconds for r in runs) <= TARGETS["seconds"]
        and abs(first.attention_before - first.uniform) < 0.05
    )
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
