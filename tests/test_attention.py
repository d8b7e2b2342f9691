"""Tests of qkv.attention: equal to PyTorch's own attention, and strict on bad input."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import qkv
from qkv import (
    MultiHeadAttention,
    SelfAttention,
    causal_mask,
    concat_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)

DOUBLE = torch.float64


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=DOUBLE)


def torch_weights(query, key, attn_mask=None, is_causal=False, scale=None):
    """PyTorch's attention weights: its output when the values are the identity."""
    length = key.shape[-2]
    eye = torch.eye(length, dtype=query.dtype).expand(*key.shape[:-2], length, length)
    return F.scaled_dot_product_attention(
        query, key, eye, attn_mask=attn_mask, is_causal=is_causal, scale=scale
    )


def random_mask(*shape: int, seed: int = 0) -> torch.Tensor:
    """A random boolean mask in which every query may attend to at least one key."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=generator) > 0.5
    mask[..., 0] = True
    return mask


# --- scaled_dot_product_attention against torch.nn.functional -------------------

SDPA_CASES = {
    "2-D": dict(q=(5, 4), k=(5, 4), v=(5, 4)),
    "extra batch dims": dict(q=(2, 3, 5, 4), k=(2, 3, 5, 4), v=(2, 3, 5, 4)),
    "L != S": dict(q=(2, 4, 8), k=(2, 6, 8), v=(2, 6, 8)),
    "Ev != E": dict(q=(2, 4, 8), k=(2, 6, 8), v=(2, 6, 10)),
    "broadcast batch": dict(q=(2, 1, 4, 8), k=(1, 3, 6, 8), v=(1, 3, 6, 5)),
}


@pytest.mark.parametrize("case", SDPA_CASES.values(), ids=SDPA_CASES.keys())
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa_equals_torch(case, scale):
    query, key, value = (
        rand(*case["q"]),
        rand(*case["k"], seed=1),
        rand(*case["v"], seed=2),
    )
    output, weights = scaled_dot_product_attention(query, key, value, scale=scale)
    expected = F.scaled_dot_product_attention(query, key, value, scale=scale)
    torch.testing.assert_close(output, expected)
    key_b = key.expand(*output.shape[:-2], *key.shape[-2:])
    query_b = query.expand(*output.shape[:-2], *query.shape[-2:])
    torch.testing.assert_close(weights, torch_weights(query_b, key_b, scale=scale))


@pytest.mark.parametrize(
    "mask_shape",
    [(4, 6), (2, 4, 6), (2, 1, 6), (6,)],
    ids=["L,S", "B,L,S", "B,1,S", "S"],
)
def test_sdpa_bool_mask_equals_torch(mask_shape):
    query, key, value = rand(2, 4, 8), rand(2, 6, 8, seed=1), rand(2, 6, 3, seed=2)
    mask = random_mask(*mask_shape, seed=3)
    output, weights = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    expected = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, torch_weights(query, key, attn_mask=mask))
    assert torch.all(weights[~mask.expand_as(weights)] == 0)


@pytest.mark.parametrize("lengths", [(5, 5), (4, 6), (6, 4)], ids=["L=S", "L<S", "L>S"])
def test_sdpa_causal_equals_torch(lengths):
    query_len, key_len = lengths
    query, key, value = (
        rand(2, query_len, 8),
        rand(2, key_len, 8, seed=1),
        rand(2, key_len, 8, seed=2),
    )
    output, weights = scaled_dot_product_attention(query, key, value, is_causal=True)
    expected = F.scaled_dot_product_attention(query, key, value, is_causal=True)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, torch_weights(query, key, is_causal=True))


def test_weights_sum_to_one():
    query, key, value = rand(3, 7, 16), rand(3, 9, 16, seed=1), rand(3, 9, 4, seed=2)
    _, weights = scaled_dot_product_attention(query, key, value)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 7, dtype=DOUBLE))
    assert (weights >= 0).all()


def test_causal_upper_triangle_is_exactly_zero():
    x = rand(2, 6, 4) * 50  # large scores: exp(-inf) must still give exact zeros
    _, weights = scaled_dot_product_attention(x, x, x, is_causal=True)
    upper = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert torch.equal(weights[:, upper], torch.zeros_like(weights[:, upper]))
    assert torch.equal(weights[:, 0, 0], torch.ones(2, dtype=DOUBLE))


def test_fully_masked_row_gives_zeros_not_nan():
    query, key, value = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 6, seed=2)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    output, weights = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    assert not torch.isnan(output).any() and not torch.isnan(weights).any()
    assert torch.equal(weights[0, 1], torch.zeros(5, dtype=DOUBLE))
    assert torch.equal(output[0, 1], torch.zeros(6, dtype=DOUBLE))
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, dtype=DOUBLE))


def test_fully_masked_row_has_finite_gradients():
    query = rand(3, 4).requires_grad_()
    key, value = (
        rand(5, 4, seed=1).requires_grad_(),
        rand(5, 2, seed=2).requires_grad_(),
    )
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[2] = False
    output, _ = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    output.sum().backward()
    for tensor in (query, key, value):
        assert torch.isfinite(tensor.grad).all()
    assert torch.equal(query.grad[2], torch.zeros(4, dtype=DOUBLE))


def test_default_scale_is_one_over_sqrt_of_key_dim():
    query, key, value = rand(4, 16), rand(4, 16, seed=1), rand(4, 3, seed=2)
    default, _ = scaled_dot_product_attention(query, key, value)
    explicit, _ = scaled_dot_product_attention(
        query, key, value, scale=1 / math.sqrt(16)
    )
    torch.testing.assert_close(default, explicit)


@settings(max_examples=60, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    query_len=st.integers(1, 6),
    key_len=st.integers(1, 6),
    key_dim=st.integers(1, 8),
    value_dim=st.integers(1, 8),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sdpa_property_random_shapes(
    batch, query_len, key_len, key_dim, value_dim, causal, seed
):
    query = rand(*batch, query_len, key_dim, seed=seed)
    key = rand(*batch, key_len, key_dim, seed=seed + 1)
    value = rand(*batch, key_len, value_dim, seed=seed + 2)
    output, weights = scaled_dot_product_attention(query, key, value, is_causal=causal)
    assert output.shape == (*batch, query_len, value_dim)
    assert weights.shape == (*batch, query_len, key_len)
    expected = F.scaled_dot_product_attention(query, key, value, is_causal=causal)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(
        weights.sum(-1), torch.ones(*batch, query_len, dtype=DOUBLE)
    )
    torch.testing.assert_close(output, weights @ value)


def test_sdpa_gradcheck_float64():
    query = rand(2, 3, 4).requires_grad_()
    key = rand(2, 5, 4, seed=1).requires_grad_()
    value = rand(2, 5, 3, seed=2).requires_grad_()
    mask = random_mask(3, 5, seed=4)

    def fn(q, k, v):
        return scaled_dot_product_attention(q, k, v, attn_mask=mask)[0]

    assert torch.autograd.gradcheck(fn, (query, key, value))


# --- masks -----------------------------------------------------------------------


def test_causal_mask_values():
    expected = torch.tensor(
        [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool
    )
    assert torch.equal(causal_mask(3, 4), expected)
    assert torch.equal(causal_mask(3), expected[:, :3])


def test_padding_mask_values():
    expected = torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 0]], dtype=torch.bool)
    assert torch.equal(padding_mask([3, 1, 2]), expected)
    assert padding_mask(torch.tensor([1, 2]), max_len=5).shape == (2, 5)


def test_padding_gets_exactly_zero_weight():
    lengths = torch.tensor([4, 2])
    x = rand(2, 4, 8)
    key_mask = padding_mask(lengths)[:, None, :]  # (B, 1, S)
    _, weights = scaled_dot_product_attention(x, x, x, attn_mask=key_mask)
    assert torch.equal(weights[1, :, 2:], torch.zeros(4, 2, dtype=DOUBLE))
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, dtype=DOUBLE))


# --- heads -----------------------------------------------------------------------


def test_split_and_concat_heads_shapes_and_round_trip():
    x = rand(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    # head h holds features h*E .. (h+1)*E - 1 of every position
    assert torch.equal(heads[:, 1], x[..., 4:8])
    assert torch.equal(concat_heads(heads), x)


# --- SelfAttention -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dim", "bias", "count"),
    [(32, True, 3_168), (512, True, 787_968), (32, False, 3_072)],
)
def test_self_attention_parameter_count(dim, bias, count):
    module = SelfAttention(dim, bias=bias)
    assert sum(p.numel() for p in module.parameters()) == count


def test_self_attention_equals_projections_then_sdpa():
    torch.manual_seed(0)
    module = SelfAttention(8).double()
    x = rand(2, 5, 8)
    output, weights = module(x, is_causal=True)
    q, k, v = module.W_q(x), module.W_k(x), module.W_v(x)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(output, expected)
    assert weights.shape == (2, 5, 5)


# --- MultiHeadAttention against torch.nn.MultiheadAttention ---------------------


def make_pair(embed_dim=12, num_heads=3, bias=True, seed=0):
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(
        embed_dim, num_heads, bias=bias, batch_first=True, dtype=DOUBLE
    ).eval()
    if bias:  # PyTorch initialises biases to zero: make them count
        with torch.no_grad():
            reference.in_proj_bias.normal_()
            reference.out_proj.bias.normal_()
    return reference, MultiHeadAttention.from_torch(reference)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("kind", ["self", "cross"])
def test_mha_equals_torch(bias, kind):
    reference, ours = make_pair(bias=bias)
    query = rand(2, 4, 12)
    key = query if kind == "self" else rand(2, 7, 12, seed=1)
    value = query if kind == "self" else rand(2, 7, 12, seed=2)
    expected, expected_weights = reference(
        query, key, value, average_attn_weights=False
    )
    output, weights = ours(query, key, value)
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, expected_weights)  # (B, H, L, S), per head
    assert weights.shape == (2, 3, 4, key.shape[1])


def test_mha_parameter_count_equals_torch():
    reference, ours = make_pair(embed_dim=512, num_heads=8)
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in reference.parameters()
    )
    assert ours.head_dim == 64


def test_mha_masks_equal_torch():
    reference, ours = make_pair()
    x = rand(2, 5, 12)
    lengths = torch.tensor([5, 3])
    keep = padding_mask(lengths)  # (B, S), True = real token
    causal = causal_mask(5)
    # PyTorch's module takes the opposite convention: True = may NOT attend.
    expected, expected_weights = reference(
        x, x, x, attn_mask=~causal, key_padding_mask=~keep, average_attn_weights=False
    )
    output, weights = ours(x, attn_mask=causal & keep[:, None, None, :])
    torch.testing.assert_close(output, expected)
    torch.testing.assert_close(weights, expected_weights)


def test_mha_need_weights_false_and_default_key_value():
    _, ours = make_pair()
    x = rand(2, 5, 12)
    output, weights = ours(x, need_weights=False)
    assert weights is None
    torch.testing.assert_close(output, ours(x, x, x)[0])


def test_mha_gradcheck_float64():
    _, ours = make_pair(embed_dim=4, num_heads=2)
    x = rand(1, 3, 4).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: ours(t, is_causal=True)[0], (x,))


def test_from_torch_rejects_unsupported_modules():
    with pytest.raises(ValueError, match="kdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


# --- bad input: ValueError naming the argument and the shapes seen ----------------


def sdpa(q_shape, k_shape, v_shape, **kwargs):
    return scaled_dot_product_attention(
        rand(*q_shape), rand(*k_shape), rand(*v_shape), **kwargs
    )


BAD_SDPA = {
    "feature dims differ": (
        lambda: sdpa((4, 8), (6, 5), (6, 8)),
        r"query and key .* query \(4, 8\) and key \(6, 5\)",
    ),
    "key/value lengths differ": (
        lambda: sdpa((4, 8), (6, 8), (5, 8)),
        r"key and value .* key \(6, 8\) and value \(5, 8\)",
    ),
    "rank < 2": (
        lambda: sdpa((8,), (6, 8), (6, 8)),
        r"query must have at least 2 dimensions, got shape \(8,\)",
    ),
    "mask not broadcastable": (
        lambda: sdpa(
            (4, 8), (6, 8), (6, 8), attn_mask=torch.ones(4, 5, dtype=torch.bool)
        ),
        r"attn_mask of shape \(4, 5\) .* \(4, 6\)",
    ),
    "mask with is_causal": (
        lambda: sdpa(
            (4, 8),
            (6, 8),
            (6, 8),
            attn_mask=torch.ones(4, 6, dtype=torch.bool),
            is_causal=True,
        ),
        r"attn_mask .*is_causal.* \(4, 6\)",
    ),
    "float mask": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), attn_mask=torch.zeros(4, 6)),
        r"attn_mask must be a bool tensor .*torch.float32",
    ),
    "batch dims do not broadcast": (
        lambda: sdpa((2, 4, 8), (3, 6, 8), (3, 6, 8)),
        r"batch dims .* query \(2, 4, 8\), key \(3, 6, 8\)",
    ),
}


@pytest.mark.parametrize("call, message", BAD_SDPA.values(), ids=BAD_SDPA.keys())
def test_sdpa_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


BAD_MODULES = {
    "embed_dim not divisible": (
        lambda: MultiHeadAttention(10, 3),
        r"embed_dim=10 .* num_heads=3",
    ),
    "num_heads < 1": (lambda: MultiHeadAttention(8, 0), r"num_heads must be .* got 0"),
    "mha input last dim": (
        lambda: make_pair()[1](rand(2, 5, 8)),
        r"last dim of query must be embed_dim=12, got query \(2, 5, 8\)",
    ),
    "mha key last dim": (
        lambda: make_pair()[1](rand(2, 5, 12), rand(2, 4, 6)),
        r"last dim of key must be embed_dim=12, got key \(2, 4, 6\)",
    ),
    "self-attention input last dim": (
        lambda: SelfAttention(4).double()(rand(3, 5)),
        r"last dim of x must be embed_dim=4, got x \(3, 5\)",
    ),
    "split_heads not divisible": (
        lambda: split_heads(rand(2, 5, 10), 4),
        r"num_heads=4, got x \(2, 5, 10\)",
    ),
    "split_heads num_heads < 1": (
        lambda: split_heads(rand(2, 5, 10), 0),
        r"num_heads must be .* got 0",
    ),
    "concat_heads rank": (
        lambda: concat_heads(rand(5, 4)),
        r"x must have at least 3 dimensions, got shape \(5, 4\)",
    ),
    "padding_mask 2-D lengths": (
        lambda: padding_mask(torch.ones(2, 2, dtype=torch.long)),
        r"lengths .* shape \(2, 2\)",
    ),
    "padding_mask max_len too short": (
        lambda: padding_mask([3, 5], max_len=4),
        r"max_len=4 .* \[3, 5\]",
    ),
    "causal_mask negative": (lambda: causal_mask(-1), r"query_len .* -1"),
}


@pytest.mark.parametrize("call, message", BAD_MODULES.values(), ids=BAD_MODULES.keys())
def test_modules_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- tiled attention (online softmax) ------------------------------------------


@pytest.mark.parametrize("block_size", [1, 3, 16, 64, 1000])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_equals_sdpa(block_size, causal):
    # 23 and 29 are not multiples of the block sizes: the last blocks are ragged.
    query, key, value = rand(2, 23, 8), rand(2, 29, 8, seed=1), rand(2, 29, 5, seed=2)
    tiled = qkv.tiled_attention(
        query, key, value, block_size=block_size, is_causal=causal
    )
    full, _ = scaled_dot_product_attention(query, key, value, is_causal=causal)
    torch.testing.assert_close(tiled, full)


def test_tiled_handles_more_queries_than_keys_causally_and_custom_scale():
    query, key, value = rand(3, 12, 4), rand(3, 5, 4, seed=1), rand(3, 5, 2, seed=2)
    for scale in (None, 0.2):
        tiled = qkv.tiled_attention(
            query, key, value, block_size=4, is_causal=True, scale=scale
        )
        full, _ = scaled_dot_product_attention(
            query, key, value, is_causal=True, scale=scale
        )
        torch.testing.assert_close(tiled, full)


def test_tiled_is_stable_with_huge_scores():
    query, key, value = rand(6, 4) * 1e3, rand(6, 4, seed=1) * 1e3, rand(6, 3, seed=2)
    tiled = qkv.tiled_attention(query, key, value, block_size=2)
    assert torch.isfinite(tiled).all()
    torch.testing.assert_close(
        tiled, scaled_dot_product_attention(query, key, value)[0]
    )


def test_tiled_rejects_bad_input():
    with pytest.raises(ValueError, match="block_size"):
        qkv.tiled_attention(rand(4, 8), rand(4, 8), rand(4, 8), block_size=0)
    with pytest.raises(ValueError, match=r"query \(4, 8\) and key \(4, 5\)"):
        qkv.tiled_attention(rand(4, 8), rand(4, 5), rand(4, 8))
