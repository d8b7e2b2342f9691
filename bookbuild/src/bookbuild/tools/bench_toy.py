"""Benchmark of qkv.experiments.toy against the targets of "How attention learns".

On one thread, trains the agreement model for seeds 0 to 4 with one head and with
two, and prints for each run the held-out accuracy, the designated head's weight on
the subject before and after training (and a uniform head's), the training time
(wall clock and CPU) and the targets of ``toy.TARGETS`` it misses. Then: whether
two runs with the same seed give the same numbers; the baselines (rules and models
that ignore word order); and, for seed 0 with two heads, where each head of the
slot looks and the accuracy without each head. Exits 1 if a run misses a target or
if training is not deterministic. Run with ``make bench-toy``
(``python -m bookbuild.tools.bench_toy``).
"""

from __future__ import annotations

import sys

import torch

from qkv.experiments import toy

SEEDS = range(5)
HEADS = (1, 2)


def main() -> int:
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    print("targets:", ", ".join(f"{k} {v}" for k, v in toy.TARGETS.items()))
    print()
    print("heads seed  accuracy head  before uniform  after   wall s  cpu s  missed")
    runs, failed = {}, False
    for num_heads in HEADS:
        for seed in SEEDS:
            run = runs[num_heads, seed] = toy.train(seed, num_heads=num_heads)
            missed = run.missed_targets()
            failed |= bool(missed)
            print(
                f"{num_heads:>5} {seed:>4}  {run.accuracy:>8.3f} {run.head:>4}  "
                f"{run.attention_before:>6.3f} {run.uniform:>7.3f}  "
                f"{run.attention_after:>5.3f}  {run.seconds:>7.2f} "
                f"{run.cpu_seconds:>6.2f}  {', '.join(missed) or '-'}"
            )

    first, again = runs[2, 0], toy.train(0, num_heads=2)
    same = (
        first.history == again.history
        and first.accuracy == again.accuracy
        and first.attention_after == again.attention_after
    )
    failed |= not same
    print(f"\nsame numbers on two runs of seed 0: {same}")

    print("\nbaselines on the held-out sentences of seed 0 (accuracy):")
    for name, value in toy.baselines(seed=0).items():
        print(f"  {name:<32} {value:.3f}")

    print("\nseed 0, two heads: weight from the slot, per role, per head")
    before = toy.slot_attention(first.initial_model, first.heldout)
    after = toy.slot_attention(first.model, first.heldout)
    print(f"  {'role':<14}" + "".join(f"  h{h} before  h{h} after" for h in range(2)))
    for role in after:
        cells = "".join(
            f"  {before[role][h]:>9.3f} {after[role][h]:>9.3f}" for h in range(2)
        )
        print(f"  {role:<14}{cells}")
    batch = toy.encode(first.heldout)
    ablation = toy.head_ablation(first.model, batch)
    print(f"  accuracy {first.accuracy:.3f}; without each head: ", end="")
    print(", ".join(f"head {h} {a:.3f}" for h, a in enumerate(ablation)))
    print("\nall targets met" if not failed else "\nTARGET MISSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
