"""What attention costs: operation counts, measured time and memory, the KV cache.

Explained in the chapter *cost-of-attention*. Shapes follow :mod:`qkv.attention`
(T sequence length, D model dimension, H heads, Hkv key/value heads, E head size).

Four parts:

* counts: :func:`attention_flops`, :func:`score_bytes`,
  :func:`decode_multiply_adds`, :func:`kv_cache_bytes`;
* measurements: :func:`interleaved_times` (rounds in a rotating order, on the
  CPU-time clock of :func:`default_clock`), :func:`log_log_slope`,
  :func:`peak_memory` / :func:`peak_memories` (in a fresh process, Linux and
  macOS), :func:`cache_bytes` (the processor's caches);
* decoding one token at a time: :class:`KVCache`, :func:`decode`,
  :func:`time_decoding`;
* sentences that read a measurement, whatever it gives: :func:`describe_slope`,
  :func:`scaling_verdict`, :func:`compare_speed`, :func:`cache_growth_verdict`,
  :func:`cache_verdict`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from qkv.attention import (
    MultiHeadAttention,
    concat_heads,
    scaled_dot_product_attention,
    split_heads,
    tiled_attention,
)
from qkv.page.glue import human_bytes
from qkv.validate import check_int

__all__ = [
    "DECODE_SCHEMES",
    "IMPLEMENTATIONS",
    "KVCache",
    "attention_flops",
    "cache_bytes",
    "cache_growth_verdict",
    "cache_verdict",
    "clock_name",
    "compare_speed",
    "decode",
    "decode_multiply_adds",
    "default_clock",
    "describe_slope",
    "interleaved_times",
    "kv_cache_bytes",
    "log_log_slope",
    "peak_memories",
    "peak_memory",
    "scaling_verdict",
    "score_bytes",
    "time_decoding",
]

K = TypeVar("K", bound=Hashable)

# ---------------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------------


def attention_flops(n: int, d: int) -> int:
    """Floating-point operations of one attention head on n tokens of size d.

    Counts a multiply-add as 2 operations: Q K^T costs 2 n^2 d, the weighted sum of
    the values 2 n^2 d, and the softmax about 5 n^2 (max, subtract, exp, sum,
    divide). Projections are not included.
    """
    n = check_int("n", n, minimum=0)
    d = check_int("d", d, minimum=1)
    return 4 * n * n * d + 5 * n * n


def score_bytes(n: int, bytes_per_number: int = 4) -> int:
    """Memory of one (n, n) matrix of scores (float32 by default)."""
    n = check_int("n", n, minimum=0)
    bytes_per_number = check_int("bytes_per_number", bytes_per_number, minimum=1)
    return n * n * bytes_per_number


#: The three ways :func:`decode` computes a step, from the most work to the least.
DECODE_SCHEMES = ("recompute", "reproject", "cache")


def _check_scheme(scheme: str) -> None:
    if scheme not in DECODE_SCHEMES:
        raise ValueError(f"scheme must be one of {DECODE_SCHEMES}, got {scheme!r}")


def decode_multiply_adds(
    length: int, embed_dim: int, scheme: str, kv_dim: int | None = None
) -> dict[str, int]:
    """Multiply-adds of one step of :func:`decode`, by kind.

    Explained in the chapter *cost-of-attention*. The step is the one at which the
    prefix holds ``length`` tokens, the new one included: its query attends to
    ``length`` keys. One layer of :class:`~qkv.MultiHeadAttention` of width D:
    the counts do not depend on the number of heads (H heads of size E = D / H).

    * ``"recompute"``: the layer runs on the whole prefix with a causal mask.
      Every token is projected again (queries, keys, values and W_o: 4 T D^2) and
      query i is compared with its i allowed keys (T (T + 1) / 2 pairs).
    * ``"reproject"``: one query, but the keys and values of the whole prefix are
      projected again (2 T D Dkv + 2 D^2); T pairs.
    * ``"cache"``: one query, one key, one value (2 D^2 + 2 D Dkv); the other keys
      and values come from the cache; T pairs.

    A pair costs D multiply-adds for its score (E in each of H heads) and D for
    its share of the weighted sum of the values. The softmax (a few operations per
    pair) and the biases are not counted.

    Args:
        length: T >= 1, the number of tokens the new query attends to.
        embed_dim: D.
        scheme: one of :data:`DECODE_SCHEMES`.
        kv_dim: Dkv = Hkv * E, the width of the keys and values (default D;
            smaller with grouped-query attention).

    Returns:
        ``{"projections": ..., "scores": ..., "weighted sum": ...}``.
    """
    length = check_int("length", length, minimum=1)
    dim = check_int("embed_dim", embed_dim, minimum=1)
    kv_dim = dim if kv_dim is None else check_int("kv_dim", kv_dim, minimum=1)
    _check_scheme(scheme)
    queries = length if scheme == "recompute" else 1  # rows through W_q and W_o
    projected = 1 if scheme == "cache" else length  # rows through W_k and W_v
    pairs = length * (length + 1) // 2 if scheme == "recompute" else length
    return {
        "projections": 2 * queries * dim * dim + 2 * projected * dim * kv_dim,
        "scores": pairs * dim,
        "weighted sum": pairs * dim,
    }


def kv_cache_bytes(
    n_tokens: int, num_layers: int, kv_dim: int, bytes_per_number: int = 4
) -> int:
    """Memory of a KV cache: a key and a value of size ``kv_dim`` (Hkv * E) per
    token and per layer, float32 by default.

    Explained in the chapter *cost-of-attention*.
    """
    n_tokens = check_int("n_tokens", n_tokens, minimum=0)
    num_layers = check_int("num_layers", num_layers, minimum=1)
    kv_dim = check_int("kv_dim", kv_dim, minimum=1)
    bytes_per_number = check_int("bytes_per_number", bytes_per_number, minimum=1)
    return 2 * n_tokens * num_layers * kv_dim * bytes_per_number


# ---------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Time
# ---------------------------------------------------------------------------


def _clock_tick(clock: Callable[[], float], budget: float = 0.05) -> float:
    """The smallest step of ``clock`` seen within ``budget`` seconds of wall time
    (infinity if it never moved)."""
    smallest = math.inf
    deadline = time.perf_counter() + budget
    last = clock()
    while time.perf_counter() < deadline:
        now = clock()
        if now != last:
            smallest = min(smallest, now - last)
            last = now
            if smallest <= 1e-5:
                break  # fine enough: no need to look further
    return smallest


@functools.cache
def default_clock() -> Callable[[], float]:
    """The clock :func:`interleaved_times` and :func:`decode` use by default: the
    CPU time of this process (``time.process_time``) where the system measures it
    in steps of at most 0.1 ms (Linux, macOS), else the wall clock
    (``time.perf_counter``; Windows counts CPU time in steps of about 16 ms, too
    coarse for calls of a millisecond)."""
    if _clock_tick(time.process_time) <= 1e-4:
        return time.process_time
    return time.perf_counter


def clock_name(clock: Callable[[], float]) -> str:
    """``"CPU time"`` for ``time.process_time``, ``"wall-clock time"`` otherwise."""
    return "CPU time" if clock is time.process_time else "wall-clock time"


def _rotations(count: int, rounds: int) -> list[list[int]]:
    """The order of ``count`` items in each of ``rounds`` rounds: round r starts
    with item r (modulo ``count``) and goes on in order, wrapping around."""
    return [[(r + i) % count for i in range(count)] for r in range(rounds)]


def interleaved_times(
    calls: Mapping[K, Callable[[], object]],
    rounds: int = 5,
    clock: Callable[[], float] | None = None,
) -> dict[K, list[float]]:
    """Time every call once per round, for ``rounds`` rounds, in a rotating order.

    Explained in the chapter *cost-of-attention*. Round r starts with the r-th
    call and goes on in order, so no call is always timed first or always after
    the same other call, and a busy moment of the machine lands on one round of
    several calls rather than on every round of one call. Take the minimum over
    the rounds: the time of a call when nothing got in its way.

    The default clock (:func:`default_clock`) is the CPU time of this process
    (``time.process_time``): it stands still while the system gives the core to
    another program, so a busy machine inflates it far less than the wall clock
    (``time.perf_counter``). It adds up the time of all the process's threads:
    measure with one thread (``torch.set_num_threads(1)``) for the time of one
    core.

    Args:
        calls: name -> a function of no argument to time.
        rounds: how many times each call is timed (>= 1).
        clock: seconds, read before and after each call (default:
            :func:`default_clock`).

    Returns:
        name -> the ``rounds`` times of that call in seconds, round by round.
    """
    rounds = check_int("rounds", rounds, minimum=1)
    if not calls:
        raise ValueError("calls must name at least one function to time, got none")
    clock = clock or default_clock()
    names = list(calls)
    times: dict[K, list[float]] = {name: [] for name in names}
    for order in _rotations(len(names), rounds):
        for index in order:
            name = names[index]
            start = clock()
            calls[name]()
            times[name].append(clock() - start)
    return times


def log_log_slope(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The slope k of the least-squares line through (log size, log time): the
    exponent of a cost proportional to size^k."""
    if len(sizes) != len(seconds) or len(sizes) < 2:
        raise ValueError(
            "sizes and seconds must have the same length, at least 2, got "
            f"{len(sizes)} sizes and {len(seconds)} times"
        )
    if min(sizes) <= 0 or min(seconds) <= 0:
        raise ValueError(
            f"sizes and seconds must be positive, got {list(sizes)} and {list(seconds)}"
        )
    slope, _ = np.polyfit(np.log(sizes), np.log(seconds), 1)
    return float(slope)


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------


