"""The explorable of the chapter *decoders*: :func:`kv_cache_calculator`.

A model's configuration: D the model dimension, H query heads, H_kv key/value
heads, L layers; E = D / H the size of a head.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from qkv.cost import kv_cache_bytes
from qkv.language import N_, get_language, localise, set_language
from qkv.page.explorables._base import LANGUAGES, MAX_WORD_CHARS, Explorable, plain
from qkv.page.glue import human_bytes
from qkv.page.numbers import byte_units
from qkv.validate import check_int

__all__ = ["kv_cache_calculator"]

#: The numbers a reader may type (the page says so when one is out of range):
#: small enough that every size stays exact in Python's ``human_bytes``.
LIMITS = {
    "dim": 1 << 20,
    "heads": 1 << 14,
    "kv_heads": 1 << 14,
    "layers": 10_000,
    "n_tokens": 1_000_000_000,
    "batch": 4096,
}
#: Bytes per number the page offers: 32-bit, 16-bit and 8-bit numbers.
BYTES_PER_NUMBER = (4, 2, 1)
#: The three ways of keeping keys and values the page compares.
KINDS = ("model", "mha", "mqa")


def check_config(name: str, config) -> tuple[int, int, int, int]:
    """``config`` as (D, H, H_kv, layers), each in :data:`LIMITS`, with H
    dividing D and H_kv dividing H."""
    if isinstance(config, str) or len(config) != 4:
        raise ValueError(
            f"{name} must be (D, H, H_kv, layers), four ints, got {config!r}"
        )
    dim, heads, kv_heads, layers = (
        check_int(f"{name}[{i}]", value, minimum=1) for i, value in enumerate(config)
    )
    for key, value in zip(LIMITS, (dim, heads, kv_heads, layers), strict=False):
        if value > LIMITS[key]:
            raise ValueError(
                f"{name}: {key} must be at most {LIMITS[key]}, got {value} "
                f"in {config!r}"
            )
    if dim % heads or heads % kv_heads:
        raise ValueError(
            f"{name}: H must divide D and H_kv must divide H, got D={dim}, "
            f"H={heads}, H_kv={kv_heads}"
        )
    return dim, heads, kv_heads, layers


def cache_sizes(
    config: tuple[int, int, int, int],
    bytes_per_number: int = 2,
    n_tokens: int = 4096,
    batch: int = 1,
) -> dict[str, tuple[int, int]]:
    """What the page shows, from :func:`qkv.cost.kv_cache_bytes`: for the model's
    own H_kv (``"model"``), for multi-head attention (H_kv = H, ``"mha"``) and for
    multi-query attention (H_kv = 1, ``"mqa"``), the bytes of the cache per token
    and for ``batch`` sequences of ``n_tokens`` tokens."""
    dim, heads, kv_heads, layers = check_config("config", config)
    head_dim = dim // heads
    sizes = {}
    for kind, kv in zip(KINDS, (kv_heads, heads, 1), strict=True):
        sizes[kind] = (
            kv_cache_bytes(1, layers, kv * head_dim, bytes_per_number),
            kv_cache_bytes(n_tokens * batch, layers, kv * head_dim, bytes_per_number),
        )
    return sizes


class KVCacheCalculator(Explorable):
    """The cache of published decoders and of a reader's own; see
    :func:`kv_cache_calculator`."""

    kind = "qkv-x-kv"
    LABELS = {
        "title": N_("Try it: the KV cache of a decoder"),
        "hint": N_(
            "Keys: Tab moves between the controls; the arrow keys pick a "
            "model or a size and step a number up or down; type a number in a box."
        ),
        "model": N_("Model"),
        "own": N_("Your own numbers"),
        "dim": N_("D"),
        "heads": N_("H (heads)"),
        "kvHeads": N_("H_kv (key/value heads)"),
        "layers": N_("layers"),
        "bytes": N_("Numbers of"),
        "bits32": N_("32 bits (4 bytes)"),
        "bits16": N_("16 bits (2 bytes)"),
        "bits8": N_("8 bits (1 byte)"),
        "tokens": N_("Context, in tokens"),
        "tokensSlider": N_("Context, powers of two"),
        "batch": N_("Sequences in the batch"),
        "caption": N_("The cache of {name} for a batch of {batch} × {tokens} tokens"),
        "yourModel": N_("your model"),
        "kind": N_("keys and values"),
        "kvCount": N_("H_kv"),
        "perToken": N_("per token"),
        "total": N_("for the context"),
        "ratio": N_("multi-head ÷ this"),
        "sizes": N_("at a glance"),
        "model_row": N_("as the model (H_kv = {kv})"),
        "mha_row": N_("multi-head (H_kv = H = {kv})"),
        "mqa_row": N_("multi-query (H_kv = 1)"),
        "notInt": N_("{name} must be a whole number from 1 to {max}."),
        "notDivide": N_(
            "H must divide D, and H_kv must divide H (D = {dim}, "
            "H = {heads}, H_kv = {kv})."
        ),
        "status": N_(
            "Cache of {name}: {total} for a batch of {batch} × "
            "{tokens} tokens, {per} per token; multi-head attention would keep {ratio} "
            "times this."
        ),
        "fig_title": N_("{name}, {bits}-bit numbers: the cache of {tokens} tokens"),
        "fig_bytes": N_("bytes of the cache (binary units)"),
        "fig_label": N_("{per} per token, {total}"),
        "alt": N_(
            "Bar chart of the KV cache of {name} for {tokens} tokens in "
            "{bits}-bit numbers: {model} as the model, {mha} as multi-head "
            "attention, {mqa} as multi-query attention."
        ),
    }
    scripts = ("explorable.js", "kv_cache.js")
    build = "qkvKVCache"

    def __init__(
        self,
        configs: Mapping[str, tuple[int, int, int, int]],
        *,
        model: str | None = None,
        bytes_per_number: int = 2,
        n_tokens: int = 4096,
        batch: int = 1,
        lang: str | None = None,
    ) -> None:
        super().__init__(lang, 1)
        if not isinstance(configs, Mapping) or not 1 <= len(configs) <= 12:
            raise ValueError(
                "configs must be a mapping of 1 to 12 names to (D, H, H_kv, layers), "
                f"got {configs!r}"
            )
        self.configs = {}
        for name, config in configs.items():
            if not isinstance(name, str) or not 1 <= len(name) <= MAX_WORD_CHARS:
                raise ValueError(
                    f"configs must be named by strings of 1 to {MAX_WORD_CHARS} "
                    f"characters, got {name!r}"
                )
            self.configs[name] = check_config(f"configs[{name!r}]", config)
        self.model = next(iter(self.configs)) if model is None else model
        if self.model not in self.configs:
            raise ValueError(
                f"model must be one of {list(self.configs)}, got {self.model!r}"
            )
        self.bytes_per_number = check_int(
            "bytes_per_number", bytes_per_number, minimum=1
        )
        if self.bytes_per_number not in BYTES_PER_NUMBER:
            raise ValueError(
                f"bytes_per_number must be one of {BYTES_PER_NUMBER}, "
                f"got {bytes_per_number}"
            )
        self.n_tokens = check_int("n_tokens", n_tokens, minimum=1)
        self.batch = check_int("batch", batch, minimum=1)
        for key, value in (("n_tokens", self.n_tokens), ("batch", self.batch)):
            if value > LIMITS[key]:
                raise ValueError(f"{key} must be at most {LIMITS[key]}, got {value}")

    def _css(self, root_id: str) -> str:
        # the boxes hold their largest numbers, a size never breaks before its
        # unit (a long one scrolls inside the widget), the bars' column has room
        return (
            f"#{root_id} input.qkv-x-number {{ width: 6.5em; }}"
            f"#{root_id} input.qkv-x-wide {{ width: 8em; }}"
            f"#{root_id} table.qkv-x-kv-table td {{ white-space: nowrap; }}"
            f"#{root_id} td.qkv-x-kv-glance {{ min-width: 8em; text-align: left; }}"
            f"#{root_id} td.qkv-x-kv-glance .qkv-x-bar {{ height: .8em; }}"
        )

    def sizes(self, name: str | None = None) -> dict[str, tuple[int, int]]:
        """:func:`cache_sizes` of the model ``name`` (the first shown by default),
        with the widget's bytes per number, context and batch."""
        config = self.configs[self.model if name is None else name]
        return cache_sizes(config, self.bytes_per_number, self.n_tokens, self.batch)

    def _payload(self) -> dict:
        return {
            **self._common(),
            "configs": [[name, *config] for name, config in self.configs.items()],
            "model": self.model,
            "bytes_per_number": self.bytes_per_number,
            "n_tokens": self.n_tokens,
            "batch": self.batch,
            "limits": LIMITS,
            "units": {lang: list(byte_units(lang)) for lang in LANGUAGES},
        }

    @contextlib.contextmanager
    def _speaking(self):
        """``human_bytes`` and the counts in the language of the labels."""
        previous = get_language()
        set_language(self.lang or "en")
        try:
            yield
        finally:
            set_language(previous)

    def _static_values(self) -> dict[str, str]:
        sizes = self.sizes()
        values = {
            "name": self.model,
            "tokens": localise(f"{self.n_tokens:,}"),
            "bits": str(8 * self.bytes_per_number),
        }
        for kind in KINDS:
            values[kind] = human_bytes(sizes[kind][1])
        return values

    def _static_figure(self):
        import matplotlib.pyplot as plt

        sizes = self.sizes()
        _, heads, kv_heads, _ = self.configs[self.model]
        shown = {"model": kv_heads, "mha": heads, "mqa": 1}
        labels = [self._text(f"{kind}_row", kv=shown[kind]) for kind in KINDS]
        # floats: matplotlib's bars overflow on ints past 2**63 bytes
        totals = [float(sizes[kind][1]) for kind in KINDS]
        fig, ax = plt.subplots(figsize=(7.4, 2.4), layout="constrained")
        bars = ax.barh(range(3), totals, color=["C0", "C1", "C2"])
        ax.invert_yaxis()
        ax.set_yticks(range(3), [plain(label) for label in labels])
        ax.set_xticks([])
        ax.set_xlim(0, max(totals) * 2.2)
        ax.set_xlabel(self._text("fig_bytes"))
        with self._speaking():
            values = self._static_values()
            for bar, kind in zip(bars, KINDS, strict=True):
                per, total = (human_bytes(size) for size in sizes[kind])
                ax.text(
                    bar.get_width(),
                    bar.get_y() + bar.get_height() / 2,
                    "  " + self._text("fig_label", per=per, total=total),
                    va="center",
                )
        ax.set_title(plain(self._text("fig_title", **values)))
        return fig

    def static_alt(self) -> str:
        with self._speaking():
            return self._text("alt", **self._static_values())

    def __repr__(self) -> str:
        return (
            f"KVCacheCalculator({list(self.configs)}, model={self.model!r}, "
            f"bytes_per_number={self.bytes_per_number}, n_tokens={self.n_tokens}, "
            f"batch={self.batch})"
        )


