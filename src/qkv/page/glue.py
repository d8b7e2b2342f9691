"""Helpers the chapters share: counts and tables a reader sees, and bookkeeping.

Two kinds of helpers live here, so that no chapter defines its own:

* What a reader sees and may reuse in a notebook: :func:`n_params`,
  :func:`shape_md`, :func:`markdown_table`, :func:`shape_table`,
  :func:`human_bytes`.
* The book's bookkeeping, called only in cells hidden from the page (tagged
  ``remove-cell``, left out of the downloaded notebooks): :func:`glue`,
  :func:`glue_all` and :func:`glue_figure` paste computed values into the prose
  with myst-nb's ``glue``. They convert tensors and NumPy scalars to plain Python
  numbers (``{glue:text}`` with a format spec needs one) and never display
  anything themselves.

myst-nb is imported only when a value is glued: a notebook that never glues runs
with ``qkv`` alone.

Language (the French edition): the numbers that these helpers write into a
table or a string follow :func:`qkv.set_language` (``"0,25"``, ``"4 096"``,
``"1,5 Kio"`` in French); headers come from the caller. :func:`glue` leaves
numbers alone: the French build of the book writes glued numbers the French
way itself, so a number formatted by :func:`qkv.language.format_number` is
glued as Python writes it, and converted once.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal, localcontext

import numpy as np
from torch import Tensor, nn

from qkv.language import LocalNumber, get_language, localise
from qkv.language import gettext as _
from qkv.page.numbers import byte_units, decimal_sign
from qkv.page.numbers import number as _number

__all__ = [
    "glue",
    "glue_all",
    "glue_figure",
    "human_bytes",
    "markdown_table",
    "n_params",
    "plain",
    "round_down",
    "round_up",
    "shape_md",
    "shape_table",
]


class _Markdown:
    """Text that Jupyter shows as Markdown (IPython's ``Markdown`` without the
    IPython import, so that this module stays light)."""

    def __init__(self, text: str) -> None:
        self.data = text

    def _repr_markdown_(self) -> str:
        return self.data

    def __repr__(self) -> str:
        return self.data


def n_params(module: nn.Module) -> int:
    """The number of trainable numbers of ``module`` (weights and biases)."""
    return sum(p.numel() for p in module.parameters())


def shape_md(tensor: Tensor) -> _Markdown:
    """A tensor's shape as inline code, for the prose: `(2, 4, 5, 16)`."""
    return _Markdown(f"`{tuple(tensor.shape)}`")


def markdown_table(
    rows: Iterable[Sequence[object]],
    header: Sequence[str],
    align: str | None = None,
) -> _Markdown:
    """A Markdown table, one row per item of ``rows``.

    Args:
        rows: the cells of each row (converted with ``str``; a cell that is a
            number, or a text that is entirely a number as Python writes it,
            ``"4,096"``, ``"0.25"``, in the current language).
        header: the column titles.
        align: one letter per column, ``l``, ``c`` or ``r`` (default: left).

    Raises:
        ValueError: if a row or ``align`` does not have one entry per column.
    """
    width = len(header)
    align = align or "l" * width
    if len(align) != width or set(align) - set("lcr"):
        raise ValueError(
            f"align must have one of l, c, r per column ({width}), got {align!r}"
        )
    rules = {"l": "---", "c": ":---:", "r": "---:"}
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join(rules[a] for a in align) + " |",
    ]
    for number, row in enumerate(rows):
        cells = [_cell(cell) for cell in row]
        if len(cells) != width:
            raise ValueError(
                f"row {number} has {len(cells)} cells, the header {width}: {cells}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return _Markdown("\n".join(lines))


#: A cell that is a number, bold or italic or not, and a unit after a space:
#: ``**3,152,384**``, ``0.330 s``.
_NUMBER_CELL = re.compile(
    r"(?P<mark>\**)(?P<number>[-+]?[\d,.]+(?:e[-+]\d+)?%?)"
    r"(?P=mark)(?P<unit> [^\d`$|]+)?"
)


def _cell(cell: object) -> str:
    """A table cell as text, its number in the current language (a number
    alone, bold or italic, or followed by a unit); a number that
    :func:`qkv.language.format_number` wrote is already in it."""
    written = str(cell)
    if isinstance(cell, LocalNumber):
        return written
    match = _NUMBER_CELL.fullmatch(written)
    if match is None:
        return written
    if "," in match["number"] and get_language() != "en":
        # already in the page's language (qkv.page.numbers.num): "0,976" is
        # a decimal, not thousands (English grouping comes through num too)
        return written
    mark = match["mark"]
    return f"{mark}{localise(match['number'])}{mark}{match['unit'] or ''}"


def shape_table(tensors: Mapping[str, Tensor], meaning: Mapping[str, str]) -> _Markdown:
    """A table of named tensors: name, shape, and what the shape means.

    Args:
        tensors: name -> tensor, in the order of the table.
        meaning: name -> the shape in letters, e.g. ``"(B, H, L, S)"``.
    """
    rows = [
        (f"`{name}`", f"`{tuple(tensor.shape)}`", meaning.get(name, ""))
        for name, tensor in tensors.items()
    ]
    header = [_("tensor"), _("shape"), _("meaning")]
    return markdown_table(rows, header)


def human_bytes(n_bytes: float) -> LocalNumber:
    """A number of bytes for a reader, in binary units (1 KiB = 1,024 bytes):
    ``"512 B"``, ``"1.5 KiB"``, ``"64.0 GiB"``; in French ``"512 o"`` (octets),
    ``"1,5 Kio"``, ``"64,0 Gio"`` (:func:`qkv.page.numbers.byte_units`, numbers
    by :func:`qkv.page.numbers.number`).

    Raises:
        ValueError: if ``n_bytes`` is negative or not a finite number.
    """
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, numbers.Real):
        raise ValueError(f"n_bytes must be a number, got {n_bytes!r}")
    if not 0 <= n_bytes < float("inf"):
        raise ValueError(f"n_bytes must be finite and >= 0, got {n_bytes!r}")
    # Halves round up, as a reader expects (1.25 GiB is "1.3 GiB", not the
    # "1.2 GiB" of Python's round-half-even): sizes in binary units are often
    # exact halves. Decimal rounds the float's exact value.
    size = Decimal(float(n_bytes))
    # enough digits for any finite float (the default 28 fail past 1e28)
    with localcontext(prec=max(28, size.adjusted() + 3)):
        # what glue() pastes is the English one: the French build writes it
        # the French way (its catalogue has "{0} Gio" for "{0} GiB")
        return LocalNumber(_human_bytes(size, get_language()), _human_bytes(size, "en"))


