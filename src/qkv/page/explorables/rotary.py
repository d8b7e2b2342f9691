"""The explorable of the chapter *positions*: :func:`rope_offsets`.

Shapes: S keys, E the size of the query and of each key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
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
)
from qkv.positions import rope
from qkv.validate import check_index, check_int

__all__ = ["rope_offsets"]


PAIRS = ("interleaved", "halves")


def _rotate_pairs(x: Tensor, positions: Tensor, base: float, pairs: str) -> Tensor:
    """RoPE (:func:`qkv.positions.rope`): each pair of coordinates of ``x`` (T, E)
    rotated by the angle ``position * base ** (-2 f / E)`` for pair f; pairs
    (x_2f, x_2f+1) ("interleaved") or (x_c, x_c+E/2) ("halves"). The page's script
    does the same.
    """
    return rope(x, positions, base, interleaved=pairs == "interleaved")  # (T, E)


class RopeOffsets(Explorable):
    """Move a query and keys along the sentence; see :func:`rope_offsets`."""

    kind = "qkv-x-rope"
    LABELS = {
        "title": N_("Try it: rotary positions (RoPE)"),
        "m": N_("Position of the query, p"),
        "n": N_("Position of the first key"),
        "together": N_("Move both together"),
        "dials": N_("Key drawn in the circles"),
        "caption": N_("The query at position {m}; key j at position {n} + j"),
        "key": N_("Key"),
        "position": N_("Position"),
        "offset": N_("Offset p − position"),
        "score": N_("Score q·k"),
        "weight": N_("Weight"),
        "query": N_("query"),
        "keyLegend": N_("key"),
        "pair": N_("pair {i}"),
        "status": N_(
            "Query at {m}, keys at {n} to {last}: offsets {first} to {lastOffset}."
        ),
        "fig_title": N_("The query at position {m}, the keys from position {n}"),
        "fig_ylabel": N_("score q·k"),
        "alt": N_(
            "Bar chart of the scores of a query at position {m} with keys at "
            "positions {n} to {last}, all rotated by RoPE."
        ),
    }
    scripts = ("explorable.js", "rotary.js")
    build = "qkvRopeOffsets"

    def __init__(
        self,
        query: Tensor,
        keys: Tensor,
        words: Sequence[str] | None = None,
        *,
        query_position: int = 4,
        key_position: int = 0,
        max_position: int = 16,
        base: float = 10000.0,
        pairs: str = "interleaved",
        scale: float | None = None,
        decimals: int = 3,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, decimals)
        if isinstance(query, Tensor) and query.dim() == 1:
            query = query[None, :]
        query = check_vectors("query", query, max_rows=1, max_cols=16)
        self.keys = check_vectors("keys", keys, max_rows=8, max_cols=16)
        size = query.shape[1]
        if size % 2 or self.keys.shape[1] != size:
            raise ValueError(
                "query and keys must have the same even size E (RoPE rotates "
                f"pairs), got query {tuple(query.shape)} and keys "
                f"{tuple(self.keys.shape)}"
            )
        self.query = query[0]  # (E,)
        n_keys = self.keys.shape[0]
        if words is None:
            words = [f"k{j}" for j in range(n_keys)]
        self.words = check_words("words", words, n_keys)
        self.max_position = check_int("max_position", max_position, minimum=1)
        if self.max_position > 4096:
            raise ValueError(f"max_position must be at most 4096, got {max_position}")
        self.query_position = check_index(
            "query_position", query_position, self.max_position + 1
        )
        self.key_position = check_index(
            "key_position", key_position, self.max_position + 1
        )
        if isinstance(base, bool) or not isinstance(base, int | float) or base <= 1:
            raise ValueError(f"base must be a number above 1, got {base!r}")
        self.base = float(base)
        if pairs not in PAIRS:
            raise ValueError(f"pairs must be one of {PAIRS}, got {pairs!r}")
        self.pairs = pairs
        self.scale = check_scale(scale, size)

    def rotated(self, query_position: int, key_position: int) -> tuple[Tensor, Tensor]:
        """The query at ``query_position`` (E,) and key j at ``key_position + j``
        (S, E), rotated as the page rotates them (float64)."""
        query = _rotate_pairs(
            self.query[None, :], torch.tensor([query_position]), self.base, self.pairs
        )[0]
        positions = key_position + torch.arange(self.keys.shape[0])
        keys = _rotate_pairs(self.keys, positions, self.base, self.pairs)
        return query, keys

    def weights_at(self, query_position: int, key_position: int) -> Tensor:
        """The weights (S,) the page shows for these positions, from ``qkv``."""
        query, keys = self.rotated(query_position, key_position)
        _, weights = scaled_dot_product_attention(
            query[None, :], keys, keys, scale=self.scale
        )
        return weights[0]  # (S,)

    @property
    def weights(self) -> Tensor:
        """The weights (S,) the page starts from, from ``qkv``."""
        return self.weights_at(self.query_position, self.key_position)

    def _payload(self) -> dict:
        return {
            **self._common(),
            "query": self.query.tolist(),
            "keys": self.keys.tolist(),
            "words": self.words,
            "query_position": self.query_position,
            "key_position": self.key_position,
            "max_position": self.max_position,
            "base": self.base,
            "pairs": self.pairs,
            "scale": self.scale,
        }

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import WEIGHTS_CMAP

        query, keys = self.rotated(self.query_position, self.key_position)
        scores = (keys @ query).numpy()  # (S,)
        offsets = [
            self.query_position - self.key_position - j for j in range(len(self.words))
        ]
        fig, ax = plt.subplots(figsize=(6.8, 3.6), layout="constrained")
        colour = plt.get_cmap(WEIGHTS_CMAP)(0.35)
        ax.bar(np.arange(len(self.words)), scores, color=colour)
        ax.set_xticks(
            np.arange(len(self.words)),
            labels=[
                f"{plain(w)}\n({o:+d})"
                for w, o in zip(self.words, offsets, strict=True)
            ],
        )
        ax.axhline(0, color="grey", linewidth=1)
        ax.set_ylabel(self._text("fig_ylabel"))
        ax.set_title(
            self._text("fig_title", m=self.query_position, n=self.key_position)
        )
        return fig

    def static_alt(self) -> str:
        return self._text(
            "alt",
            m=self.query_position,
            n=self.key_position,
            last=self.key_position + len(self.words) - 1,
        )

    def __repr__(self) -> str:
        return (
            f"RopeOffsets(E={self.query.shape[0]}, {len(self.words)} keys, "
            f"query at {self.query_position}, keys from {self.key_position})"
        )


def rope_offsets(
    query: Tensor,
    keys: Tensor,
    words: Sequence[str] | None = None,
    *,
    query_position: int = 4,
    key_position: int = 0,
    max_position: int = 16,
    base: float = 10000.0,
    pairs: str = "interleaved",
    scale: float | None = None,
    decimals: int = 3,
    lang: str | None = None,
) -> RopeOffsets:
    """Rotary positions (RoPE), live: the reader moves a query and a row of keys
    along the sentence; their scores depend only on the offsets.

    For the chapter *positions*. RoPE rotates each pair of coordinates of a query
    or key at position p by the angle ``p * base ** (-2 f / E)`` (pair f, from 0),
    so that the score of a query at p and a key at p' depends on p - p' only. The
    page puts the query at p and key j at p' + j (two sliders, and a box to move
    both together), shows the scores q·k and the weights ``softmax(scores * scale)``,
    and draws each rotated pair of the query and of one key in a circle.
    :meth:`RopeOffsets.weights_at` gives the same weights from ``qkv``.

    Args:
        query: the query, shape (E,) or (1, E), E even and at most 16.
        keys: the keys, shape (S, E), S at most 8.
        words: a name for each key (default ``k0``, ``k1``, ...).
        query_position: p at first (and in print), 0..max_position.
        key_position: p' at first, 0..max_position.
        max_position: the end of both sliders.
        base: the base of the angles (10000 in the RoPE paper).
        pairs: ``"interleaved"``, pairs (x_2f, x_2f+1) as in the RoPE paper, or
            ``"halves"``, pairs (x_c, x_c+E/2) as in some implementations.
        scale: the factor on the scores before the softmax (default
            ``1 / sqrt(E)``, as ``qkv``).
        decimals: decimals of the numbers shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`RopeOffsets`; its ``data-weights`` are the (S,) weights of the
        query and its ``data-scores`` the (S,) scores.

    Raises:
        ValueError: if an argument has the wrong type, shape or range.
    """
    return RopeOffsets(
        query,
        keys,
        words,
        query_position=query_position,
        key_position=key_position,
        max_position=max_position,
        base=base,
        pairs=pairs,
        scale=scale,
        decimals=decimals,
        lang=lang,
    )
