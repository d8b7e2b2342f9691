"""Tests of qkv.cost: counts, timing, measured peak memory, the KV cache and the
sentences that read a measurement."""

from __future__ import annotations

import itertools
import os
import time

import pytest
import torch

import qkv
from qkv import cost
from qkv.cost import (
    DECODE_SCHEMES,
    IMPLEMENTATIONS,
    KVCache,
    attention_flops,
    cache_bytes,
    cache_growth_verdict,
    cache_verdict,
    clock_name,
    compare_speed,
    decode,
    decode_multiply_adds,
    default_clock,
    describe_slope,
    interleaved_times,
    kv_cache_bytes,
    log_log_slope,
    peak_memories,
    peak_memory,
    scaling_verdict,
    score_bytes,
    time_decoding,
)

# --- counts ------------------------------------------------------------------


def test_counts_grow_as_n_squared():
    assert attention_flops(1000, 64) == 4 * 1000**2 * 64 + 5 * 1000**2
    assert attention_flops(2000, 64) == 4 * attention_flops(1000, 64)
    assert score_bytes(4096) == 64 * 2**20
    assert score_bytes(10, bytes_per_number=2) == 200
    with pytest.raises(ValueError, match="n must be an int"):
        attention_flops(-1, 64)
    with pytest.raises(ValueError, match="d must be an int"):
        attention_flops(10, 0)


def test_decode_multiply_adds_of_one_step():
    # Prefix of t = 3 tokens, width D = 4: count every term by hand.
    t, d = 3, 4
    recompute = decode_multiply_adds(t, d, "recompute")
    assert recompute == {
        "projections": 4 * t * d * d,  # W_q, W_k, W_v, W_o on every token
        "scores": (1 + 2 + 3) * d,  # query i sees keys 1..i
        "weighted sum": (1 + 2 + 3) * d,
    }
    reproject = decode_multiply_adds(t, d, "reproject")
    assert reproject == {
        "projections": 2 * d * d + 2 * t * d * d,  # one query, all keys and values
        "scores": t * d,
        "weighted sum": t * d,
    }
    cache = decode_multiply_adds(t, d, "cache")
    assert cache == {"projections": 4 * d * d, "scores": t * d, "weighted sum": t * d}
    # Grouped-query attention: narrower keys and values.
    gqa = decode_multiply_adds(t, d, "cache", kv_dim=2)
    assert gqa["projections"] == 2 * d * d + 2 * d * 2
    assert gqa["scores"] == cache["scores"]


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_decode_multiply_adds_sum_to_the_closed_forms(n):
    d = 8
    totals = {
        scheme: {
            kind: sum(decode_multiply_adds(t, d, scheme)[kind] for t in range(1, n + 1))
            for kind in ("projections", "scores", "weighted sum")
        }
        for scheme in DECODE_SCHEMES
    }
    assert totals["recompute"]["projections"] == 2 * n * (n + 1) * d * d
    assert totals["recompute"]["scores"] == n * (n + 1) * (n + 2) * d // 6
    assert totals["reproject"]["projections"] == n * (n + 3) * d * d
    assert totals["cache"]["projections"] == 4 * n * d * d
    for scheme in ("reproject", "cache"):
        assert totals[scheme]["scores"] == n * (n + 1) // 2 * d
    for totals_of_scheme in totals.values():
        assert totals_of_scheme["scores"] == totals_of_scheme["weighted sum"]


def test_decode_multiply_adds_rejects_bad_input():
    with pytest.raises(ValueError, match="scheme must be one of"):
        decode_multiply_adds(3, 4, "nope")
    with pytest.raises(ValueError, match="length must be an int >= 1"):
        decode_multiply_adds(0, 4, "cache")
    with pytest.raises(ValueError, match="kv_dim"):
        decode_multiply_adds(3, 4, "cache", kv_dim=0)


def test_kv_cache_bytes():
    assert kv_cache_bytes(1, num_layers=12, kv_dim=768) == 2 * 12 * 768 * 4
    assert kv_cache_bytes(10, 2, 8, bytes_per_number=2) == 2 * 10 * 2 * 8 * 2
    assert kv_cache_bytes(0, 1, 8) == 0
    with pytest.raises(ValueError, match="num_layers"):
        kv_cache_bytes(10, 0, 8)


# --- timing ------------------------------------------------------------------


