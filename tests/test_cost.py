"""Tests of qkv.cost: counts, measured peak memory, and the KV cache."""

from __future__ import annotations

import os

import pytest
import torch

import qkv
from qkv.cost import (
    IMPLEMENTATIONS,
    KVCache,
    attention_flops,
    cache_bytes,
    decode,
    peak_memories,
    peak_memory,
    score_bytes,
)


def test_counts_grow_as_n_squared():
    assert attention_flops(1000, 64) == 4 * 1000**2 * 64 + 5 * 1000**2
    assert attention_flops(2000, 64) == 4 * attention_flops(1000, 64)
    assert score_bytes(4096) == 64 * 2**20


def test_implementations_agree():
    q, k, v = (torch.randn(1, 2, 50, 16) for _ in range(3))
    outputs = [f(q, k, v) for f in IMPLEMENTATIONS.values()]
    for output in outputs[1:]:
        torch.testing.assert_close(output, outputs[0], atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_peak_memory_of_naive_attention_holds_the_matrix_and_tiled_does_not():
    big = torch.ones(50_000_000)  # a parent with a high peak must not skew children
    peaks = peak_memories(["qkv (naive)", "qkv tiled"], [512, 2048])
    del big
    assert peaks["qkv (naive)"][2048] >= score_bytes(2048)
    assert peaks["qkv tiled"][2048] < score_bytes(2048) / 4
    with pytest.raises(ValueError, match="name"):
        peak_memory("nope", [8])


def test_decode_with_and_without_cache_agree():
    torch.manual_seed(0)
    layer = qkv.MultiHeadAttention(32, 4)
    tokens = torch.randn(20, 32)
    without, t_without = decode(layer, tokens, use_cache=False)
    with_cache, t_with = decode(layer, tokens, use_cache=True)
    assert without.shape == with_cache.shape == (20, 32)
    assert len(t_without) == len(t_with) == 20
    torch.testing.assert_close(with_cache, without, atol=1e-5, rtol=1e-5)
    # The full causal pass gives the same outputs as step-by-step decoding.
    with torch.no_grad():
        full, _ = layer(tokens, is_causal=True)
    torch.testing.assert_close(full, with_cache, atol=1e-5, rtol=1e-5)


def test_kv_cache_grows_one_position_per_append():
    cache = KVCache()
    for t in range(1, 4):
        keys, values = cache.append(torch.randn(2, 1, 8), torch.randn(2, 1, 8))
        assert keys.shape == values.shape == (2, t, 8)


def test_cache_sizes_are_read_from_the_system():
    sizes = [cache_bytes(level) for level in (1, 2, 3)]
    known = [size for size in sizes if size is not None]
    assert all(isinstance(size, int) and size >= 1024 for size in known)
    assert known == sorted(known), sizes  # each level is larger than the one before
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert sizes[0] is not None
    with pytest.raises(ValueError, match="level"):
        cache_bytes(4)
