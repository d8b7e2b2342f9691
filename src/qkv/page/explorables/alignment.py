"""The explorable of the chapter *cross-attention*: :func:`alignment_explorer`.

Shapes: S French words (keys), L English words written (queries).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from qkv.language import N_
from qkv.page.explorables._base import Explorable, nice, plain

__all__ = ["alignment_explorer"]

#: The most sentences one explorable ships (each is a few hundred bytes).
MAX_SENTENCES = 40
#: The most models shown side by side.
MAX_MODELS = 3


class AlignmentExplorer(Explorable):
    """Pick a sentence and an English word; see :func:`alignment_explorer`."""

    kind = "qkv-x-align"
    LABELS = {
        "title": N_("Try it: where the decoder reads"),
        "sentence": N_("Held-out sentence"),
        "words": N_("English word written"),
        "hint": N_(
            "Keys: Tab to the menu and ↑/↓ to pick a sentence; Tab to "
            "the English words and ←/→ to pick one (Home/End: the first/last)."
        ),
        "model_dot": N_("dot product"),
        "model_additive": N_("additive score"),
        "french": N_("French word"),
        "weight": N_("weight"),
        "caption": N_("{model}: weights on the French words while writing “{word}”"),
        "expectedMark": N_("expected"),
        "topExpected": N_(
            "{model}: most weight on “{top}” ({weight}), the word "
            "the reference alignment expects."
        ),
        "topOther": N_(
            "{model}: most weight on “{top}” ({weight}); the reference "
            "alignment expects “{expected}”."
        ),
        "topNoReference": N_("{model}: most weight on “{top}” ({weight})."),
        "fig_title": N_("{model}"),
        "fig_xlabel": N_("French word (key)"),
        "fig_ylabel": N_("English word written (query)"),
        "alt": N_(
            "Two heatmaps of the cross-attention weights of the decoder "
            "(mean of the heads), one per model ({models}), on the held-out "
            "sentence “{sentence}”: English words written against French words."
        ),
    }
    scripts = ("explorable.js", "alignment.js")
    build = "qkvAlignmentExplorer"

    def __init__(
        self,
        sentences: Sequence,
        models: Sequence,
        *,
        start: int = 0,
        decimals: int = 3,
        lang: str | None = None,
    ) -> None:
        from qkv.experiments import translate as tr

        super().__init__(lang, decimals)
        if isinstance(models, tr.Translator) or not isinstance(models, Sequence):
            raise ValueError(
                f"models must be a list of 1 to {MAX_MODELS} Translator, got "
                f"{type(models).__name__}"
            )
        if not 1 <= len(models) <= MAX_MODELS or not all(
            isinstance(m, tr.Translator) for m in models
        ):
            raise ValueError(
                f"models must be a list of 1 to {MAX_MODELS} Translator, got "
                f"{[type(m).__name__ for m in models]}"
            )
        scores = [m.score for m in models]
        if len(set(scores)) != len(scores):
            raise ValueError(f"models must have different scores, got {scores}")
        if isinstance(sentences, str) or not isinstance(sentences, Sequence):
            raise ValueError(
                f"sentences must be a list of tr.Sentence, got "
                f"{type(sentences).__name__}"
            )
        if not 1 <= len(sentences) <= MAX_SENTENCES or not all(
            isinstance(s, tr.Sentence) for s in sentences
        ):
            raise ValueError(
                f"sentences must be a list of 1 to {MAX_SENTENCES} tr.Sentence, "
                f"got {len(sentences)} items of types "
                f"{sorted({type(s).__name__ for s in sentences})}"
            )
        if isinstance(start, bool) or not isinstance(start, int):
            raise ValueError(f"start must be an int, got {start!r}")
        if not 0 <= start < len(sentences):
            raise ValueError(
                f"start must be in 0..{len(sentences) - 1} (one of the "
                f"{len(sentences)} sentences), got {start}"
            )
        self.scores = scores
        self.start = start
        self.sentences = list(sentences)
        #: Per sentence: the English words written and, per score, the weights
        #: (L, S) of the last decoder layer, mean of the heads ([eos] left out).
        self.english: list[list[str]] = []
        self.weights: list[dict[str, Tensor]] = []
        for sentence in self.sentences:
            written, maps = None, {}
            for model in models:
                alignment = tr.align(model, sentence.french())
                words = alignment.target[:-1]  # without [eos]
                if written is not None and words != written:
                    raise ValueError(
                        "the models must write the same translation of each "
                        f"sentence (the page compares them word by word), got "
                        f"{written} and {words} for {sentence.french()}"
                    )
                written = words
                maps[model.score] = alignment.mean[-1, : len(words)].detach().cpu()
            self.english.append(written)
            self.weights.append(maps)

    def _css(self, root_id: str) -> str:
        """The English words as chips that wrap, the models' tables side by side
        (they wrap under each other on a narrow screen), a long sentence that
        wraps in its menu's width."""
        r = f"#{root_id}"
        return (
            f"{r} .qkv-x-pick {{ display: flex; flex-wrap: wrap; align-items: center; "
            "gap: .2em .4em; min-width: 0; max-width: 100%; }"
            f"{r} select.qkv-x-sentence {{ min-width: 0; max-width: 100%; margin: 0; "
            "}"
            f"{r} .qkv-x-words {{ display: flex; flex-wrap: wrap; gap: .3em; "
            "min-width: 0; max-width: 100%; }"
            f"{r} .qkv-x-word {{ border: 1px solid var(--qkv-border); "
            "border-radius: 4px; padding: 0 .45em; cursor: pointer; "
            "overflow-wrap: anywhere; }"
            f"{r} .qkv-x-word[aria-checked=true] {{ background: var(--qkv-accent); "
            "color: var(--qkv-bg); font-weight: 700; }"
            f"{r} table.qkv-x-model {{ min-width: 15em; }}"
            f"{r} table.qkv-x-model th {{ overflow-wrap: anywhere; }}"
            f"{r} td.qkv-x-barcell {{ width: 6em; text-align: left; }}"
            f"{r} .qkv-x-expected {{ font-weight: 400; color: var(--qkv-muted); }}"
        )

    def expected(self, index: int) -> list[int | None]:
        """Per English word of sentence ``index``: the French index its reference
        alignment (:meth:`Sentence.alignment`) expects, or None where the
        translation written is not the reference one."""
        sentence = self.sentences[index]
        if self.english[index] != sentence.english():
            return [None] * len(self.english[index])
        pairs = dict(sentence.alignment())
        return [pairs.get(i) for i in range(len(self.english[index]))]

    def _payload(self) -> dict:
        return {
            **self._common(),
            "scores": self.scores,
            "start": self.start,
            "sentences": [
                {
                    "french": sentence.french(),
                    "english": self.english[i],
                    "expected": self.expected(i),
                    "weights": {
                        score: nice(self.weights[i][score]) for score in self.scores
                    },
                }
                for i, sentence in enumerate(self.sentences)
            ],
        }

    def _static_figure(self):
        import matplotlib.pyplot as plt

        from qkv.page.plot import heatmap

        i = self.start
        n = len(self.scores)
        fig, axes = plt.subplots(
            1, n, figsize=(4.6 * n, 4.4), layout="constrained", squeeze=False
        )
        for ax, score in zip(axes[0], self.scores, strict=True):
            heatmap(
                self.weights[i][score],
                [plain(w) for w in self.english[i]],
                [plain(w) for w in self.sentences[i].french()],
                ax=ax,
                decimals=2,
                vmax=1.0,
                colorbar=False,
                title=self._text("fig_title", model=self._text(f"model_{score}")),
                xlabel=self._text("fig_xlabel"),
                ylabel=self._text("fig_ylabel"),
            )
        return fig

    def static_alt(self) -> str:
        return self._text(
            "alt",
            models=", ".join(self._text(f"model_{s}") for s in self.scores),
            sentence=" ".join(self.sentences[self.start].french()),
        )

    def __repr__(self) -> str:
        return (
            f"AlignmentExplorer({len(self.sentences)} sentences, scores {self.scores})"
        )


