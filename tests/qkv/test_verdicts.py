"""Tests of qkv.page.verdicts: the sentences that read a measurement of the
chapter cost-of-attention, every branch, with made-up numbers."""

from __future__ import annotations

import itertools

import pytest

from qkv.page.verdicts import (
    cache_growth_verdict,
    cache_verdict,
    compare_speed,
    describe_slope,
    scaling_verdict,
)

# --- sentences built from measurements: every branch, with made-up numbers ----

SIZES = [128, 256, 512, 1024, 2048, 4096]


def power_law(exponent: float, per_score_ns: float = 1.0) -> list[float]:
    """Made-up times proportional to n^exponent, per_score_ns at n = 512."""
    return [per_score_ns * 1e-9 * 512**2 * (n / 512) ** exponent for n in SIZES]


def test_describe_slope():
    assert describe_slope(2.05) == "close to 2"
    assert describe_slope(2.5) == "above 2"
    assert describe_slope(1.5) == "below 2"
    with pytest.raises(ValueError, match="slope"):
        describe_slope(float("nan"))


def test_scaling_verdict_when_both_follow_the_count():
    text = scaling_verdict(SIZES, power_law(2.0), power_law(2.05), fit_from=2)
    assert text.startswith("Both are close to 2")
    assert "as the count predicts" in text


@pytest.mark.parametrize("level2", [2**20, None])
def test_scaling_verdict_when_the_naive_version_outgrows_the_caches(level2):
    naive, fused = power_law(2.6), power_law(2.0, per_score_ns=0.5)
    text = scaling_verdict(SIZES, naive, fused, fit_from=2, level2=level2)
    assert text.startswith("The fused kernel's slope is close to 2; the naive one")
    per_score = naive[-1] / SIZES[-1] ** 2 * 1e9
    assert f"rises from 1.0 ns at 512 tokens to {per_score:.1f} ns at 4,096" in text
    assert "while the fused kernel's stays near 0.5 ns." in text
    rising = power_law(2.2, per_score_ns=0.5)  # the fused time per score rises too
    text = scaling_verdict(SIZES, naive, rising, fit_from=2, level2=level2)
    assert f"goes from 0.5 to {rising[-1] / SIZES[-1] ** 2 * 1e9:.1f} ns." in text
    if level2:
        assert "level-2 cache holds 1.0 MiB" in text
        assert "one matrix of 4,096 tokens takes 64.0 MiB" in text
    else:
        assert "level-2" not in text and "caches, every score" in text


@pytest.mark.parametrize(
    ("naive_exponent", "fused_exponent", "level2", "says"),
    [
        (1.5, 1.6, None, "the naive slope is below 2 and the fused one below 2"),
        (2.6, 2.9, None, "the naive slope is above 2 and the fused one above 2"),
        (2.0, 2.6, None, "the naive slope is close to 2 and the fused one above 2"),
        # steeper, but one matrix fits in this (large) level-2 cache: no such story
        (2.6, 2.0, 2**30, "the naive slope is above 2 and the fused one close to 2"),
    ],
)
def test_scaling_verdict_otherwise_gives_the_trend(
    naive_exponent, fused_exponent, level2, says
):
    naive, fused = power_law(naive_exponent), power_law(fused_exponent)
    text = scaling_verdict(SIZES, naive, fused, fit_from=2, level2=level2)
    assert text.startswith("The count predicts 2; ") and says in text
    assert "the count gives the trend, not every point." in text


def test_scaling_verdict_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        scaling_verdict(SIZES, power_law(2.0)[:-1], power_law(2.0))
    with pytest.raises(ValueError, match="fit_from"):
        scaling_verdict(SIZES, power_law(2.0), power_law(2.0), fit_from=5)


def test_compare_speed():
    assert compare_speed(1.0, 3.2) == "3.2 times faster than"
    assert compare_speed(3.0, 2.0) == "1.5 times slower than"
    assert compare_speed(1.0, 1.05) == "about as fast as"
    assert compare_speed(1.05, 1.0) == "about as fast as"
    with pytest.raises(ValueError, match="positive"):
        compare_speed(0.0, 1.0)


def test_cache_growth_verdict():
    rising = cache_growth_verdict(100e-6, 150e-9, 2.4, 32)
    assert rising.startswith("A step costs 100 µs plus 150 ns for every token")
    assert "The last 32 steps took 2.4 times as long as the first 32." in rising
    for per_token, growth in ((-5e-9, 1.1), (5e-9, 0.9)):
        flat = cache_growth_verdict(100e-6, per_token, growth, 32)
        assert flat.startswith("A step costs about 100 µs, and its time does not rise")
        assert " ns " not in flat  # no fitted slope quoted


def test_cache_verdict_every_branch():
    follows = cache_verdict(120, 6.0, 0.06, 40e-6, 200e-6)
    assert follows.startswith("Recomputing takes 120 times as many multiply-adds")
    assert "took 100 times as long: the measurement follows the count." in follows
    fixed = cache_verdict(120, 0.6, 0.06, 150e-6, 200e-6)
    assert fixed.startswith("The counts promised more. Recomputing takes 120 times")
    assert "the cache was 10.0 times faster than recomputing." in fixed
    assert "fixed part, about 150 µs" in fixed and "most of its 200 µs" in fixed
    other = cache_verdict(120, 0.6, 0.06, 50e-6, 200e-6)
    assert other.endswith("cost time that no count of multiply-adds sees.")
    assert "fixed part" not in other
    slower = cache_verdict(120, 0.06, 0.09, 50e-6, 200e-6)
    assert "the cache was 1.5 times slower than recomputing" in slower


def test_every_branch_reads_as_sentences():
    """No branch leaves a placeholder, a doubled space or a missing full stop."""
    texts = [
        scaling_verdict(SIZES, power_law(a), power_law(b), 2, level)
        for a, b, level in itertools.product((1.5, 2.0, 2.6), (2.0, 2.9), (None, 2**20))
    ]
    texts += [
        cache_growth_verdict(1e-4, p, g, 32) for p, g in ((1e-7, 2.0), (-1e-9, 1.0))
    ]
    texts += [
        cache_verdict(120, r, c, f, 2e-4)
        for r, c, f in ((6, 0.06, 1e-5), (0.6, 0.06, 1.5e-4), (0.6, 0.06, 1e-5))
    ]
    for text in texts:
        assert text.endswith(".") and "  " not in text and "{" not in text, text
