"""An interactive attention head view that works in a static page, offline.

Explained in the chapter *pretrained-model*. ``head_view(maps)`` returns an object
that Jupyter and the book render as one self-contained block of HTML: a layer and
a head selector, the tokens in two columns, and a line from each token to every
token it attends to, thicker for a larger weight. Hover or focus (Tab, then the
arrow keys) a token on the left to see only its attention.

Design constraints, each tested: those of every widget of :mod:`qkv.page.widgets` (no
network, no CDN, no require.js; several views on one page do not interfere; tokens
are escaped, so a token such as ``</script>`` cannot run code; a static heatmap, a
PNG inside the page, stands in where scripts do not run and in print), and it runs
in the built site over http and from ``file://``. Its words follow the page's
language (``<html lang>``: English or French), its static figure's alt text too
(in a French build of the book). Its stylesheet and script are
``qkv/page/static/headview.css`` and ``headview.js``.
"""

from __future__ import annotations

import html

from qkv.language import LANGUAGES, N_, get_language, gettext, translated
from qkv.page.widgets import Widget, figure_png, isolated
from qkv.pretrained import AttentionMaps
from qkv.validate import check_index, check_int

__all__ = ["HeadView", "head_view"]

# Given to headview.css (--qkv-hv-row) and headview.js (data.row_height, lines_width).
ROW_HEIGHT = 26  # px per token row
LINES_WIDTH = 170  # px between the two columns

#: The most tokens a head view shows: one row of ROW_HEIGHT px each, so 96
#: rows are already three screens tall; and every weight of every head shown
#: is written into the page (96 tokens, 12 layers of 12 heads: 1.3 million).
MAX_TOKENS = 96
#: The longest token a head view shows, in characters (as the explorables).
MAX_TOKEN_CHARS = 48
#: The most decimals of the weights a head view writes into the page.
MAX_DECIMALS = 6
#: The most weights a head view writes into the page (layers shown x heads x
#: T x T): about 6 MB of page at 3 decimals. Choose one layer to show more.
MAX_WEIGHTS = 1_500_000

NNBSP = "\u202f"  # French: a narrow no-break space before : and ;

#: The view's words (English messages of qkv's catalogue); ``{...}`` are filled in.
LABELS = {
    "layer": N_("Layer"),
    "head": N_("Head"),
    "attending": N_("attending tokens"),
    "attended": N_("attended tokens"),
    "idle": N_("Hover or focus a token on the left to see where it looks."),
    "looks": N_("{token} looks at: {top}"),
    "sep": N_(", "),
    "alt": N_(
        "Attention heatmap of layer {layer}, head {head}, over the tokens: {tokens}"
    ),
}


