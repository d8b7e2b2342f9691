"""The ValueError contract (issue 23): bad input to qkv's public functions and
classes gets a ``ValueError`` that names the argument and what was seen, never
another exception from deep inside torch, and never a silent result."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qkv
from qkv.experiments import induction, positions, translate, vision, writer
from qkv.page.headview import HeadView
from qkv.pretrained import AttentionMaps

INDUCTION = induction.InductionModel()
PROMPT = torch.zeros(3, dtype=torch.long)
TWO_TOKENS = AttentionMaps(["a", "b"], torch.full((1, 1, 2, 2), 0.5))

MODEL = translate.Translator()  # untrained: only its checks are exercised

# (the call, a pattern its message must match: the argument, and what was seen)
BAD_CALLS = {
    "a block given vectors of the wrong size": (
        lambda: qkv.transformer.TransformerBlock(16, 2, 32, pre_norm=True)(
            torch.zeros(2, 5, 8)
        ),
        r"last dim of x must be embed_dim=16.*\(2, 5, 8\)",
    ),
    "a block given integer vectors": (
        lambda: qkv.transformer.TransformerBlock(16, 2, 32)(
            torch.zeros(2, 5, 16, dtype=torch.long)
        ),
        r"x must be a floating tensor.*int64",
    ),
    "uint8 images": (
        lambda: vision.VisionTransformer()(torch.zeros(2, 1, 8, 8, dtype=torch.uint8)),
        r"images must be a floating tensor.*uint8.*\(2, 1, 8, 8\)",
    ),
    "images as a list": (
        lambda: vision.VisionTransformer()([[0.0] * 8] * 8),
        r"images must be a torch.Tensor, got list",
    ),
    "image_size of one side": (
        lambda: vision.VisionTransformer(image_size=(8,)),
        r"image_size must be \(height, width\).*\(8,\)",
    ),
    "image_size of floats": (
        lambda: vision.patch_grid((8.0, 8.0), 2),
        r"image_size must be \(height, width\)",
    ),
    "a seed for a generator": (
        lambda: induction.make_batch(4, 42),
        r"generator must be a torch.Generator.*got 42 of type int",
    ),
    "no generator (the global one)": (
        lambda: induction.make_batch(4, None),
        r"generator must be a torch.Generator.*got None",
    ),
    "positions' batch, no generator": (
        lambda: positions.make_batch("copy", 4, 9, None),
        r"generator must be a torch.Generator",
    ),
    "a sentence of numbers": (
        lambda: translate.translate(MODEL, [1, 2]),
        r"sentence must be a str.*\[1, 2\] of type list",
    ),
    "no sentence": (
        lambda: translate.translate(MODEL, None),
        r"sentence must be a str.*None",
    ),
    "not a model": (
        lambda: translate.translate(None, "le chat"),
        r"model must be a Translator, got NoneType",
    ),
    "a sentence too long": (
        lambda: translate.translate(MODEL, " ".join(["le"] * 60)),
        rf"sentence has 60 words; this model reads at most {MODEL.max_len}",
    ),
    "induction: float ids": (
        lambda: INDUCTION(torch.zeros(2, 5)),
        r"tokens must be a long tensor of token ids of shape \(B, T\), got shape "
        r"\(2, 5\), dtype torch.float32",
    ),
    "induction: ids out of range": (
        lambda: INDUCTION(torch.full((2, 5), 999)),
        r"tokens must be ids in \[0, 64\), got ids from 999 to 999",
    ),
    "induction: a negative id": (
        lambda: INDUCTION(torch.tensor([[3, -1]])),
        r"tokens must be ids in \[0, 64\), got ids from -1 to 3",
    ),
    "induction: a list": (
        lambda: INDUCTION([[1, 2, 3]]),
        r"tokens must be a long tensor .* of type list",
    ),
    "induction: an empty sequence": (
        lambda: INDUCTION(torch.zeros(2, 0, dtype=torch.long)),
        r"tokens must be a long tensor .* got shape \(2, 0\)",
    ),
    "writer: a NaN temperature": (
        lambda: writer.generate(None, PROMPT, 2, float("nan")),
        r"temperature must be a finite number >= 0, got nan",
    ),
    "writer: an infinite temperature": (
        lambda: writer.generate(None, PROMPT, 2, float("inf")),
        r"temperature must be a finite number >= 0, got inf",
    ),
    "writer: a bool temperature": (
        lambda: writer.generate(None, PROMPT, 2, True),
        r"temperature must be a finite number >= 0, got True",
    ),
    "writer: decode an id out of range": (
        lambda: writer.decode([0, 7], ["a", "b"]),
        r"tokens must be ids in \[0, 2\) .* got ids from 0 to 7",
    ),
    "writer: decode a negative id": (
        lambda: writer.decode([-1], ["a", "b"]),
        r"tokens must be ids in \[0, 2\) .* got ids from -1 to -1",
    ),
    "head view: 309 decimals": (
        lambda: HeadView(TWO_TOKENS, decimals=309),
        r"decimals must be an int in 0\.\.6 .* got 309",
    ),
    "head view: a token of 3,000 characters": (
        lambda: HeadView(AttentionMaps(["x" * 3000, "b"], TWO_TOKENS.weights)),
        r"maps has a token of 3000 characters; .* at most 48",
    ),
    "max_len of 0": (
        lambda: translate.Translator(max_len=0),
        r"max_len must be an int >= 1, got 0",
    ),
}


@pytest.mark.parametrize("call, message", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_input_gets_a_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


DTYPES = [torch.float64, torch.float32, torch.int64, torch.bool, torch.uint8]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ranks=st.tuples(*(st.integers(0, 4),) * 3),
    sizes=st.tuples(*(st.integers(0, 3),) * 3),
    dtypes=st.tuples(*(st.sampled_from(DTYPES),) * 3),
    causal=st.booleans(),
)
def test_any_shape_or_dtype_either_works_or_gets_a_value_error(
    ranks, sizes, dtypes, causal
):
    """Query, key and value of any rank (0-4), any small sizes (0 included)
    and any dtype: attention either returns weights that sum to one over the
    keys a query may see, or raises a ValueError, never another exception."""
    generator = torch.Generator().manual_seed(sum(ranks) + 7 * sum(sizes))
    tensors = [
        (torch.randn((size,) * rank, generator=generator) * 3).to(dtype)
        for rank, size, dtype in zip(ranks, sizes, dtypes, strict=True)
    ]
    for attend in (qkv.scaled_dot_product_attention, qkv.tiled_attention):
        try:
            result = attend(*tensors, is_causal=causal)
        except ValueError as error:
            assert str(error)  # says something
            continue
        output = result[0] if isinstance(result, tuple) else result
        assert output.is_floating_point()
        if isinstance(result, tuple) and result[1].numel():
            sums = result[1].sum(dim=-1)
            assert torch.all((sums - 1).abs() < 1e-5) or causal
