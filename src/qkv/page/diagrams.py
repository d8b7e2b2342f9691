"""Architecture diagrams drawn by code, in the style of the book's figures.

Each function returns a matplotlib :class:`~matplotlib.figure.Figure`: boxes for
tensors and operations, arrows for the data flow, an opaque white background so
that they read in the light and dark themes, and type large enough for a
projector: no text under :data:`qkv.page.plot.MIN_FONT_PT` points, in figures no wider
than :data:`qkv.page.plot.MAX_WIDTH_IN` inches, so that the page shows them at their
natural size (``tests/qkv/test_transformer_diagrams.py`` measures
it).

The labels use the symbols of the book's notation page: ``X`` is (T, D), the
queries and keys are (T, d_k), the values (T, d_v), a head has E = D / H features.

- :func:`qkv_projections`: Q, K and V projected from X (chapter *queries-keys-values*);
- :func:`multi_head`: split, attention per head, concat, W_o (chapter *multi-head*);
- :func:`transformer_block`: the encoder block (chapter *transformer-block*);
- :func:`pipeline`: from token ids to a prediction and a loss (chapter
  *how-attention-learns*);
- :func:`encoder_decoder`: an encoder and a decoder joined by cross-attention
  (chapter *cross-attention*).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from qkv.language import get_language
from qkv.language import gettext as _
from qkv.page.plot import WEIGHTS_CMAP

#: Fill colours: light tints of the book's colormap, dark text stays readable.
TENSOR = "#e8f1fb"
OPERATION = "#fdf3d0"
ATTENTION = "#d9f0e3"
LOSS = "#f9dede"
EDGE = "#333333"
#: The colour of the gradients flowing back (the dashed arrow of :func:`pipeline`).
GRADIENT = "#a33a2c"


#: The width of the "add & layer norm" boxes: the French words are longer.
_ADD_WIDTH = {"en": 3.0, "fr": 3.6}


def _t(key: str) -> str:
    """The text ``key`` of a diagram in the current language."""
    return _(key)


@dataclass(frozen=True)
class Box:
    """A labelled box, centred at (x, y), in data coordinates."""

    x: float
    y: float
    text: str
    width: float = 2.0
    height: float = 0.7
    fill: str = TENSOR

    @property
    def top(self) -> tuple[float, float]:
        return (self.x, self.y + self.height / 2)

    @property
    def bottom(self) -> tuple[float, float]:
        return (self.x, self.y - self.height / 2)

    @property
    def left(self) -> tuple[float, float]:
        return (self.x - self.width / 2, self.y)

    @property
    def right(self) -> tuple[float, float]:
        return (self.x + self.width / 2, self.y)


def _canvas(width: float, height: float, xlim: tuple, ylim: tuple) -> tuple:
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig.patch.set_facecolor("white")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _draw(ax: Axes, box: Box, fontsize: int = 13) -> Box:
    patch = FancyBboxPatch(
        (box.x - box.width / 2, box.y - box.height / 2),
        box.width,
        box.height,
        boxstyle="round,pad=0.02,rounding_size=0.12",
        facecolor=box.fill,
        edgecolor=EDGE,
        linewidth=1.4,
    )
    ax.add_patch(patch)
    ax.text(
        box.x,
        box.y,
        box.text,
        ha="center",
        va="center",
        fontsize=fontsize,
        color="black",
    )
    return box


def _arrow(ax: Axes, start: tuple, end: tuple, label: str = "", bend: float = 0.0):
    arrow = FancyArrowPatch(
        start,
        end,
        arrowstyle="-|>",
        mutation_scale=16,
        linewidth=1.6,
        color=EDGE,
        connectionstyle=f"arc3,rad={bend}",
        shrinkA=2,
        shrinkB=2,
    )
    ax.add_patch(arrow)
    if label:
        mid = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
        ax.text(
            mid[0] + 0.1, mid[1], label, fontsize=12, ha="left", va="center", color=EDGE
        )


def qkv_projections() -> Figure:
    """X projected into queries, keys and values: Q = X W_q, K = X W_k, V = X W_v.

    Each box gives a shape: X is (T, D), W_q and W_k are (D, d_k), W_v is
    (D, d_v), so that Q and K are (T, d_k) and V is (T, d_v).
    """
    fig, ax = _canvas(6.8, 4.1, (0, 6.8), (-0.45, 3.85))
    x = _draw(ax, Box(0.8, 1.95, _t("inputs  X\n(T, D)"), width=1.5, height=1.0))
    rows = [
        ("$W_q$", "$d_k$", _t("queries  Q")),
        ("$W_k$", "$d_k$", _t("keys  K")),
        ("$W_v$", "$d_v$", _t("values  V")),
    ]
    for row, (name, size, out) in enumerate(rows):
        y = 3.25 - 1.3 * row
        label = f"× {name}\n(D, {size})"
        weight = _draw(ax, Box(3.1, y, label, width=1.5, height=0.95, fill=OPERATION))
        result = _draw(ax, Box(5.6, y, f"{out}\n(T, {size})", width=2.0, height=0.95))
        _arrow(ax, x.right, weight.left)
        _arrow(ax, weight.right, result.left)
    ax.text(
        3.4,
        -0.3,
        _t("three learned matrices, one input"),
        ha="center",
        fontsize=12,
        style="italic",
    )
    return fig


def multi_head(num_heads: int = 3) -> Figure:
    """Projection, split into heads, attention per head, concat and W_o.

    Up to 3 heads the figure is less than 6.8 inches wide, and the page shows it at
    its natural size; with more heads it grows wider, and the page shrinks it.
    """
    if num_heads < 1:
        raise ValueError(f"num_heads must be >= 1, got {num_heads}")
    colours = plt.get_cmap(WEIGHTS_CMAP)
    width = max(8.8, 2.6 * num_heads + 1.0)  # in data units, 0.72 inch each
    fig, ax = _canvas(0.72 * width, 7.6, (0, width), (-0.3, 10.2))
    centre = width / 2
    inputs = _draw(ax, Box(centre, 9.5, _t("inputs (T, D)"), width=3.0))
    project = _draw(
        ax,
        Box(
            centre, 8.1, r"$Q, K, V = X W_q,\ X W_k,\ X W_v$", width=5.6, fill=OPERATION
        ),
    )
    _arrow(ax, inputs.bottom, project.top)
    split = _draw(
        ax,
        Box(
            centre,
            6.7,
            _t("split_heads: (T, D) → (H, T, E)"),
            width=6.2,
            fill=OPERATION,
        ),
    )
    _arrow(ax, project.bottom, split.top)
    step = 2.6  # between the centres of two heads
    heads = []
    for h in range(num_heads):
        x = centre + step * (h - (num_heads - 1) / 2)
        fill = colours(0.25 + 0.6 * h / max(1, num_heads - 1))
        tint = tuple(0.65 + 0.35 * c for c in fill[:3])
        head = _draw(
            ax,
            Box(
                x,
                4.9,
                _t("head {h}\nattention").format(h=h),
                width=2.2,
                height=1.1,
                fill=tint,
            ),
        )
        _arrow(ax, split.bottom, head.top)
        heads.append(head)
    concat = _draw(
        ax,
        Box(
            centre,
            3.0,
            _t("concat_heads: (H, T, E) → (T, D)"),
            width=6.4,
            fill=OPERATION,
        ),
    )
    for head in heads:
        _arrow(ax, head.bottom, concat.top)
    mix = _draw(
        ax,
        Box(
            centre,
            1.7,
            _t("$\\times\\ W_o$  (mixes the heads)"),
            width=4.6,
            fill=OPERATION,
        ),
    )
    _arrow(ax, concat.bottom, mix.top)
    out = _draw(ax, Box(centre, 0.4, _t("outputs (T, D)"), width=3.0))
    _arrow(ax, mix.bottom, out.top)
    return fig


def _add_and_norm(ax: Axes, x: float, y: float) -> Box:
    """An "add & layer norm" box at (x, y), as wide as its words in the
    current language."""
    box = Box(
        x, y, _t("add & layer norm"), width=_ADD_WIDTH[get_language()], fill=OPERATION
    )
    return _draw(ax, box)


def transformer_block() -> Figure:
    """The encoder block: attention and feed-forward, each with a residual and a
    layer norm (post-norm, as in Vaswani et al. and ``nn.TransformerEncoderLayer``).
    """
    fig, ax = _canvas(5.6, 8.6, (0.6, 6.6), (-0.3, 10.9))
    x0 = 3.0
    inputs = _draw(
        ax, Box(x0, 0.4, _t("inputs (T, D)\n+ positions"), width=3.0, height=0.9)
    )
    attention = _draw(
        ax,
        Box(
            x0,
            2.3,
            _t("multi-head\nself-attention"),
            width=3.0,
            height=1.0,
            fill=ATTENTION,
        ),
    )
    add1 = _add_and_norm(ax, x0, 4.0)
    ffn = _draw(
        ax,
        Box(
            x0,
            5.9,
            _t("feed-forward\nLinear → ReLU → Linear"),
            width=3.6,
            height=1.0,
            fill=ATTENTION,
        ),
    )
    add2 = _add_and_norm(ax, x0, 7.7)
    out = _draw(ax, Box(x0, 9.5, _t("outputs (T, D)"), width=3.0))
    _arrow(ax, inputs.top, attention.bottom)
    _arrow(ax, attention.top, add1.bottom)
    _arrow(ax, add1.top, ffn.bottom)
    _arrow(ax, ffn.top, add2.bottom)
    _arrow(ax, add2.top, out.bottom)
    # Residual connections go around each sub-layer.
    _arrow(ax, (x0 + 1.5, 1.2), (add1.right[0], add1.y), bend=0.45)
    _arrow(ax, (x0 + 1.8, 4.35), (add2.right[0], add2.y), bend=0.45)
    ax.text(5.55, 2.6, _t("residual"), fontsize=12, rotation=90, va="center")
    ax.text(5.85, 6.0, _t("residual"), fontsize=12, rotation=90, va="center")
    ax.text(x0, 10.5, _t("repeated N times"), ha="center", fontsize=12, style="italic")
    return fig


def pipeline() -> Figure:
    """From token ids to a prediction and a loss; gradients flow back.

    Seven steps in two rows, to keep the type large on a page: the top row goes
    from the token ids to attention, the bottom row comes back from the vector at
    the slot to the loss, and a dashed arrow carries the gradient of the loss back
    to attention.
    """
    fig, ax = _canvas(6.8, 3.2, (0, 6.8), (0.25, 3.15))
    columns = [0.75, 2.45, 4.15, 5.85]  # centres of the four columns
    top, bottom = 2.6, 0.8
    forward = [
        Box(columns[0], top, _t("token ids\n(T,)")),
        Box(columns[1], top, _t("embedding\n+ positions"), fill=OPERATION),
        Box(columns[2], top, _t("vectors\n(T, D)")),
        Box(columns[3], top, _t("attention\n(learned)"), fill=ATTENTION),
        Box(columns[3], bottom, _t("vector at\nthe slot (D,)")),
        Box(columns[2], bottom, _t("classifier\n→ 2 scores"), fill=OPERATION),
        Box(columns[1], bottom, _t("loss"), fill=LOSS),
    ]
    boxes = [
        _draw(ax, replace(box, width=1.4, height=0.95), fontsize=12) for box in forward
    ]
    for first, second in zip(boxes, boxes[1:], strict=False):
        if first.y == second.y and first.x < second.x:
            _arrow(ax, first.right, second.left)
        elif first.y == second.y:
            _arrow(ax, first.left, second.right)
        else:
            _arrow(ax, first.bottom, second.top)
    loss, attention = boxes[-1], boxes[3]
    gradient = FancyArrowPatch(
        (loss.x + 0.35, loss.y + loss.height / 2),
        (attention.x - 0.4, attention.y - attention.height / 2),
        arrowstyle="-|>",
        mutation_scale=16,
        linewidth=1.8,
        linestyle=(0, (4, 3)),
        color=GRADIENT,
        shrinkA=2,
        shrinkB=2,
    )
    ax.add_patch(gradient)
    ax.text(
        columns[0] - 0.7,
        (top + bottom) / 2,
        _t("gradients of the loss flow\nback to every weight"),
        ha="left",
        va="center",
        fontsize=12,
        style="italic",
        color=GRADIENT,
    )
    return fig


def encoder_decoder() -> Figure:
    """An encoder-decoder: the decoder's cross-attention reads the encoder's outputs.

    The encoder (left) reads the whole source sentence with self-attention; the
    decoder (right) reads the words written so far with causal self-attention,
    then asks the encoder's outputs with cross-attention (queries from the
    decoder, keys and values from the encoder), and scores the next word. Each
    sub-layer is wrapped in a residual connection and a layer norm, left out of
    the drawing and said in a note. One layer on each side, as in the chapter's
    model.
    """
    fig, ax = _canvas(6.8, 6.1, (0, 6.8), (-0.75, 5.35))
    left, right, width = 1.55, 5.2, 2.8

    def box(x: float, y: float, text: str, fill: str = TENSOR) -> Box:
        return _draw(ax, Box(x, y, text, width=width, height=0.8, fill=fill))

    ax.text(left, 5.0, _t("encoder"), ha="center", fontsize=14, weight="bold")
    ax.text(right, 5.0, _t("decoder"), ha="center", fontsize=14, weight="bold")
    source = box(left, 0.0, _t("French words\n+ positions (S,)"))
    encoder_attention = box(left, 1.1, _t("self-attention\n(every word)"), ATTENTION)
    encoder_ff = box(left, 2.2, _t("feed-forward"), ATTENTION)
    memory = box(left, 3.3, _t("encoder outputs\n(S, D)"))
    target = box(right, 0.0, _t("English words so far\n+ positions (L,)"))
    causal = box(
        right, 1.1, _t("causal self-attention\n(earlier words only)"), ATTENTION
    )
    cross = box(right, 2.2, _t("cross-attention"), ATTENTION)
    decoder_ff = box(right, 3.3, _t("feed-forward"), ATTENTION)
    scores = box(right, 4.4, _t("linear: scores of\nthe next word"), OPERATION)
    for first, second in [
        (source, encoder_attention),
        (encoder_attention, encoder_ff),
        (encoder_ff, memory),
        (target, causal),
        (decoder_ff, scores),
    ]:
        _arrow(ax, first.top, second.bottom)
    _arrow(ax, causal.top, cross.bottom, label=_t("queries"))
    _arrow(ax, cross.top, decoder_ff.bottom)
    _arrow(ax, memory.right, cross.left)
    ax.text(3.38, 3.05, _t("keys,\nvalues"), fontsize=12, ha="center", va="bottom")
    ax.text(
        3.4,
        -0.65,
        _t("each sub-layer: residual connection and layer norm"),
        ha="center",
        fontsize=12,
        style="italic",
    )
    return fig
