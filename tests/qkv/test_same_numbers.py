"""The shortcuts of the trainings of qkv.experiments give the same numbers, bit for
bit, as the plain code they replace: a trained result, and every claim a chapter
makes about it, does not depend on them."""

from __future__ import annotations

import random

import torch
from torch import nn

from qkv.experiments import positions, toy, writer


def test_adam_foreach_updates_the_weights_like_the_loop_over_tensors():
    """Every train() builds its Adam or AdamW with foreach=True."""
    trained = {}
    for foreach in (False, True):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3))
        decay = [p for p in model.parameters() if p.dim() >= 2]
        other = [p for p in model.parameters() if p.dim() < 2]
        adam = torch.optim.Adam(decay, lr=1e-2, foreach=foreach)
        adamw = torch.optim.AdamW(other, lr=1e-2, weight_decay=0.1, foreach=foreach)
        data = torch.Generator().manual_seed(1)
        for _ in range(5):
            loss = model(torch.randn(4, 6, generator=data)).square().mean()
            adam.zero_grad()
            adamw.zero_grad()
            loss.backward()
            adam.step()
            adamw.step()
        trained[foreach] = list(model.parameters())
    for plain, fast in zip(trained[False], trained[True], strict=True):
        assert torch.equal(plain, fast)


def test_heldout_loss_in_chunks_is_the_loss_of_one_batch():
    torch.manual_seed(0)
    model = writer.Writer(11, embed_dim=16, num_heads=2, ff_dim=32, max_len=8).eval()
    windows = 2 * writer.EVAL_WINDOWS + 3  # two whole chunks and a short one
    tokens = torch.randint(0, 11, (windows * 8 + 1,))
    inputs, targets = writer._windows(tokens, 8)
    with torch.no_grad():
        logits = model(inputs)
    expected = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    assert writer.heldout_loss(model, tokens) == float(expected)


def test_toy_training_batches_are_the_sentences_drawn_step_by_step():
    batches = toy.training_batches(3, 4, 5, 0.5)
    rng = random.Random(3)
    for batch in batches:
        drawn = toy.encode([toy.make_example(rng, 0.5) for _ in range(5)])
        for name in ("token_ids", "positions", "keep", "labels", "antecedent"):
            assert torch.equal(getattr(batch, name), getattr(drawn, name))
    assert toy.training_batches(3, 4, 5, 0.5) is batches  # drawn once


def test_every_encoding_of_extrapolation_trains_on_the_same_batches(monkeypatch):
    seen = []
    original = positions.PositionModel.forward

    def forward(self, tokens):
        if self.training:
            seen.append((self.encoding, tokens))
        return original(self, tokens)

    monkeypatch.setattr(positions.PositionModel, "forward", forward)
    positions.extrapolation(
        seed=2, encodings=("none", "rope"), steps=3, batch_size=4, n_test=2
    )
    generator = torch.Generator().manual_seed(2)
    expected = [positions.make_batch("latest", 4, 16, generator)[0] for _ in range(3)]
    for encoding in ("none", "rope"):
        tokens = [t for e, t in seen if e == encoding]
        assert len(tokens) == 3 and all(map(torch.equal, tokens, expected))
