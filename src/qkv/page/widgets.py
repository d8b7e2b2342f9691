"""Self-contained interactive HTML: the layer under the head view and the explorables.

Used by :mod:`qkv.page.headview` (chapter *pretrained-model*) and
:mod:`qkv.page.explorables` (chapters *attention-by-hand*, *scaled-dot-product*,
*masking*). A widget is one block of HTML that Jupyter and the book render as it
is. What every widget gets from this layer, each tested:

* no network, no CDN, no framework: its CSS and its script are inline, and the
  script is plain JavaScript that needs nothing else (the files of
  ``qkv/page/static``, linted by ESLint: ``make lint-js``);
* several widgets on one page do not interfere: each has its own id, and its
  script only touches the elements inside it;
* text from the caller (words, tokens) cannot run: it is HTML-escaped where it is
  markup, the data are JSON with ``<``, ``>`` and ``&`` escaped (nothing can close
  the ``<script>`` element they sit in), and the scripts insert text with
  ``textContent`` only; a word put into a sentence is isolated (U+2068 ...
  U+2069), so that a right-to-left override in it cannot reorder the rest;
* a static figure of the initial state (a PNG inside the block) stands in where
  scripts do not run (a notebook viewer, an untrusted notebook, a reader without
  JavaScript) and in print: the interactive part starts ``hidden``, and the
  script shows it, and hides the figure on screen, once it has built it;
* notebooks get the PNG as an ``image/png`` output too (for exports to PDF).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import io
import itertools
import json
import re
import unicodedata
import warnings
from importlib import resources

from qkv.validate import check_index

__all__ = [
    "Widget",
    "check_index",
    "figure_png",
    "isolated",
    "json_for_script",
    "restart_numbering",
    "static_text",
]

_counter = itertools.count()


def restart_numbering() -> None:
    """Number the next widgets from 0 again, as in a new kernel (for a build
    that runs several pages in one kernel: ``bookbuild.execute.fresh_state``)."""
    global _counter
    _counter = itertools.count()


#: Where the widgets' stylesheets and scripts are: files of this package.
STATIC = "static"
#: What a stylesheet writes in place of the root's id (each copy gets its own).
ROOT_ID_PLACEHOLDER = "#__ID__"
_SCRIPT_NAME = re.compile(r"[A-Za-z_$][\w$]*")


@functools.cache
def static_text(name: str) -> str:
    """The text of ``qkv/page/static/<name>``, a stylesheet or a script that a
    widget inlines in its page (package data, read with :mod:`importlib.resources`).

    Raises:
        ValueError: if the file holds ``</`` or ``<!--``, which could close the
            ``<style>`` or ``<script>`` element it is copied into.
    """
    text = resources.files("qkv.page").joinpath(STATIC, name).read_text("utf-8")
    for mark in ("</", "<!--"):
        if mark in text:
            raise ValueError(f"{STATIC}/{name} must not hold {mark!r} (it is inlined)")
    return text


def json_for_script(value: object) -> str:
    """JSON that cannot close the ``<script>`` element it sits in."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def figure_png(figure, dpi: int = 90) -> bytes:
    """``figure`` as PNG bytes with at most 256 colours (small pages); closes it."""
    import matplotlib.pyplot as plt
    from PIL import Image

    buffer = io.BytesIO()
    with warnings.catch_warnings():  # long labels may squeeze the layout
        warnings.simplefilter("ignore", UserWarning)
        figure.savefig(buffer, format="png", dpi=dpi)
    plt.close(figure)
    buffer.seek(0)
    image = Image.open(buffer).convert("RGB").quantize(colors=256)
    small = io.BytesIO()
    image.save(small, format="PNG", optimize=True)
    return small.getvalue()


