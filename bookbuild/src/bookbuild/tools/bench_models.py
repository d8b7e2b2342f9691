"""Benchmark of qkv.experiments.vision and .translate against their targets.

The models of the chapters "Attention on images" and "Cross-attention". On one
thread, it prints for each model the held-out accuracy of seeds 0 to 4 with CPU
and wall time, the patch-size table of the ViT, dot vs additive cross-attention,
and the share of held-out English adjectives whose largest cross-attention weight
is on their French adjective. CPU time (process time) is the honest measure on a
shared machine; wall time is inflated by the neighbours. Exits 1 if a target is
missed. Run with ``make bench-models`` (``python -m bookbuild.tools.bench_models``; add
``--quick`` for seed 0 only).
"""

from __future__ import annotations

import sys

import torch

from qkv.experiments import translate, vision

ACCURACY, CPU_SECONDS = 0.95, 20.0


def main(quick: bool = False) -> int:
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread")
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    ok = True

    print("\nViT on the digits (patch 2): seed, accuracy, CPU s, wall s")
    data = vision.load_digits()
    for seed in seeds:
        run = vision.train(seed=seed, data=data)
        ok &= run.accuracy >= ACCURACY and run.cpu_seconds <= CPU_SECONDS
        print(
            f"  {seed}  {run.accuracy:.4f}  {run.cpu_seconds:6.2f}  {run.seconds:6.2f}"
        )
    again = vision.train(seed=seeds[-1], data=data)
    same = again.history == run.history
    ok &= same
    print(f"  same history twice: {same}")

    print("\nPatch sizes (seed 0): p, tokens, accuracy, CPU s, wall s")
    for patch_size in (4, 2, 1):
        run = vision.train(seed=0, patch_size=patch_size, data=data)
        print(
            f"  {patch_size}  {run.num_tokens:3d}  {run.accuracy:.4f}  "
            f"{run.cpu_seconds:6.2f}  {run.seconds:6.2f}"
        )

    for score in ("dot", "additive"):
        print(
            f"\nTranslation, {score} score: seed, exact match, CPU s, wall s, "
            "adjective alignment (mean of heads; per head)"
        )
        for seed in seeds:
            run = translate.train(seed=seed, score=score)
            ok &= run.accuracy >= ACCURACY and run.cpu_seconds <= CPU_SECONDS
            heads = " ".join(f"{x:.3f}" for x in run.adjective_alignment_per_head)
            print(
                f"  {seed}  {run.accuracy:.4f}  {run.cpu_seconds:6.2f}  "
                f"{run.seconds:6.2f}  {run.adjective_alignment:.3f}; {heads}"
            )
    again = translate.train(seed=seeds[-1], score="additive")
    same = again.history == run.history
    ok &= same
    print(f"  same history twice: {same}")
    print("\nall targets met" if ok else "\nA TARGET IS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(quick="--quick" in sys.argv))
