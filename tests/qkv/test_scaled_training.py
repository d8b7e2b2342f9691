"""Tests of the lookup task of qkv.experiments.toy (chapter scaled-dot-product):
a layer learns with and without the division of its scores by sqrt(d_k)."""

from __future__ import annotations

import pytest
import torch

from qkv.experiments import toy

SEEDS = range(5)


def test_lookup_batch_answers_with_the_number_of_the_querys_key():
    query, keys, numbers, answer = toy.lookup_batch(
        torch.Generator().manual_seed(0), batch=6, n_keys=5, d_model=4
    )
    assert query.shape == (6, 1, 4) and keys.shape == (6, 5, 4)
    assert numbers.shape == (6, 5, 1) and answer.shape == (6, 1)
    for b in range(6):
        matches = [j for j in range(5) if torch.equal(keys[b, j], query[b, 0])]
        assert len(matches) == 1
        assert torch.equal(numbers[b, matches[0]], answer[b])


def test_train_lookup_is_deterministic_and_scaling_changes_the_run():
    first = toy.train_lookup(scaled=True, seed=0, steps=20, d_k=16)
    again = toy.train_lookup(scaled=True, seed=0, steps=20, d_k=16)
    assert len(first) == 3 and first == pytest.approx(again)
    assert toy.train_lookup(scaled=False, seed=0, steps=20, d_k=16) != first
    assert toy.train_lookup(scaled=True, seed=1, steps=20, d_k=16) != first
    with torch.no_grad():  # trains even when the caller switched gradients off
        assert toy.train_lookup(scaled=True, seed=0, steps=20, d_k=16)[-1] < first[0]


def test_steps_to_is_the_first_checkpoint_below_the_threshold():
    assert toy.steps_to([1.0, 0.5, 0.09, 0.2, 0.01]) == 20
    assert toy.steps_to([1.0, 0.5], threshold=0.6) == 10
    assert toy.steps_to([1.0, 0.5]) is None


@pytest.mark.slow
def test_scaling_reaches_a_loss_of_0_1_first_and_ends_lower_on_seeds_0_to_4(
    trained_results,
):
    """slow: trains the chapter's two lookup layers on five seeds (1 s each)."""
    # Measured on seeds 0-4 natively (AVX-512) and under the emulated CPUs
    # (ATEN_CPU_CAPABILITY=avx2, =default): with scaling 70 to 80 steps;
    # without, 210 to 300 steps or not in 300; the fewest steps without, as a
    # multiple of those with, 3.0 to 3.1; final loss 3.8 to 17.3 times higher.
    # The bounds sit clearly below the worst value (CONTRIBUTING).
    for seed in SEEDS:
        scaled = toy.train_lookup(scaled=True, seed=seed)
        raw = toy.train_lookup(scaled=False, seed=seed)
        with_scaling, without = toy.steps_to(scaled), toy.steps_to(raw)
        assert with_scaling is not None, seed
        assert without is None or without > with_scaling, seed
        # the chapter's "at least ... times as many steps" on every seed
        assert (without or 300) / with_scaling >= 2.5, seed
        assert raw[-1] / scaled[-1] > 2, seed
        assert raw[0] > scaled[0], seed
        assert raw[-1] < raw[0] / 2, seed  # the unscaled layer does learn
        assert all(a < b for a, b in zip(scaled, raw, strict=True)), seed


@pytest.mark.slow
def test_how_much_slower_without_scaling_depends_on_the_seed_on_seeds_0_to_4(
    trained_results,
):
    """slow: trains the chapter's two lookup layers on five seeds (1 s each)."""
    curves = {
        seed: (toy.train_lookup(scaled=True, seed=seed), toy.train_lookup(False, seed))
        for seed in SEEDS
    }
    ratios = {seed: raw[-1] / scaled[-1] for seed, (scaled, raw) in curves.items()}
    reach = {seed: toy.steps_to(raw) for seed, (_, raw) in curves.items()}
    # The chapter's exercise: seed 3 gets below 0.1 at least 50 steps sooner than
    # seed 0 (measured 210-220 against 290, 300 or never) and ends with less than
    # half of seed 0's ratio (measured 3.4 to 4.0 times less). Which seed is
    # first or last changes with the CPU: the chapter does not say.
    assert reach[3] is not None
    assert reach[0] is None or reach[0] >= reach[3] + 50
    assert ratios[3] < ratios[0] / 2
    assert sum(r is not None for r in reach.values()) >= 1  # measured 3 to 5
