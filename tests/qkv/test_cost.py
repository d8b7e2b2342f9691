"""Tests of qkv.cost: counts, the clock of decode, decoding with and without a
KV cache."""

from __future__ import annotations

import time

import pytest
import torch

import qkv
from qkv import cost
from qkv.cost import (
    DECODE_SCHEMES,
    KVCache,
    attention_flops,
    decode,
    decode_multiply_adds,
    default_clock,
    kv_cache_bytes,
    score_bytes,
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


# --- the clock ---------------------------------------------------------------


def test_the_default_clock_is_cpu_time_where_it_is_fine_grained(monkeypatch):
    default_clock.cache_clear()
    try:
        monkeypatch.setattr(cost, "_clock_tick", lambda clock: 1e-6)  # Linux
        assert default_clock() is time.process_time
        default_clock.cache_clear()
        monkeypatch.setattr(cost, "_clock_tick", lambda clock: 0.0156)  # Windows
        assert default_clock() is time.perf_counter
    finally:
        default_clock.cache_clear()


def test_clock_tick_measures_the_step_of_a_clock():
    ticks = iter(i * 0.25 for i in range(10**6))  # a clock that moves in 0.25 s
    assert cost._clock_tick(lambda: next(ticks), budget=0.01) == pytest.approx(0.25)
    assert cost._clock_tick(lambda: 1.0, budget=0.01) == float("inf")  # stuck
    assert cost._clock_tick(time.perf_counter) < 1e-3


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


def test_kv_cache_grows_one_position_per_append():
    cache = KVCache()
    for t in range(1, 4):
        keys, values = cache.append(torch.randn(2, 1, 8), torch.randn(2, 1, 8))
        assert keys.shape == values.shape == (2, t, 8)


def test_scheme_labels_in_french_and_english():
    assert [cost.scheme_label(s) for s in DECODE_SCHEMES] == list(DECODE_SCHEMES)
    try:
        qkv.set_language("fr")
        french = [cost.scheme_label(s) for s in DECODE_SCHEMES]
        assert french == ["recalculer", "reprojeter", "cache"]
    finally:
        qkv.set_language("en")
    with pytest.raises(ValueError, match="scheme must be one of .* got 'fast'"):
        cost.scheme_label("fast")
