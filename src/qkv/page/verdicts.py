"""Sentences that read a measurement of the chapter *cost-of-attention*,
whatever it gives, as Markdown for the page.

The measurements come from :mod:`qkv.experiments.measure`, the counts from
:mod:`qkv.cost`. Each branch of each sentence is tested.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qkv.cost import score_bytes
from qkv.experiments.measure import log_log_slope
from qkv.page.glue import human_bytes

__all__ = [
    "cache_growth_verdict",
    "cache_verdict",
    "compare_speed",
    "describe_slope",
    "scaling_verdict",
]


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
