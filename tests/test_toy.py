"""Tests of qkv.toy: the agreement task, its encoding, and deterministic training."""

from __future__ import annotations

import random

import pytest
import torch

from qkv import toy


def test_examples_follow_the_grammar_of_the_task():
    rng = random.Random(0)
    for _ in range(200):
        example = toy.make_example(rng)
        words = example.words
        subject = words[example.antecedent]
        assert words[-1] == toy.SLOT and words[-3:-1] == list(toy.ENDING)
        assert words[example.antecedent + 1] == "qui"
        assert example.label == int(subject in toy.SUBJECTS_F)
        assert subject in toy.SUBJECTS_F + toy.SUBJECTS_M
        assert all(w in toy.FILLERS for w in words[: example.antecedent])
        places = [w for w in words if w in toy.PLACES_F + toy.PLACES_M]
        assert len(places) <= toy.MAX_DISTRACTORS
        assert 5 <= example.distance == len(words) - 1 - example.antecedent
        assert len(words) <= toy.MAX_LEN


def test_distances_vary_and_distractors_mostly_have_the_other_gender():
    examples = toy.make_examples(2000, seed=1)
    assert len({e.distance for e in examples}) == toy.MAX_DISTRACTORS + 1
    other = same = 0
    for e in examples:
        for w in e.words:
            if w in toy.PLACES_F + toy.PLACES_M:
                feminine = w in toy.PLACES_F
                other += feminine != bool(e.label)
                same += feminine == bool(e.label)
    assert abs(other / (other + same) - toy.DISTRACTOR_OTHER_GENDER) < 0.03


def test_examples_are_deterministic():
    first = toy.make_examples(50, seed=3)
    assert [e.words for e in first] == [e.words for e in toy.make_examples(50, seed=3)]
    assert [e.words for e in first] != [e.words for e in toy.make_examples(50, seed=4)]


def test_heldout_set_is_the_one_training_measures_and_never_trains_on():
    result = toy.train(seed=0, steps=5, n_heldout=30)
    heldout = toy.heldout_examples(seed=0, n=30)
    assert [e.words for e in result.heldout] == [e.words for e in heldout]
    training_stream = toy.make_examples(5 * 64, seed=0)
    assert [e.words for e in training_stream[:30]] != [e.words for e in heldout]


def test_encode_left_pads_so_the_slot_is_last():
    examples = toy.make_examples(20, seed=2)
    batch = toy.encode(examples)
    width = max(len(e.words) for e in examples)
    assert batch.token_ids.shape == (20, width)
    assert (batch.token_ids[:, -1] == toy.TOKEN_ID[toy.SLOT]).all()
    for b, example in enumerate(examples):
        n = len(example.words)
        assert batch.keep[b].sum() == n and not batch.keep[b, : width - n].any()
        assert batch.positions[b, -n:].tolist() == list(range(n))
        subject = toy.VOCAB[int(batch.token_ids[b, batch.antecedent[b]])]
        assert subject == example.words[example.antecedent]


def test_model_never_attends_to_padding():
    torch.manual_seed(0)
    model = toy.AgreementModel(embed_dim=16, num_heads=2)
    batch = toy.encode(toy.make_examples(8, seed=5))
    logits, weights = model(batch)
    assert logits.shape == (8, 2) and weights.shape[:2] == (8, 2)
    pads = ~batch.keep[:, None, None, :].expand_as(weights)
    assert torch.equal(weights[pads], torch.zeros(int(pads.sum())))


def test_short_training_is_deterministic_and_reports_everything():
    first = toy.train(seed=0, steps=20, n_heldout=50)
    second = toy.train(seed=0, steps=20, n_heldout=50)
    assert first.history == second.history and len(first.history) == 20
    assert first.attention_after == second.attention_after
    assert set(first.grad_norms) == {"W_q", "W_k", "W_v", "W_o"}
    assert all(len(v) == 20 and min(v) > 0 for v in first.grad_norms.values())
    assert 0.0 <= first.accuracy <= 1.0 and 0 <= first.head < 2
    # The untrained copy is the model as it was: different from the trained one.
    trained = first.model.attention.W_q.weight
    assert not torch.equal(first.initial_model.attention.W_q.weight, trained)
    assert toy.train(seed=1, steps=20, n_heldout=50).history != first.history


@pytest.mark.slow
def test_full_training_meets_the_chapter_targets():
    result = toy.train(seed=0)
    assert result.accuracy >= 0.95
    assert result.attention_after >= 0.8
    assert abs(result.attention_before - result.uniform) < 0.05


def test_train_rejects_empty_settings():
    with pytest.raises(ValueError, match="steps"):
        toy.train(steps=0)


def test_training_works_when_the_caller_disabled_gradients():
    with torch.no_grad():
        result = toy.train(seed=0, steps=3, n_heldout=10)
    assert len(result.history) == 3
