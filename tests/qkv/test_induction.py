"""Tests of qkv.experiments.induction: the repeated-segment task, the attention-only
model, its scores and its deterministic training."""

from __future__ import annotations

import pytest
import torch

from qkv import MultiHeadAttention
from qkv.experiments.induction import (
    SEGMENT_LEN,
    SEQ_LEN,
    VOCAB_SIZE,
    Batch,
    InductionModel,
    best_fixed_offset,
    free_running,
    heldout_batch,
    make_batch,
    measure,
    offset_batch,
    train,
    without_head,
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
    too_long = SEQ_LEN + 1
    with pytest.raises(ValueError, match=rf"max_len={SEQ_LEN}.*\(1, {too_long}\)"):
        model(torch.zeros(1, too_long, dtype=torch.long))


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
    # Few held-out sequences: train writes each one's repeat token by token.
    first = train(seed=0, steps=4, n_heldout=8, eval_every=2)
    again = train(seed=0, steps=4, n_heldout=8, eval_every=2)
    assert first.history == again.history and len(first.history) == 4
    assert first.history != train(seed=1, steps=4, n_heldout=8).history
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
    assert first.ablated_accuracy.shape == (2, 2)
    for value in (first.teacher_forced, first.free_running, first.whole_repeats):
        assert 0.0 <= value <= 1.0


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


def test_no_fixed_offset_copies_the_repeat():
    """The gap between the two copies is uniform: "repeat the token d back" is
    right about once per possible gap (the chapter's baseline)."""
    batch = heldout_batch(0)
    gaps = (batch.repeat - batch.first).tolist()
    assert set(gaps) == set(range(SEGMENT_LEN, SEQ_LEN - SEGMENT_LEN + 1))
    offset, accuracy = best_fixed_offset(offset_batch(), batch)
    assert 1 <= offset < SEQ_LEN
    assert accuracy < 0.15
    assert abs(accuracy - 1 / len(set(gaps))) < 0.05


def test_best_fixed_offset_is_chosen_on_one_batch_and_scored_on_another():
    """The offset comes from ``choose_on``; the accuracy, from ``score_on``."""
    choose_on, score_on = offset_batch(200), heldout_batch(0, 200)
    offset, accuracy = best_fixed_offset(choose_on, score_on)
    assert best_fixed_offset(choose_on, choose_on)[0] == offset
    assert best_fixed_offset(choose_on, score_on) == (offset, accuracy)
    # its own held-out sequences would crown their own best offset
    own = best_fixed_offset(score_on, score_on)
    assert own[1] >= accuracy
    # the choice's sequences do not overlap the held-out ones
    assert not torch.equal(choose_on.tokens, score_on.tokens)
    short = make_batch(4, torch.Generator().manual_seed(0), seq_len=20)
    with pytest.raises(ValueError, match="choose_on and score_on"):
        best_fixed_offset(short, score_on)


def test_free_running_scores_an_untrained_model_near_chance():
    """Both accuracies are shares; an untrained model copies nothing."""
    batch = heldout_batch(0, 8)
    forced, free, whole = free_running(InductionModel(), batch)
    for value in (forced, free, whole):
        assert 0.0 <= value <= 1.0
    assert forced < 0.2 and free < 0.2


def test_without_head_silences_one_head_only():
    torch.manual_seed(0)
    model = InductionModel()
    ablated = without_head(model, 0, 1)
    size = model.layers[0].head_dim
    weight = ablated.layers[0].W_o.weight
    assert (weight[:, size:] == 0).all()
    torch.testing.assert_close(weight[:, :size], model.layers[0].W_o.weight[:, :size])
    assert (model.layers[0].W_o.weight[:, size:] != 0).any()  # a copy


SEEDS = range(5)


def chapter_runs():
    """The chapter's five runs, called as the chapter calls them."""
    return [train(seed=seed) for seed in SEEDS]


# One test per seed, so that two workers train two seeds at once; a run is
# trained once (the workers share `_build/results` and its locks), then read.
@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_0_to_4_learns_to_copy_with_an_induction_head_in_layer_1(
    trained_results, seed
):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    vocab = VOCAB_SIZE
    result = train(seed=seed)
    assert result.repeat_accuracy >= 0.85  # measured 0.929 or more
    assert result.first_accuracy <= 2 / vocab
    layer, head = result.induction_head
    assert layer == 1 and result.induction_scores[layer, head] >= 0.5
    assert result.previous_token_scores[result.previous_token_head] >= 0.4
    assert result.history[-1] < result.history[0]
    # Before training, neither head exists.
    before = measure(result.initial_model, result.heldout)
    assert before.induction_scores.max() < 0.2
    assert before.previous_token_scores[0].max() < 0.2


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_removing_the_previous_token_head_breaks_the_copy_on_seeds_0_to_4(
    trained_results, seed
):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    result = train(seed=seed)
    previous = result.previous_token_head
    other = (0, 1 - previous[1])
    assert result.ablated_accuracy[previous] < 0.5
    assert result.ablated_accuracy[other] >= 0.8
    found = measure(without_head(result.model, *previous), result.heldout)
    assert found.induction_scores[1].max() < 0.3
    # Both heads of layer 1 attend like induction heads; removing either
    # lowers the accuracy, less than removing the previous-token head.
    assert result.induction_scores[1].min() >= 0.5
    for head in range(2):
        accuracy = result.ablated_accuracy[1, head]
        assert result.ablated_accuracy[previous] < accuracy
        assert accuracy < result.repeat_accuracy


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_free_running_is_less_accurate_than_teacher_forced_on_seeds_0_to_4(
    trained_results, seed
):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    result = train(seed=seed)
    # by 0.04 or more natively and under the emulated CPUs: asserted with room
    assert result.teacher_forced - result.free_running >= 0.02


def first_step(result, key, level):
    pairs = zip(result.curve["step"], result.curve[key], strict=True)
    return next(step for step, value in pairs if value >= level)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_accuracy_climbs_after_a_plateau_three_times_longer_on_seeds_0_to_4(
    trained_results, seed
):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    result = train(seed=seed)
    low = first_step(result, "repeat_accuracy", 0.2)
    high = first_step(result, "repeat_accuracy", 0.8)
    assert low >= 3 * (high - low)
    assert low - 50 <= first_step(result, "induction", 0.3) <= high


@pytest.mark.slow
def test_which_head_and_how_long_the_plateau_change_with_the_seed(trained_results):
    """slow: reads the chapter's five runs (trained by the tests above)."""
    runs = chapter_runs()
    assert len({run.induction_head for run in runs}) > 1
    plateaus = [first_step(run, "repeat_accuracy", 0.2) for run in runs]
    assert max(plateaus) - min(plateaus) >= 50  # the end of the plateau varies
