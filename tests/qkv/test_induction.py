"""Tests of qkv.experiments.induction: the repeated-segment task, the attention-only
model, its scores and its deterministic training."""

from __future__ import annotations

import copy

import pytest
import torch

from qkv import MultiHeadAttention
from qkv.experiments.induction import (
    SEGMENT_LEN,
    SEQ_LEN,
    VOCAB_SIZE,
    Batch,
    InductionModel,
    heldout_batch,
    make_batch,
    measure,
    train,
)


def test_batches_repeat_one_segment_at_a_later_position():
    batch = make_batch(500, torch.Generator().manual_seed(0))
    assert batch.tokens.shape == (500, SEQ_LEN)
    assert batch.tokens.min() >= 0 and batch.tokens.max() < VOCAB_SIZE
    assert (batch.repeat >= batch.first + SEGMENT_LEN).all()
    assert (batch.repeat + SEGMENT_LEN <= SEQ_LEN).all()
    for tokens, first, repeat in zip(
        batch.tokens, batch.first.tolist(), batch.repeat.tolist(), strict=True
    ):
        segment = tokens[first : first + SEGMENT_LEN]
        assert torch.equal(tokens[repeat : repeat + SEGMENT_LEN], segment)
    # Offsets vary: both starts take every value they may take.
    assert set(batch.first.tolist()) == set(range(SEQ_LEN - 2 * SEGMENT_LEN + 1))
    assert len(set((batch.repeat - batch.first).tolist())) > 2


def test_the_other_tokens_are_uniform_and_independent():
    batch = make_batch(
        2000, torch.Generator().manual_seed(1), seq_len=12, segment_len=2
    )
    counts = torch.bincount(batch.tokens.flatten(), minlength=VOCAB_SIZE).float()
    assert counts.std() / counts.mean() < 0.15
    with pytest.raises(ValueError, match="seq_len"):
        make_batch(2, torch.Generator(), seq_len=10, segment_len=6)
    with pytest.raises(ValueError, match="batch_size"):
        make_batch(0, torch.Generator())


def test_heldout_batch_is_its_own_stream():
    assert torch.equal(heldout_batch(3, 10).tokens, heldout_batch(3, 10).tokens)
    assert not torch.equal(heldout_batch(3, 10).tokens, heldout_batch(4, 10).tokens)
    training = make_batch(10, torch.Generator().manual_seed(3))
    assert not torch.equal(training.tokens, heldout_batch(3, 10).tokens)


def test_model_uses_multi_head_attention_and_is_causal():
    torch.manual_seed(0)
    model = InductionModel()
    assert all(isinstance(layer, MultiHeadAttention) for layer in model.layers)
    tokens = make_batch(3, torch.Generator().manual_seed(2)).tokens
    logits, weights = model(tokens)
    assert logits.shape == (3, SEQ_LEN, VOCAB_SIZE)
    assert len(weights) == 2 and weights[0].shape == (3, 2, SEQ_LEN, SEQ_LEN)
    future = ~torch.ones(SEQ_LEN, SEQ_LEN, dtype=torch.bool).tril()
    assert (weights[1][..., future] == 0).all()
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % VOCAB_SIZE
    with torch.no_grad():
        torch.testing.assert_close(model(changed)[0][:, :10], logits[:, :10].detach())
    with pytest.raises(ValueError, match=r"max_len=20.*\(1, 21\)"):
        model(torch.zeros(1, 21, dtype=torch.long))


def test_fused_attention_gives_the_same_logits():
    torch.manual_seed(0)
    model = InductionModel()
    tokens = make_batch(4, torch.Generator().manual_seed(6)).tokens
    with torch.no_grad():
        logits, weights = model(tokens)
        fused, none = model(tokens, need_weights=False)
    torch.testing.assert_close(fused, logits, atol=1e-5, rtol=1e-5)
    assert len(weights) == 2 and none == []


def test_positions_reach_queries_and_keys_only():
    torch.manual_seed(0)
    model = InductionModel()
    tokens = make_batch(2, torch.Generator().manual_seed(5)).tokens
    with torch.no_grad():
        logits, weights = model(tokens)
        x = model.token_embedding(tokens)  # (B, T, D)
        where = model.position_embedding.weight  # (T, D)
        for layer, expected in zip(model.layers, weights, strict=True):
            context, found = layer(x + where, x + where, x, is_causal=True)
            torch.testing.assert_close(found, expected)
            x = x + context  # the values never saw a position
        torch.testing.assert_close(model.unembedding(x), logits)
        residual = InductionModel(positions="residual")
        residual.load_state_dict(model.state_dict())
        x = model.token_embedding(tokens) + where
        for layer in model.layers:
            x = x + layer(x, is_causal=True)[0]
        torch.testing.assert_close(residual(tokens)[0], model.unembedding(x))
    with pytest.raises(ValueError, match="positions"):
        InductionModel(positions="rotary")


def hand_made_weights(batch: Batch, layers: int, heads: int) -> list[torch.Tensor]:
    """Layer 0 head 0 looks at the previous token, layer 1 head 2 is an induction
    head; every other head looks at the first token."""
    size, length = batch.tokens.shape
    weights = torch.zeros(layers, size, heads, length, length)
    weights[..., 0] = 1.0
    for t in range(1, length):
        weights[0, :, 0, t, :] = 0.0
        weights[0, :, 0, t, t - 1] = 1.0
    for b in range(size):
        first, repeat = int(batch.first[b]), int(batch.repeat[b])
        for j in range(batch.segment_len):
            weights[1, b, 2, repeat + j, :] = 0.0
            weights[1, b, 2, repeat + j, first + j + 1] = 1.0
    return list(weights)