def alignment_explorer(
    sentences: Sequence,
    models: Sequence,
    *,
    start: int = 0,
    decimals: int = 3,
    lang: str | None = None,
) -> AlignmentExplorer:
    """Alignments, live: the reader picks a sentence and an English word of its
    translation, and sees, for each model side by side, the cross-attention
    weight on each French word, the French word that gets the most and whether
    it is the one the reference alignment expects. Keyboard: a menu of
    sentences (↑/↓), the English words as one tab stop (←/→, Home/End).

    Explained in the chapter *cross-attention*. The weights are computed here,
    once, with :func:`qkv.experiments.translate.align` (the last decoder layer,
    the mean of its heads, each English word written; ``[eos]`` left out); the
    page only shows them.

    Args:
        sentences: the sentences to offer, 1 to 40
            (:class:`~qkv.experiments.translate.Sentence`).
        models: 1 to 3 trained :class:`~qkv.experiments.translate.Translator`,
            each with its own score (``"dot"``, ``"additive"``); every model must
            write the same translation of each sentence.
        start: the sentence shown first (and in print).
        decimals: decimals of the weights shown.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        An :class:`AlignmentExplorer`; its ``data-weights`` are the weights of
        the word picked, ``{score: [S weights]}``.

    Raises:
        ValueError: if an argument has the wrong type or range, or if the models
            write different translations of a sentence.
    """
    return AlignmentExplorer(
        sentences, models, start=start, decimals=decimals, lang=lang
    )
