"""Times and peak memory measured on this machine, for the chapter
*cost-of-attention*.

The counts they are compared with are in :mod:`qkv.cost`. Four parts:

* the machine: :func:`cache_bytes` (the processor's caches, from Linux's /sys);
* time: :func:`interleaved_times` (rounds in a rotating order, on the CPU-time
  clock of :func:`qkv.cost.default_clock`), :func:`clock_name`,
  :func:`log_log_slope`;
* memory: :func:`peak_memory` / :func:`peak_memories` (in a fresh process, Linux
  and macOS), of the implementations in :data:`IMPLEMENTATIONS`;
* decoding: :func:`time_decoding`, :func:`qkv.cost.decode` with each scheme;
* any call: :func:`timed`, its result and its fastest time.

Each call measures again. The book's build keeps what its chapters measure,
as it keeps what they train (``bookbuild.execute.results``): measured once per
version of the code on this machine, the same numbers in every edition of a page.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
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
    scaled_dot_product_attention,
    tiled_attention,
)
from qkv.cost import DECODE_SCHEMES, decode, default_clock
from qkv.language import N_, gettext
from qkv.validate import check_int

__all__ = [
    "IMPLEMENTATIONS",
    "cache_bytes",
    "clock_name",
    "implementation_label",
    "interleaved_times",
    "log_log_slope",
    "peak_memories",
    "peak_memory",
    "time_decoding",
    "timed",
]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

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


#: The names of the clocks, per language (:func:`clock_name`).
CLOCK_NAMES = (N_("CPU time"), N_("wall-clock time"))


def clock_name(clock: Callable[[], float]) -> str:
    """``"CPU time"`` for ``time.process_time``, ``"wall-clock time"`` otherwise,
    in the current language (:func:`qkv.set_language`; French: ``"temps CPU"``)."""
    name = "CPU time" if clock is time.process_time else "wall-clock time"
    return gettext(name)


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


def timed(
    function: Callable[..., R],
    *args: object,
    repeats: int = 1,
    clock: Callable[[], float] | None = None,
) -> tuple[R, float]:
    """``function(*args)``, called ``repeats`` times: its result and the
    fastest of its times in seconds, by ``clock`` (default:
    :func:`qkv.cost.default_clock`, the CPU time of this process).

    Explained in the chapter *attention-by-hand*."""
    repeats = check_int("repeats", repeats, minimum=1)
    clock = clock or default_clock()
    fastest, result = float("inf"), None
    for _ in range(repeats):
        start = clock()
        result = function(*args)
        fastest = min(fastest, clock() - start)
    return result, fastest


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
    N_("qkv (naive)"): _qkv_naive,
    N_("torch (fused)"): _torch_fused,
    N_("qkv tiled"): _qkv_tiled,
}


def implementation_label(name: str) -> str:
    """The name of the implementation ``name`` (a key of
    :data:`IMPLEMENTATIONS`) a table or a figure shows, in the current language
    (:func:`qkv.set_language`): the key itself in English, ``"qkv (naïve)"``
    for ``"qkv (naive)"`` in French.

    Raises:
        ValueError: if ``name`` is not a key of :data:`IMPLEMENTATIONS`.
    """
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"name must be one of {list(IMPLEMENTATIONS)}, got {name!r}")
    return gettext(name)


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
    command = [
        sys.executable,
        "-m",
        "qkv.experiments.measure",
        json.dumps([names, sizes, dim]),
    ]
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode:
        raise RuntimeError(f"measuring {names!r} failed:\n{process.stderr}")
    peaks = json.loads(process.stdout)
    return {name: {int(n): peak for n, peak in peaks[name].items()} for name in names}


# ---------------------------------------------------------------------------
# Decoding one token at a time
# ---------------------------------------------------------------------------


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
        if scheme not in DECODE_SCHEMES:  # before any decoding: fail fast
            raise ValueError(f"scheme must be one of {DECODE_SCHEMES}, got {scheme!r}")
    outputs: dict[str, Tensor] = {}
    seconds: dict[str, list[list[float]]] = {scheme: [] for scheme in schemes}
    for order in _rotations(len(schemes), rounds):
        for index in order:
            scheme = schemes[index]
            outputs[scheme], step_seconds = decode(layer, inputs, scheme, clock)
            seconds[scheme].append(step_seconds)
    return outputs, {scheme: np.array(s) for scheme, s in seconds.items()}


if __name__ == "__main__":  # python -m qkv.experiments.measure '[NAMES, SIZES, DIM]'
    torch.set_num_threads(1)
    _names, _sizes, _dim = json.loads(sys.argv[1])
    print(json.dumps({name: _measure_peaks(name, _sizes, _dim) for name in _names}))