class FixedAttention(InductionModel):
    """An InductionModel whose attention weights are given, to test measure()."""

    def __init__(self, weights, logits):
        super().__init__()
        self.fixed = (logits, weights)

    def forward(self, tokens):
        return self.fixed


def test_measure_scores_a_hand_made_induction_circuit():
    batch = make_batch(6, torch.Generator().manual_seed(4))
    weights = hand_made_weights(batch, layers=2, heads=4)
    # Logits that predict every next token correctly, except inside the first
    # occurrence of the segment where they predict token 0.
    logits = torch.zeros(6, SEQ_LEN, VOCAB_SIZE)
    nxt = torch.roll(batch.tokens, -1, dims=1)
    logits.scatter_(2, nxt[..., None], 1.0)
    for b in range(6):
        first = int(batch.first[b])
        for t in range(first, first + SEGMENT_LEN - 1):
            logits[b, t] = 0.0
            logits[b, t, 0] = 1.0 if nxt[b, t] != 0 else -1.0
    found = measure(FixedAttention(weights, logits), batch)
    assert found.first_accuracy == pytest.approx(0.0)
    assert found.repeat_accuracy == pytest.approx(1.0)
    assert found.induction_scores.shape == (2, 4)
    assert float(found.induction_scores[1, 2]) == pytest.approx(1.0)
    assert float(found.previous_token_scores[0, 0]) == pytest.approx(1.0)
    assert found.previous_token_scores[0, 1] == pytest.approx(1 / (SEQ_LEN - 1))
    assert float(found.sink_scores[0, 1]) == pytest.approx(1.0)
    assert found.sink_scores[0, 0] < 0.1
    expected = sum(1 / (t + 1) for t in range(1, SEQ_LEN)) / (SEQ_LEN - 1)
    assert found.uniform_sink == pytest.approx(expected)


def test_training_is_deterministic_and_returns_what_a_chapter_draws():
    first = train(seed=0, steps=4, n_heldout=50, eval_every=2)
    again = train(seed=0, steps=4, n_heldout=50, eval_every=2)
    assert first.history == again.history and len(first.history) == 4
    assert first.history != train(seed=1, steps=4, n_heldout=50).history
    assert first.curve["step"] == [2, 4]
    for scores in (
        first.induction_scores,
        first.previous_token_scores,
        first.sink_scores,
    ):
        assert scores.shape == (2, 2)
        assert ((scores >= 0) & (scores <= 1)).all()
    assert first.example.tokens.shape == (1, SEQ_LEN)
    assert first.example_weights.shape == (2, 2, SEQ_LEN, SEQ_LEN)
    assert first.previous_token_head[0] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 0}, r"steps must be an int >= 1, got 0"),
        ({"seed": -1}, r"seed must be an int >= 0, got -1"),
        ({"seed": 1.5}, r"seed must be an int >= 0, got 1.5"),
        ({"batch_size": True}, r"batch_size must be an int >= 1, got True"),
        ({"lr": 0.0}, r"lr must be a finite number > 0, got 0.0"),
        ({"lr": float("nan")}, r"lr must be a finite number > 0, got nan"),
        ({"positions": "rotary"}, r"positions must be one of"),
        ({"embed_dim": 30, "num_heads": 4}, r"embed_dim=30 .* num_heads=4"),
    ],
)
def test_train_rejects_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train(**kwargs)


@pytest.fixture(scope="module")
def trained():
    return train(seed=0)


# slow: the chapter's full training run (fixture trained), whose claims it checks
@pytest.mark.slow
def test_seed_0_learns_induction_heads(trained):
    result = trained
    assert result.first_accuracy <= 0.15
    assert result.repeat_accuracy >= 0.9
    assert result.induction_scores.shape == (2, 2)
    layer, head = result.induction_head
    assert layer == 1 and result.induction_scores[layer, head] >= 0.5
    assert len(result.history) == 600 and result.history[-1] < result.history[0]
    assert result.seconds > 0 and result.cpu_seconds > 0
    assert result.previous_token_scores[result.previous_token_head] >= 0.4
    # Before training, neither head exists.
    before = measure(result.initial_model, result.heldout)
    assert before.induction_scores.max() < 0.2
    assert before.previous_token_scores[0].max() < 0.2


# slow: the chapter's full training run (fixture trained), whose claims it checks
@pytest.mark.slow
def test_the_copy_needs_the_previous_token_head(trained):
    """Removing the previous-token head of layer 0 breaks the copy; removing the
    other head of layer 0 does not (the circuit of the chapter decoders)."""
    model, heldout = trained.model, trained.heldout
    previous = trained.previous_token_head[1]
    accuracy = {}
    for head in range(2):
        ablated = copy.deepcopy(model)
        size = ablated.layers[0].head_dim
        with torch.no_grad():
            ablated.layers[0].W_o.weight[:, head * size : (head + 1) * size] = 0.0
        accuracy[head] = measure(ablated, heldout).repeat_accuracy
    assert accuracy[previous] < 0.7 < 0.9 < accuracy[1 - previous]


# slow: the chapter's full training run (fixture trained), whose claims it checks
@pytest.mark.slow
def test_training_is_deterministic_end_to_end(trained):
    again = train(seed=0)
    assert again.history == trained.history
    assert again.repeat_accuracy == trained.repeat_accuracy
    torch.testing.assert_close(again.induction_scores, trained.induction_scores)
