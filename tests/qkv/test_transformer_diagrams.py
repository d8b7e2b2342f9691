"""Tests of qkv.transformer (equal to PyTorch's encoder layer) and qkv.page.diagrams."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io  # noqa: E402
import math  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from qkv.page import diagrams  # noqa: E402
from qkv.transformer import (  # noqa: E402
    FeedForward,
    PreNormStack,
    RMSNorm,
    SwiGLU,
    TransformerBlock,
    sinusoidal_positions,
)


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


@pytest.mark.parametrize("bias", [True, False])
def test_pre_norm_block_equals_torch_norm_first(bias):
    torch.manual_seed(1)
    reference = nn.TransformerEncoderLayer(
        32,
        4,
        64,
        dropout=0.0,
        batch_first=True,
        bias=bias,
        norm_first=True,
        dtype=torch.float64,
    ).eval()
    ours = TransformerBlock.from_torch(reference)
    assert ours.pre_norm
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), reference(x))
        causal = nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.float64)
        torch.testing.assert_close(
            ours(x, is_causal=True), reference(x, src_mask=causal, is_causal=True)
        )
    assert n_params(ours) == n_params(reference)


def test_pre_norm_and_post_norm_differ_only_in_order():
    torch.manual_seed(2)
    post = TransformerBlock(16, 2, 32).eval()
    pre = TransformerBlock(16, 2, 32, pre_norm=True).eval()
    pre.load_state_dict(post.state_dict())  # the same parameters, the same count
    assert n_params(pre) == n_params(post)
    x = 3 + 2 * torch.randn(5, 16)
    with torch.no_grad():
        out_post, out_pre = post(x), pre(x)
        # post-norm ends with a layer norm: each output row has mean 0;
        # pre-norm ends with a sum: the rows keep the input's offset
        torch.testing.assert_close(out_post.mean(-1), torch.zeros(5), atol=1e-5, rtol=0)
        assert out_pre.mean(-1).abs().min() > 1
        attention = pre.attention(pre.norm1(x), need_weights=False)[0]
        h = x + attention
        torch.testing.assert_close(out_pre, h + pre.feed_forward(pre.norm2(h)))
    with pytest.raises(ValueError, match="pre_norm"):
        TransformerBlock(16, 2, 32, pre_norm="yes")


def test_block_rejects_layers_it_does_not_implement():
    with pytest.raises(ValueError, match="ReLU"):
        TransformerBlock.from_torch(nn.TransformerEncoderLayer(8, 2, activation="gelu"))
    with pytest.raises(ValueError, match="TransformerEncoderLayer"):
        TransformerBlock.from_torch(nn.Linear(8, 8))


@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rms_norm_equals_torch_rms_norm(eps):
    torch.manual_seed(3)
    ours, reference = RMSNorm(12, eps=eps), nn.RMSNorm(12, eps=eps)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(12))
        reference.weight.copy_(ours.weight)
    x = 5 * torch.randn(2, 3, 12)
    torch.testing.assert_close(ours(x), reference(x))
    assert n_params(ours) == 12 == n_params(reference)
    # no mean subtracted: a constant vector stays constant, it does not become 0
    constant = torch.full((12,), 4.0)
    torch.testing.assert_close(RMSNorm(12)(constant), torch.ones(12), atol=1e-5, rtol=0)


def test_rms_norm_by_hand_and_its_gradient():
    x = torch.tensor([1.0, 2.0, 3.0, 6.0], requires_grad=True)
    y = RMSNorm(4, eps=1e-12)(x)
    rms = math.sqrt((1 + 4 + 9 + 36) / 4)
    torch.testing.assert_close(y, x.detach() / rms)
    y.sum().backward()
    assert torch.isfinite(x.grad).all()
    zeros = RMSNorm(4)(torch.zeros(3, 4))  # eps keeps a zero vector at zero
    assert torch.equal(zeros, torch.zeros(3, 4))


def test_rms_norm_rejects_bad_input():
    with pytest.raises(ValueError, match="embed_dim"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="eps"):
        RMSNorm(4, eps=0)
    with pytest.raises(ValueError, match=r"embed_dim=4, got x \(2, 5\)"):
        RMSNorm(4)(torch.randn(2, 5))
    with pytest.raises(ValueError, match="floating"):
        RMSNorm(4)(torch.ones(2, 4, dtype=torch.long))


def test_swiglu_shapes_parameters_and_formula():
    torch.manual_seed(4)
    layer = SwiGLU(768, 2048)
    assert n_params(layer) == 3 * 768 * 2048
    # F = 8 D / 3 keeps the count of a bias-free ReLU network of width 4 D
    assert n_params(layer) == n_params(FeedForward(768, 4 * 768, bias=False))
    assert n_params(SwiGLU(8, 16, bias=True)) == 3 * 8 * 16 + 2 * 16 + 8
    small = SwiGLU(8, 16)
    x = torch.randn(2, 5, 8)
    out = small(x)
    assert out.shape == (2, 5, 8)
    gate = x @ small.gate.weight.T
    expected = (
        gate * torch.sigmoid(gate) * (x @ small.up.weight.T)
    ) @ small.down.weight.T
    torch.testing.assert_close(out, expected)
    # each position alone
    torch.testing.assert_close(small(x[1, 3]), out[1, 3])


def test_swiglu_rejects_bad_input():
    with pytest.raises(ValueError, match="hidden_dim"):
        SwiGLU(8, 0)
    with pytest.raises(ValueError, match="embed_dim"):
        SwiGLU(True, 4)
    with pytest.raises(ValueError, match=r"embed_dim=8, got x \(3, 7\)"):
        SwiGLU(8, 16)(torch.randn(3, 7))


def test_pre_norm_stack_equals_torch_encoder_with_final_norm():
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(
        16, 2, 32, dropout=0.0, batch_first=True, norm_first=True
    )
    reference = nn.TransformerEncoder(
        layer, num_layers=3, norm=nn.LayerNorm(16), enable_nested_tensor=False
    ).eval()
    with torch.no_grad():  # blocks that differ, a final norm that is not 1 and 0
        for weight in reference.parameters():
            weight.add_(0.1 * torch.randn_like(weight))
    final_norm = nn.LayerNorm(16)
    final_norm.load_state_dict(reference.norm.state_dict())
    blocks = [TransformerBlock.from_torch(block) for block in reference.layers]
    stack = PreNormStack(blocks, final_norm).eval()
    assert len(stack.blocks) == 3 and all(block.pre_norm for block in stack.blocks)
    for shape in [(2, 7, 16), (7, 16), (2, 3, 5, 16)]:  # (..., T, D) -> (..., T, D)
        x = torch.randn(shape)
        with torch.no_grad():
            got = stack(x)
            assert got.shape == shape
            if len(shape) == 3:
                expected = reference(x)
                torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # the final norm is applied once: its output has mean 0 and unit variance
    with torch.no_grad():
        out = PreNormStack(blocks, nn.LayerNorm(16))(torch.randn(4, 6, 16))
    torch.testing.assert_close(out.mean(-1), torch.zeros(4, 6), atol=1e-5, rtol=0)
    # a tuple of blocks, and RMSNorm as the final norm (LLaMA)
    assert PreNormStack(tuple(blocks), RMSNorm(16))(torch.randn(5, 16)).shape == (5, 16)


def test_pre_norm_stack_rejects_bad_input():
    block = TransformerBlock(8, 2, 16, pre_norm=True)
    with pytest.raises(ValueError, match=r"blocks must be a non-empty list.*got \[\]"):
        PreNormStack([], nn.LayerNorm(8))
    with pytest.raises(ValueError, match=r"blocks .*got \['TransformerBlock', 'int'\]"):
        PreNormStack([block, 3], nn.LayerNorm(8))
    with pytest.raises(ValueError, match="blocks .*got TransformerBlock"):
        PreNormStack(block, nn.LayerNorm(8))  # one block, not a list of them
    with pytest.raises(
        ValueError, match="final_norm must be a torch.nn.Module, got str"
    ):
        PreNormStack([block], "layer norm")
    stack = PreNormStack([block], nn.LayerNorm(8))
    with pytest.raises(
        ValueError, match=r"x must have at least 2 dimensions, got shape \(8,\)"
    ):
        stack(torch.randn(8))
    with pytest.raises(ValueError, match="x must be a floating tensor"):
        stack(torch.ones(2, 3, 8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"embed_dim=8, got x \(2, 3, 7\)"):
        stack(torch.randn(2, 3, 7))
    with pytest.raises(ValueError, match=r"embed_dim=8, got x \(3, 7\)"):
        PreNormStack([block], RMSNorm(8))(torch.randn(3, 7))


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
    "encoder_decoder": [
        "encoder",
        "decoder",
        "cross-attention",
        "causal self-attention\n(earlier words only)",
        "keys,\nvalues",
        "queries",
    ],
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
    from bookbuild.tools.figures import smallest_text_px, view_width
    from qkv.page.plot import use_book_style

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
