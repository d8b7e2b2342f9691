"""Tests of qkv.experiments.measure: timing, measured peak memory, the
processor's caches, timed decoding."""

from __future__ import annotations

import os
import time

import pytest
import torch

import qkv
from qkv.cost import DECODE_SCHEMES, score_bytes
from qkv.experiments.measure import (
    IMPLEMENTATIONS,
    cache_bytes,
    clock_name,
    interleaved_times,
    log_log_slope,
    peak_memories,
    peak_memory,
    time_decoding,
)

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


def test_clock_name_says_which_clock():
    assert clock_name(time.process_time) == "CPU time"
    assert clock_name(time.perf_counter) == "wall-clock time"


def test_implementation_and_clock_labels_in_french_and_english():
    from qkv.experiments.measure import (
        CLOCK_NAMES,
        IMPLEMENTATIONS,
        implementation_label,
    )
    from qkv.language import gettext

    for name in CLOCK_NAMES:  # each has its French
        assert gettext(name, language="fr") != name
    for name in IMPLEMENTATIONS:  # English: the key itself, as before
        assert implementation_label(name) == name
    try:
        qkv.set_language("fr")
        french = [implementation_label(name) for name in IMPLEMENTATIONS]
        assert french == ["qkv (naïve)", "torch (fusionnée)", "qkv par tuiles"]
        assert clock_name(time.process_time) == "temps CPU"
        assert clock_name(time.perf_counter) == "temps d'horloge murale"
    finally:
        qkv.set_language("en")
    with pytest.raises(ValueError, match="name must be one of .* got 'naive'"):
        implementation_label("naive")


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
