"""The model that writes (qkv.experiments.writer): its KV-cache step gives the
logits of the whole pass, and generation with the cache writes the same tokens."""

from __future__ import annotations

import pytest
import torch

from qkv.experiments.writer import Writer, generate


def small_model(seed: int = 0) -> Writer:
    torch.manual_seed(seed)
    return Writer(
        vocab_size=11, embed_dim=16, num_heads=2, num_layers=2, ff_dim=32, max_len=24
    ).eval()


def test_step_with_the_cache_gives_the_logits_of_the_whole_pass():
    model = small_model()
    tokens = torch.randint(0, 11, (20,), generator=torch.Generator().manual_seed(1))
    whole = model(tokens)  # (T, V)
    caches = model.new_caches()
    pieces = [model.step(tokens[:7], caches)]  # a prompt of 7, then one by one
    pieces += [model.step(tokens[t : t + 1], caches) for t in range(7, 20)]
    torch.testing.assert_close(torch.cat(pieces), whole, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("temperature", "top_k"), [(0.0, None), (0.8, 3), (1.5, None)])
def test_generation_with_the_cache_writes_the_same_tokens(temperature, top_k):
    model = small_model()
    prompt = torch.tensor([1, 2, 3])
    written = [
        generate(
            model,
            prompt,
            18,
            temperature,
            top_k,
            torch.Generator().manual_seed(5),
            use_cache=use_cache,
        )
        for use_cache in (True, False)
    ]
    assert written[0] == written[1] and len(written[0]) == 18


def test_bad_input_names_the_argument():
    model = small_model()
    with pytest.raises(ValueError, match="tokens"):
        model(torch.tensor([[0.5]]))
    with pytest.raises(ValueError, match="max_len"):
        generate(model, torch.tensor([1, 2]), 30)
    with pytest.raises(ValueError, match="generator"):
        generate(model, torch.tensor([1, 2]), 3, temperature=1.0)
    with pytest.raises(ValueError, match=r"\[0, 11\)"):
        model(torch.tensor([3, 11]))
