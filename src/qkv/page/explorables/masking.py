"""The explorable of the chapter *masking*: :func:`mask_editor`.

Shapes: T words, D features per word.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from qkv.attention import scaled_dot_product_attention
from qkv.language import N_
from qkv.page.explorables._base import (
    Explorable,
    check_scale,
    check_vectors,
    check_words,
    plain,
    word_list,
)
from qkv.validate import check_index

__all__ = ["mask_editor"]


class MaskEditor(Explorable):
    """Tick the pairs that may attend; see :func:`mask_editor`."""

    kind = "qkv-x-mask"
    PRESETS = ("custom", "all", "causal", "padding", "leftCausal")
    LABELS = {
        "title": N_("Try it: edit the mask"),
        "preset": N_("Mask"),
        "preset_custom": N_("your own"),
        "preset_all": N_("everything allowed"),
        "preset_causal": N_("causal"),
        "preset_padding": N_("padding at the end"),
        "preset_leftCausal": N_("causal, padding in front"),
        "real": N_("Real words (the rest is padding)"),
        "realInvalid": N_(
            "Real words: type a whole number from 1 to {max}; until "
            "then the mask keeps the last valid count, {used}."
        ),
        "maskCaption": N_(
            "The mask: a ticked box lets the query (row) attend to the key (column)"
        ),
        "weightsCaption": N_("The attention weights"),
        "corner": N_("query ↓ key →"),
        "may": N_("{query} may attend to {key}"),
        "rowSum": N_("sum"),
        "quoted": N_("“{word}”"),
        "empty": N_(
            "May attend to nothing: {words}. Their weights are all 0, as in qkv."
        ),
        "fig_title": N_("Weights with the mask"),
        "alt": N_(
            "Heatmap of the attention weights of the words {words} with "
            "the mask; forbidden pairs have weight 0."
        ),
    }
    scripts = ("explorable.js", "masking.js")
    build = "qkvMaskEditor"

    def __init__(
        self,
        x: Tensor,
        words: Sequence[str],
        *,
        mask: Tensor | None = None,
        scale: float | None = None,
        real_words: int | None = None,
        decimals: int = 2,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, decimals)
        self.x = check_vectors("x", x, max_rows=10, max_cols=64)
        n_words = self.x.shape[0]
        self.words = check_words("words", words, n_words)
        if mask is None:
            mask = torch.ones(n_words, n_words, dtype=torch.bool)
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
            raise ValueError(
                f"mask must be a bool tensor (True = may attend), got {mask!r}"
            )
        if mask.shape != (n_words, n_words):
            raise ValueError(
                f"mask must have shape (T, T) = {(n_words, n_words)}, "
                f"got {tuple(mask.shape)}"
            )
        self.mask = mask.detach().cpu().clone()
        self.scale = check_scale(scale, self.x.shape[1])
        if real_words is None:
            real_words = max(1, n_words - 2)
        self.real_words = check_index("real_words", real_words, n_words + 1)
        if self.real_words == 0:
            raise ValueError(f"real_words must be an int in 1..{n_words}, got 0")

    @property
    def weights(self) -> Tensor:
        """The weights (T, T) the page starts from, from ``qkv`` (float64)."""
        _, weights = scaled_dot_product_attention(
            self.x, self.x, self.x, attn_mask=self.mask, scale=self.scale
        )
        return weights

    def _payload(self) -> dict:
        return {
            **self._common(),
            "words": self.words,
            "x": self.x.tolist(),
            "scale": self.scale,
            "mask": self.mask.tolist(),
            "presets": list(self.PRESETS),
            "real_words": self.real_words,
        }

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import heatmap

        fig, ax = plt.subplots(figsize=(6.8, 5.2), layout="constrained")
        heatmap(
            self.weights,
            [plain(w) for w in self.words],
            ax=ax,
            decimals=self.decimals,
            title=self._text("fig_title"),
        )
        return fig

    def static_alt(self) -> str:
        return self._text("alt", words=word_list(self.words, self.lang))

    def __repr__(self) -> str:
        allowed = int(self.mask.sum())
        return f"MaskEditor({len(self.words)} words, {allowed} pairs allowed)"


def mask_editor(
    x: Tensor,
    words: Sequence[str],
    *,
    mask: Tensor | None = None,
    scale: float | None = None,
    real_words: int | None = None,
    decimals: int = 2,
    lang: str | None = None,
) -> MaskEditor:
    """Masks, live: the reader ticks the pairs (query, key) that may attend, or
    picks a causal or a padding mask, and the weights follow. The boxes are one
    grid: one tab stop, the arrow keys move between them, Space ticks.

    Explained in the chapter *masking*. The page masks the scores
    ``x @ x.T * scale`` before the softmax, as
    ``qkv.scaled_dot_product_attention(x, x, x, attn_mask=mask, scale=scale)``
    does: a query that may attend to nothing gets zero weights.

    Args:
        x: the word vectors, shape (T, D), T <= 10; queries and keys are ``x``.
        words: the T words.
        mask: the mask shown first (and in print), bool (T, T), True = may
            attend; ``None`` allows every pair.
        scale: the factor on the scores (default ``1 / sqrt(D)``, as ``qkv``).
        real_words: how many words are real (not padding) at first, for the
            padding masks (default T - 2, at least 1).
        decimals: decimals of the weights shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`MaskEditor`; its ``data-weights`` are the (T, T) weights and
        its ``data-mask`` the mask.

    Raises:
        ValueError: if an argument has the wrong type, shape or range.
    """
    return MaskEditor(
        x,
        words,
        mask=mask,
        scale=scale,
        real_words=real_words,
        decimals=decimals,
        lang=lang,
    )
