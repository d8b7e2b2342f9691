"""Speed of qkv's multi-head attention fast path against PyTorch's own.

Times, on one thread and with the same weights, three modules computing the same
multi-head self-attention:

* ``qkv``: ``qkv.MultiHeadAttention(...)(x, need_weights=False)``, the fast path
  that calls ``torch.nn.functional.scaled_dot_product_attention``;
* ``torch MHA``: ``torch.nn.MultiheadAttention(..., batch_first=True)`` with
  ``need_weights=False`` (in inference it takes PyTorch's native fused path);
* ``minimal``: the least code that does the job, one fused in-projection, one
  call to ``scaled_dot_product_attention`` and the out-projection;

and, for comparison only, ``qkv readable``: the same qkv module with
``need_weights=True``, the path the chapters show, which builds every weight.

The runs are interleaved (each round times every module once, in a rotating
order) and the minimum over rounds is kept, so that a neighbour's burst of work
on a shared machine slows every module alike or is ignored. Wall-clock and CPU
times are both reported; the target is judged on CPU time, which on one thread
is the work done, whereas on a busy machine the wall clock mostly measures the
neighbours. Run ``make bench-attention`` (``python -m bookbuild.tools.bench_attention``,
two minutes or so).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qkv import MultiHeadAttention

TARGET = 1.1  # ours within 1.1x of the fastest module


class MinimalAttention(nn.Module):
    """Multi-head self-attention in as few operations as PyTorch allows; it
    shares the weights of a ``torch.nn.MultiheadAttention``."""

    def __init__(self, reference: nn.MultiheadAttention) -> None:
        super().__init__()
        self.num_heads = reference.num_heads
        self.in_proj_weight = reference.in_proj_weight  # (3D, D)
        self.in_proj_bias = reference.in_proj_bias  # (3D,)
        self.out_proj = reference.out_proj

    def forward(self, x: Tensor) -> Tensor:
        batch, length, dim = x.shape
        heads = self.num_heads
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # (B, T, 3D)
        qkv = qkv.view(batch, length, 3, heads, dim // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, E)
        context = F.scaled_dot_product_attention(q, k, v)  # (B, H, T, E)
        return self.out_proj(context.transpose(1, 2).reshape(batch, length, dim))


def _modules(
    embed_dim: int, num_heads: int, seed: int, readable: bool
) -> dict[str, Callable[[Tensor], Tensor]]:
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True).eval()
    with torch.no_grad():  # PyTorch starts biases at zero: make them count
        reference.in_proj_bias.normal_()
        reference.out_proj.bias.normal_()
    ours = MultiHeadAttention.from_torch(reference).eval()
    minimal = MinimalAttention(reference).eval()
    modules = {
        "qkv": lambda x: ours(x, need_weights=False)[0],
        "torch MHA": lambda x: reference(x, x, x, need_weights=False)[0],
        "minimal": minimal,
    }
    if readable:
        modules["qkv readable"] = lambda x: ours(x, need_weights=True)[0]
    return modules


def _time_once(run: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def compare_attention(
    batch: int = 4,
    length: int = 512,
    embed_dim: int = 768,
    num_heads: int = 12,
    rounds: int = 7,
    backward: bool = True,
    threads: int = 1,
    seed: int = 0,
    readable: bool = False,
) -> dict:
    """Time the three modules on the same input, interleaved.

    Args:
        batch, length, embed_dim, num_heads: B, T, D and H of the input.
        rounds: how many times each module is timed (after one warm-up call).
        backward: also time forward + backward (gradients of the input and of
            every weight), not only inference.
        threads: ``torch.set_num_threads`` for the measurement (restored after).
        seed: seed of the weights and of the input.
        readable: also time qkv's readable path (``need_weights=True``); it
            takes no part in the ratio.

    Returns:
        ``{"settings": {...}, "inference": {...}, "forward+backward": {...}}``;
        each mode maps a module name to ``{"wall": s, "cpu": s}`` (minima over
        rounds) and has a ``"ratio"``: qkv's minimum wall time divided by the
        fastest of the other two modules' (and ``"cpu ratio"``, the same for
        CPU time).
    """
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        modules = _modules(embed_dim, num_heads, seed, readable)
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(batch, length, embed_dim, generator=generator)

        def inference(module):
            def run():
                with torch.inference_mode():
                    module(x)

            return run

        def forward_backward(module):
            x_grad = x.clone().requires_grad_()

            def run():
                module(x_grad).sum().backward()

            return run

        modes = {"inference": inference}
        if backward:
            modes["forward+backward"] = forward_backward
        results: dict = {
            "settings": dict(
                batch=batch,
                length=length,
                embed_dim=embed_dim,
                num_heads=num_heads,
                rounds=rounds,
                threads=threads,
                torch=torch.__version__,
            )
        }
        names = list(modules)
        for mode, make in modes.items():
            runs = {name: make(modules[name]) for name in names}
            for run in runs.values():
                run()  # warm-up
            walls = {name: [] for name in names}
            cpus = {name: [] for name in names}
            for r in range(rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    wall, cpu = _time_once(runs[name])
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            table = {
                name: {"wall": min(walls[name]), "cpu": min(cpus[name])}
                for name in names
            }
            others = ["torch MHA", "minimal"]
            table["ratio"] = table["qkv"]["wall"] / min(
                table[name]["wall"] for name in others
            )
            table["cpu ratio"] = table["qkv"]["cpu"] / min(
                table[name]["cpu"] for name in others
            )
            results[mode] = table
        return results
    finally:
        torch.set_num_threads(previous_threads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-backward", action="store_true")
    parser.add_argument("--no-readable", action="store_true")
    args = parser.parse_args(argv)
    results = compare_attention(
        rounds=args.rounds,
        backward=not args.no_backward,
        readable=not args.no_readable,
    )
    settings = results.pop("settings")
    print(
        "B={batch} T={length} D={embed_dim} H={num_heads}, {threads} thread, "
        "minimum of {rounds} interleaved rounds, torch {torch}".format(**settings)
    )
    print(f"{'mode':<18}{'module':<14}{'wall ms':>9}{'cpu ms':>9}")
    ok = True
    for mode, table in results.items():
        for name, times in table.items():
            if isinstance(times, dict):
                wall, cpu = times["wall"] * 1e3, times["cpu"] * 1e3
                print(f"{mode:<18}{name:<14}{wall:>9.1f}{cpu:>9.1f}")
        met = table["cpu ratio"] <= TARGET
        ok = ok and met
        print(
            f"{mode:<18}{'qkv/fastest':<14}{table['ratio']:>9.3f}"
            f"{table['cpu ratio']:>9.3f}   target (cpu) <= {TARGET}"
            f"{'' if met else '  MISSED'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
