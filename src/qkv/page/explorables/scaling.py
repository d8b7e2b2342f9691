"""The explorable of the chapter *scaled-dot-product*: :func:`scaled_scores`.

Shapes: L queries, S keys, d_k their size.
"""

from __future__ import annotations

import math

from torch import Tensor

from qkv.attention import scaled_dot_product_attention
from qkv.language import N_
from qkv.page.explorables._base import Explorable
from qkv.page.explorables.seeded import seeded_normal
from qkv.validate import check_bool, check_int

__all__ = ["scaled_scores"]


def _check_power_of_two(name: str, value: int, largest: int) -> int:
    value = check_int(name, value, minimum=1)
    if value > largest or value & (value - 1):
        raise ValueError(
            f"{name} must be a power of two from 1 to {largest}, got {value}"
        )
    return value


class ScaledScores(Explorable):
    """Slide d_k, switch the scaling; see :func:`scaled_scores`."""

    kind = "qkv-x-sdp"
    LABELS = {
        "title": N_("Try it: the size of the scores"),
        "dk": N_("Size of queries and keys, dₖ"),
        "dkValue": N_("dₖ = {dk}"),
        "scale": N_("Divide the scores by √dₖ"),
        "redraw": N_("New random vectors"),
        "seed": N_("(seed {seed})"),
        "axis": N_("The scores, one line per query, on an axis that stays fixed"),
        "corner": N_("query ↓ key →"),
        "caption": N_(
            "Attention weights of {rows} random queries (rows) over "
            "{cols} random keys (columns)"
        ),
        "stats": N_(
            "Scores: standard deviation {sd} (√dₖ = {sqrt}). Largest weight "
            "of a row, on average over these {rows} rows: {top} (all weights "
            "equal: {uniform}). Rows with a weight above 0.99: {onehot} of {rows}."
        ),
        "fig_scaled": N_("scores divided by √dₖ"),
        "fig_raw": N_("scores not divided"),
        "fig_title": N_("dₖ = {dk}, {scaling}"),
        "fig_key": N_("key"),
        "fig_query": N_("query"),
        "alt": N_(
            "Heatmap of the attention weights of {rows} random queries over "
            "{cols} random keys of size {dk}, {scaling}."
        ),
    }
    scripts = ("explorable.js", "seeded.js", "scaling.js")
    build = "qkvScaledScores"

    def __init__(
        self,
        d_k: int = 64,
        *,
        scaled: bool = True,
        n_queries: int = 8,
        n_keys: int = 8,
        seed: int = 0,
        max_d_k: int = 1024,
        decimals: int = 2,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, decimals)
        self.max_d_k = _check_power_of_two("max_d_k", max_d_k, 4096)
        self.d_k = _check_power_of_two("d_k", d_k, self.max_d_k)
        check_bool("scaled", scaled)
        self.scaled = scaled
        self.n_queries = check_int("n_queries", n_queries, minimum=1)
        self.n_keys = check_int("n_keys", n_keys, minimum=2)
        if self.n_queries > 16 or self.n_keys > 32:
            raise ValueError(
                "n_queries must be at most 16 and n_keys at most 32 (they are shown "
                f"in a page), got {n_queries} and {n_keys}"
            )
        self.seed = seed
        self._all = seeded_normal(seed, self.n_queries + self.n_keys, self.max_d_k)

    def vectors(self, d_k: int | None = None) -> tuple[Tensor, Tensor]:
        """The random queries (L, d_k) and keys (S, d_k) the page draws (float64):
        the first ``d_k`` numbers of the same vectors for every ``d_k``."""
        d_k = self.d_k if d_k is None else _check_power_of_two("d_k", d_k, self.max_d_k)
        return self._all[: self.n_queries, :d_k], self._all[self.n_queries :, :d_k]

    def weights_at(self, d_k: int, scaled: bool) -> Tensor:
        """The weights (L, S) the page shows for ``d_k`` and ``scaled``, by ``qkv``."""
        query, key = self.vectors(d_k)
        scale = 1 / math.sqrt(query.shape[-1]) if scaled else 1.0
        _, weights = scaled_dot_product_attention(query, key, key, scale=scale)
        return weights  # (L, S)

    @property
    def weights(self) -> Tensor:
        """The weights (L, S) the page starts from, from ``qkv``."""
        return self.weights_at(self.d_k, self.scaled)

    def _payload(self) -> dict:
        return {
            **self._common(),
            "d_k": self.d_k,
            "max_d_k": self.max_d_k,
            "scaled": self.scaled,
            "n_queries": self.n_queries,
            "n_keys": self.n_keys,
            "seed": self.seed,
        }

    def _scaling(self) -> str:
        return self._text("fig_scaled" if self.scaled else "fig_raw")

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import heatmap

        fig, ax = plt.subplots(figsize=(6.8, 5.2), layout="constrained")
        heatmap(
            self.weights,
            [f"q{i + 1}" for i in range(self.n_queries)],
            [f"k{j + 1}" for j in range(self.n_keys)],
            ax=ax,
            decimals=self.decimals,
            vmin=0.0,
            vmax=1.0,
            title=self._text("fig_title", dk=self.d_k, scaling=self._scaling()),
            xlabel=self._text("fig_key"),
            ylabel=self._text("fig_query"),
        )
        return fig

    def static_alt(self) -> str:
        return self._text(
            "alt",
            rows=self.n_queries,
            cols=self.n_keys,
            dk=self.d_k,
            scaling=self._scaling(),
        )

    def __repr__(self) -> str:
        return (
            f"ScaledScores(d_k={self.d_k}, scaled={self.scaled}, "
            f"{self.n_queries} queries, {self.n_keys} keys, seed={self.seed})"
        )


def scaled_scores(
    d_k: int = 64,
    *,
    scaled: bool = True,
    n_queries: int = 8,
    n_keys: int = 8,
    seed: int = 0,
    max_d_k: int = 1024,
    decimals: int = 2,
    lang: str | None = None,
) -> ScaledScores:
    """Why divide by sqrt(d_k), live: a slider for the size d_k of random queries
    and keys and a switch for the division; the page shows the spread of the
    scores and how peaked each row of weights gets.

    Explained in the chapter *scaled-dot-product*. The vectors are drawn from
    ``seed`` by :func:`seeded_normal` (the page and Python draw the same numbers):
    L random queries and S random keys of size ``max_d_k``, of which the first
    ``d_k`` coordinates are used. :meth:`ScaledScores.weights_at` gives, from
    ``qkv``, the weights the page shows for any ``d_k``.

    Args:
        d_k: the size shown first (and in print), a power of two.
        scaled: whether the scores are divided by sqrt(d_k) at first.
        n_queries: L, at most 16.
        n_keys: S, at least 2 and at most 32.
        seed: the seed of the random vectors (a button draws the next one).
        max_d_k: the largest d_k of the slider, a power of two up to 4096.
        decimals: decimals of the weights shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`ScaledScores`; its ``data-weights`` are the (L, S) weights.

    Raises:
        ValueError: if an argument is out of range.
    """
    return ScaledScores(
        d_k,
        scaled=scaled,
        n_queries=n_queries,
        n_keys=n_keys,
        seed=seed,
        max_d_k=max_d_k,
        decimals=decimals,
        lang=lang,
    )