def kv_cache_calculator(
    configs: Mapping[str, tuple[int, int, int, int]],
    *,
    model: str | None = None,
    bytes_per_number: int = 2,
    n_tokens: int = 4096,
    batch: int = 1,
    lang: str | None = None,
) -> KVCacheCalculator:
    """The KV cache of published decoders, live: pick a model of ``configs`` (or
    type your own D, H, H_kv and layers), the bytes per number, the context and
    the batch; the page shows the cache per token and for the context, with the
    model's key/value heads, as multi-head attention (H_kv = H) and as
    multi-query attention (H_kv = 1), in binary units as
    :func:`qkv.page.glue.human_bytes` writes them, and the ratio.

    Explained in the chapter *decoders*. :func:`cache_sizes` gives, from
    :func:`qkv.cost.kv_cache_bytes`, the numbers the page shows.

    Args:
        configs: model name -> (D, H, H_kv, layers), H dividing D and H_kv
            dividing H; 1 to 12 models.
        model: the model shown first (and in print); the first by default.
        bytes_per_number: 4, 2 or 1 (32-, 16- or 8-bit numbers).
        n_tokens: the context shown first, in tokens.
        batch: the sequences in the batch shown first.
        lang: ``"en"`` or ``"fr"``; ``None`` follows the page's ``<html lang>``.

    Returns:
        A :class:`KVCacheCalculator`; its root's ``data-sizes`` are the bytes
        shown, as strings (they may exceed JavaScript's exact integers).

    Raises:
        ValueError: if an argument is out of range.
    """
    return KVCacheCalculator(
        configs,
        model=model,
        bytes_per_number=bytes_per_number,
        n_tokens=n_tokens,
        batch=batch,
        lang=lang,
    )
