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

A phrase chosen from a measurement is chosen by bounds, not by branches:
:data:`BOUNDS` gives each phrase of the tables :data:`SCALING`, :data:`SPEED`,
:data:`GROWTH` and :data:`CACHE` the closed interval of each measured ratio
(:data:`MEASURES`) for which it is true, and :func:`choose` takes the first
phrase whose intervals hold the measures. The intervals of a table cover every
value, so that a busy machine changes the phrase, never the truth of the
sentence nor the build. :data:`CLOCK` and :data:`PADDING_ROWS` are chosen by
what the system is (its clock, its PyTorch), not by a measured ratio.

The measurements come from :mod:`qkv.experiments.measure`, the counts from
:mod:`qkv.cost`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from qkv.cost import score_bytes
from qkv.experiments.measure import log_log_slope

__all__ = [
    "BOUNDS",
    "CACHE",
    "CLOCK",
    "GROWTH",
    "MEASURES",
    "PADDING_ROWS",
    "PHRASES_MIME",
    "SCALING",
    "SPEED",
    "TABLES",
    "Phrase",
    "cache_growth_verdict",
    "cache_verdict",
    "choose",
    "clock_phrase",
    "compare_speed",
    "fit_steps",
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
    "fused kernel's is {4} ns at {5} and {6} ns at {7}. The naive version writes "
    "whole *T* × *T* matrices to memory (the table below measures them). Once they "
    "outgrow the processor's caches (one core's level-{8} cache holds {9} MiB; one "
    "matrix of {10} tokens takes {11} MiB), every score makes a trip to slower memory "
    "and back. The fused kernel never holds a whole matrix (the table below "
    "measures that too).",
    # the same, the size of the cache unknown
    "The naive version's slope is the steeper, and the lower panel shows why: its "
    "time *per score* rises from {0} ns at {1} tokens to {2} ns at {3}, while the "
    "fused kernel's is {4} ns at {5} and {6} ns at {7}. The naive version writes "
    "whole *T* × *T* matrices to memory (the table below measures them). Once they "
    "outgrow the processor's caches, every score makes a trip to slower memory and "
    "back. The fused kernel never holds a whole matrix (the table below measures "
    "that too).",
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
    "A step costs about {0} µs, and its time hardly rises with the tokens in the "
    "cache: the last {1} steps took {2} times as long as the first {3}. Here its "
    "fixed cost still hides its growing row of scores.",
    "The time of a step rises with the tokens in the cache: the last {0} steps "
    "took {1} times as long as the first {2}.",
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
    "Recomputing takes {0} times as many multiply-adds as the cache, and "
    "recomputing took {1} times as long: even more than the count predicts.",
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

#: The measures a machine-dependent table's choice reads, each with its domain:
#: the closed interval of every value it may take.
MEASURES: dict[str, tuple[float, float]] = {
    # SCALING: the slopes on log-log axes, the naive one minus the fused one,
    # the naive time per score at the last length over the first, and one
    # T x T matrix over the level-2 cache (inf when the size of the cache is
    # unknown)
    "naive slope": (-math.inf, math.inf),
    "fused slope": (-math.inf, math.inf),
    "slope gap": (-math.inf, math.inf),
    "per-score rise": (0.0, math.inf),
    "matrix over cache": (0.0, math.inf),
    # SPEED: the other time over this one
    "speed-up": (0.0, math.inf),
    # GROWTH: the last steps over the first; the fitted line as shown (µs, ns)
    "last over first": (0.0, math.inf),
    "fixed µs": (-math.inf, math.inf),
    "ns per token": (-math.inf, math.inf),
    # CACHE: the time ratio over the count ratio; the fixed part of a step over
    # the step, as shown (whole µs)
    "time over count": (0.0, math.inf),
    "fixed over step": (-math.inf, math.inf),
}

_ANY = (-math.inf, math.inf)
_POSITIVE = (0.0, math.inf)
_FINITE = sys.float_info.max

#: For each phrase of each machine-dependent table, the closed interval of each
#: measure its table reads for which the phrase is chosen, and true. A function
#: chooses the first phrase whose intervals hold every measure; the intervals
#: of a table cover every value of the domains (tests/qkv/test_verdicts.py).
BOUNDS: dict[tuple[str, ...], tuple[dict[str, tuple[float, float]], ...]] = {
    SCALING: (
        # both slopes close to 2
        {
            "naive slope": (1.8, 2.2),
            "fused slope": (1.8, 2.2),
            "slope gap": _ANY,
            "per-score rise": _POSITIVE,
            "matrix over cache": _POSITIVE,
        },
        # the naive slope steeper than 2 and than the fused one, its time per
        # score rising, one matrix larger than the (known) level-2 cache
        {
            "naive slope": (2.2, math.inf),
            "fused slope": _ANY,
            "slope gap": (0.1, math.inf),
            "per-score rise": (1.2, math.inf),
            "matrix over cache": (1.0, _FINITE),
        },
        # the same, the size of the cache unknown
        {
            "naive slope": (2.2, math.inf),
            "fused slope": _ANY,
            "slope gap": (0.1, math.inf),
            "per-score rise": (1.2, math.inf),
            "matrix over cache": (math.inf, math.inf),
        },
        # anything else: "the count gives the trend, not every point"
        {
            "naive slope": _ANY,
            "fused slope": _ANY,
            "slope gap": _ANY,
            "per-score rise": _POSITIVE,
            "matrix over cache": _POSITIVE,
        },
    ),
    SPEED: (
        {"speed-up": (1.1, math.inf)},
        {"speed-up": (1 / 1.1, 1.1)},
        {"speed-up": (0.0, 1 / 1.1)},
    ),
    GROWTH: (
        # rises, and the fitted line's two parts are positive as shown
        {
            "last over first": (1.1, math.inf),
            "fixed µs": (1.0, math.inf),
            "ns per token": (1.0, math.inf),
        },
        # "hardly rises"
        {"last over first": (0.0, 1.1), "fixed µs": _ANY, "ns per token": _ANY},
        # rises, whatever the line
        {"last over first": (1.1, math.inf), "fixed µs": _ANY, "ns per token": _ANY},
    ),
    CACHE: (
        # "the measurement follows the count": within a factor of 2
        {"time over count": (0.5, 2.0), "fixed over step": _ANY},
        # "is most of its ... µs": more than half of the step, and no more
        {"time over count": (0.0, 0.5), "fixed over step": (0.55, 1.0)},
        {"time over count": (0.0, 0.5), "fixed over step": _ANY},
        # "even more than the count predicts"
        {"time over count": (2.0, math.inf), "fixed over step": _ANY},
    ),
}


def choose(table: Sequence[str], **measures: float) -> int:
    """The index of the first phrase of ``table`` whose :data:`BOUNDS` hold
    every measure (closed intervals).

    Raises:
        ValueError: if a measure is missing, unknown, NaN or outside its
            domain (:data:`MEASURES`).
    """
    table = tuple(table)
    if table not in BOUNDS:
        raise ValueError("table must be one of the tables of BOUNDS")
    names = set(BOUNDS[table][0])
    if set(measures) != names:
        raise ValueError(f"measures must be {sorted(names)}, got {sorted(measures)}")
    for name, value in measures.items():
        low, high = MEASURES[name]
        if not low <= value <= high:  # False for NaN too
            raise ValueError(
                f"measure {name!r} must lie in [{low}, {high}], got {value!r}"
            )
    for index, bounds in enumerate(BOUNDS[table]):
        if all(low <= measures[n] <= high for n, (low, high) in bounds.items()):
            return index
    raise ValueError(f"no phrase of the table covers {measures}")  # pragma: no cover


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
    first, last = sizes[fit_from], sizes[-1]
    matrix = score_bytes(last)
    index = choose(
        SCALING,
        **{
            "naive slope": naive_slope,
            "fused slope": fused_slope,
            "slope gap": naive_slope - fused_slope,
            "per-score rise": (naive_seconds[-1] / last**2)
            / (naive_seconds[fit_from] / first**2),
            "matrix over cache": math.inf if level2 is None else matrix / level2,
        },
    )
    if index in (0, 3):
        return Phrase(SCALING, index, "2")

    def ns_per_score(seconds: Sequence[float], i: int) -> str:
        return f"{seconds[i] / sizes[i] ** 2 * 1e9:.1f}"

    values = [
        ns_per_score(naive_seconds, fit_from),
        f"{first:,}",
        ns_per_score(naive_seconds, -1),
        f"{last:,}",
        ns_per_score(fused_seconds, fit_from),
        f"{first:,}",
        ns_per_score(fused_seconds, -1),
        f"{last:,}",
    ]
    if index == 2:
        return Phrase(SCALING, 2, *values)
    sizes_mib = (f"{level2 / 2**20:g}", f"{last:,}", f"{matrix / 2**20:g}")
    return Phrase(SCALING, 1, *values, "2", *sizes_mib)


def compare_speed(seconds: float, other_seconds: float) -> Phrase:
    """How a time compares with another, to be followed by the other's name, a
    phrase of :data:`SPEED`: ``"3.2 times faster than"``, ``"about as fast as"``
    (within a factor of 1.1, :data:`BOUNDS`) or ``"1.5 times slower than"``."""
    if not (seconds > 0 and other_seconds > 0):
        raise ValueError(
            f"times must be positive, got {seconds!r} and {other_seconds!r}"
        )
    speedup = other_seconds / seconds
    index = choose(SPEED, **{"speed-up": speedup})
    if index == 0:
        return Phrase(SPEED, 0, f"{speedup:.1f}")
    if index == 2:
        return Phrase(SPEED, 2, f"{1 / speedup:.1f}")
    return Phrase(SPEED, 1)


def fit_steps(step_seconds: Sequence[float]) -> tuple[float, float]:
    """The line fitted to the times of the steps of one generation, step ``t``
    (from 1) holding ``t`` tokens: ``(fixed_seconds, per_token_seconds)``."""
    times = np.asarray(step_seconds, dtype=float)
    if times.ndim != 1 or len(times) < 2 or not (np.isfinite(times).all()):
        raise ValueError(
            "step_seconds must be at least 2 finite times in a row, got shape "
            f"{times.shape}"
        )
    if not (times > 0).all():
        raise ValueError(f"step_seconds must be positive, got {times.min()!r}")
    per_token, fixed = np.polyfit(np.arange(1, len(times) + 1), times, 1)
    return float(fixed), float(per_token)


def _check_window(step_seconds: Sequence[float], window: int, end: int) -> None:
    if not (0 < window and 2 * window <= end <= len(step_seconds)):
        raise ValueError(
            f"window and end must satisfy 0 < 2 * window <= end <= "
            f"len(step_seconds), got window={window}, end={end} and "
            f"{len(step_seconds)} steps"
        )


def cache_growth_verdict(step_seconds: Sequence[float], window: int) -> Phrase:
    """What the times of the steps of one long generation with a KV cache say, a
    phrase of :data:`GROWTH`: the line fitted to them (:func:`fit_steps`), and
    how much the last ``window`` steps took over the first ones.

    Explained in the chapter *cost-of-attention*.

    Args:
        step_seconds: the time of each step of one generation, step ``t`` (from
            1) holding ``t`` tokens in the cache.
        window: how many steps are averaged at each end.
    """
    _check_window(step_seconds, window, len(step_seconds))
    times = np.asarray(step_seconds, dtype=float)
    growth = float(times[-window:].mean() / times[:window].mean())
    fixed, per_token = fit_steps(times)
    fixed_us, per_token_ns = f"{fixed * 1e6:.0f}", f"{per_token * 1e9:.0f}"
    index = choose(
        GROWTH,
        **{
            "last over first": growth,
            "fixed µs": float(fixed_us),
            "ns per token": float(per_token_ns),
        },
    )
    times_text, steps = f"{growth:.1f}", str(window)
    if index == 0:
        return Phrase(GROWTH, 0, fixed_us, per_token_ns, steps, times_text, steps)
    if index == 1:
        mean = f"{times.mean() * 1e6:.0f}"
        return Phrase(GROWTH, 1, mean, steps, times_text, steps)
    return Phrase(GROWTH, 2, steps, times_text, steps)


def cache_verdict(
    count_ratio: float,
    recompute_seconds: float,
    cache_seconds: float,
    step_seconds: Sequence[float],
    end: int,
    window: int,
) -> Phrase:
    """What the counts and the times of decoding with and without a KV cache say
    together, a phrase of :data:`CACHE`.

    Explained in the chapter *cost-of-attention*. The fixed part of a step and
    the step it is compared with come from one generation, ``step_seconds``:
    its fitted line (:func:`fit_steps`) and the mean of its steps ``end -
    window + 1`` to ``end``.

    Args:
        count_ratio: multiply-adds of recomputing over those of the cache.
        recompute_seconds, cache_seconds: the measured times of the generation.
        step_seconds: the time of each step of one generation with the cache,
            step ``t`` (from 1) holding ``t`` tokens.
        end, window: the steps compared with the fixed part.
    """
    if not (count_ratio > 0 and recompute_seconds > 0 and cache_seconds > 0):
        raise ValueError(
            "count_ratio, recompute_seconds and cache_seconds must be positive, "
            f"got {count_ratio!r}, {recompute_seconds!r} and {cache_seconds!r}"
        )
    _check_window(step_seconds, window, end)
    time_ratio = recompute_seconds / cache_seconds
    fixed_seconds, _ = fit_steps(step_seconds)
    step_seconds_late = float(np.mean(step_seconds[end - window : end]))
    counts = f"{count_ratio:.0f}"
    fixed, step = f"{fixed_seconds * 1e6:.0f}", f"{step_seconds_late * 1e6:.0f}"
    # the share as the page shows it, whole microseconds
    share = float(fixed) / float(step) if float(step) > 0 else math.inf
    index = choose(
        CACHE, **{"time over count": time_ratio / count_ratio, "fixed over step": share}
    )
    if index == 0:
        return Phrase(CACHE, 0, counts, f"{time_ratio:.0f}")
    if index == 1:
        return Phrase(CACHE, 1, counts, f"{time_ratio:.1f}", fixed, step)
    if index == 3:
        return Phrase(CACHE, 3, counts, f"{time_ratio:.0f}")
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