class HeadView(Widget):
    """A self-contained interactive view of attention heads (see the module doc).

    Args:
        maps: from :func:`qkv.pretrained.attention_maps`.
        layer: show only this layer (0-based); ``None`` for all layers.
        head: the head shown first (and in print).
        decimals: precision of the weights embedded in the page.

    Raises:
        ValueError: if the weights are not finite, negative, or have rows that
            do not sum to 1 (see :meth:`qkv.pretrained.AttentionMaps.check`), or
            ``layer``, ``head`` or ``decimals`` is not an int in range, or
            the maps are larger than a page can hold (:data:`MAX_TOKENS`
            tokens, :data:`MAX_WEIGHTS` weights shown).
    """

    def __init__(
        self,
        maps: AttentionMaps,
        layer: int | None = None,
        head: int = 0,
        decimals: int = 3,
    ) -> None:
        if not isinstance(maps, AttentionMaps):
            raise ValueError(f"maps must be AttentionMaps, got {type(maps).__name__}")
        n_tokens = len(maps.tokens)
        if n_tokens > MAX_TOKENS:  # before maps.check(), which reads every weight
            raise ValueError(
                f"maps has {n_tokens} tokens; a head view shows at most "
                f"{MAX_TOKENS} (one row each, and every weight is written into "
                "the page): give attention_maps a shorter text"
            )
        longest = max((len(str(token)) for token in maps.tokens), default=0)
        if longest > MAX_TOKEN_CHARS:
            raise ValueError(
                f"maps has a token of {longest} characters; a head view shows "
                f"tokens of at most {MAX_TOKEN_CHARS}"
            )
        maps.check()  # again: the weights may have been edited since
        if layer is not None:
            layer = check_index("layer", layer, maps.n_layers)
        head = check_index("head", head, maps.n_heads)
        decimals = check_int("decimals", decimals, minimum=0)
        if decimals > MAX_DECIMALS:
            raise ValueError(
                f"decimals must be an int in 0..{MAX_DECIMALS} (weights are in "
                f"[0, 1]), got {decimals}"
            )
        shown = (1 if layer is not None else maps.n_layers) * maps.n_heads
        if shown * n_tokens**2 > MAX_WEIGHTS:
            raise ValueError(
                f"maps of {n_tokens} tokens with {shown} heads shown would write "
                f"{shown * n_tokens**2:,} weights into the page; a head view holds "
                f"at most {MAX_WEIGHTS:,}: choose one layer (layer=...) or a "
                "shorter text"
            )
        self.maps = maps
        self.layers = list(range(maps.n_layers)) if layer is None else [layer]
        self.head = head
        self.decimals = decimals

    kind = "qkv-hv"
    root_classes = "qkv-headview"
    live_classes = "qkv-hv-interactive"
    static_classes = "qkv-hv-print"
    styles = ("headview.css",)
    scripts = ("headview.js",)
    build = "qkvHeadView"

    def _payload(self) -> dict:
        weights = self.maps.weights[self.layers].double()  # (layers shown, H, T, T)
        factor = 10.0**self.decimals
        rounded = ((weights * factor).round() / factor).tolist()  # whole tensor at once
        return {
            "tokens": list(self.maps.tokens),
            "layers": self.layers,
            "weights": rounded,
            "labels": {lang: translated(LABELS, lang) for lang in LANGUAGES},
            "row_height": ROW_HEIGHT,
            "lines_width": LINES_WIDTH,
        }

    def static_png(self) -> bytes:
        """The first layer shown, head ``head``, as a heatmap (PNG bytes)."""
        from qkv.page.plot import heatmap

        layer = self.layers[0]
        words = translated(LABELS, get_language())  # the figure in the language of qkv
        layer_word, head_word = words["layer"].lower(), words["head"].lower()
        fig = heatmap(
            self.maps.weights[layer, self.head],
            self.maps.tokens,
            annotate=False,
            title=f"{layer_word} {layer}, {head_word} {self.head}",
        )
        return figure_png(fig, dpi=110)

    def _alt(self, lang: str) -> str:
        return (
            gettext(LABELS["alt"], language=lang)
            .replace("{layer}", str(self.layers[0]))
            .replace("{head}", str(self.head))
            .replace("{tokens}", " ".join(map(isolated, self.maps.tokens)))
        )

    def static_alt(self) -> str:
        return self._alt("en")

    def static_alts(self) -> dict[str, str]:
        return {lang: self._alt(lang) for lang in LANGUAGES if lang != "en"}

    def _css(self, root_id: str) -> str:
        return f"#{root_id} {{ --qkv-hv-row: {ROW_HEIGHT}px; }}\n"

    def _live(self) -> str:
        tokens = [html.escape(t) for t in self.maps.tokens]

        def options(values, labels, selected):
            return "".join(
                f'<option value="{v}"{" selected" if v == selected else ""}>'
                f"{html.escape(str(label))}</option>"
                for v, label in zip(values, labels, strict=True)
            )

        layer_options = options(range(len(self.layers)), self.layers, 0)
        n_heads = self.maps.n_heads
        head_options = options(range(n_heads), range(n_heads), self.head)
        column = "".join(
            f'<li><button type="button" class="qkv-hv-token" data-index="{i}">'
            f"{token}</button></li>"
            for i, token in enumerate(tokens)
        )
        height = ROW_HEIGHT * len(tokens)
        # in qkv's language (the French notebook's), as the static figure; the
        # script writes them again in the page's
        words = {k: html.escape(v) for k, v in translated(LABELS).items()}
        return (
            '<div class="qkv-hv-controls">'
            f'<label><span class="qkv-hv-layer-name">{words["layer"]}</span>'
            f'<select class="qkv-hv-layer">{layer_options}</select></label>'
            f'<label><span class="qkv-hv-head-name">{words["head"]}</span>'
            f'<select class="qkv-hv-head">{head_options}</select></label>'
            "</div>"
            '<div class="qkv-hv-body">'
            f'<ol class="qkv-hv-left" aria-label="{words["attending"]}">{column}</ol>'
            f'<svg class="qkv-hv-lines" width="{LINES_WIDTH}" height="{height}" '
            f'aria-hidden="true"></svg>'
            f'<ol class="qkv-hv-right" aria-label="{words["attended"]}">{column}</ol>'
            "</div>"
            '<p class="qkv-hv-status" aria-live="polite"></p>'
        )

    def __repr__(self) -> str:
        return (
            f"HeadView({len(self.maps.tokens)} tokens, layers {self.layers}, "
            f"{self.maps.n_heads} heads)"
        )


def head_view(maps: AttentionMaps, layer: int | None = None, head: int = 0) -> HeadView:
    """An interactive, offline view of the attention in ``maps``.

    Explained in the chapter *pretrained-model*.

    Args:
        maps: from :func:`qkv.pretrained.attention_maps`.
        layer: one layer to show (0-based), or ``None`` for a layer selector.
        head: the head shown first, and in print.

    Returns:
        A :class:`HeadView`; the last expression of a cell renders it.
    """
    return HeadView(maps, layer=layer, head=head)
