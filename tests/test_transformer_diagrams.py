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
    "qkv_projections": [
        "inputs  X\n(T, D)",
        "queries  Q\n(T, $d_k$)",
        "keys  K\n(T, $d_k$)",
        "values  V\n(T, $d_v$)",
        "× $W_q$\n(D, $d_k$)",
        "× $W_v$\n(D, $d_v$)",
    ],
    "multi_head": [
        "head 0\nattention",
        "head 2\nattention",
        "split_heads: (T, D) → (H, T, E)",
    ],
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


#: The page's text column at a 1280-pixel window (CSS pixels), and the caption
#: text (px): the browser test ``test_figure_text_is_as_large_as_the_caption``
#: measures the same on the built site.
PAGE_WIDTH_PX, CAPTION_PX = 672, 16


@pytest.mark.parametrize("name", sorted(EXPECTED_LABELS))
def test_diagram_text_is_as_large_as_the_caption(name):
    """Drawn as the book saves it (tight bounding box), shown at its natural size
    up to the page width, no text of a diagram is smaller than the caption."""
    from bookbuild.figures import smallest_text_px, view_width
    from qkv.plot import use_book_style

    with matplotlib.rc_context():
        use_book_style()
        fig = getattr(diagrams, name)()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
        plt.close(fig)
    svg = buffer.getvalue()
    natural_px = view_width(svg) * 96 / 72  # the SVG's units are points
    shown_px = min(natural_px, PAGE_WIDTH_PX)
    smallest = smallest_text_px(svg, shown_px)
    assert smallest is not None and smallest >= CAPTION_PX - 0.05, (
        f"{name}: smallest text {smallest:.1f} px at {shown_px:.0f} px wide"
    )