def _human_bytes(size: Decimal, language: str) -> str:
    units = byte_units(language)
    whole = size.quantize(Decimal(1), rounding=ROUND_HALF_UP)
    if whole < 1024:
        return f"{_number(int(whole), language=language)} {units[0]}"
    for unit in units[1:]:
        size /= 1024
        tenths = size.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
        if tenths < 1024 or unit == units[-1]:  # never "1,024.0 KiB"
            # exactly, no float: the whole part grouped, then the tenths
            whole, _, decimals = f"{tenths:f}".partition(".")
            return (
                f"{_number(int(whole), language=language)}"
                f"{decimal_sign(language)}{decimals or '0'} {unit}"
            )
    raise AssertionError("unreachable")  # pragma: no cover


def plain(value: object) -> object:
    """``value`` as a plain Python number when it is a one-number tensor or a
    NumPy scalar (``{glue:text}`` cannot format those); anything else as is."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(
                "glue a number, a LatexMatrix or a figure, not a tensor of shape "
                f"{tuple(value.shape)}"
            )
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()  # a NumPy scalar: its Python number
    return value


def _rounded(value: float, digits: int, significant: bool, mode: str) -> float:
    number = Decimal(repr(float(value)))
    if significant:
        if number == 0:
            return 0.0
        step = Decimal(1).scaleb(number.adjusted() - digits + 1)
    else:
        step = Decimal(1).scaleb(-digits)
    return float(number.quantize(step, mode))


def round_down(value: float, digits: int = 1, *, significant: bool = False) -> float:
    """``value`` rounded down to ``digits`` decimals: a lower bound in prose
    ("at least 3.0") stays true (3.04 gives 3.0, never 3.1). Computed on the
    decimal text of the float, so 0.3 stays 0.3. With ``significant``,
    ``digits`` counts significant figures, for numbers printed as ``:.0e``
    (``digits=1``) or ``:.1e`` (``digits=2``)."""
    return _rounded(value, digits, significant, "ROUND_FLOOR")


def round_up(value: float, digits: int = 1, *, significant: bool = False) -> float:
    """``value`` rounded up to ``digits`` decimals: an upper bound in prose ("at
    most 0.13") stays true (0.121 gives 0.13). With ``significant``, ``digits``
    counts significant figures: 2.05e-07 rounded up to one is 3e-07."""
    return _rounded(value, digits, significant, "ROUND_CEILING")


def glue(name: str, value: object) -> None:
    """Paste ``value`` into the prose as ``name`` (myst-nb's ``glue``, not shown).

    For hidden bookkeeping cells only. Numbers become plain Python numbers;
    a string becomes Markdown, for ``{glue:md}``. A number written by
    :func:`qkv.language.format_number` is glued as Python writes it: the
    French build localises glued numbers itself, once.
    """
    from myst_nb import glue as myst_glue

    if isinstance(value, LocalNumber):  # as Python writes it: localised once
        value = value.english
    if isinstance(value, str):
        value = _Markdown(value)  # for {glue:md} (and {glue:text})
    myst_glue(name, plain(value), display=False)


def glue_all(values: Mapping[str, object], prefix: str = "") -> None:
    """:func:`glue` every item of ``values``, each name prefixed by ``prefix``."""
    for name, value in values.items():
        glue(prefix + name, value)


def glue_figure(name: str, figure) -> None:
    """Glue a matplotlib figure as ``name`` and close it (shown once, where a
    ``{glue:figure}`` directive places it)."""
    import matplotlib.pyplot as plt

    glue(name, figure)
    plt.close(figure)