class Widget:
    """One self-contained block of interactive HTML (see the module docstring).

    A subclass gives its data (:meth:`_payload`), its stylesheets and scripts
    (:attr:`styles`, :attr:`scripts`: files of ``qkv/page/static``), the function
    of those scripts that builds its interactive part (:attr:`build`), the
    markup of that part if it writes it in Python (:meth:`_live`), and its static
    figure (:meth:`static_png`, :meth:`static_alt`).

    Every widget's page gets ``widget.css`` and ``widget.js`` first: its script is
    its files in one function, which ends with ``qkvWidget(<its root>, build)``
    (see ``widget.js``), so that it defines nothing outside itself.
    """

    #: The id prefix and first class of the root element.
    kind = "qkv-widget"
    #: More classes: of the root, of the interactive part, of the static figure.
    root_classes = ""
    live_classes = ""
    static_classes = ""
    #: Stylesheets (``#__ID__`` stands for the root) and scripts, in ``static/``.
    styles: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()
    #: The function of :attr:`scripts` called as ``build(root, data, live)``.
    build = ""

    def _payload(self) -> dict:
        raise NotImplementedError

    def _css(self, root_id: str) -> str:
        """CSS written in Python, after the stylesheets (none by default)."""
        return ""

    def _live(self) -> str:
        return ""

    def static_png(self) -> bytes:
        """The static figure of the initial state, as PNG bytes."""
        raise NotImplementedError

    def static_alt(self) -> str:
        """The text alternative of the static figure."""
        raise NotImplementedError

    def static_alts(self) -> dict[str, str]:
        """The text alternative in other languages, ``{lang: text}`` (none by
        default): each becomes a ``data-alt-<lang>`` attribute of the static
        figure, which a translated build of the book puts in its ``alt``."""
        return {}

    def _render(self) -> tuple[str, str]:
        """The HTML block and its static figure (PNG, base64)."""
        payload = json_for_script(self._payload())
        digest = hashlib.sha1(payload.encode()).hexdigest()[:10]
        root_id = f"{self.kind}-{digest}-{next(_counter)}"
        png = base64.b64encode(self.static_png()).decode()
        alt = f'alt="{html.escape(self.static_alt(), quote=True)}"' + "".join(
            f' data-alt-{lang}="{html.escape(text, quote=True)}"'
            for lang, text in self.static_alts().items()
        )
        css = "".join(static_text(name) for name in ("widget.css", *self.styles))
        css = css.replace(ROOT_ID_PLACEHOLDER, f"#{root_id}") + self._css(root_id)
        if not _SCRIPT_NAME.fullmatch(self.build):
            raise ValueError(f"build must name a function, got {self.build!r}")
        script = (
            "(function () {\n"
            + "".join(static_text(name) for name in ("widget.js", *self.scripts))
            + f'qkvWidget(document.getElementById("{root_id}"), {self.build});\n'
            + "})();"
        )
        root, live, static = (
            " ".join(c for c in classes if c)
            for classes in (
                (self.kind, self.root_classes),
                ("qkv-w-live", self.live_classes),
                ("qkv-w-static", self.static_classes),
            )
        )
        html_block = (
            f'<div class="{root}" id="{root_id}">'
            f"<style>{css}</style>"
            f'<div class="{live}" hidden>{self._live()}</div>'
            f'<img class="{static}" {alt} src="data:image/png;base64,{png}">'
            f'<script type="application/json" class="qkv-w-data">{payload}</script>'
            f"<script>{script}</script>"
            "</div>"
        )
        return html_block, png

    def to_html(self) -> str:
        """The widget as one block of HTML (a new id at each call)."""
        return self._render()[0]

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        html_block, png = self._render()
        return {"text/html": html_block, "image/png": png, "text/plain": repr(self)}


#: Unicode's bidirectional classes that can reorder the text around a word.
_BIDI = {"R", "AL", "RLE", "RLO", "LRE", "LRO", "PDF", "RLI", "LRI", "FSI", "PDI"}


def isolated(word: str) -> str:
    """``word`` between U+2068 and U+2069 if it holds right-to-left text or a
    bidi control (a right-to-left override would mirror the rest of the
    sentence: "0.20" read as "02.0"); other words as they are."""
    if any(unicodedata.bidirectional(c) in _BIDI for c in word):
        return f"\u2068{word}\u2069"
    return word
