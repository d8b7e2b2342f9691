"""Attention heatmaps in one consistent style, for every chapter of the book.

Figures are meant to be projected: large type, an opaque white background (so
they read on the dark theme too), SVG output, and ``viridis``, a perceptually
uniform colormap that stays readable for colour-blind readers and in greyscale.

Large type means: no text in a figure smaller than the page's caption text, at
the width the page shows the figure (checked in the browser tests). The page shows
a figure at its natural size up to about 7 inches wide and shrinks wider ones, so
a figure up to :data:`MAX_WIDTH_IN` wide needs text of at least
:data:`MIN_FONT_PT` points; a wider one needs ``MIN_FONT_PT * width / MAX_WIDTH_IN``
(or stack its panels vertically).

Language (the French edition): the labels this module writes come from an
en/fr table, and the numbers it writes in cells follow :func:`qkv.set_language`.
While the language is French, every tick label of every figure (linear, log and
colour-bar axes alike, including figures drawn with plain matplotlib) is
written with a decimal comma and thousands grouped by a narrow no-break space:
:func:`localise_ticks` wraps matplotlib's tick formatters, without a system
locale, and undoes it when the language goes back to English (English figures
are the same files as before).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from qkv.language import NNBSP, format_number, on_change
from qkv.language import gettext as _

#: The colormap used for every attention weight in the book.
WEIGHTS_CMAP = "viridis"
#: The smallest text of a figure, in points, and the widest figure, in inches,
#: that the page shows at its natural size (672 CSS pixels at 1280 pixels).
MIN_FONT_PT = 12
MAX_WIDTH_IN = 6.8

_BOOK_RC = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "savefig.bbox": "tight",
    "figure.dpi": 110,
    "font.size": MIN_FONT_PT,
    "axes.titlesize": MIN_FONT_PT + 1,
    "axes.labelsize": MIN_FONT_PT,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "svg.fonttype": "path",
    # The same figure gives the same file in every build: the ids inside an SVG
    # are hashes salted with this text (a random salt by default).
    "svg.hashsalt": "attention-computed",
    "image.cmap": WEIGHTS_CMAP,
}
#: What every SVG figure is written with: no creation date (a figure drawn again
#: must give the same file, so that the site is the same in every build).
SVG_METADATA = {"Date": None}


def use_book_style() -> None:
    """Apply the book's figure style; in a notebook, also switch output to SVG
    (without a date, for figures shown and glued alike)."""
    mpl.rcParams.update(_BOOK_RC)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is there in the book
        return
    if get_ipython() is not None:
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("svg", metadata=SVG_METADATA)


def book_style():
    """The book's figure style inside a ``with`` block only, for figures that the
    package draws for the reader (the static figures of :mod:`qkv.page.explorables`)."""
    return mpl.rc_context(_BOOK_RC)


#: In a tick label: a decimal number (not a version 2.13.0), thousands grouped
#: by commas, a percent sign after a number.
_DECIMAL = re.compile(r"(?<![\w.])(\d+)\.(\d+)(?![\w.])")
_THOUSANDS = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w.,])")
_PERCENT = re.compile(r"(?<=\d)%")
#: A tick label given as text that is a number (``"0.5"``, ``"4,096"``).
_NUMBER = re.compile(r"[-+\u2212]?\d[\d,]*(?:\.\d+)?%?")


def french_label(label: str) -> str:
    """A tick label with French numbers: ``"0.5"`` -> ``"0,5"``, ``"4,096"``
    -> ``"4\u202f096"``, in mathtext ``"$10^{0.5}$"`` -> ``"$10^{0{,}5}$"``."""
    if "$" in label:  # mathtext: a comma in braces is not spaced as punctuation
        label = _THOUSANDS.sub(lambda m: m.group(0).replace(",", r"\,"), label)
        return _DECIMAL.sub(r"\1{,}\2", label)
    label = _THOUSANDS.sub(lambda m: m.group(0).replace(",", NNBSP), label)
    return _PERCENT.sub(NNBSP + "%", _DECIMAL.sub(r"\1,\2", label))


def localise_ticks(language: str) -> None:
    """Write every tick label (and the offset of a scalar axis, ``1e6``) the
    way of ``language``: wrap ``Formatter.format_ticks`` and
    ``ScalarFormatter.get_offset`` in French, restore them otherwise. Called by
    :func:`qkv.set_language` (registered when this module is imported). A
    ``FixedFormatter`` (labels given as text, such as tokens) changes only the
    labels that are a number. Each wrapper keeps what it wraps in
    ``__wrapped__``: wrapped once, however often this runs (even by a copy of
    this module imported again)."""
    from matplotlib import ticker

    wrapped = hasattr(ticker.Formatter.format_ticks, "__wrapped__")
    if language == "fr" and not wrapped:
        format_ticks = ticker.Formatter.format_ticks
        get_offset = ticker.ScalarFormatter.get_offset

        def french_ticks(self, values):
            labels = format_ticks(self, values)
            if isinstance(self, ticker.FixedFormatter):
                return [
                    french_label(label) if _NUMBER.fullmatch(label) else label
                    for label in labels
                ]
            return [french_label(label) for label in labels]

        def french_offset(self):
            return french_label(get_offset(self))

        french_ticks.__wrapped__ = format_ticks
        french_offset.__wrapped__ = get_offset
        ticker.Formatter.format_ticks = french_ticks
        ticker.ScalarFormatter.get_offset = french_offset
    elif language != "fr" and wrapped:
        ticker.Formatter.format_ticks = ticker.Formatter.format_ticks.__wrapped__
        get_offset = ticker.ScalarFormatter.get_offset
        ticker.ScalarFormatter.get_offset = get_offset.__wrapped__


on_change(localise_ticks)


def _as_array(weights: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    array = np.asarray(weights, dtype=float)
    if array.ndim != 2:
        raise ValueError(f"weights must be 2-D (L, S), got shape {array.shape}")
    return array


#: Past this many rows or columns, :func:`heatmap` draws a figure of bounded
#: size, labels every few tokens and writes no value in the cells.
LABELLED_MAX = 32


#: The longest tick label :func:`heatmap` writes whole; a longer one is cut
#: with an ellipsis (a 3,000-character token would make a figure of metres).
LABEL_CHARS = 24


def _short(labels: Sequence[str]) -> list[str]:
    return [
        label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        for label in map(str, labels)
    ]


def heatmap(
    weights: torch.Tensor | np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = True,
    decimals: int = 2,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    cmap: str = WEIGHTS_CMAP,
    colorbar: bool = True,
    xlabel: str | None = None,
    ylabel: str | None = None,
) -> Figure:
    """Draw a matrix of attention weights (or scores) as an annotated heatmap.

    Rows are queries, columns are keys: row i shows where token i looks.

    Args:
        weights: shape (L, S).
        row_labels: L labels for the queries (default: their indices).
        col_labels: S labels for the keys (default: ``row_labels`` if S == L).
        ax: axes to draw into (default: a new figure).
        title: optional title.
        annotate: write each value in its cell.
        decimals: decimals of the annotations.
        vmin, vmax: colour range (default 0 to the largest value).
        cmap: colormap (default :data:`WEIGHTS_CMAP`).
        colorbar: add a colour bar.
        xlabel, ylabel: axis labels (default: "key (attended to)" and
            "query (attending)", in the current language).

    Returns:
        The figure that holds the axes.
    """
    array = _as_array(weights)
    n_rows, n_cols = array.shape
    if row_labels is None:
        row_labels = [str(i) for i in range(n_rows)]
    if col_labels is None:
        col_labels = row_labels if n_cols == n_rows else [str(j) for j in range(n_cols)]
    if len(row_labels) != n_rows or len(col_labels) != n_cols:
        raise ValueError(
            f"got {len(row_labels)} row labels and {len(col_labels)} column labels "
            f"for weights of shape {array.shape}"
        )
    row_labels, col_labels = _short(row_labels), _short(col_labels)
    large = max(n_rows, n_cols) > LABELLED_MAX
    if ax is None:
        size = (1.4 + 0.85 * n_cols, 1.0 + 0.65 * n_rows)
        if large:  # a bounded figure, whatever the number of tokens
            size = (MAX_WIDTH_IN, MAX_WIDTH_IN)
        fig, ax = plt.subplots(figsize=size, layout="constrained")
    else:
        fig = ax.figure
    image = ax.imshow(array, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    # Past LABELLED_MAX rows or columns, a label every few (readable at 12 pt)
    # and no value written in the cells.
    col_step = -(-n_cols // LABELLED_MAX)
    row_step = -(-n_rows // LABELLED_MAX)
    annotate = annotate and not large
    ax.set_xticks(
        range(0, n_cols, col_step),
        labels=list(col_labels)[::col_step],
        rotation=45,
        ha="right",
    )
    ax.set_yticks(range(0, n_rows, row_step), labels=list(row_labels)[::row_step])
    ax.set_xlabel(_("key (attended to)") if xlabel is None else xlabel)
    ax.set_ylabel(_("query (attending)") if ylabel is None else ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        low, high = image.norm.vmin, image.norm.vmax
        middle = low + 0.55 * (high - low)
        for i in range(n_rows):
            for j in range(n_cols):
                value = array[i, j]
                colour = "black" if value > middle else "white"
                ax.text(
                    j,
                    i,
                    format_number(value, f".{decimals}f"),
                    ha="center",
                    va="center",
                    color=colour,
                    fontsize=MIN_FONT_PT,
                )
    if colorbar:
        fig.colorbar(image, ax=ax, shrink=0.85)
    return fig


def head_grid(
    weights: torch.Tensor | np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    ncols: int | None = None,
    annotate: bool = False,
    decimals: int = 2,
    width: float | None = None,
) -> Figure:
    """One heatmap per head, side by side, on a shared colour scale.

    Args:
        weights: shape (H, L, S), one attention map per head.
        row_labels, col_labels: labels of queries and keys (as in :func:`heatmap`).
        titles: H titles (default: "head 0", "head 1", ..., in the current
            language).
        ncols: heads per row of the grid (default: all in one row, at most 4).
        annotate: write each weight in its cell.
        decimals: decimals of the annotations.
        width: the figure's width in inches, e.g. :data:`MAX_WIDTH_IN` for a
            figure the page shows at its natural size (its text as large as the
            caption). The panels share it, and only the left column and the
            bottom row carry the labels. Default: a width that grows with the
            number of columns, each panel labelled.

    Returns:
        The figure.
    """
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    array = np.asarray(weights, dtype=float)
    if array.ndim != 3:
        raise ValueError(f"weights must be 3-D (H, L, S), got shape {array.shape}")
    n_heads, n_rows, n_cols = array.shape
    if titles is None:
        titles = [_("head {h}").format(h=h) for h in range(n_heads)]
    if len(titles) != n_heads:
        raise ValueError(f"got {len(titles)} titles for {n_heads} heads")
    ncols = min(n_heads, 4) if ncols is None else ncols
    nrows = -(-n_heads // ncols)
    if width is None:
        cell = 0.45 if n_cols > 8 else 0.6
        figsize = (ncols * (1.2 + cell * n_cols), nrows * (1.0 + cell * n_rows))
    elif not width > 0:
        raise ValueError(f"width must be a number of inches > 0, got {width!r}")
    else:  # labels on the left (about 1 inch) and a colour bar (about 0.8 inch)
        cell = (width - 1.8) / (ncols * n_cols)
        figsize = (width, nrows * (0.5 + cell * n_rows) + 1.0)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=figsize, layout="constrained", squeeze=False
    )
    vmax = float(array.max())
    key, query = _("key"), _("query")
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.axis("off")
            continue
        heatmap(
            array[h],
            row_labels,
            col_labels,
            ax=ax,
            title=titles[h],
            annotate=annotate,
            decimals=decimals,
            vmax=vmax,
            colorbar=False,
            xlabel=key if h // ncols == nrows - 1 else "",
            ylabel=query if h % ncols == 0 else "",
        )
        if width is not None:  # labels on the outer panels only
            last_row = h + ncols >= n_heads
            ax.tick_params(labelleft=h % ncols == 0, labelbottom=last_row)
            ax.set_xlabel(key if last_row else "")
    fig.colorbar(axes.flat[0].images[0], ax=axes, shrink=0.8)
    return fig
