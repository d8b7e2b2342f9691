"""Phrases a page glues whose choice depends on the machine that builds it: what
the measurements of the chapter *cost-of-attention* say, and what this PyTorch
returns for a row with nothing to attend to (chapter *masking*).

Every phrase a function here can return is declared in a module-level table
(:data:`SCALING`, :data:`SPEED`, :data:`GROWTH`, :data:`CACHE`, :data:`CLOCK`,
:data:`PADDING_ROWS`), written as the translation catalogue sees it: its
numbers are ``{0}``, ``{1}``... in order. A function returns a :class:`Phrase`,
which carries its whole table to the page (:data:`PHRASES_MIME`), so that the
book's catalogues hold, and its French check requires, a translation of every
phrase, not only of the one this machine measured. Each branch is tested.

The measurements come from :mod:`qkv.experiments.measure`, the counts from
:mod:`qkv.cost`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from qkv.cost import score_bytes
from qkv.experiments.measure import log_log_slope

__all__ = [
    "CACHE",
    "CLOCK",
    "GROWTH",
    "PADDING_ROWS",
    "PHRASES_MIME",
    "SCALING",
    "SPEED",
    "TABLES",
    "Phrase",
    "cache_growth_verdict",
    "cache_verdict",
    "clock_phrase",
    "compare_speed",
    "describe_slope",
    "padding_rows",
    "scaling_verdict",
]


#: The MIME type under which a :class:`Phrase` carries its table: a ``+json`` type,
#: which a notebook keeps as JSON (the glue's prefix and all).
PHRASES_MIME = "application/vnd.qkv.phrases+json"


class Phrase:
    """One of the phrases of ``choices`` with its values filled in, for
    ``{glue:md}``: shown as Markdown, and carrying every phrase of ``choices``
    (``{"phrases": [...]}`` as :data:`PHRASES_MIME`) for the translation
    catalogues.

    Args:
        choices: the table the phrase comes from.
        index: which phrase of the table.
        values: the text of ``{0}``, ``{1}``... (numbers formatted).
    """

    def __init__(self, choices: Sequence[str], index: int, *values: str) -> None:
        if not 0 <= index < len(choices):
            raise ValueError(
                f"index must pick one of {len(choices)} phrases, got {index}"
            )
        self.choices = tuple(choices)
        self.template = self.choices[index]
        self.text = self.template.format(*values)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {PHRASES_MIME: {"phrases": list(self.choices)}}


#: What the slopes of the naive and the fused attention say (*cost-of-attention*).
SCALING = (
    # both slopes close to 2
    "Both are close to {0}: doubling the length multiplies the time by about "
    "four, as the count predicts.",
    # the naive slope steeper, its time per score rising; the size of the cache known
    "The naive version's slope is the steeper, and the lower panel shows why: its "
    "time *per score* rises from {0} ns at {1} tokens to {2} ns at {3}, while the "
    "fused kernel's is {4} ns and {5} ns. The naive version writes whole *T* × *T* "
    "matrices to memory (the table below measures them). Once they outgrow the "
    "processor's caches (one core's level-{6} cache holds {7} MiB; one matrix of "
    "{8} tokens takes {9} MiB), every score makes a trip to slower memory and "
    "back. The fused kernel never holds a whole matrix (the table below measures "
    "that too).",
    # the same, the size of the cache unknown
    "The naive version's slope is the steeper, and the lower panel shows why: its "
    "time *per score* rises from {0} ns at {1} tokens to {2} ns at {3}, while the "
    "fused kernel's is {4} ns and {5} ns. The naive version writes whole *T* × *T* "
    "matrices to memory (the table below measures them). Once they outgrow the "
    "processor's caches, every score makes a trip to slower memory and back. The "
    "fused kernel never holds a whole matrix (the table below measures that too).",
    # anything else
    "The count predicts a slope of {0}. On a real machine, fixed costs and the "
    "layers of memory bend the curves: the count gives the trend, not every point.",
)

#: How a time compares with another, followed by the other's name.
SPEED = ("{0} times faster than", "about as fast as", "{0} times slower than")

#: The time of a step of a long generation with a KV cache.
GROWTH = (
    "A step costs {0} µs plus {1} ns for every token in the cache: its key to "
    "compare, its value to add and, in this simple cache, its copy (`torch.cat` "
    "copies the cache to append a token). The last {2} steps took {3} times as "
    "long as the first {4}.",
    "A step costs about {0} µs, and its time does not rise with the tokens in the "
    "cache: here its fixed cost still hides its growing row of scores.",
)

#: The counts and the times of decoding with and without a KV cache, together.
CACHE = (
    "Recomputing takes {0} times as many multiply-adds as the cache, and "
    "recomputing took {1} times as long: the measurement follows the count.",
    "The counts promised more. Recomputing takes {0} times as many multiply-adds "
    "as the cache, but only {1} times as long. A step with the cache does little "
    "arithmetic: its fixed part, about {2} µs whatever the length (the fitted line "
    "above), is most of its {3} µs. That part holds the projections of one token "
    "and the cost of calling a dozen PyTorch operations, which no count of "
    "multiply-adds sees.",
    "The counts promised more. Recomputing takes {0} times as many multiply-adds "
    "as the cache, but only {1} times as long. Multiply-adds are not the whole "
    "cost of a step: moving memory and calling PyTorch cost time that no count of "
    "multiply-adds sees.",
)

#: The clock the chapter reads: CPU time where the system counts it finely.
CLOCK = (
    "the *CPU time* of our process (`time.process_time`), which stands still "
    "while another program has the core",
    "the wall clock (`time.perf_counter`): this system counts CPU time in steps "
    "too coarse for calls of a millisecond, so the next two precautions matter "
    "all the more",
)

#: What a PyTorch attention returns for a query with no allowed key (*masking*).
PADDING_ROWS = ("zeros", "NaN", "numbers that are neither {0} nor NaN")

#: Every table, by the page that glues its phrases.
TABLES = {
    "cost-of-attention": (SCALING, SPEED, GROWTH, CACHE, CLOCK),
    "masking": (PADDING_ROWS,),
}


def describe_slope(slope: float, expected: float = 2.0, tolerance: float = 0.2) -> str:
    """``"close"``, ``"above"`` or ``"below"``: a measured slope against the
    expected one (a word for the code's choices, not for the page)."""
    if not math.isfinite(slope):
        raise ValueError(f"slope must be a finite number, got {slope!r}")
    if abs(slope - expected) < tolerance:
        return "close"
    return "above" if slope > expected else "below"


def scaling_verdict(
    sizes: Sequence[int],
    naive_seconds: Sequence[float],
    fused_seconds: Sequence[float],
    fit_from: int = 0,
    level2: int | None = None,
) -> Phrase:
    """What the measured times of the naive and the fused attention say about the
    count's prediction (time proportional to n^2): a phrase of :data:`SCALING`.

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
    if naive_says == fused_says == "close":
        return Phrase(SCALING, 0, "2")

    def ns_per_score(seconds: Sequence[float], i: int) -> str:
        return f"{seconds[i] / sizes[i] ** 2 * 1e9:.1f}"

    first, last = sizes[fit_from], sizes[-1]
    matrix = score_bytes(last)
    outgrows = level2 is None or level2 < matrix
    naive_rises = naive_seconds[-1] / last**2 > 1.2 * naive_seconds[fit_from] / first**2
    if naive_says == "above" and naive_slope > fused_slope and naive_rises and outgrows:
        values = [
            ns_per_score(naive_seconds, fit_from),
            f"{first:,}",
            ns_per_score(naive_seconds, -1),
            f"{last:,}",
            ns_per_score(fused_seconds, fit_from),
            ns_per_score(fused_seconds, -1),
        ]
        if level2 is None:
            return Phrase(SCALING, 2, *values)
        sizes_mib = (f"{level2 / 2**20:g}", f"{last:,}", f"{matrix / 2**20:g}")
        return Phrase(SCALING, 1, *values, "2", *sizes_mib)
    return Phrase(SCALING, 3, "2")


def compare_speed(
    seconds: float, other_seconds: float, tolerance: float = 0.1
) -> Phrase:
    """How a time compares with another, to be followed by the other's name, a
    phrase of :data:`SPEED`: ``"3.2 times faster than"``, ``"about as fast as"``
    (within ``tolerance``) or ``"1.5 times slower than"``."""
    if not (seconds > 0 and other_seconds > 0):
        raise ValueError(
            f"times must be positive, got {seconds!r} and {other_seconds!r}"
        )
    speedup = other_seconds / seconds
    if speedup >= 1 + tolerance:
        return Phrase(SPEED, 0, f"{speedup:.1f}")
    if speedup <= 1 / (1 + tolerance):
        return Phrase(SPEED, 2, f"{1 / speedup:.1f}")
    return Phrase(SPEED, 1)


def cache_growth_verdict(
    fixed_seconds: float, per_token_seconds: float, growth: float, window: int
) -> Phrase:
    """What the times of the steps of a long generation with a KV cache say, a
    phrase of :data:`GROWTH`: a line fitted to them, and whether it rises with
    the cached tokens.

    Explained in the chapter *cost-of-attention*.

    Args:
        fixed_seconds, per_token_seconds: the fitted line, time = fixed + per
            token x tokens in the cache.
        growth: the mean time of the last ``window`` steps over the first ones.
        window: how many steps were averaged at each end.
    """
    fixed = f"{fixed_seconds * 1e6:.0f}"
    if per_token_seconds > 0 and growth > 1:
        per_token = f"{per_token_seconds * 1e9:.0f}"
        times = f"{growth:.1f}"
        return Phrase(GROWTH, 0, fixed, per_token, str(window), times, str(window))
    return Phrase(GROWTH, 1, fixed)


def cache_verdict(
    count_ratio: float,
    recompute_seconds: float,
    cache_seconds: float,
    fixed_seconds: float,
    step_seconds: float,
) -> Phrase:
    """What the counts and the times of decoding with and without a KV cache say
    together, a phrase of :data:`CACHE`.

    Explained in the chapter *cost-of-attention*.

    Args:
        count_ratio: multiply-adds of recomputing over those of the cache.
        recompute_seconds, cache_seconds: the measured times of the generation.
        fixed_seconds: the fixed cost of a step with the cache (a fitted line).
        step_seconds: the measured time of a late step with the cache.
    """
    time_ratio = recompute_seconds / cache_seconds
    counts = f"{count_ratio:.0f}"
    if time_ratio >= count_ratio / 2:
        return Phrase(CACHE, 0, counts, f"{time_ratio:.0f}")
    if 0 < fixed_seconds and fixed_seconds > step_seconds / 2:
        fixed, step = f"{fixed_seconds * 1e6:.0f}", f"{step_seconds * 1e6:.0f}"
        return Phrase(CACHE, 1, counts, f"{time_ratio:.1f}", fixed, step)
    return Phrase(CACHE, 2, counts, f"{time_ratio:.1f}")


def clock_phrase(clock) -> Phrase:
    """Which clock the chapter *cost-of-attention* reads, a phrase of
    :data:`CLOCK`: ``time.process_time`` or another (the wall clock)."""
    import time

    return Phrase(CLOCK, 0 if clock is time.process_time else 1)


def padding_rows(rows: Tensor) -> Phrase:
    """What an attention returned for rows with no allowed key, a phrase of
    :data:`PADDING_ROWS`: zeros, NaN, or numbers that are neither (chapter
    *masking*)."""
    if not isinstance(rows, Tensor) or rows.numel() == 0:
        raise ValueError(f"rows must be a non-empty tensor, got {rows!r}")
    if torch.equal(rows, torch.zeros_like(rows)):
        return Phrase(PADDING_ROWS, 0)
    if torch.isnan(rows).all():
        return Phrase(PADDING_ROWS, 1)
    return Phrase(PADDING_ROWS, 2, "0")