class FakeClock:
    """A clock that each timed call advances by a known amount."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float):
        def call() -> None:
            self.now += seconds

        return call


def test_interleaved_times_rotates_the_order_and_times_every_call_each_round():
    order = []
    clock = FakeClock()
    calls = {}
    for name, seconds in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        step = clock.advance(seconds)

        def call(name=name, step=step) -> None:
            order.append(name)
            step()

        calls[name] = call
    times = interleaved_times(calls, rounds=4, clock=clock)
    assert times == {"a": [1.0] * 4, "b": [2.0] * 4, "c": [3.0] * 4}
    rounds = [order[i : i + 3] for i in range(0, 12, 3)]
    assert rounds == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]
    with pytest.raises(ValueError, match="rounds"):
        interleaved_times(calls, rounds=0)
    with pytest.raises(ValueError, match="calls"):
        interleaved_times({})


def test_interleaved_times_uses_cpu_time_by_default():
    def busy() -> None:
        x = 0
        for i in range(200_000):
            x += i

    times = interleaved_times({"busy": busy}, rounds=2)
    assert len(times["busy"]) == 2 and all(t > 0 for t in times["busy"])


def test_the_default_clock_is_cpu_time_where_it_is_fine_grained(monkeypatch):
    default_clock.cache_clear()
    try:
        monkeypatch.setattr(cost, "_clock_tick", lambda clock: 1e-6)  # Linux
        assert default_clock() is time.process_time
        assert clock_name(default_clock()) == "CPU time"
        default_clock.cache_clear()
        monkeypatch.setattr(cost, "_clock_tick", lambda clock: 0.0156)  # Windows
        assert default_clock() is time.perf_counter
        assert clock_name(default_clock()) == "wall-clock time"
    finally:
        default_clock.cache_clear()


def test_clock_tick_measures_the_step_of_a_clock():
    ticks = iter(i * 0.25 for i in range(10**6))  # a clock that moves in 0.25 s
    assert cost._clock_tick(lambda: next(ticks), budget=0.01) == pytest.approx(0.25)
    assert cost._clock_tick(lambda: 1.0, budget=0.01) == float("inf")  # stuck
    assert cost._clock_tick(time.perf_counter) < 1e-3


def test_log_log_slope_recovers_the_exponent():
    sizes = [128, 256, 512, 1024]
    for k in (1.0, 2.0, 3.0):
        assert log_log_slope(sizes, [1e-9 * n**k for n in sizes]) == pytest.approx(k)
    with pytest.raises(ValueError, match="same length"):
        log_log_slope([1, 2], [1.0])
    with pytest.raises(ValueError, match="positive"):
        log_log_slope([1, 2], [1.0, 0.0])


# --- the implementations and their memory -----------------------------------


def test_implementations_agree():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 50, 16) for _ in range(3))
    outputs = [f(q, k, v) for f in IMPLEMENTATIONS.values()]
    for output in outputs[1:]:
        torch.testing.assert_close(output, outputs[0], atol=1e-5, rtol=1e-5)


# slow: peak memory measured in child processes, up to 2048 positions
@pytest.mark.slow
def test_peak_memory_of_naive_attention_holds_the_matrix_and_tiled_does_not():
    big = torch.ones(50_000_000)  # a parent with a high peak must not skew children
    peaks = peak_memories(["qkv (naive)", "qkv tiled"], [512, 2048])
    del big
    assert peaks["qkv (naive)"][2048] >= score_bytes(2048)
    assert peaks["qkv tiled"][2048] < score_bytes(2048) / 4
    with pytest.raises(ValueError, match="name"):
        peak_memory("nope", [8])


def test_cache_sizes_are_read_from_the_system():
    sizes = [cache_bytes(level) for level in (1, 2, 3)]
    known = [size for size in sizes if size is not None]
    assert all(isinstance(size, int) and size >= 1024 for size in known)
    assert known == sorted(known), sizes  # each level is larger than the one before
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert sizes[0] is not None
    with pytest.raises(ValueError, match="level"):
        cache_bytes(4)


# --- decoding -----------------------------------------------------------------


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_every_decode_scheme_gives_the_full_causal_pass(num_kv_heads):
    torch.manual_seed(0)
    layer = qkv.MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads)
    tokens = torch.randn(20, 32)
    with torch.no_grad():
        full, _ = layer(tokens, is_causal=True)
    for scheme in DECODE_SCHEMES:
        outputs, seconds = decode(layer, tokens, scheme)
        assert outputs.shape == (20, 32) and len(seconds) == 20, scheme
        torch.testing.assert_close(outputs, full, atol=1e-5, rtol=1e-5)


def test_decode_rejects_bad_input():
    layer = qkv.MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="scheme"):
        decode(layer, torch.randn(3, 8), "fast")
    with pytest.raises(ValueError, match=r"inputs must be a \(T, D\) tensor"):
        decode(layer, torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match=r"embed_dim = 8.*\(3, 6\)"):
        decode(layer, torch.randn(3, 6))
    with pytest.raises(ValueError, match="layer"):
        decode(torch.nn.Linear(8, 8), torch.randn(3, 8))


def test_time_decoding_times_every_step_of_every_round():
    torch.manual_seed(0)
    layer = qkv.MultiHeadAttention(16, 2)
    tokens = torch.randn(6, 16)
    outputs, seconds = time_decoding(layer, tokens, rounds=2)
    assert set(outputs) == set(seconds) == set(DECODE_SCHEMES)
    for scheme in DECODE_SCHEMES:
        assert seconds[scheme].shape == (2, 6)
        assert (seconds[scheme] >= 0).all()
        torch.testing.assert_close(outputs[scheme], outputs["cache"])
    only, seconds = time_decoding(layer, tokens, schemes=["cache"], rounds=1)
    assert list(only) == ["cache"] and seconds["cache"].shape == (1, 6)
    with pytest.raises(ValueError, match="scheme"):
        time_decoding(layer, tokens, schemes=["nope"])
    with pytest.raises(ValueError, match="rounds"):
        time_decoding(layer, tokens, rounds=0)


def test_kv_cache_grows_one_position_per_append():
    cache = KVCache()
    for t in range(1, 4):
        keys, values = cache.append(torch.randn(2, 1, 8), torch.randn(2, 1, 8))
        assert keys.shape == values.shape == (2, t, 8)


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
