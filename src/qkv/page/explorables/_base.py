"""What the explorables share: their conventions (see :mod:`qkv.page.explorables`),
the checks of their arguments, their labels' languages, colours and static figure.

Shapes: T words, D features per word.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from qkv.language import N_, get_language, gettext, translated
from qkv.page.widgets import Widget, figure_png, isolated
from qkv.validate import check_int

LANGUAGES = ("en", "fr")

# The labels are English messages of qkv's catalogue (qkv/locale), translated
# there; French follows French typography: a no-break space (\u00a0) before ":"
# and inside « », a narrow no-break space (\u202f) before ";", "?" and "!".

#: The labels every explorable's page uses, under each explorable's own
#: :attr:`Explorable.LABELS`: the warning when a number overflows (the page
#: shows "—" for it), and the separator of a list of numbers (French numbers
#: have a decimal comma).
SHARED_LABELS: dict[str, str] = {
    "overflow": N_(
        "Some results are too large to compute (they overflow) and "
        "show as “—”: use smaller numbers."
    ),
    "listSep": N_(", "),
}


def cmap_stops(n: int = 9) -> list[str]:
    """The book's colormap for weights as ``n`` hex colours, for the scripts."""
    import matplotlib

    from qkv.page.plot import WEIGHTS_CMAP

    colours = matplotlib.colormaps[WEIGHTS_CMAP](np.linspace(0, 1, n))
    return [matplotlib.colors.to_hex(c) for c in colours]


def check_lang(lang: str | None) -> str | None:
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(
            f"lang must be None (the page's) or one of {LANGUAGES}, got {lang!r}"
        )
    return lang


def check_vectors(name: str, x: Tensor, max_rows: int, max_cols: int) -> Tensor:
    """``x`` as a finite float64 matrix of at most ``max_rows`` x ``max_cols``."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2 or not x.is_floating_point():
        raise ValueError(
            f"{name} must be a 2-D floating tensor, got shape {tuple(x.shape)} "
            f"and dtype {x.dtype}"
        )
    rows, cols = x.shape
    if not (1 <= rows <= max_rows and 1 <= cols <= max_cols):
        raise ValueError(
            f"{name} must have 1 to {max_rows} rows and 1 to {max_cols} columns "
            f"(it is shown in a page), got shape {tuple(x.shape)}"
        )
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} must be finite, got {x.tolist()}")
    return x.detach().cpu().double()


#: The longest word an explorable takes: each word labels a row and a column.
MAX_WORD_CHARS = 48


def check_words(name: str, words: Sequence[str], count: int) -> list[str]:
    if isinstance(words, str) or not all(isinstance(w, str) for w in words):
        raise ValueError(f"{name} must be a list of strings, got {words!r}")
    words = list(words)
    long = [w for w in words if len(w) > MAX_WORD_CHARS]
    if long:
        raise ValueError(
            f"{name} must hold words of at most {MAX_WORD_CHARS} characters (each "
            f"labels a row and a column of the grid), got one of {len(long[0])}: "
            f"{long[0][:MAX_WORD_CHARS]!r}..."
        )
    if len(words) != count:
        raise ValueError(
            f"{name} must hold {count} words, one per row, got {len(words)}"
        )
    return words


def check_decimals(decimals: int) -> int:
    decimals = check_int("decimals", decimals, minimum=0)
    if decimals > 8:
        raise ValueError(f"decimals must be an int in 0..8, got {decimals}")
    return decimals


def nice(values: Tensor, digits: int = 7) -> list:
    """A tensor as nested lists of floats with ``digits`` significant digits: what a
    reader sees in a box (0.43, not 0.4300000071525879)."""
    return np.vectorize(lambda v: float(f"{v:.{digits}g}"))(values.numpy()).tolist()


def word_list(words: Sequence[str], lang: str | None = None) -> str:
    """The words quoted as ``lang`` quotes them: “a”, “b” or « a », « b »."""
    if lang == "fr":
        return ", ".join(f"«\u00a0{isolated(w)}\u00a0»" for w in words)
    return ", ".join(f"“{isolated(w)}”" for w in words)


class Explorable(Widget):
    """What the explorables share: labels, colours, the page's runtime
    (``static/explorable.js``, whose ``qkvExplorable`` gives each explorable's script
    its tools) and stylesheet (``static/explorable.css``)."""

    root_classes = "qkv-explorable"
    styles = ("explorable.css",)
    #: The labels (English messages, translated by :func:`qkv.language.gettext`),
    #: ``{...}`` filled in.
    LABELS: dict[str, str] = {}

    def __init__(self, lang: str | None, decimals: int) -> None:
        self.lang = check_lang(lang)
        self.decimals = check_decimals(decimals)

    def _text(self, key: str, **values) -> str:
        """A label in ``lang`` (English when the page decides), filled in."""
        text = gettext(self.LABELS[key], language=self.lang or "en")
        for name, value in values.items():
            text = text.replace("{" + name + "}", str(value))
        return text

    def static_alts(self) -> dict[str, str]:
        """When the page decides the language (``lang=None``): the static
        figure's alt text in every language but English (the ``alt`` itself)."""
        if self.lang is not None:
            return {}
        alts = {}
        for lang in LANGUAGES[1:]:
            self.lang = lang
            try:
                alts[lang] = self.static_alt()
            finally:
                self.lang = None
        return alts

    def _common(self) -> dict:
        return {
            "lang": self.lang,
            "labels": {
                lang: translated({**SHARED_LABELS, **self.LABELS}, lang)
                for lang in LANGUAGES
            },
            "cmap": cmap_stops(),
            "decimals": self.decimals,
        }

    def static_png(self) -> bytes:
        """The static figure, in ``lang``; when the page decides the language
        (``lang=None``), in the language of :func:`qkv.set_language` (the
        French edition draws it in French)."""
        from qkv.page.plot import book_style

        chosen = self.lang
        self.lang = chosen or get_language()
        try:
            with book_style():
                return figure_png(self._static_figure())
        finally:
            self.lang = chosen

    def _static_figure(self):
        raise NotImplementedError


def plain(text: str) -> str:
    """``text`` for a matplotlib label: a ``$`` is a dollar, not mathematics."""
    return text.replace("$", r"\$")


def check_scale(scale: float | None, size: int) -> float:
    """The factor on the scores: ``1 / sqrt(size)`` by default, as ``qkv``'s."""
    if scale is None:
        return 1 / math.sqrt(size)
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise ValueError(f"scale must be a number or None, got {scale!r}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale!r}")
    return float(scale)
