"""The explorable of the chapter *attention-by-hand*: :func:`attention_by_hand`.

Shapes: T words, D features per word.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from qkv.attention import scaled_dot_product_attention
from qkv.language import N_
from qkv.page.explorables._base import (
    Explorable,
    check_vectors,
    check_words,
    nice,
    plain,
    word_list,
)
from qkv.validate import check_index

__all__ = ["attention_by_hand"]


class AttentionByHand(Explorable):
    """Pick the query word and edit the vectors; see :func:`attention_by_hand`."""

    kind = "qkv-x-abh"
    LABELS = {
        "title": N_("Try it: attention by hand"),
        "query": N_("Query word"),
        "word": N_("Word"),
        "vector": N_("Vector (edit any number)"),
        "coordinate": N_("{word}, coordinate {k}"),
        "score": N_("Score"),
        "bySum": N_("Weight: score ÷ sum"),
        "softmax": N_("Weight: softmax"),
        "sum": N_("Sum"),
        "caption": N_("Scores and weights for the query “{word}”"),
        "context": N_("Context vector of “{word}” (softmax weights): "),
        "invalid": N_("A box holds no number: its last number is used."),
        "sumZero": N_("The scores add up to 0: they cannot be divided by their sum."),
        "sumBroken": N_(
            "Divided by their sum, some weights fall outside 0 to 1: "
            "the mix is no longer an average."
        ),
        "status": N_("“{word}”: largest softmax weight {weight}, on “{best}”."),
        "fig_title": N_("The query “{word}”"),
        "fig_bySum": N_("score / sum"),
        "fig_softmax": N_("softmax"),
        "fig_ylabel": N_("weight"),
        "fig_xlabel": N_("word attended to"),
        "alt": N_(
            "Bar chart of the weights of the query “{word}” over the words "
            "{words}, divided by the sum and through the softmax."
        ),
    }
    scripts = ("explorable.js", "by_hand.js")
    build = "qkvAttentionByHand"

    def __init__(
        self,
        x: Tensor,
        words: Sequence[str],
        query: int = 0,
        *,
        step: float = 0.01,
        decimals: int = 4,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, decimals)
        x = check_vectors("x", x, max_rows=12, max_cols=6)
        self.words = check_words("words", words, x.shape[0])
        self.query = check_index("query", query, len(self.words))
        if (
            isinstance(step, bool)
            or not isinstance(step, int | float)
            or not math.isfinite(step)
            or step <= 0
        ):
            raise ValueError(f"step must be a positive number, got {step!r}")
        self.step = float(step)
        #: The vectors the page starts from, as its boxes show them, (T, D).
        self.x = torch.tensor(nice(x), dtype=torch.float64)

    @property
    def weights(self) -> Tensor:
        """The softmax weights of the query word at the start, (T,), from ``qkv``."""
        _, weights = scaled_dot_product_attention(self.x, self.x, self.x, scale=1.0)
        return weights[self.query]  # (T,)

    def _payload(self) -> dict:
        return {
            **self._common(),
            "words": self.words,
            "x": self.x.tolist(),
            "query": self.query,
            "step": self.step,
        }

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import WEIGHTS_CMAP

        scores = self.x @ self.x[self.query]  # (T,)
        by_sum = (scores / scores.sum()).numpy()
        colours = plt.get_cmap(WEIGHTS_CMAP)([0.25, 0.75])
        fig, ax = plt.subplots(figsize=(6.8, 3.6), layout="constrained")
        positions = np.arange(len(self.words))
        label = self._text("fig_bySum")
        ax.bar(positions - 0.2, by_sum, 0.4, color=colours[0], label=label)
        label = self._text("fig_softmax")
        ax.bar(
            positions + 0.2, self.weights.numpy(), 0.4, color=colours[1], label=label
        )
        ax.set_xticks(positions, labels=[plain(w) for w in self.words])
        ax.set_ylabel(self._text("fig_ylabel"))
        ax.set_xlabel(self._text("fig_xlabel"))
        ax.set_title(plain(self._text("fig_title", word=self.words[self.query])))
        ax.legend(frameon=False)
        return fig

    def static_alt(self) -> str:
        return self._text(
            "alt", word=self.words[self.query], words=word_list(self.words, self.lang)
        )

    def __repr__(self) -> str:
        return (
            f"AttentionByHand({len(self.words)} words of {self.x.shape[1]} numbers, "
            f"query {self.words[self.query]!r})"
        )


def attention_by_hand(
    x: Tensor,
    words: Sequence[str],
    query: int = 0,
    *,
    step: float = 0.01,
    decimals: int = 4,
    lang: str | None = None,
) -> AttentionByHand:
    """Attention by hand, live: the reader picks the query word and edits any number
    of the word vectors; the scores, the weights (divided by the sum and softmax)
    and the context vector follow at once.

    Explained in the chapter *attention-by-hand*. The page computes
    ``scores = x @ x[query]``, ``scores / scores.sum()``, ``softmax(scores)`` and
    ``softmax(scores) @ x``, as ``qkv.scaled_dot_product_attention(x, x, x,
    scale=1.0)`` does, and shows them with ``decimals`` decimals.

    Args:
        x: the word vectors, shape (T, D), T <= 12 and D <= 6.
        words: the T words.
        query: the index of the query word shown first (and in print).
        step: the step of the arrow keys in the number boxes.
        decimals: decimals of the numbers shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        An :class:`AttentionByHand`; the last expression of a cell renders it.
        Its ``data-weights`` are the softmax weights of the query, (T,).

    Raises:
        ValueError: if ``x`` is not a finite floating (T, D) tensor within the
            sizes above, ``words`` are not T strings, or another argument is out
            of range.
    """
    return AttentionByHand(x, words, query, step=step, decimals=decimals, lang=lang)
