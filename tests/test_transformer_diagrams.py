"""Tests of qkv.transformer (equal to PyTorch's encoder layer) and qkv.diagrams."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402
import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from qkv import diagrams  # noqa: E402
from qkv.transformer import TransformerBlock, sinusoidal_positions  # noqa: E402


def n_params(module):
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("bias", [True, False])
def test_block_equals_torch_encoder_layer(bias):
    torch.manual_seed(0)
    reference = nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.0, batch_first=True, bias=bias, dtype=torch.float64
    ).eval()
    ours = TransformerBlock.from_torch(reference)
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), reference(x))
        causal = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.float64)
        torch.testing.assert_close(
            ours(x, is_causal=True), reference(x, src_mask=causal, is_causal=True)
        )
    assert n_params(ours) == n_params(reference)


def test_block_rejects_layers_it_does_not_implement():
    with pytest.raises(ValueError, match="norm_first"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(8, 2, norm_first=True))
    with pytest.raises(ValueError, match="ReLU"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(8, 2, activation="gelu"))


def test_sinusoidal_positions_values():
    codes = sinusoidal_positions(50, 16)
    assert codes.shape == (50, 16)
    assert torch.equal(codes[0, 0::2], torch.zeros(8))
    assert torch.equal(codes[0, 1::2], torch.ones(8))
    assert codes[7, 0] == pytest.approx(math.sin(7))
    assert codes[7, 3] == pytest.approx(math.cos(7 / 10_000 ** (2 / 16)))
    torch.testing.assert_close(codes.norm(dim=-1), torch.full((50,), math.sqrt(8)))
    with pytest.raises(ValueError, match="dim must be even"):
        sinusoidal_positions(4, 5)
    with pytest.raises(ValueError, match="length"):
        sinusoidal_positions(0, 4)


EXPECTED_LABELS = {
    "qkv_projections": ["queries  Q\n(T, d)", "keys  K\n(T, d)", "× $W_v$"],
    "multi_head": ["head 0\nattention", "head 2\nattention"],
    "transformer_block": ["add & layer norm", "residual"],
    "pipeline": ["token ids\n(T,)", "loss"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_LABELS))
def test_diagrams_draw_their_labels_on_white(name):
    fig = getattr(diagrams, name)()
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    for label in EXPECTED_LABELS[name]:
        assert label in texts, f"{name} lacks {label!r}"
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == "#ffffff"
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    assert buffer.getvalue().startswith("<?xml")
    plt.close(fig)


def test_multi_head_diagram_draws_one_box_per_head():
    fig = diagrams.multi_head(num_heads=5)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(t.endswith("\nattention") for t in texts) == 5
    plt.close(fig)
    with pytest.raises(ValueError, match="num_heads"):
        diagrams.multi_head(num_heads=0)
