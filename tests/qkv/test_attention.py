"""Tests of qkv.attention: equal to PyTorch's own attention, and strict on bad input."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

import qkv
from qkv import (
    MultiHeadAttention,
    SelfAttention,
    causal_mask,
    concat_heads,
    padding_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
    split_heads,
    tiled_attention,
)
from qkv.transformer import FeedForward, TransformerBlock, sinusoidal_positions

DOUBLE = torch.float64
ROOT = Path(__file__).resolve().parents[2]
NAN, INF = float("nan"), float("inf")


@pytest.fixture(autouse=True)
def seeded():
    """Every module built in a test starts from the same weights."""
    torch.manual_seed(0)


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


@settings(max_examples=60, deadline=None, derandomize=True)
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


def test_sliding_window_mask_values():
    expected = torch.tensor(
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0]],
        dtype=torch.bool,
    )
    assert torch.equal(sliding_window_mask(4, 2, key_len=5), expected)
    assert torch.equal(sliding_window_mask(4, 2), expected[:, :4])
    assert torch.equal(sliding_window_mask(6, 1), torch.eye(6, dtype=torch.bool))
    # A window as long as the sequence is the causal mask.
    for window in (6, 7, 100):
        assert torch.equal(sliding_window_mask(6, window), causal_mask(6))
    allowed = sliding_window_mask(10, 3).sum(-1)
    assert allowed.tolist() == [min(i + 1, 3) for i in range(10)]


def test_sliding_window_mask_in_attention_equals_attention_over_the_window():
    query, key, value = rand(7, 4), rand(7, 4, seed=1), rand(7, 5, seed=2)
    out, weights = scaled_dot_product_attention(
        query, key, value, attn_mask=sliding_window_mask(7, 3)
    )
    for i in range(7):
        start = max(0, i - 2)  # the window: positions start..i
        alone, _ = scaled_dot_product_attention(
            query[i : i + 1], key[start : i + 1], value[start : i + 1]
        )
        torch.testing.assert_close(out[i : i + 1], alone)
        assert (weights[i, :start] == 0).all() and (weights[i, i + 1 :] == 0).all()


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
    "float32 query, float64 key": (
        lambda: scaled_dot_product_attention(
            rand(4, 8).float(), rand(6, 8), rand(6, 8)
        ),
        r"same dtype, got query torch.float32, key torch.float64 "
        r"and value torch.float64",
    ),
    "float64 value": (
        lambda: scaled_dot_product_attention(
            rand(4, 8).float(), rand(6, 8).float(), rand(6, 8)
        ),
        r"same dtype, got .* and value torch.float64",
    ),
    "half query": (
        lambda: scaled_dot_product_attention(
            rand(4, 8).half(), rand(6, 8).float(), rand(6, 8).float()
        ),
        r"same dtype, got query torch.float16",
    ),
    "E = 0": (
        lambda: sdpa((4, 0), (6, 0), (6, 8)),
        r"query and key must have a feature size .* at least 1, got "
        r"query \(4, 0\) and key \(6, 0\)",
    ),
    "Ev = 0": (
        lambda: sdpa((4, 8), (6, 8), (6, 0)),
        r"value must have a feature size .* at least 1, got value \(6, 0\)",
    ),
    "integer query": (
        lambda: scaled_dot_product_attention(
            torch.ones(4, 8, dtype=torch.long), rand(6, 8), rand(6, 8)
        ),
        r"query must be a floating tensor, got dtype torch.int64",
    ),
    "scale is a string": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale="0.5"),
        r"scale must be a number .*got '0.5' of type str",
    ),
    "scale is a bool": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=True),
        r"scale must be a number .*got True of type bool",
    ),
    "scale is NaN": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=NAN),
        r"scale must be finite, got nan",
    ),
    "scale is inf": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=INF),
        r"scale must be finite, got inf",
    ),
    "scale is a tensor of two elements": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=torch.tensor([0.5, 0.25])),
        r"scale must be .* tensor of shape \(\) or \(1,\), got a tensor of "
        r"shape \(2,\)",
    ),
    "scale is a (1, 1) tensor": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=torch.ones(1, 1)),
        r"got a tensor of shape \(1, 1\)",
    ),
    "scale is an integer tensor": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=torch.tensor(2)),
        r"got a tensor of shape \(\) and dtype torch.int64",
    ),
    "scale is a NaN tensor": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), scale=torch.tensor(NAN)),
        r"scale must be finite, got tensor\(nan\)",
    ),
    "is_causal is a string": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), is_causal="no"),
        r"is_causal must be True or False, got 'no' of type str",
    ),
    "is_causal is 1": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), is_causal=1),
        r"is_causal must be True or False, got 1 of type int",
    ),
    "is_causal is None": (
        lambda: sdpa((4, 8), (6, 8), (6, 8), is_causal=None),
        r"is_causal must be True or False, got None",
    ),
    "mask is a list": (
        lambda: sdpa((2, 3), (2, 3), (2, 3), attn_mask=[[True, False]] * 2),
        r"attn_mask must be a bool tensor .*got <class 'list'>",
    ),
    "tiled: is_causal is a string": (
        lambda: tiled_attention(rand(4, 8), rand(6, 8), rand(6, 8), is_causal="no"),
        r"is_causal must be True or False, got 'no'",
    ),
    "tiled: scale is NaN": (
        lambda: tiled_attention(rand(4, 8), rand(6, 8), rand(6, 8), scale=NAN),
        r"scale must be finite, got nan",
    ),
    "tiled: mixed dtypes": (
        lambda: tiled_attention(rand(4, 8), rand(6, 8).float(), rand(6, 8)),
        r"same dtype, got query torch.float64, key torch.float32",
    ),
    "tiled: block_size is a float": (
        lambda: tiled_attention(rand(4, 8), rand(6, 8), rand(6, 8), block_size=2.0),
        r"block_size must be an int >= 1, got 2.0 of type float",
    ),
    "tiled: E = 0": (
        lambda: tiled_attention(rand(4, 0), rand(6, 0), rand(6, 8)),
        r"feature size .* at least 1, got query \(4, 0\)",
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
    "causal_mask float": (
        lambda: causal_mask(3.0),
        r"query_len must be an int >= 0, got 3.0 of type float",
    ),
    "causal_mask key_len bool": (
        lambda: causal_mask(3, True),
        r"key_len must be an int >= 0, got True of type bool",
    ),
    "sliding_window_mask window 0": (
        lambda: sliding_window_mask(4, 0),
        r"window must be an int >= 1, got 0",
    ),
    "sliding_window_mask float window": (
        lambda: sliding_window_mask(4, 2.0),
        r"window must be an int >= 1, got 2.0 of type float",
    ),
    "sliding_window_mask negative query_len": (
        lambda: sliding_window_mask(-2, 2),
        r"query_len must be an int >= 0, got -2",
    ),
    "padding_mask float max_len": (
        lambda: padding_mask([3, 1], max_len=4.5),
        r"max_len must be an int >= 0, got 4.5 of type float",
    ),
    "padding_mask whole float max_len": (
        lambda: padding_mask([3, 1], max_len=4.0),
        r"max_len must be an int >= 0, got 4.0 of type float",
    ),
    "padding_mask negative max_len": (
        lambda: padding_mask([0, 0], max_len=-1),
        r"max_len must be an int >= 0, got -1",
    ),
    "padding_mask float lengths": (
        lambda: padding_mask([2.5, 1.0]),
        r"lengths must be a 1-D tensor of integers, got shape \(2,\) "
        r"and dtype torch.float32",
    ),
    "padding_mask negative lengths": (
        lambda: padding_mask([2, -1]),
        r"lengths must be non-negative, got \[2, -1\]",
    ),
    "split_heads float num_heads": (
        lambda: split_heads(rand(2, 5, 12), 2.0),
        r"num_heads must be an int >= 1, got 2.0 of type float",
    ),
    "embed_dim float": (
        lambda: MultiHeadAttention(12.0, 3),
        r"embed_dim must be an int >= 1, got 12.0 of type float",
    ),
    "self-attention embed_dim 0": (
        lambda: SelfAttention(0),
        r"embed_dim must be an int >= 1, got 0",
    ),
    "self-attention bias a string": (
        lambda: SelfAttention(4, bias="no"),
        r"bias must be True or False, got 'no'",
    ),
    "num_kv_heads does not divide num_heads": (
        lambda: MultiHeadAttention(24, 6, num_kv_heads=4),
        r"num_kv_heads=4 must divide num_heads=6",
    ),
    "num_kv_heads above num_heads": (
        lambda: MultiHeadAttention(24, 6, num_kv_heads=12),
        r"num_kv_heads=12 must divide num_heads=6",
    ),
    "num_kv_heads 0": (
        lambda: MultiHeadAttention(24, 6, num_kv_heads=0),
        r"num_kv_heads must be an int >= 1, got 0",
    ),
    "num_kv_heads float": (
        lambda: MultiHeadAttention(24, 6, num_kv_heads=2.0),
        r"num_kv_heads must be an int >= 1, got 2.0 of type float",
    ),
    "bias passed third, where num_kv_heads is": (
        lambda: MultiHeadAttention(24, 6, False),
        r"num_kv_heads must be an int >= 1, got False of type bool",
    ),
    "mha need_weights a string": (
        lambda: make_pair()[1](rand(2, 5, 12), need_weights="no"),
        r"need_weights must be True or False, got 'no'",
    ),
    "mha is_causal a string": (
        lambda: make_pair()[1](rand(2, 5, 12), is_causal="yes", need_weights=False),
        r"is_causal must be True or False, got 'yes'",
    ),
    "mha float32 input, float64 weights": (
        lambda: make_pair()[1](rand(2, 5, 12).float()),
        r"query has dtype torch.float32 but the module's weights have dtype "
        r"torch.float64",
    ),
    "mha key and value lengths differ": (
        lambda: make_pair()[1](rand(2, 5, 12), rand(2, 4, 12), rand(2, 3, 12)),
        r"key and value .* got key \(2, 4, 12\) and value \(2, 3, 12\)",
    ),
    "mha fast path, mask of the wrong shape": (
        lambda: make_pair()[1](
            rand(2, 5, 12),
            attn_mask=torch.ones(4, 5, dtype=torch.bool),
            need_weights=False,
        ),
        r"attn_mask of shape \(4, 5\) .* \(2, 3, 5, 5\)",
    ),
    "mha fast path, float mask": (
        lambda: make_pair()[1](
            rand(2, 5, 12), attn_mask=torch.zeros(5, 5), need_weights=False
        ),
        r"attn_mask must be a bool tensor .*torch.float32",
    ),
    "mha fast path, mask with is_causal": (
        lambda: make_pair()[1](
            rand(2, 5, 12),
            attn_mask=torch.ones(5, 5, dtype=torch.bool),
            is_causal=True,
            need_weights=False,
        ),
        r"either attn_mask or is_causal=True",
    ),
    "mha batch dims do not broadcast": (
        lambda: make_pair()[1](rand(2, 5, 12), rand(3, 4, 12)),
        r"batch dims .* query \(2, 5, 12\), key \(3, 4, 12\)",
    ),
    "from_torch with grouped-query attention": (
        lambda: MultiHeadAttention.from_torch(
            nn.MultiheadAttention(12, 6), num_kv_heads=2
        ),
        r"one key/value head per query head \(num_heads=6\): it cannot give "
        r"num_kv_heads=2",
    ),
    "feed-forward ff_dim 0": (
        lambda: FeedForward(8, 0),
        r"ff_dim must be an int >= 1, got 0",
    ),
    "feed-forward embed_dim float": (
        lambda: FeedForward(8.0, 16),
        r"embed_dim must be an int >= 1, got 8.0 of type float",
    ),
    "transformer block eps 0": (
        lambda: TransformerBlock(8, 2, 16, eps=0.0),
        r"eps must be a finite number > 0, got 0.0",
    ),
    "sinusoidal positions base NaN": (
        lambda: sinusoidal_positions(4, 8, base=NAN),
        r"base must be a finite number > 0, got nan",
    ),
    "sinusoidal positions float length": (
        lambda: sinusoidal_positions(4.0, 8),
        r"length must be an int >= 1, got 4.0 of type float",
    ),
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


# --- half precision: float16 and bfloat16 against a float64 reference ------------
# One tolerance per dtype, as PyTorch's own attention tests set them: a few
# times the rounding error of a length-16 dot product in that dtype (measured
# here: PyTorch's own result is off by about 1e-3 in float16, 9e-3 in bfloat16).
LOW_PRECISION = {
    torch.float16: dict(atol=5e-3, rtol=5e-3),
    torch.bfloat16: dict(atol=4e-2, rtol=4e-2),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", LOW_PRECISION, ids=["float16", "bfloat16"])
def test_half_precision_attention_is_close_to_float64(dtype, causal):
    query, key, value = (
        rand(2, 3, 7, 16),
        rand(2, 3, 7, 16, seed=1),
        rand(2, 3, 7, 16, seed=2),
    )
    reference = F.scaled_dot_product_attention(query, key, value, is_causal=causal)
    low = [tensor.to(dtype) for tensor in (query, key, value)]
    output, weights = scaled_dot_product_attention(*low, is_causal=causal)
    tiled = tiled_attention(*low, block_size=3, is_causal=causal)
    assert output.dtype == weights.dtype == tiled.dtype == dtype
    torch.testing.assert_close(output.double(), reference, **LOW_PRECISION[dtype])
    torch.testing.assert_close(tiled.double(), reference, **LOW_PRECISION[dtype])


@pytest.mark.parametrize("dtype", LOW_PRECISION, ids=["float16", "bfloat16"])
def test_half_precision_multi_head_attention_is_close_to_float64(dtype):
    module = MultiHeadAttention(16, 4).to(DOUBLE)
    low = MultiHeadAttention(16, 4)
    low.load_state_dict(module.state_dict())
    low = low.to(dtype)
    x = rand(2, 7, 16)
    reference, _ = module(x, attn_mask=causal_mask(7))
    readable, _ = low(x.to(dtype), attn_mask=causal_mask(7))
    fast, _ = low(x.to(dtype), attn_mask=causal_mask(7), need_weights=False)
    for output in (readable, fast):
        assert output.dtype == dtype
        torch.testing.assert_close(output.double(), reference, **LOW_PRECISION[dtype])


@pytest.mark.filterwarnings("ignore:Lower right causal bias")  # NaN rows if L > S
@pytest.mark.parametrize("lengths", [(4, 6), (6, 4)], ids=["L<S", "L>S"])
def test_is_causal_with_l_not_s_is_pytorchs_upper_left_causal_bias(lengths):
    """With L != S there are two causal masks: PyTorch's ``is_causal=True`` and
    ``causal_upper_left`` align query 0 with key 0 (top-left, as documented in
    qkv); ``causal_lower_right`` aligns the last query with the last key (as a
    KV cache needs). qkv's ``is_causal`` is the first, and differs from the
    second, in every path."""
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left

    query_len, key_len = lengths
    query, key, value = (
        rand(2, query_len, 8),
        rand(2, key_len, 8, seed=1),
        rand(2, key_len, 8, seed=2),
    )
    upper = F.scaled_dot_product_attention(
        query, key, value, attn_mask=causal_upper_left(query_len, key_len)
    )
    lower = F.scaled_dot_product_attention(
        query, key, value, attn_mask=causal_lower_right(query_len, key_len)
    )
    output, _ = scaled_dot_product_attention(query, key, value, is_causal=True)
    tiled = tiled_attention(query, key, value, block_size=2, is_causal=True)
    module = MultiHeadAttention(8, 2).to(DOUBLE)
    readable, _ = module(query, key, value, is_causal=True)
    fast, _ = module(query, key, value, is_causal=True, need_weights=False)
    top_left = torch.ones(query_len, key_len, dtype=torch.bool).tril()  # (L, S)
    reference, _ = module(query, key, value, attn_mask=top_left)
    torch.testing.assert_close(output, upper)
    torch.testing.assert_close(tiled, upper)
    torch.testing.assert_close(readable, reference)
    torch.testing.assert_close(fast, reference)
    assert not torch.allclose(output, lower)


# --- legitimate edge cases: empty sequences, a scale given as a tensor --------------


@pytest.mark.parametrize("causal", [False, True])
def test_empty_query_or_key_sequences_are_allowed(causal):
    query, key, value = rand(2, 4, 8), rand(2, 6, 8, seed=1), rand(2, 6, 3, seed=2)
    # No query (L = 0): an empty output, as in PyTorch.
    output, weights = scaled_dot_product_attention(
        query[:, :0], key, value, is_causal=causal
    )
    assert output.shape == (2, 0, 3) and weights.shape == (2, 0, 6)
    # No key (S = 0): every query may attend to nothing, so its output is 0.
    output, weights = scaled_dot_product_attention(
        query, key[:, :0], value[:, :0], is_causal=causal
    )
    assert torch.equal(output, torch.zeros(2, 4, 3, dtype=DOUBLE))
    assert weights.shape == (2, 4, 0)
    expected = F.scaled_dot_product_attention(
        query, key[:, :0], value[:, :0], is_causal=causal
    )
    torch.testing.assert_close(output, expected)
    tiled = tiled_attention(query, key[:, :0], value[:, :0], is_causal=causal)
    assert torch.equal(tiled, torch.zeros(2, 4, 3, dtype=DOUBLE))


def test_scale_as_a_tensor_equals_the_number_and_gets_a_gradient():
    query, key, value = rand(4, 8), rand(6, 8, seed=1), rand(6, 3, seed=2)
    number, _ = scaled_dot_product_attention(query, key, value, scale=0.3)
    for shape in [(), (1,)]:
        scale = torch.full(shape, 0.3, dtype=DOUBLE, requires_grad=True)
        output, _ = scaled_dot_product_attention(query, key, value, scale=scale)
        torch.testing.assert_close(output, number)
        output.sum().backward()
        assert scale.grad is not None and torch.isfinite(scale.grad).all()
    # A negative or zero scale is legitimate (zero: uniform weights), as in PyTorch.
    for scale in (-0.5, 0.0, 2):
        output, _ = scaled_dot_product_attention(query, key, value, scale=scale)
        expected = F.scaled_dot_product_attention(query, key, value, scale=scale)
        torch.testing.assert_close(output, expected)


# --- NaN and infinity: never hidden, placed where PyTorch places them ---------------


def poisoned(tensor: torch.Tensor, index: tuple, number: float) -> torch.Tensor:
    tensor = tensor.clone()
    tensor[index] = number
    return tensor


POISON = {
    "NaN in query 1": ("query", (0, 1, 2), NAN),
    "NaN in query 2 of batch 0": ("query", (0, 2, 0), NAN),  # masked: no key
    "NaN in key 3": ("key", (0, 3, 0), NAN),
    "NaN in value 2": ("value", (1, 2, 1), NAN),
    "inf in query 0": ("query", (1, 0, 0), INF),
    "-inf in key 0": ("key", (0, 0, 3), -INF),
    "inf in value 4": ("value", (0, 4, 2), INF),
}


def mask_with_an_empty_row() -> torch.Tensor:
    mask = random_mask(2, 4, 6, seed=5)
    mask[0, 2] = False  # query 2 of batch 0 may attend to nothing
    mask[1, :, 3] = False  # key 3 of batch 1 is hidden from everyone (padding)
    return mask


@pytest.mark.parametrize("where", POISON.values(), ids=POISON.keys())
@pytest.mark.parametrize("masking", ["none", "mask", "causal"])
def test_nan_and_inf_reach_the_output_as_in_pytorch(where, masking):
    inputs = {
        "query": rand(2, 4, 8),
        "key": rand(2, 6, 8, seed=1),
        "value": rand(2, 6, 5, seed=2),
    }
    name, index, number = where
    inputs[name] = poisoned(inputs[name], index, number)
    options = {
        "none": {},
        "mask": {"attn_mask": mask_with_an_empty_row()},
        "causal": {"is_causal": True},
    }[masking]
    output, _ = scaled_dot_product_attention(**inputs, **options)
    with sdpa_kernel(SDPBackend.MATH):  # PyTorch's reference implementation
        expected = F.scaled_dot_product_attention(**inputs, **options)
    assert not torch.isfinite(output).all()  # something did go wrong
    if math.isnan(number):
        torch.testing.assert_close(output, expected, equal_nan=True)
    else:
        # An infinite input: NaN wherever PyTorch has NaN, the same numbers
        # elsewhere, except that a row whose every allowed score is -inf is NaN
        # here (0/0) where PyTorch gives 0 (it treats it as a row with no key).
        assert not (torch.isnan(expected) & ~torch.isnan(output)).any()
        finite = ~torch.isnan(output)
        torch.testing.assert_close(output[finite], expected[finite])
    if masking == "mask" and index == (0, 2, 0):
        # Query 2 of batch 0 may attend to nothing, but its own input is NaN:
        # its output is NaN, not the 0 of an empty row.
        assert torch.isnan(output[0, 2]).all()


def test_a_nan_behind_a_mask_is_not_hidden():
    query, key, value = rand(1, 3, 4), rand(1, 5, 4, seed=1), rand(1, 5, 2, seed=2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[:, 4] = False  # nobody may look at key 4 ...
    key = poisoned(key, (0, 4, 0), NAN)  # ... which holds a NaN
    output, weights = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    assert torch.isnan(output).all() and torch.isnan(weights).all()
    # The same input with a finite number there: key 4 has no influence at all.
    finite = poisoned(key, (0, 4, 0), 1e6)
    clean, _ = scaled_dot_product_attention(query, finite, value, attn_mask=mask)
    expected, _ = scaled_dot_product_attention(
        query, key[:, :4], value[:, :4], attn_mask=mask[:, :4]
    )
    torch.testing.assert_close(clean, expected)


@pytest.mark.parametrize("block_size", [1, 2, 4, 64])
@pytest.mark.parametrize("where", POISON.values(), ids=POISON.keys())
def test_tiled_propagates_nan_and_inf_as_pytorch(where, block_size):
    inputs = {
        "query": rand(2, 4, 8),
        "key": rand(2, 6, 8, seed=1),
        "value": rand(2, 6, 5, seed=2),
    }
    name, index, number = where
    inputs[name] = poisoned(inputs[name], index, number)
    tiled = tiled_attention(**inputs, block_size=block_size)
    expected = F.scaled_dot_product_attention(**inputs)
    assert not torch.isfinite(tiled).all()
    torch.testing.assert_close(tiled, expected, equal_nan=True)


@pytest.mark.parametrize("block_size", [1, 3, 64])
def test_tiled_causal_nan_reaches_exactly_the_queries_that_see_it(block_size):
    query, key, value = rand(6, 4), rand(6, 4, seed=1), rand(6, 3, seed=2)
    # A NaN in query 2: only output row 2 is NaN, the others are unchanged.
    out = tiled_attention(
        poisoned(query, (2, 1), NAN), key, value, block_size, is_causal=True
    )
    clean = tiled_attention(query, key, value, block_size, is_causal=True)
    assert torch.isnan(out).any(-1).tolist() == [i == 2 for i in range(6)]
    rows = [0, 1, 3, 4, 5]
    torch.testing.assert_close(out[rows], clean[rows])
    # A NaN in key 0 or value 0, which every query sees: every row is NaN.
    for tensor in ("key", "value"):
        inputs = {"query": query, "key": key, "value": value}
        inputs[tensor] = poisoned(inputs[tensor], (0, 0), NAN)
        out = tiled_attention(**inputs, block_size=block_size, is_causal=True)
        assert torch.isnan(out).any(-1).all()  # a NaN in every row
    # A NaN in key 4 reaches queries 4 and 5, which see it (and, depending on
    # the tiles, maybe earlier ones, as in PyTorch's fused kernels).
    out = tiled_attention(
        query, poisoned(key, (4, 0), NAN), value, block_size, is_causal=True
    )
    assert torch.isnan(out[4:]).all()


# --- the fast path of MultiHeadAttention: need_weights=False ---------------------


def fast_and_readable(module, *args, **kwargs):
    fast, none = module(*args, need_weights=False, **kwargs)
    readable, weights = module(*args, need_weights=True, **kwargs)
    assert none is None and weights is not None
    return fast, readable, weights


def left_padded_causal_mask() -> torch.Tensor:
    """(B, 1, L, S) with L = S = 5: two queries of batch 0 may attend to nothing."""
    keep = torch.tensor([[False, False, True, True, True], [True] * 5])
    return causal_mask(5) & keep[:, None, None, :]


FAST_CASES = {
    "self": dict(shape=(2, 5, 12), kv=None),
    "cross": dict(shape=(2, 5, 12), kv=(2, 7, 12)),
    "padding mask": dict(
        shape=(2, 5, 12), kv=None, mask=padding_mask([5, 3])[:, None, None, :]
    ),
    "causal": dict(shape=(2, 5, 12), kv=None, causal=True),
    "cross, causal (L < S)": dict(shape=(2, 5, 12), kv=(2, 7, 12), causal=True),
    "empty rows": dict(shape=(2, 5, 12), kv=None, mask=left_padded_causal_mask()),
    "per-head mask": dict(
        shape=(2, 5, 12), kv=(2, 6, 12), mask=random_mask(2, 3, 5, 6, seed=7)
    ),
    "unbatched": dict(shape=(5, 12), kv=None, causal=True),
    "two batch dims": dict(shape=(2, 3, 5, 12), kv=(2, 3, 4, 12)),
    "broadcast batch": dict(shape=(2, 1, 5, 12), kv=(1, 3, 4, 12)),
}


@pytest.mark.parametrize("num_kv_heads", [3, 1], ids=["MHA", "MQA"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("case", FAST_CASES.values(), ids=FAST_CASES.keys())
def test_fast_path_equals_readable_path(case, dtype, num_kv_heads):
    module = MultiHeadAttention(12, 3, num_kv_heads=num_kv_heads).to(dtype)
    query = rand(*case["shape"]).to(dtype)
    key = None if case["kv"] is None else rand(*case["kv"], seed=1).to(dtype)
    options = {"attn_mask": case.get("mask"), "is_causal": case.get("causal", False)}
    fast, readable, _ = fast_and_readable(module, query, key, **options)
    tolerance = {} if dtype == DOUBLE else dict(atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast, readable, **tolerance)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", [(2, 5, 12), (5, 12)], ids=["batched", "unbatched"])
def test_fast_path_gives_zero_to_a_query_with_no_key(shape, dtype):
    # Batched 4-D inputs go to PyTorch's fused kernel, unbatched ones to its math
    # kernel: both must give the context 0, so the output is W_o's bias exactly.
    module = MultiHeadAttention(12, 3).to(dtype)
    mask = left_padded_causal_mask()
    mask = mask if len(shape) == 3 else mask[0]
    x = rand(*shape).to(dtype)
    fast, readable, weights = fast_and_readable(module, x, attn_mask=mask)
    empty = fast[0, :2] if len(shape) == 3 else fast[:2]
    assert torch.equal(empty, module.W_o.bias.detach().expand_as(empty))
    assert torch.isfinite(fast).all()
    assert torch.equal(
        readable[0, :2] if len(shape) == 3 else readable[:2], empty.detach()
    )


@pytest.mark.parametrize("num_kv_heads", [3, 1], ids=["MHA", "MQA"])
@pytest.mark.parametrize("masking", ["none", "causal", "empty rows"])
def test_fast_path_gradients_equal_readable_path(masking, num_kv_heads):
    options = {
        "none": {},
        "causal": {"is_causal": True},
        "empty rows": {"attn_mask": left_padded_causal_mask()},
    }[masking]
    module = MultiHeadAttention(12, 3, num_kv_heads=num_kv_heads).double()
    gradients = []
    for need_weights in (False, True):
        module.zero_grad(set_to_none=True)
        x = rand(2, 5, 12).requires_grad_()
        memory = rand(2, 5, 12, seed=1).requires_grad_()
        output, _ = module(x, memory, need_weights=need_weights, **options)
        (output * rand(2, 5, 12, seed=2)).sum().backward()
        gradients.append([x.grad, memory.grad] + [p.grad for p in module.parameters()])
    for fast, readable in zip(*gradients, strict=True):
        assert torch.isfinite(fast).all()
        torch.testing.assert_close(fast, readable)


def test_fast_path_calls_pytorchs_fused_attention(monkeypatch):
    calls = []
    fused = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return fused(*args, **kwargs)

    monkeypatch.setattr(qkv.attention.F, "scaled_dot_product_attention", spy)
    module = MultiHeadAttention(12, 3, num_kv_heads=1)
    x = rand(2, 5, 12).float()
    module(x, is_causal=True, need_weights=False)
    assert len(calls) == 1
    assert calls[0]["is_causal"] is True and calls[0]["attn_mask"] is None
    assert calls[0]["enable_gqa"] is True  # kv heads are not repeated by hand
    mask = padding_mask([5, 2])[:, None, None, :]
    module(x, attn_mask=mask, need_weights=False)
    assert calls[1]["attn_mask"] is mask and calls[1]["is_causal"] is False
    module(x)  # the readable path computes the weights itself
    assert len(calls) == 2


# slow: timings of a layer, interleaved many times (make bench-attention)
@pytest.mark.slow
def test_the_attention_benchmark_runs_and_reports_a_ratio():
    """The benchmark behind the cost chapter's timings runs and reports finite
    ratios. No bound on them: a busy laptop slows one module more than another
    (the rule of the house; `make bench-attention` prints the numbers)."""
    from bookbuild.tools.bench_attention import compare_attention

    results = compare_attention(
        batch=2, length=128, embed_dim=64, num_heads=2, rounds=2, backward=False
    )
    table = results["inference"]
    assert set(table) >= {"qkv", "torch MHA", "minimal", "ratio", "cpu ratio"}
    assert math.isfinite(table["ratio"]) and table["ratio"] > 0


# --- grouped-query and multi-query attention ---------------------------------------


def as_full_mha(gqa: MultiHeadAttention) -> MultiHeadAttention:
    """Ordinary multi-head attention with the key/value heads of ``gqa``
    repeated by hand: head h gets key/value head h // (H / Hkv)."""
    heads, kv_heads, head_dim = gqa.num_heads, gqa.num_kv_heads, gqa.head_dim
    group = heads // kv_heads
    full = MultiHeadAttention(gqa.embed_dim, heads).to(gqa.W_q.weight.dtype)
    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(full, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("W_k", "W_v"):
            small, big = getattr(gqa, name), getattr(full, name)
            weight = small.weight.view(kv_heads, head_dim, -1)  # (Hkv, E, D)
            big.weight.copy_(weight.repeat_interleave(group, 0).flatten(0, 1))
            bias = small.bias.view(kv_heads, head_dim)  # (Hkv, E)
            big.bias.copy_(bias.repeat_interleave(group, 0).flatten())
    return full


@pytest.mark.parametrize("num_kv_heads", [1, 2, 3, 6])
@pytest.mark.parametrize("need_weights", [True, False])
def test_gqa_equals_mha_with_repeated_kv_heads(num_kv_heads, need_weights):
    gqa = MultiHeadAttention(24, 6, num_kv_heads=num_kv_heads).double()
    with torch.no_grad():
        for p in gqa.parameters():  # biases count too
            p.copy_(torch.randn_like(p))
    full = as_full_mha(gqa)
    query, memory = rand(2, 5, 24), rand(2, 7, 24, seed=1)
    mask = random_mask(2, 1, 5, 7, seed=3)
    output, weights = gqa(query, memory, attn_mask=mask, need_weights=need_weights)
    expected, expected_weights = full(query, memory, attn_mask=mask)
    torch.testing.assert_close(output, expected)
    if need_weights:
        assert weights.shape == (2, 6, 5, 7)  # (B, H, L, S): one map per query head
        torch.testing.assert_close(weights, expected_weights)
        # query heads sharing a key/value head do not share their maps
        assert not torch.allclose(weights[:, 0], weights[:, 1])


@pytest.mark.parametrize("num_kv_heads", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_equals_pytorch_enable_gqa(num_kv_heads, causal):
    gqa = MultiHeadAttention(24, 6, num_kv_heads=num_kv_heads).double()
    x = rand(2, 5, 24)
    q = split_heads(gqa.W_q(x), 6)  # (B, H, T, E)
    k = split_heads(gqa.W_k(x), num_kv_heads)  # (B, Hkv, T, E)
    v = split_heads(gqa.W_v(x), num_kv_heads)
    assert k.shape == (2, num_kv_heads, 5, 4)
    context = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    expected = gqa.W_o(concat_heads(context))
    for need_weights in (True, False):
        output, _ = gqa(x, is_causal=causal, need_weights=need_weights)
        torch.testing.assert_close(output, expected)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    ("dim", "heads", "kv_heads"), [(512, 8, 8), (512, 8, 2), (512, 8, 1), (24, 6, 3)]
)
def test_gqa_parameter_count(dim, heads, kv_heads, bias):
    module = MultiHeadAttention(dim, heads, num_kv_heads=kv_heads, bias=bias)
    kv_dim = kv_heads * (dim // heads)  # Hkv * E
    # W_q and W_o: D x D (+ D); W_k and W_v: D x Hkv E (+ Hkv E).
    expected = 2 * (dim * dim + bias * dim) + 2 * (dim * kv_dim + bias * kv_dim)
    assert sum(p.numel() for p in module.parameters()) == expected
    assert module.W_k.weight.shape == module.W_v.weight.shape == (kv_dim, dim)
    if kv_heads == heads:
        assert expected == 4 * (dim * dim + bias * dim)  # the usual 4 (D^2 + D)


def test_from_torch_with_as_many_kv_heads_as_heads():
    reference, _ = make_pair()
    for num_kv_heads in (None, 3):
        ours = MultiHeadAttention.from_torch(reference, num_kv_heads=num_kv_heads)
        assert ours.num_kv_heads == ours.num_heads == 3
        x = rand(2, 5, 12)
        expected, _ = reference(x, x, x)
        torch.testing.assert_close(ours(x)[0], expected)
        torch.testing.assert_close(ours(x, need_weights=False)[0], expected)


# --- the shape legend ----------------------------------------------------------


def test_shape_legend_names_every_letter_used():
    source = (ROOT / "src" / "qkv" / "attention.py").read_text()
    legend = re.search(r"Shape legend.*?\n\n(.*?)\n\n", source, re.S).group(1)
    named = {line.split()[0] for line in legend.splitlines()}
    comments = re.findall(r"# \(([^)]*)\)", source)
    assert len(comments) > 20
    used = set()
    for comment in comments:
        used |= set(re.findall(r"\b[A-Za-z][A-Za-z]*\b", comment))
    assert used - named == set(), f"letters used but not in the legend: {used - named}"
    assert {"T", "Hkv"} <= named


@pytest.mark.parametrize(
    "shapes",
    [
        ((), ()),
        ((3,), ()),
        ((2, 1), (1, 4)),
        ((5, 1, 3), (4, 1)),
        ((0,), (1,)),
        ((2,), (3,)),
    ],
)
def test_plain_broadcast_agrees_with_torch(shapes):
    from qkv.validate import broadcast_shapes as _broadcast

    try:
        expected = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        with pytest.raises(RuntimeError):
            _broadcast(*shapes)
        return
    assert _broadcast(*shapes) == expected
