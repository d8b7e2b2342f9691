"""Attention dropout in qkv (chapter multi-head): the same draws as PyTorch's
under one seed on the CPU, the right mean over many draws, off when p = 0 or
in eval(), and ValueError for a bad p or generator."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import qkv


def inputs(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(2, 3, 4, 8, generator=generator)  # (B, H, L, E)
    key = torch.randn(2, 3, 5, 8, generator=generator)  # (B, H, S, E)
    value = torch.randn(2, 3, 5, 6, generator=generator)  # (B, H, S, Ev)
    return query, key, value


@pytest.mark.parametrize("p", [0.1, 0.5])
@pytest.mark.parametrize("causal", [False, True])
def test_function_equals_torch_under_one_seed(p, causal):
    query, key, value = inputs()
    key, value = key[..., :4, :], value[..., :4, :]  # L = S for the causal mask
    torch.manual_seed(3)
    expected = F.scaled_dot_product_attention(
        query, key, value, dropout_p=p, is_causal=causal
    )
    torch.manual_seed(3)
    got, _ = qkv.scaled_dot_product_attention(
        query, key, value, is_causal=causal, dropout_p=p
    )
    torch.testing.assert_close(got, expected)
    generator = torch.Generator().manual_seed(3)  # the same stream, given
    again, _ = qkv.scaled_dot_product_attention(
        query, key, value, is_causal=causal, dropout_p=p, generator=generator
    )
    torch.testing.assert_close(again, expected)


def test_weights_are_dropped_and_scaled():
    query, key, value = inputs()
    p = 0.25
    plain, before = qkv.scaled_dot_product_attention(query, key, value)
    generator = torch.Generator().manual_seed(0)
    output, after = qkv.scaled_dot_product_attention(
        query, key, value, dropout_p=p, generator=generator
    )
    kept = after != 0
    assert (~kept).any() and kept.any()
    torch.testing.assert_close(after[kept], before[kept] / (1 - p))
    torch.testing.assert_close(output, after @ value)  # mixed with the kept ones
    assert not torch.allclose(after.sum(-1), torch.ones(2, 3, 4))


def test_generator_makes_it_reproducible_and_leaves_the_global_state():
    query, key, value = inputs()
    state = torch.random.get_rng_state()
    first, _ = qkv.scaled_dot_product_attention(
        query, key, value, dropout_p=0.5, generator=torch.Generator().manual_seed(1)
    )
    second, _ = qkv.scaled_dot_product_attention(
        query, key, value, dropout_p=0.5, generator=torch.Generator().manual_seed(1)
    )
    torch.testing.assert_close(first, second)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_equal_in_expectation():
    """The mean over many draws is the output without dropout."""
    query, key, value = inputs()
    plain, weights = qkv.scaled_dot_product_attention(query, key, value)
    generator = torch.Generator().manual_seed(0)
    draws = 4000
    many = qkv.attention_dropout(
        weights.expand(draws, *weights.shape), 0.3, generator
    )  # (draws, B, H, L, S)
    # standard error of a mean of 4000 draws of w * Bernoulli(0.7) / 0.7, w <= 1:
    # at most sqrt(0.3 / 0.7 / 4000) = 0.0104; 0.05 is about 5 of them
    torch.testing.assert_close(many.mean(0), weights, atol=0.05, rtol=0)
    torch.testing.assert_close(
        (many @ value).mean(0), plain, atol=0.15, rtol=0
    )  # |v| of a few units: a few standard errors


def test_p_zero_is_no_dropout():
    query, key, value = inputs()
    expected = qkv.scaled_dot_product_attention(query, key, value)
    got = qkv.scaled_dot_product_attention(query, key, value, dropout_p=0.0)
    torch.testing.assert_close(got, expected)
    weights = expected[1]
    assert qkv.attention_dropout(weights, 0.0) is weights


def torch_pair(p: float):
    torch.manual_seed(0)
    torch_mha = nn.MultiheadAttention(12, 3, dropout=p, batch_first=True)
    nn.init.normal_(torch_mha.in_proj_bias)
    return torch_mha, qkv.MultiHeadAttention.from_torch(torch_mha)


@pytest.mark.parametrize("need_weights", [True, False])
def test_module_equals_torch_in_training_under_one_seed(need_weights):
    torch_mha, ours = torch_pair(0.3)
    assert ours.dropout == 0.3 and ours.training
    x = torch.randn(2, 4, 12, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(7)
    expected, expected_w = torch_mha(
        x, x, x, need_weights=need_weights, average_attn_weights=False
    )
    torch.manual_seed(7)
    got, got_w = ours(x, need_weights=need_weights)
    torch.testing.assert_close(got, expected)
    if need_weights:
        torch.testing.assert_close(got_w, expected_w)
        assert (got_w == 0).any()
    else:
        assert got_w is None


def test_module_with_a_generator_and_need_weights_false():
    _, ours = torch_pair(0.3)
    x = torch.randn(2, 4, 12, generator=torch.Generator().manual_seed(1))
    with_w, _ = ours(x, generator=torch.Generator().manual_seed(5))
    without_w, none = ours(
        x, need_weights=False, generator=torch.Generator().manual_seed(5)
    )
    assert none is None
    torch.testing.assert_close(without_w, with_w)


def test_module_in_eval_has_no_dropout():
    torch_mha, ours = torch_pair(0.5)
    torch_mha.eval()
    ours.eval()
    x = torch.randn(2, 4, 12, generator=torch.Generator().manual_seed(1))
    for _ in range(2):  # the same every time: nothing is drawn
        expected, expected_w = torch_mha(x, x, x, average_attn_weights=False)
        got, got_w = ours(x)
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(got_w, expected_w)
        torch.testing.assert_close(got_w.sum(-1), torch.ones(2, 3, 4))


def test_from_torch_copies_the_mode():
    torch_mha = nn.MultiheadAttention(8, 2, dropout=0.1).eval()
    assert not qkv.MultiHeadAttention.from_torch(torch_mha).training


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan"), True, "0.1", None])
def test_bad_p_raises_value_error_naming_it(p):
    query, key, value = inputs()
    with pytest.raises(ValueError, match="dropout_p must be a probability") as e:
        qkv.scaled_dot_product_attention(query, key, value, dropout_p=p)
    assert repr(p) in str(e.value)
    with pytest.raises(ValueError, match="^dropout must be a probability"):
        qkv.MultiHeadAttention(12, 3, dropout=p)
    with pytest.raises(ValueError, match="^p must be a probability"):
        qkv.attention_dropout(torch.ones(2, 2), p)


def test_bad_generator_raises_value_error():
    query, key, value = inputs()
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        qkv.scaled_dot_product_attention(query, key, value, dropout_p=0.1, generator=0)
    layer = qkv.MultiHeadAttention(12, 3, dropout=0.1)
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        layer(torch.zeros(4, 12), generator=0)
