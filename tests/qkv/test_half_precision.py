"""qkv's attention in float16 and bfloat16, judged as PyTorch judges its own:
against a float64 reference, with a tolerance that is a small multiple of the
error of PyTorch's own ``scaled_dot_product_attention`` in the same dtype on the
same inputs (PyTorch's test_transformers.py sets its low-precision tolerances
the same way: ``atol = fudge factor * max(default_atol, reference's error)``),
for the output and for the gradients of query, key and value. Inputs are
seeded; the bound is relative to PyTorch on the same machine, so it follows the
CPU's rounding."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from qkv import (
    MultiHeadAttention,
    causal_mask,
    scaled_dot_product_attention,
    tiled_attention,
)

DOUBLE = torch.float64
DTYPES = [torch.float16, torch.bfloat16]
#: qkv may be this many times as far from float64 as PyTorch's own attention is
#: (measured: at most 4.3 times, the tiled path in float16 on 64 keys; most
#: cases 1 to 2.5 times) ...
FACTOR = 5.0
#: ... PyTorch's own error taken as at least this (PyTorch's default_atol for
#: float16 and bfloat16 in its attention tests), where it happens to be tiny.
FLOOR = 1e-3


def rand(*shape: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=DOUBLE)


def error(result: torch.Tensor, reference: torch.Tensor) -> float:
    return (result.double() - reference).abs().max().item()


def bound(torch_error: float) -> float:
    """The largest error qkv may have: a multiple of PyTorch's own."""
    return FACTOR * max(torch_error, FLOOR)


def outputs_and_gradients(attend, dtype, inputs, grad_out):
    """``attend``'s output and the gradients of its inputs, in ``dtype``."""
    low = [tensor.detach().to(dtype).clone().requires_grad_() for tensor in inputs]
    output = attend(*low)
    output.backward(grad_out.to(dtype))
    return [output.detach()] + [tensor.grad for tensor in low]


CASES = {
    "full": dict(shape=(2, 3, 7, 16), causal=False),
    "causal": dict(shape=(2, 3, 7, 16), causal=True),
    "long": dict(shape=(1, 2, 64, 32), causal=False),
}
#: The tiled path's block of keys: several blocks in every case.
BLOCK = {"full": 3, "causal": 3, "long": 16}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float16", "bfloat16"])
@pytest.mark.parametrize("path", ["readable", "tiled"])
def test_half_precision_within_a_multiple_of_pytorchs_own_error(path, dtype, case):
    shape, causal = CASES[case]["shape"], CASES[case]["causal"]
    inputs = [rand(*shape, seed=seed) for seed in (0, 1, 2)]
    grad_out = rand(*shape, seed=3)

    def theirs(query, key, value):
        return F.scaled_dot_product_attention(query, key, value, is_causal=causal)

    def ours(query, key, value):
        if path == "tiled":
            return tiled_attention(
                query, key, value, block_size=BLOCK[case], is_causal=causal
            )
        return scaled_dot_product_attention(query, key, value, is_causal=causal)[0]

    reference = outputs_and_gradients(theirs, DOUBLE, inputs, grad_out)
    pytorch = outputs_and_gradients(theirs, dtype, inputs, grad_out)
    qkv_low = outputs_and_gradients(ours, dtype, inputs, grad_out)
    for name, exact, own, tested in zip(
        ("output", "query's gradient", "key's gradient", "value's gradient"),
        reference,
        pytorch,
        qkv_low,
        strict=True,
    ):
        assert tested.dtype == dtype, name
        allowed = bound(error(own, exact))
        print(
            "RATIO",
            path,
            dtype,
            case,
            name,
            error(tested, exact),
            error(own, exact),
            allowed,
        )
        assert error(tested, exact) <= allowed, (
            f"{name}: qkv off by {error(tested, exact):.3g}, PyTorch by "
            f"{error(own, exact):.3g} in {dtype} (allowed {allowed:.3g})"
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=["float16", "bfloat16"])
def test_half_precision_multi_head_within_a_multiple_of_pytorchs_own_error(dtype):
    """The module in ``dtype``: its output and the gradient of its input, against
    the same module in float64; PyTorch's error is that of its own
    ``nn.MultiheadAttention`` with the same weights in the same dtype."""
    torch.manual_seed(0)
    dim, heads, length = 16, 4, 7
    ours = MultiHeadAttention(dim, heads).to(DOUBLE)
    theirs = torch.nn.MultiheadAttention(dim, heads, batch_first=True).to(DOUBLE)
    with torch.no_grad():  # the same projections in both
        theirs.in_proj_weight.copy_(
            torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight])
        )
        theirs.in_proj_bias.copy_(
            torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias])
        )
        theirs.out_proj.weight.copy_(ours.W_o.weight)
        theirs.out_proj.bias.copy_(ours.W_o.bias)
    x, grad_out = rand(2, length, dim, seed=0), rand(2, length, dim, seed=1)
    mask = causal_mask(length)

    def run(module, dtype, call):
        module = copy.deepcopy(module).to(dtype)  # the float64 weights, rounded
        low = x.detach().to(dtype).clone().requires_grad_()
        output = call(module, low)
        output.backward(grad_out.to(dtype))
        return output.detach(), low.grad

    def ours_call(module, low):
        return module(low, attn_mask=mask)[0]

    def theirs_call(module, low):
        return module(low, low, low, attn_mask=~mask, need_weights=False)[0]

    exact = run(ours, DOUBLE, ours_call)
    reference = run(theirs, DOUBLE, theirs_call)
    for a, b in zip(exact, reference, strict=True):  # the same module
        torch.testing.assert_close(a, b)
    own = run(theirs, dtype, theirs_call)
    tested = run(ours, dtype, ours_call)
    names = ("output", "input's gradient")
    for name, e, o, t in zip(names, exact, own, tested, strict=True):
        allowed = bound(error(o, e))
        assert error(t, e) <= allowed, (name, error(t, e), error(o, e), allowed)