def _qkv_naive(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return scaled_dot_product_attention(q, k, v)[0]


def _torch_fused(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    return F.scaled_dot_product_attention(q, k, v)


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
        import resource  # not on Windows: there, this measurement cannot run

        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return maxrss if sys.platform == "darwin" else maxrss * 1024  # bytes, KiB


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


# ---------------------------------------------------------------------------
# Decoding one token at a time
# ---------------------------------------------------------------------------


class KVCache:
    """The keys and values of the tokens generated so far, for one layer.

    Explained in the chapter *cost-of-attention*. Each step appends one position;
    ``torch.cat`` copies the whole cache to do so (real decoders write into a
    buffer allocated in advance).
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (Hkv, t, E)
        self.values: Tensor | None = None  # (Hkv, t, E)

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new position's (Hkv, 1, E) key and value; return all of them."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
        return self.keys, self.values


def _check_decode(layer: MultiHeadAttention, inputs: Tensor, scheme: str) -> None:
    """Raise ``ValueError`` unless :func:`decode` can run ``layer`` on ``inputs``."""
    if not isinstance(layer, MultiHeadAttention):
        raise ValueError(
            f"layer must be a qkv.MultiHeadAttention, got {type(layer).__name__}"
        )
    if not isinstance(inputs, Tensor) or inputs.dim() != 2:
        shape = tuple(inputs.shape) if isinstance(inputs, Tensor) else type(inputs)
        raise ValueError(f"inputs must be a (T, D) tensor, got {shape}")
    if inputs.shape[1] != layer.embed_dim:
        raise ValueError(
            f"inputs must have D = embed_dim = {layer.embed_dim} features, "
            f"got inputs {tuple(inputs.shape)}"
        )
    _check_scheme(scheme)


def decode(
    layer: MultiHeadAttention,
    inputs: Tensor,
    scheme: str = "cache",
    clock: Callable[[], float] | None = None,
) -> tuple[Tensor, list[float]]:
    """Causal self-attention over ``inputs`` one position at a time, as a decoder
    generating text does, computing each step by one of three schemes.

    Explained in the chapter *cost-of-attention*. Every scheme gives the same
    outputs, and all three run attention in PyTorch's fused kernel
    (``scaled_dot_product_attention``): they differ only in what they compute
    again at each step (counted by :func:`decode_multiply_adds`).

    Args:
        layer: the attention layer.
        inputs: shape (T, D), the vectors of the tokens, arriving one per step.
        scheme: ``"recompute"`` runs the layer on the whole prefix at each step,
            every query of it included (a stack of layers without a cache must:
            past positions' outputs are the next layer's inputs);
            ``"reproject"`` computes the new query only, but projects the keys
            and values of the whole prefix again (enough for one layer);
            ``"cache"`` projects the new token only and keeps keys and values in
            a :class:`KVCache`.
        clock: seconds, read before and after each step (default:
            :func:`default_clock`, the CPU time of this process).

    Returns:
        ``(outputs, seconds)``: the output at each step, (T, D), and the time
        each step took.
    """
    _check_decode(layer, inputs, scheme)
    clock = clock or default_clock()
    heads, kv_heads = layer.num_heads, layer.num_kv_heads
    cache = KVCache()
    outputs, seconds = [], []
    with torch.no_grad():
        for t in range(inputs.shape[0]):
            start = clock()
            if scheme == "recompute":  # every row of the prefix, again
                prefix = inputs[: t + 1]  # (t + 1, D)
                out = layer(prefix, is_causal=True, need_weights=False)[0][-1]
            elif scheme == "reproject":  # one query; the prefix's keys and values
                new, prefix = inputs[t : t + 1], inputs[: t + 1]  # (1, D), (t + 1, D)
                out = layer(new, prefix, need_weights=False)[0][0]
            else:  # one query, one key, one value; the rest from the cache
                x = inputs[t : t + 1]  # (1, D): only the new token
                q = split_heads(layer.W_q(x), heads)  # (H, 1, E)
                keys, values = cache.append(
                    split_heads(layer.W_k(x), kv_heads),
                    split_heads(layer.W_v(x), kv_heads),
                )  # (Hkv, t + 1, E) each
                context = F.scaled_dot_product_attention(
                    q, keys, values, enable_gqa=kv_heads != heads
                )  # (H, 1, E)
                out = layer.W_o(concat_heads(context))[0]  # (D,)
            seconds.append(clock() - start)
            outputs.append(out)
    return torch.stack(outputs), seconds


def time_decoding(
    layer: MultiHeadAttention,
    inputs: Tensor,
    schemes: Sequence[str] = DECODE_SCHEMES,
    rounds: int = 3,
    clock: Callable[[], float] | None = None,
) -> tuple[dict[str, Tensor], dict[str, np.ndarray]]:
    """:func:`decode` with each scheme, ``rounds`` times, in a rotating order (as
    :func:`interleaved_times`).

    Explained in the chapter *cost-of-attention*.

    Returns:
        ``(outputs, seconds)``: for each scheme its outputs (T, D), and the time
        of every step of every round, an array (rounds, T); take the minimum
        over rounds (axis 0).
    """
    rounds = check_int("rounds", rounds, minimum=1)
    schemes = list(schemes)
    if not schemes:
        raise ValueError("schemes must name at least one scheme, got none")
    for scheme in schemes:
        _check_scheme(scheme)
    outputs: dict[str, Tensor] = {}
    seconds: dict[str, list[list[float]]] = {scheme: [] for scheme in schemes}
    for order in _rotations(len(schemes), rounds):
        for index in order:
            scheme = schemes[index]
            outputs[scheme], step_seconds = decode(layer, inputs, scheme, clock)
            seconds[scheme].append(step_seconds)
    return outputs, {scheme: np.array(s) for scheme, s in seconds.items()}


# ---------------------------------------------------------------------------
# Sentences that read a measurement (the chapter's prose, tested in every branch)
# ---------------------------------------------------------------------------


def describe_slope(slope: float, expected: float = 2.0, tolerance: float = 0.2) -> str:
    """``"close to 2"``, ``"above 2"`` or ``"below 2"``: a measured slope in words."""
    if not math.isfinite(slope):
        raise ValueError(f"slope must be a finite number, got {slope!r}")
    if abs(slope - expected) < tolerance:
        return f"close to {expected:g}"
    return f"above {expected:g}" if slope > expected else f"below {expected:g}"


def scaling_verdict(
    sizes: Sequence[int],
    naive_seconds: Sequence[float],
    fused_seconds: Sequence[float],
    fit_from: int = 0,
    level2: int | None = None,
) -> str:
    """What the measured times of the naive and the fused attention say about the
    count's prediction (time proportional to n^2), as Markdown.

    Explained in the chapter *cost-of-attention*. Three cases: both slopes close
    to 2; the naive one steeper than 2 and than the fused one, with its time per
    score rising (and one n x n matrix larger than the level-2 cache, when its
    size is known): the memory explains it; anything else: the count gives the
    trend, not every point.

    Args:
        sizes: the lengths n, increasing.
        naive_seconds, fused_seconds: the time of one call at each length.
        fit_from: the index of the first length used for the slopes.
        level2: the size in bytes of one core's level-2 cache, or None.
    """
    if not len(sizes) == len(naive_seconds) == len(fused_seconds):
        raise ValueError(
            f"sizes, naive_seconds and fused_seconds must have the same length, got "
            f"{len(sizes)}, {len(naive_seconds)} and {len(fused_seconds)}"
        )
    if not 0 <= fit_from <= len(sizes) - 2:
        raise ValueError(
            f"fit_from must leave at least 2 of the {len(sizes)} sizes, got {fit_from}"
        )
    naive_slope = log_log_slope(sizes[fit_from:], naive_seconds[fit_from:])
    fused_slope = log_log_slope(sizes[fit_from:], fused_seconds[fit_from:])
    naive_says, fused_says = describe_slope(naive_slope), describe_slope(fused_slope)
    if naive_says == fused_says == "close to 2":
        return (
            "Both are close to 2: doubling the length multiplies the time by "
            "about four, as the count predicts."
        )

    def ns_per_score(seconds: Sequence[float], i: int) -> float:
        return seconds[i] / sizes[i] ** 2 * 1e9

    first, last = sizes[fit_from], sizes[-1]
    naive_first, naive_last = (ns_per_score(naive_seconds, i) for i in (fit_from, -1))
    fused_first, fused_last = (ns_per_score(fused_seconds, i) for i in (fit_from, -1))
    matrix = score_bytes(last)
    outgrows = level2 is None or level2 < matrix
    if (
        naive_says == "above 2"
        and naive_slope > fused_slope
        and naive_last > 1.2 * naive_first
        and outgrows
    ):
        cache = (
            f" (one core's level-2 cache holds {human_bytes(level2)}; one matrix "
            f"of {last:,} tokens takes {human_bytes(matrix)})"
            if level2
            else ""
        )
        if abs(fused_last / fused_first - 1) < 0.1:
            fused_goes = f"stays near {fused_last:.1f} ns"
        else:
            fused_goes = f"goes from {fused_first:.1f} to {fused_last:.1f} ns"
        return (
            f"The fused kernel's slope is {fused_says}; the naive one is steeper. "
            f"The lower panel shows why: the naive version's time *per score* rises "
            f"from {naive_first:.1f} ns at {first:,} tokens to {naive_last:.1f} ns "
            f"at {last:,}, while the fused kernel's {fused_goes}. "
            f"The naive version writes whole *n* × *n* "
            f"matrices to memory (the table below measures them). Once they "
            f"outgrow the processor's caches{cache}, every score makes a trip to "
            f"slower memory and back. The fused kernel never holds a whole matrix "
            f"(the table below measures that too)."
        )
    return (
        f"The count predicts 2; the naive slope is {naive_says} and the fused one "
        f"{fused_says}. On a real machine, fixed costs and the layers of memory "
        f"bend the curves: the count gives the trend, not every point."
    )


def compare_speed(seconds: float, other_seconds: float, tolerance: float = 0.1) -> str:
    """How a time compares with another, to be followed by the other's name:
    ``"3.2 times faster than"``, ``"about as fast as"`` (within ``tolerance``)
    or ``"1.5 times slower than"``."""
    if not (seconds > 0 and other_seconds > 0):
        raise ValueError(
            f"times must be positive, got {seconds!r} and {other_seconds!r}"
        )
    speedup = other_seconds / seconds
    if speedup >= 1 + tolerance:
        return f"{speedup:.1f} times faster than"
    if speedup <= 1 / (1 + tolerance):
        return f"{1 / speedup:.1f} times slower than"
    return "about as fast as"


def cache_growth_verdict(
    fixed_seconds: float, per_token_seconds: float, growth: float, window: int
) -> str:
    """What the times of the steps of a long generation with a KV cache say, as
    Markdown: a line fitted to them, and whether it rises with the cached tokens.

    Explained in the chapter *cost-of-attention*.

    Args:
        fixed_seconds, per_token_seconds: the fitted line, time = fixed + per
            token x tokens in the cache.
        growth: the mean time of the last ``window`` steps over the first ones.
        window: how many steps were averaged at each end.
    """
    fixed = f"{fixed_seconds * 1e6:.0f} µs"
    if per_token_seconds > 0 and growth > 1:
        return (
            f"A step costs {fixed} plus {per_token_seconds * 1e9:.0f} ns for every "
            f"token in the cache: its key to compare, its value to add and, in this "
            f"simple cache, its copy (`torch.cat` copies the cache to append a "
            f"token). The last {window} steps took {growth:.1f} times as long as the "
            f"first {window}."
        )
    return (
        f"A step costs about {fixed}, and its time does not rise with the tokens "
        f"in the cache: here its fixed cost still hides its growing row of scores."
    )


def cache_verdict(
    count_ratio: float,
    recompute_seconds: float,
    cache_seconds: float,
    fixed_seconds: float,
    step_seconds: float,
) -> str:
    """What the counts and the times of decoding with and without a KV cache say
    together, as Markdown.

    Explained in the chapter *cost-of-attention*.

    Args:
        count_ratio: multiply-adds of recomputing over those of the cache.
        recompute_seconds, cache_seconds: the measured times of the generation.
        fixed_seconds: the fixed cost of a step with the cache (a fitted line).
        step_seconds: the measured time of a late step with the cache.
    """
    time_ratio = recompute_seconds / cache_seconds
    counts = (
        f"Recomputing takes {count_ratio:.0f} times as many multiply-adds as the cache"
    )
    if time_ratio >= count_ratio / 2:
        return (
            f"{counts}, and recomputing took {time_ratio:.0f} times as long: the "
            f"measurement follows the count."
        )
    speed = compare_speed(cache_seconds, recompute_seconds)
    said = f"The counts promised more. {counts}, but the cache was {speed} recomputing."
    if 0 < fixed_seconds and fixed_seconds > step_seconds / 2:
        return (
            f"{said} A step with the cache does little arithmetic: its fixed "
            f"part, about {fixed_seconds * 1e6:.0f} µs whatever the length (the "
            f"fitted line above), is most of its {step_seconds * 1e6:.0f} µs. That "
            f"part holds the projections of one token and the cost of calling a "
            f"dozen PyTorch operations, which no count of multiply-adds sees."
        )
    return (
        f"{said} Multiply-adds are not the whole cost of a step: moving memory and "
        f"calling PyTorch cost time that no count of multiply-adds sees."
    )


if __name__ == "__main__":  # python -m qkv.cost '[NAMES, SIZES, DIM]'
    torch.set_num_threads(1)
    _names, _sizes, _dim = json.loads(sys.argv[1])
    print(json.dumps({name: _measure_peaks(name, _sizes, _dim) for name in _names}))
