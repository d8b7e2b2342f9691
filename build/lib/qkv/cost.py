"""What attention costs: operation counts, measured time and memory, the KV cache.

Explained in the chapter *cost-of-attention*. Shapes follow :mod:`qkv.attention`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from qkv.attention import (
    MultiHeadAttention,
    concat_heads,
    scaled_dot_product_attention,
    split_heads,
    tiled_attention,
)

__all__ = [
    "IMPLEMENTATIONS",
    "KVCache",
    "attention_flops",
    "best_time",
    "cache_bytes",
    "decode",
    "peak_memories",
    "peak_memory",
    "score_bytes",
]


def attention_flops(n: int, d: int) -> int:
    """Floating-point operations of one attention head on n tokens of size d.

    Counts a multiply-add as 2 operations: Q K^T costs 2 n^2 d, the weighted sum of
    the values 2 n^2 d, and the softmax about 5 n^2 (max, subtract, exp, sum,
    divide). Projections are not included.
    """
    return 4 * n * n * d + 5 * n * n


def score_bytes(n: int, bytes_per_number: int = 4) -> int:
    """Memory of one (n, n) matrix of scores (float32 by default)."""
    return n * n * bytes_per_number


def cache_bytes(level: int) -> int | None:
    """Size in bytes of this machine's data cache at ``level`` (1, 2, 3), as one
    core sees it; None where Linux's /sys does not say."""
    if level not in (1, 2, 3):
        raise ValueError(f"level must be 1, 2 or 3, got {level!r}")
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            found = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if found == level and kind in ("Data", "Unified") and size:
            number, unit = size[:-1], size[-1]  # such as "2048K"
            if unit in units and number.isdigit():
                return int(number) * units[unit]
    return None


def best_time(function: Callable[[], object], repeats: int = 3) -> float:
    """The shortest of ``repeats`` wall-clock times of ``function()``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def _qkv_naive(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return scaled_dot_product_attention(q, k, v)[0]


def _torch_fused(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _qkv_tiled(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return tiled_attention(q, k, v, block_size=128)


#: The implementations the chapter compares, by name.
IMPLEMENTATIONS: dict[str, Callable[[Tensor, Tensor, Tensor], Tensor]] = {
    "qkv (naive)": _qkv_naive,
    "torch (fused)": _torch_fused,
    "qkv tiled": _qkv_tiled,
}


def _status_bytes(field: str) -> int:
    """A memory field of /proc/self/status (VmRSS, VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # the file gives kB
    raise OSError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    """Reset the process's peak memory to its current memory (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _max_rss_bytes() -> int:
    # VmHWM belongs to this program's memory map, which is new after exec; the
    # ru_maxrss of getrusage is inherited from the parent process on Linux.
    try:
        return _status_bytes("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _release_free_memory() -> None:
    """Give memory freed by earlier calls back to the operating system (glibc's
    ``malloc_trim``), so that a call cannot hide its needs by reusing it."""
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the allocator keeps what it keeps


def _measure_peaks(name: str, sizes: list[int], dim: int) -> dict[int, int]:
    """Peak memory added by one call at each size, in this process."""
    function = IMPLEMENTATIONS[name]
    with torch.no_grad():
        tiny = torch.randn(1, 1, 8, dim)
        function(tiny, tiny, tiny)  # load every kernel before the baseline
        peaks = {}
        for n in sorted(sizes):
            q, k, v = (torch.randn(1, 1, n, dim) for _ in range(3))  # (B, H, n, E)
            _release_free_memory()
            baseline = _status_bytes("VmRSS") if _reset_peak() else _max_rss_bytes()
            function(q, k, v)
            # The inputs were allocated before the baseline: only the call counts.
            peaks[n] = max(0, _max_rss_bytes() - baseline)
            del q, k, v
    return peaks


def peak_memory(name: str, sizes: list[int], dim: int = 64) -> dict[int, int]:
    """Extra peak memory (bytes) of one attention call, for each size n.

    Inputs have shape (1, 1, n, dim): batch and head dimensions, as in a model
    (PyTorch picks its memory-saving fused kernel for such inputs). The calls run
    in a fresh Python process, sizes in increasing order; before each call the
    memory freed by earlier ones goes back to the operating system, and the peak
    is read from the operating system's high-water mark of the process's memory:
    what the call really needed, whatever allocated it.
    """
    return peak_memories([name], sizes, dim)[name]


def peak_memories(
    names: list[str], sizes: list[int], dim: int = 64
) -> dict[str, dict[int, int]]:
    """:func:`peak_memory` for several implementations, one after another in one
    fresh process (one import of torch)."""
    for name in names:
        if name not in IMPLEMENTATIONS:
            raise ValueError(
                f"name must be one of {list(IMPLEMENTATIONS)}, got {name!r}"
            )
    command = [sys.executable, "-m", "qkv.cost", json.dumps([names, sizes, dim])]
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode:
        raise RuntimeError(f"measuring {names!r} failed:\n{process.stderr}")
    peaks = json.loads(process.stdout)
    return {name: {int(n): peak for n, peak in peaks[name].items()} for name in names}


class KVCache:
    """The keys and values of the tokens generated so far, one tensor per layer.

    Explained in the chapter *cost-of-attention*.
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (H, t, E)
        self.values: Tensor | None = None  # (H, t, E)

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new position's (H, 1, E) key and value; return all of them."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
        return self.keys, self.values


def decode(
    layer: MultiHeadAttention, inputs: Tensor, use_cache: bool
) -> tuple[Tensor, list[float]]:
    """Causal self-attention over ``inputs`` one position at a time, as a decoder
    generating text does, with or without a KV cache.

    Explained in the chapter *cost-of-attention*.

    Args:
        layer: the attention layer.
        inputs: shape (T, D), the vectors of the tokens, arriving one per step.
        use_cache: keep the keys and values of past positions (True), or recompute
            them from all the inputs at every step (False).

    Returns:
        ``(outputs, seconds)``: the output at each step, (T, D), and the time each
        step took.
    """
    heads = layer.num_heads
    cache = KVCache()
    outputs, seconds = [], []
    with torch.no_grad():
        for t in range(inputs.shape[0]):
            start = time.perf_counter()
            if use_cache:
                x = inputs[t : t + 1]  # (1, D): only the new token
                q = split_heads(layer.W_q(x), heads)  # (H, 1, E)
                keys, values = cache.append(
                    split_heads(layer.W_k(x), heads), split_heads(layer.W_v(x), heads)
                )  # (H, t + 1, E) each
                context, _ = scaled_dot_product_attention(q, keys, values)
                out = layer.W_o(concat_heads(context))[0]  # (D,)
            else:
                prefix = inputs[: t + 1]  # (t + 1, D): everything again
                out = layer(prefix, is_causal=True, need_weights=False)[0][-1]
            seconds.append(time.perf_counter() - start)
            outputs.append(out)
    return torch.stack(outputs), seconds


if __name__ == "__main__":  # python -m qkv.cost '[NAMES, SIZES, DIM]'
    torch.set_num_threads(1)
    _names, _sizes, _dim = json.loads(sys.argv[1])
    print(json.dumps({name: _measure_peaks(name, _sizes, _dim) for name in _names}))
