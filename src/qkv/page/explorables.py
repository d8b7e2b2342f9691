"""Explorables: attention you can change in the page, offline, with the book's numbers.

Each function returns a widget (:mod:`qkv.page.widgets`): a chapter calls it in a code
cell, with data computed by ``qkv``, and the page shows a small interactive
figure that recomputes every number in the browser as the reader changes an
input. In print, in a PDF and where scripts do not run, a static figure of the
initial state stands in.

* :func:`attention_by_hand` (chapter *attention-by-hand*): pick the query word,
  edit the word vectors; scores, weights (divided by the sum and softmax) and the
  context vector follow.
* :func:`scaled_scores` (chapter *scaled-dot-product*): a slider for d_k and a
  switch for the division by sqrt(d_k), on random queries and keys drawn from a
  seed by :func:`seeded_normal`, which gives the same numbers in Python.
* :func:`mask_editor` (chapter *masking*): tick the pairs that may attend, or pick
  a causal or padding mask; a query that may attend to nothing gets zero weights,
  as in :func:`qkv.scaled_dot_product_attention`.
* :func:`rope_offsets` (chapter *positions*): rotate a query and keys by their
  positions (RoPE); the scores depend only on the offsets.

Conventions, each tested in Chromium against ``qkv`` (to 1e-6):

* the root element has the class ``qkv-explorable`` and, after every change, its
  current attention weights as JSON in ``data-weights``;
* standard form controls with labels, usable with the keyboard alone;
* colours from the page's theme (pydata-sphinx-theme's CSS variables, light and
  dark), labels in English or French from the page's ``<html lang>``;
* words are text, never markup: escaped in the data, inserted with
  ``textContent``.

Shapes: T words, D features per word, L queries, S keys, E query/key size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from qkv.attention import scaled_dot_product_attention
from qkv.page.widgets import Widget, figure_png
from qkv.positions import rope
from qkv.validate import check_bool, check_index, check_int

__all__ = [
    "AttentionByHand",
    "MaskEditor",
    "RopeOffsets",
    "ScaledScores",
    "attention_by_hand",
    "mask_editor",
    "rope_offsets",
    "scaled_scores",
    "seeded_normal",
]

LANGUAGES = ("en", "fr")

# French labels follow French typography: a no-break space (\u00a0) before ":"
# and inside « », a narrow no-break space (\u202f) before ";", "?" and "!".

# --- what every explorable's script shares --------------------------------------

# Run after qkv.page.widgets' prologue (root, data, live): labels in the page's
# language, element building, Python's rounding, softmax, viridis colours.
_RUNTIME = """
  var lang = (data.lang || (root.closest("[lang]") || document.documentElement)
    .getAttribute("lang") || "en").slice(0, 2).toLowerCase();
  var labels = data.labels[lang] || data.labels.en;
  function t(key, values) {
    var text = labels[key] !== undefined ? labels[key] : data.labels.en[key];
    for (var name in values || {}) {
      text = text.split("{" + name + "}").join(String(values[name]));
    }
    return text;
  }
  var serial = 0;
  function newId() { serial += 1; return root.id + "-" + serial; }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    for (var name in attrs || {}) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) { continue; }
      node.setAttribute(name, value === true ? "" : String(value));
    }
    [].concat(children === undefined ? [] : children).forEach(function (child) {
      node.appendChild(typeof child === "object" ? child :
        document.createTextNode(String(child)));
    });
    return node;
  }
  function fmt(value, decimals) {
    if (!isFinite(value)) { return "\\u2014"; }
    var power = Math.pow(10, decimals), scaled = Math.abs(value) * power;
    var floor = Math.floor(scaled);
    if (scaled - floor === 0.5 && floor % 2 === 0) {
      // an exact tie: to even, as Python's format (the page) rounds it
      return (value < 0 ? "-" : "") + (floor / power).toFixed(decimals);
    }
    return value.toFixed(decimals);
  }
  function softmax(row, allowed) {
    var best = -Infinity, out = [], total = 0, i;
    for (i = 0; i < row.length; i++) {
      if (!allowed || allowed[i]) { best = Math.max(best, row[i]); }
    }
    if (best === -Infinity) { return row.map(function () { return 0; }); }
    for (i = 0; i < row.length; i++) {
      out.push(!allowed || allowed[i] ? Math.exp(row[i] - best) : 0);
      total += out[i];
    }
    return out.map(function (v) { return v / total; });
  }
  var stops = data.cmap.map(function (hex) {
    return [1, 3, 5].map(function (at) { return parseInt(hex.slice(at, at + 2), 16); });
  });
  function paint(cell, value, top) {
    var x = Math.min(1, Math.max(0, top > 0 ? value / top : 0)) * (stops.length - 1);
    var i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
    var rgb = [0, 1, 2].map(function (c) {
      return Math.round(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
    });
    var lum = rgb.map(function (c) {
      c /= 255;
      return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    lum = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2];
    cell.style.backgroundColor = "rgb(" + rgb.join(",") + ")";
    cell.style.color = (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) ? "#000" : "#fff";
  }
  function publish(name, value) {
    root.setAttribute("data-" + name, JSON.stringify(value));
  }
  function title(text) {
    var node = el("p", {"class": "qkv-x-title", id: newId()}, text);
    live.setAttribute("role", "group");
    live.setAttribute("aria-labelledby", node.id);
    live.appendChild(node);
  }
  function labelled(control, text) {
    control.id = newId();
    return el("label", {"for": control.id}, text);
  }
  function status() {
    return live.appendChild(el("p", {"class": "qkv-x-status", "aria-live": "polite"}));
  }
  function maxOf(rows) {
    return Math.max.apply(null, [].concat.apply([], rows));
  }
"""

_CSS = """
#{id} {{
  --qkv-fg: var(--pst-color-text-base, var(--jp-content-font-color1, #222832));
  --qkv-bg: var(--pst-color-background, var(--jp-layout-color0, #fff));
  --qkv-surface: var(--pst-color-surface, var(--jp-layout-color2, #f3f4f5));
  --qkv-border: var(--pst-color-border, var(--jp-border-color1, #8a939e));
  --qkv-accent: var(--pst-color-primary, #0a7d91);
  --qkv-second: var(--pst-color-secondary, #8045e5);
  --qkv-muted: var(--pst-color-text-muted, #48566b);
  --qkv-warn: var(--pst-color-danger, #c0243d);
  color: var(--qkv-fg); background: var(--qkv-bg); text-align: left;
  border: 1px solid var(--qkv-border); border-radius: 6px; padding: .6em 1em;
  margin: 1em 0; max-width: 100%; overflow-x: auto; font-size: 15px;
  line-height: 1.45; }}
#{id} .qkv-x-title {{ font-weight: 700; margin: 0 0 .4em; }}
#{id} .qkv-x-controls {{ display: flex; flex-wrap: wrap; gap: .4em 1.4em;
  align-items: center; margin: 0 0 .5em; }}
#{id} select, #{id} input, #{id} button {{ font: inherit; color: var(--qkv-fg);
  background: var(--qkv-bg); border: 1px solid var(--qkv-border);
  border-radius: 4px; padding: 1px 4px; margin: 0 .3em; }}
#{id} input[type=number] {{ width: 5.2em; }}
#{id} input[type=checkbox] {{ width: 1.1em; height: 1.1em; margin: 0;
  accent-color: var(--qkv-accent); }}
#{id} input[type=range] {{ accent-color: var(--qkv-accent); vertical-align: middle; }}
#{id} button {{ cursor: pointer; padding: 2px 10px; }}
#{id} :focus-visible {{ outline: 3px solid var(--qkv-accent); outline-offset: 1px; }}
#{id} input[aria-invalid=true] {{ border-color: var(--qkv-warn); }}
#{id} table {{ border-collapse: collapse; margin: .3em 0; }}
#{id} caption {{ caption-side: top; text-align: left; font-weight: 600;
  padding: .2em 0; color: var(--qkv-fg); }}
#{id} th, #{id} td {{ padding: 2px 6px; text-align: right;
  font-variant-numeric: tabular-nums; border: 1px solid var(--qkv-border); }}
#{id} th {{ font-weight: 600; background: var(--qkv-surface); }}
#{id} th[scope=col] {{ text-align: center; }}
#{id} th[scope=row] {{ text-align: left; }}
#{id} .qkv-x-current th, #{id} .qkv-x-current td {{ font-weight: 700;
  border-top: 2px solid var(--qkv-accent);
  border-bottom: 2px solid var(--qkv-accent); }}
#{id} .qkv-x-bar {{ height: 4px; margin-top: 1px; background: var(--qkv-accent); }}
#{id} .qkv-x-bar.qkv-x-second {{ background: var(--qkv-second); }}
#{id} .qkv-x-note {{ color: var(--qkv-warn); margin: .2em 0; }}
#{id} .qkv-x-status {{ min-height: 1.45em; margin: .3em 0 0; }}
#{id} .qkv-x-grids {{ display: flex; flex-wrap: wrap; gap: .5em 2em;
  align-items: flex-start; }}
#{id} td.qkv-x-box {{ text-align: center; }}
#{id} td.qkv-x-off {{ color: var(--qkv-muted); background: repeating-linear-gradient(
  45deg, var(--qkv-surface) 0 4px, var(--qkv-bg) 4px 8px); }}
#{id} svg text {{ fill: currentColor; font-size: 12px; }}
#{id} .qkv-x-dials {{ display: flex; flex-wrap: wrap; gap: .2em .8em; }}
#{id} .qkv-x-dials figure {{ margin: 0; text-align: center; }}
#{id} .qkv-x-legend {{ font-size: 13px; margin: .2em 0; }}
#{id} .qkv-x-swatch {{ display: inline-block; width: 1.6em; height: .5em;
  margin: 0 .3em; vertical-align: middle; }}
"""


def _cmap_stops(n: int = 9) -> list[str]:
    """The book's colormap for weights as ``n`` hex colours, for the scripts."""
    import matplotlib

    from qkv.page.plot import WEIGHTS_CMAP

    colours = matplotlib.colormaps[WEIGHTS_CMAP](np.linspace(0, 1, n))
    return [matplotlib.colors.to_hex(c) for c in colours]


def _check_lang(lang: str | None) -> str | None:
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(
            f"lang must be None (the page's) or one of {LANGUAGES}, got {lang!r}"
        )
    return lang


def _check_vectors(name: str, x: Tensor, max_rows: int, max_cols: int) -> Tensor:
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


def _check_words(name: str, words: Sequence[str], count: int) -> list[str]:
    if isinstance(words, str) or not all(isinstance(w, str) for w in words):
        raise ValueError(f"{name} must be a list of strings, got {words!r}")
    words = list(words)
    if len(words) != count:
        raise ValueError(
            f"{name} must hold {count} words, one per row, got {len(words)}"
        )
    return words


def _check_decimals(decimals: int) -> int:
    decimals = check_int("decimals", decimals, minimum=0)
    if decimals > 8:
        raise ValueError(f"decimals must be an int in 0..8, got {decimals}")
    return decimals


def _nice(values: Tensor, digits: int = 7) -> list:
    """A tensor as nested lists of floats with ``digits`` significant digits: what a
    reader sees in a box (0.43, not 0.4300000071525879)."""
    return np.vectorize(lambda v: float(f"{v:.{digits}g}"))(values.numpy()).tolist()


def _word_list(words: Sequence[str]) -> str:
    return ", ".join(f"“{w}”" for w in words)


class _Explorable(Widget):
    """What the four explorables share: labels, colours, the runtime, the CSS."""

    root_classes = "qkv-explorable"
    LABELS: dict[str, dict[str, str]] = {}
    SCRIPT = ""

    def __init__(self, lang: str | None, decimals: int) -> None:
        self.lang = _check_lang(lang)
        self.decimals = _check_decimals(decimals)

    def _text(self, key: str, **values) -> str:
        """A label in ``lang`` (English when the page decides), filled in."""
        text = self.LABELS[self.lang or "en"][key]
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
            "labels": self.LABELS,
            "cmap": _cmap_stops(),
            "decimals": self.decimals,
        }

    def _css(self, root_id: str) -> str:
        return _CSS.format(id=root_id)

    def _script(self) -> str:
        return _RUNTIME + self.SCRIPT

    def static_png(self) -> bytes:
        from qkv.page.plot import book_style

        with book_style():
            return figure_png(self._static_figure())

    def _static_figure(self):
        raise NotImplementedError


def _plain(text: str) -> str:
    """``text`` for a matplotlib label: a ``$`` is a dollar, not mathematics."""
    return text.replace("$", r"\$")


# --- attention by hand -----------------------------------------------------------


class AttentionByHand(_Explorable):
    """Pick the query word and edit the vectors; see :func:`attention_by_hand`."""

    kind = "qkv-x-abh"
    LABELS = {
        "en": {
            "title": "Try it: attention by hand",
            "query": "Query word",
            "word": "Word",
            "vector": "Vector (edit any number)",
            "coordinate": "{word}, coordinate {k}",
            "score": "Score",
            "bySum": "Weight: score ÷ sum",
            "softmax": "Weight: softmax",
            "sum": "Sum",
            "caption": "Scores and weights for the query “{word}”",
            "context": "Context vector of “{word}” (softmax weights): ",
            "invalid": "A box holds no number: its last number is used.",
            "sumZero": "The scores add up to 0: they cannot be divided by their sum.",
            "sumBroken": "Divided by their sum, some weights fall outside 0 to 1: "
            "the mix is no longer an average.",
            "status": "“{word}”: largest softmax weight {weight}, on “{best}”.",
            "fig_title": "The query “{word}”",
            "fig_bySum": "score / sum",
            "fig_softmax": "softmax",
            "fig_ylabel": "weight",
            "fig_xlabel": "word attended to",
            "alt": "Bar chart of the weights of the query “{word}” over the words "
            "{words}, divided by the sum and through the softmax.",
        },
        "fr": {
            "title": "À vous\u00a0: l’attention à la main",
            "query": "Mot requête",
            "word": "Mot",
            "vector": "Vecteur (modifiez n’importe quel nombre)",
            "coordinate": "{word}, coordonnée {k}",
            "score": "Score",
            "bySum": "Poids\u00a0: score ÷ somme",
            "softmax": "Poids\u00a0: softmax",
            "sum": "Somme",
            "caption": "Scores et poids pour la requête «\u00a0{word}\u00a0»",
            "context": "Vecteur de contexte de «\u00a0{word}\u00a0» "
            "(poids softmax)\u00a0: ",
            "invalid": "Une case ne contient pas de nombre\u00a0: "
            "son dernier nombre est utilisé.",
            "sumZero": "La somme des scores est nulle\u00a0: "
            "on ne peut pas diviser par elle.",
            "sumBroken": "Divisés par leur somme, certains poids sortent de "
            "l’intervalle de 0 à 1\u00a0: le mélange n’est plus une moyenne.",
            "status": "«\u00a0{word}\u00a0»\u00a0: plus grand poids softmax {weight}, "
            "sur «\u00a0{best}\u00a0».",
            "fig_title": "La requête «\u00a0{word}\u00a0»",
            "fig_bySum": "score / somme",
            "fig_softmax": "softmax",
            "fig_ylabel": "poids",
            "fig_xlabel": "mot regardé",
            "alt": "Diagramme en barres des poids de la requête «\u00a0{word}\u00a0» "
            "sur les mots {words}, divisés par la somme et par la softmax.",
        },
    }
    SCRIPT = """
  var words = data.words, x = data.x, T = words.length, D = x[0].length;
  var dec = data.decimals, invalid = {};
  title(t("title"));
  var select = el("select", {}, words.map(function (w, i) {
    return el("option", {value: i}, w);
  }));
  select.value = String(data.query);
  live.appendChild(el("div", {"class": "qkv-x-controls"},
    [labelled(select, t("query")), select]));
  var caption = el("caption"), rows = [], out = [];
  words.forEach(function (word, j) {
    var cells = [el("th", {scope: "row"}, word)];
    x[j].forEach(function (value, k) {
      var input = el("input", {type: "number", step: data.step, value: value,
        "aria-label": t("coordinate", {word: word, k: k + 1})});
      input.addEventListener("input", function () {
        var typed = input.valueAsNumber;  // NaN when the box holds no number
        if (isFinite(typed)) {
          x[j][k] = typed;
          input.removeAttribute("aria-invalid");
          delete invalid[j + "," + k];
        } else {
          input.setAttribute("aria-invalid", "true");
          invalid[j + "," + k] = true;
        }
        update();
      });
      input.addEventListener("change", announce);
      cells.push(el("td", {}, input));
    });
    var row = {score: el("td"), bySum: el("td"), soft: el("td")};
    out.push(row);
    rows.push(el("tr", {}, cells.concat([row.score, row.bySum, row.soft])));
  });
  var sums = {score: el("td"), bySum: el("td"), soft: el("td")};
  live.appendChild(el("table", {}, [caption,
    el("thead", {}, el("tr", {}, [
      el("th", {scope: "col"}, t("word")),
      el("th", {scope: "col", colspan: D}, t("vector")),
      el("th", {scope: "col"}, t("score")),
      el("th", {scope: "col"}, t("bySum")),
      el("th", {scope: "col"}, t("softmax"))])),
    el("tbody", {}, rows),
    el("tfoot", {}, el("tr", {}, [el("th", {scope: "row", colspan: 1 + D}, t("sum")),
      sums.score, sums.bySum, sums.soft]))]));
  var context = live.appendChild(el("p"));
  var note = live.appendChild(el("p", {"class": "qkv-x-note", "aria-live": "polite"}));
  var said = status(), weights = [];

  function show(cell, value, second, top) {
    cell.textContent = fmt(value, dec);
    var width = isFinite(value) ? Math.min(1, Math.max(0, value / top)) * 100 : 0;
    cell.appendChild(el("div", {"class": "qkv-x-bar" + (second ? " qkv-x-second" : ""),
      style: "width:" + width.toFixed(1) + "%", "aria-hidden": "true"}));
  }
  function update() {
    var q = +select.value, scores = [], total = 0, z = [], j, k;
    for (j = 0; j < T; j++) {
      var s = 0;
      for (k = 0; k < D; k++) { s += x[q][k] * x[j][k]; }
      scores.push(s);
      total += s;
    }
    var bySum = scores.map(function (s) { return s / total; });
    weights = softmax(scores);
    for (k = 0; k < D; k++) {
      var c = 0;
      for (j = 0; j < T; j++) { c += weights[j] * x[j][k]; }
      z.push(c);
    }
    var broken = total === 0, outside = false;
    var top = Math.max.apply(null, weights.concat(broken ? [] : bySum));
    for (j = 0; j < T; j++) {
      out[j].score.textContent = fmt(scores[j], dec);
      show(out[j].bySum, broken ? NaN : bySum[j], false, top);
      show(out[j].soft, weights[j], true, top);
      outside = outside || (!broken && (bySum[j] < 0 || bySum[j] > 1));
      rows[j].className = j === q ? "qkv-x-current" : "";
    }
    var add = function (a, b) { return a + b; };
    sums.score.textContent = fmt(total, dec);
    sums.bySum.textContent = broken ? fmt(NaN, dec) : fmt(bySum.reduce(add, 0), dec);
    sums.soft.textContent = fmt(weights.reduce(add, 0), dec);
    caption.textContent = t("caption", {word: words[q]});
    context.textContent = t("context", {word: words[q]}) + "(" +
      z.map(function (v) { return fmt(v, dec); }).join(", ") + ")";
    note.textContent = (broken ? t("sumZero") : outside ? t("sumBroken") : "") +
      (Object.keys(invalid).length ? " " + t("invalid") : "");
    publish("weights", weights);
    publish("weights-by-sum", broken ? null : bySum);
    publish("scores", scores);
    publish("context", z);
    root.setAttribute("data-query", q);
  }
  function announce() {
    var best = 0;
    weights.forEach(function (w, j) { if (w > weights[best]) { best = j; } });
    said.textContent = t("status", {word: words[+select.value],
      weight: fmt(weights[best], dec), best: words[best]});
  }
  select.addEventListener("change", function () { update(); announce(); });
  update();
"""

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
        x = _check_vectors("x", x, max_rows=12, max_cols=6)
        self.words = _check_words("words", words, x.shape[0])
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
        self.x = torch.tensor(_nice(x), dtype=torch.float64)

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
        ax.set_xticks(positions, labels=[_plain(w) for w in self.words])
        ax.set_ylabel(self._text("fig_ylabel"))
        ax.set_xlabel(self._text("fig_xlabel"))
        ax.set_title(_plain(self._text("fig_title", word=self.words[self.query])))
        ax.legend(frameon=False)
        return fig

    def static_alt(self) -> str:
        return self._text(
            "alt", word=self.words[self.query], words=_word_list(self.words)
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


# --- the size of the scores --------------------------------------------------------


def _mulberry32(seed: int):
    """The 32-bit generator "mulberry32", as the page's script runs it."""
    state = seed & 0xFFFFFFFF
    while True:
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = ((state ^ (state >> 15)) * (1 | state)) & 0xFFFFFFFF
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & 0xFFFFFFFF)) & 0xFFFFFFFF) ^ t
        yield (t ^ (t >> 14)) & 0xFFFFFFFF


def seeded_normal(seed: int, *shape: int) -> Tensor:
    """Standard normal numbers drawn from ``seed``, the same in Python and in the
    page: the random vectors of :func:`scaled_scores`.

    Explained in the chapter *scaled-dot-product*. The generator is mulberry32
    (32-bit integers, the same bits in Python and JavaScript), turned into normal
    numbers by the Box-Muller transform in double precision. Python and the
    browser's ``Math.log``, ``Math.cos`` and ``Math.sin`` may differ in the last
    bit, so the numbers agree to about 1e-15, not bit for bit.

    Args:
        seed: an int in 0..2**32 - 1.
        *shape: the shape of the result; the numbers fill it row by row.

    Returns:
        A float64 tensor of shape ``shape``.
    """
    seed = check_int("seed", seed, minimum=0)
    if seed >= 2**32:
        raise ValueError(f"seed must be an int in 0..2**32 - 1, got {seed}")
    shape = tuple(check_int("shape", size, minimum=0) for size in shape)
    count = math.prod(shape)
    draws = _mulberry32(seed)
    values = []
    while len(values) < count:
        first, second = (
            (next(draws) + 0.5) / 4294967296,
            (next(draws) + 0.5) / 4294967296,
        )
        radius, angle = math.sqrt(-2 * math.log(first)), 2 * math.pi * second
        values += [radius * math.cos(angle), radius * math.sin(angle)]
    return torch.tensor(values[:count], dtype=torch.float64).reshape(shape)


def _check_power_of_two(name: str, value: int, largest: int) -> int:
    value = check_int(name, value, minimum=1)
    if value > largest or value & (value - 1):
        raise ValueError(
            f"{name} must be a power of two from 1 to {largest}, got {value}"
        )
    return value


class ScaledScores(_Explorable):
    """Slide d_k, switch the scaling; see :func:`scaled_scores`."""

    kind = "qkv-x-sdp"
    LABELS = {
        "en": {
            "title": "Try it: the size of the scores",
            "dk": "Size of queries and keys, dₖ",
            "dkValue": "dₖ = {dk}",
            "scale": "Divide the scores by √dₖ",
            "redraw": "New random vectors",
            "seed": "(seed {seed})",
            "axis": "The scores, one line per query, on an axis that stays fixed",
            "corner": "query ↓ key →",
            "caption": "Attention weights of {rows} random queries (rows) over "
            "{cols} random keys (columns)",
            "stats": "Scores: standard deviation {sd} (√dₖ = {sqrt}). Largest weight "
            "of a row, on average: {top} (all weights equal: {uniform}). Rows with "
            "a weight above 0.99: {onehot} of {rows}.",
            "fig_scaled": "scores divided by √dₖ",
            "fig_raw": "scores not divided",
            "fig_title": "dₖ = {dk}, {scaling}",
            "fig_key": "key",
            "fig_query": "query",
            "alt": "Heatmap of the attention weights of {rows} random queries over "
            "{cols} random keys of size {dk}, {scaling}.",
        },
        "fr": {
            "title": "À vous\u00a0: la taille des scores",
            "dk": "Taille des requêtes et des clés, dₖ",
            "dkValue": "dₖ = {dk}",
            "scale": "Diviser les scores par √dₖ",
            "redraw": "Nouveaux vecteurs aléatoires",
            "seed": "(graine {seed})",
            "axis": "Les scores, une ligne par requête, sur un axe qui ne bouge pas",
            "corner": "requête ↓ clé →",
            "caption": "Poids d’attention de {rows} requêtes aléatoires (lignes) sur "
            "{cols} clés aléatoires (colonnes)",
            "stats": "Scores\u00a0: écart type {sd} (√dₖ = {sqrt}). Plus grand poids "
            "d’une ligne, en moyenne\u00a0: {top} (poids tous égaux\u00a0: {uniform}). "
            "Lignes avec un poids au-dessus de 0.99\u00a0: {onehot} sur {rows}.",
            "fig_scaled": "scores divisés par √dₖ",
            "fig_raw": "scores non divisés",
            "fig_title": "dₖ = {dk}, {scaling}",
            "fig_key": "clé",
            "fig_query": "requête",
            "alt": "Carte de chaleur des poids d’attention de {rows} requêtes "
            "aléatoires sur {cols} clés aléatoires de taille {dk}, {scaling}.",
        },
    }
    SCRIPT = """
  var L = data.n_queries, S = data.n_keys, Dmax = data.max_d_k, dec = data.decimals;
  var seed = data.seed, Q, K, extent, NS = "http://www.w3.org/2000/svg";
  function draws(seed) {  // mulberry32, as qkv.page.explorables.seeded_normal
    var a = seed | 0;
    return function () {
      a = a + 0x6D2B79F5 | 0;
      var t = Math.imul(a ^ a >>> 15, 1 | a);
      t = t + Math.imul(t ^ t >>> 7, 61 | t) ^ t;
      return (((t ^ t >>> 14) >>> 0) + 0.5) / 4294967296;
    };
  }
  function normals(seed, count) {  // Box-Muller
    var next = draws(seed), out = new Float64Array(count);
    for (var i = 0; i < count; i += 2) {
      var radius = Math.sqrt(-2 * Math.log(next())), angle = 2 * Math.PI * next();
      out[i] = radius * Math.cos(angle);
      if (i + 1 < count) { out[i + 1] = radius * Math.sin(angle); }
    }
    return out;
  }
  function dot(i, j, dk) {
    var s = 0;
    for (var c = 0; c < dk; c++) { s += Q[i * Dmax + c] * K[j * Dmax + c]; }
    return s;
  }
  function generate() {
    var all = normals(seed, (L + S) * Dmax);
    Q = all.subarray(0, L * Dmax);
    K = all.subarray(L * Dmax);
    var widest = 1;
    for (var i = 0; i < L; i++) {
      for (var j = 0; j < S; j++) {
        widest = Math.max(widest, Math.abs(dot(i, j, Dmax)));
      }
    }
    var step = Math.pow(10, Math.floor(Math.log10(widest)));
    extent = Math.ceil(widest / step) * step;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs) { node.setAttribute(name, attrs[name]); }
    return node;
  }
  title(t("title"));
  var slider = el("input", {type: "range", min: 0, step: 1,
    max: Math.round(Math.log(Dmax) / Math.LN2),
    value: Math.round(Math.log(data.d_k) / Math.LN2)});
  var sliderLabel = labelled(slider, t("dk"));
  var shown = el("output", {"for": slider.id});
  var box = el("input", {type: "checkbox"});
  box.checked = data.scaled;
  var boxLabel = labelled(box, t("scale"));
  var redraw = el("button", {type: "button"}, t("redraw"));
  var seedText = el("span");
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [sliderLabel, slider, shown]),
    el("span", {}, [box, " ", boxLabel]),
    el("span", {}, [redraw, " ", seedText])]));
  var said = status();
  var width = 560, rowHeight = 9, height = L * rowHeight + 28;
  var plot = svg("svg", {viewBox: "0 0 " + width + " " + height, width: width,
    height: height, "aria-hidden": "true", style: "max-width:100%;height:auto"});
  live.appendChild(el("p", {"class": "qkv-x-legend"}, t("axis")));
  live.appendChild(plot);
  var cells = [], head = [el("th", {scope: "col"}, t("corner"))], rows = [];
  for (var j = 0; j < S; j++) { head.push(el("th", {scope: "col"}, "k" + (j + 1))); }
  for (var i = 0; i < L; i++) {
    cells.push([]);
    var row = [el("th", {scope: "row"}, "q" + (i + 1))];
    for (j = 0; j < S; j++) { cells[i].push(el("td")); row.push(cells[i][j]); }
    rows.push(el("tr", {}, row));
  }
  live.appendChild(el("table", {}, [
    el("caption", {}, t("caption", {rows: L, cols: S})),
    el("thead", {}, el("tr", {}, head)), el("tbody", {}, rows)]));

  function drawScores(scores) {
    while (plot.firstChild) { plot.removeChild(plot.firstChild); }
    var left = 20, right = width - 20, axisY = L * rowHeight + 6;
    function at(v) { return left + (v + extent) / (2 * extent) * (right - left); }
    plot.appendChild(svg("line", {x1: left, x2: right, y1: axisY, y2: axisY,
      stroke: "currentColor"}));
    [-1, -0.5, 0, 0.5, 1].forEach(function (f) {
      var x = at(f * extent);
      plot.appendChild(svg("line", {x1: x, x2: x, y1: axisY, y2: axisY + 4,
        stroke: "currentColor"}));
      var label = svg("text", {x: x, y: axisY + 17, "text-anchor": "middle"});
      label.textContent = String(f * extent);
      plot.appendChild(label);
    });
    scores.forEach(function (row, i) {
      row.forEach(function (s) {
        plot.appendChild(svg("circle", {cx: at(Math.max(-extent, Math.min(extent, s))),
          cy: 4 + i * rowHeight, r: 3, fill: "var(--qkv-accent)",
          "fill-opacity": 0.75}));
      });
    });
  }
  function update() {
    var dk = Math.pow(2, +slider.value), scale = box.checked ? 1 / Math.sqrt(dk) : 1;
    var scores = [], weights = [], sum = 0, squares = 0, top = 0, onehot = 0;
    for (var i = 0; i < L; i++) {
      var row = [];
      for (var j = 0; j < S; j++) {
        row.push(dot(i, j, dk) * scale);
        sum += row[j];
        squares += row[j] * row[j];
      }
      scores.push(row);
      weights.push(softmax(row));
      var best = Math.max.apply(null, weights[i]);
      top += best / L;
      onehot += best > 0.99 ? 1 : 0;
      for (j = 0; j < S; j++) {
        cells[i][j].textContent = fmt(weights[i][j], dec);
        paint(cells[i][j], weights[i][j], 1);
      }
    }
    var mean = sum / (L * S);
    var sd = Math.sqrt(Math.max(0, squares / (L * S) - mean * mean));
    shown.textContent = t("dkValue", {dk: dk});
    slider.setAttribute("aria-valuetext", t("dkValue", {dk: dk}));
    seedText.textContent = t("seed", {seed: seed});
    said.textContent = t("stats", {sd: fmt(sd, 2), sqrt: fmt(Math.sqrt(dk), 2),
      top: fmt(top, 3), uniform: fmt(1 / S, 3), onehot: onehot, rows: L});
    drawScores(scores);
    publish("weights", weights);
    publish("scores", scores);
    root.setAttribute("data-d-k", dk);
    root.setAttribute("data-scaled", box.checked);
    root.setAttribute("data-seed", seed);
  }
  slider.addEventListener("input", update);
  box.addEventListener("change", update);
  redraw.addEventListener("click", function () {
    seed = (seed + 1) % 4294967296;
    generate();
    update();
  });
  generate();
  update();
"""

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


# --- the mask ------------------------------------------------------------------------


def _check_scale(scale: float | None, size: int) -> float:
    """The factor on the scores: ``1 / sqrt(size)`` by default, as ``qkv``'s."""
    if scale is None:
        return 1 / math.sqrt(size)
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise ValueError(f"scale must be a number or None, got {scale!r}")
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale!r}")
    return float(scale)


class MaskEditor(_Explorable):
    """Tick the pairs that may attend; see :func:`mask_editor`."""

    kind = "qkv-x-mask"
    PRESETS = ("custom", "all", "causal", "padding", "leftCausal")
    LABELS = {
        "en": {
            "title": "Try it: edit the mask",
            "preset": "Mask",
            "preset_custom": "your own",
            "preset_all": "everything allowed",
            "preset_causal": "causal",
            "preset_padding": "padding at the end",
            "preset_leftCausal": "causal, padding in front",
            "real": "Real words (the rest is padding)",
            "maskCaption": "The mask: a ticked box lets the query (row) attend to "
            "the key (column)",
            "weightsCaption": "The attention weights",
            "corner": "query ↓ key →",
            "may": "{query} may attend to {key}",
            "rowSum": "sum",
            "quoted": "“{word}”",
            "empty": "May attend to nothing: {words}. Their weights are all 0, "
            "as in qkv.",
            "fig_title": "Weights with the mask",
            "alt": "Heatmap of the attention weights of the words {words} with "
            "the mask; forbidden pairs have weight 0.",
        },
        "fr": {
            "title": "À vous\u00a0: modifiez le masque",
            "preset": "Masque",
            "preset_custom": "le vôtre",
            "preset_all": "tout est permis",
            "preset_causal": "causal",
            "preset_padding": "remplissage à la fin",
            "preset_leftCausal": "causal, remplissage au début",
            "real": "Vrais mots (le reste est du remplissage)",
            "maskCaption": "Le masque\u00a0: une case cochée permet à la requête "
            "(ligne) de regarder la clé (colonne)",
            "weightsCaption": "Les poids d’attention",
            "corner": "requête ↓ clé →",
            "may": "{query} peut regarder {key}",
            "rowSum": "somme",
            "quoted": "«\u00a0{word}\u00a0»",
            "empty": "Ne peuvent rien regarder\u00a0: {words}. Leurs poids valent "
            "tous 0, comme dans qkv.",
            "fig_title": "Poids avec le masque",
            "alt": "Carte de chaleur des poids d’attention des mots {words} avec "
            "le masque\u00a0; les paires interdites ont un poids nul.",
        },
    }
    SCRIPT = """
  var words = data.words, x = data.x, T = words.length, dec = data.decimals;
  var mask = data.mask.map(function (row) { return row.slice(); });
  var scores = x.map(function (xi) {  // x @ x.T * scale
    return x.map(function (xj) {
      var s = 0;
      for (var k = 0; k < xi.length; k++) { s += xi[k] * xj[k]; }
      return s * data.scale;
    });
  });
  title(t("title"));
  var preset = el("select", {}, data.presets.map(function (name) {
    return el("option", {value: name}, t("preset_" + name));
  }));
  var presetLabel = labelled(preset, t("preset"));
  var real = el("input", {type: "number", min: 1, max: T, step: 1,
    value: data.real_words});
  var realLabel = labelled(real, t("real"));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [presetLabel, preset]), el("span", {}, [realLabel, real])]));
  function pattern(name, n) {
    return words.map(function (_, i) {
      return words.map(function (_, j) {
        if (name === "all") { return true; }
        if (name === "causal") { return j <= i; }
        if (name === "padding") { return j < n; }
        return j <= i && j >= T - n;  // causal, padding in front
      });
    });
  }
  function header(extra) {
    return el("thead", {}, el("tr", {}, [el("th", {scope: "col"}, t("corner"))]
      .concat(words.map(function (w) { return el("th", {scope: "col"}, w); }))
      .concat(extra ? [el("th", {scope: "col"}, extra)] : [])));
  }
  var boxes = [], cells = [], sums = [], boxRows = [], weightRows = [];
  words.forEach(function (query, i) {
    boxes.push([]);
    cells.push([]);
    var boxRow = [el("th", {scope: "row"}, query)];
    var weightRow = [el("th", {scope: "row"}, query)];
    words.forEach(function (key, j) {
      var box = el("input", {type: "checkbox",
        "aria-label": t("may", {query: query, key: key})});
      box.checked = mask[i][j];
      box.addEventListener("change", function () {
        mask[i][j] = box.checked;
        preset.value = "custom";
        update();
      });
      box.addEventListener("keydown", function (event) {
        var moves = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0],
          ArrowDown: [1, 0]}, move = moves[event.key];
        if (!move) { return; }
        var target = (boxes[i + move[0]] || [])[j + move[1]];
        if (target) { event.preventDefault(); target.focus(); }
      });
      boxes[i].push(box);
      boxRow.push(el("td", {"class": "qkv-x-box"}, box));
      cells[i].push(el("td"));
      weightRow.push(cells[i][j]);
    });
    sums.push(el("td"));
    weightRow.push(sums[i]);
    boxRows.push(el("tr", {}, boxRow));
    weightRows.push(el("tr", {}, weightRow));
  });
  live.appendChild(el("div", {"class": "qkv-x-grids"}, [
    el("table", {}, [el("caption", {}, t("maskCaption")), header(),
      el("tbody", {}, boxRows)]),
    el("table", {}, [el("caption", {}, t("weightsCaption")), header(t("rowSum")),
      el("tbody", {}, weightRows)])]));
  var note = status();

  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  function count() {
    var n = Math.round(real.valueAsNumber);
    if (!(n >= 1 && n <= T)) { real.setAttribute("aria-invalid", "true"); return null; }
    real.removeAttribute("aria-invalid");
    return n;
  }
  function apply() {
    var n = count();
    if (preset.value === "custom" || n === null) { return; }
    mask = pattern(preset.value, n);
    boxes.forEach(function (row, i) {
      row.forEach(function (box, j) { box.checked = mask[i][j]; });
    });
  }
  function update() {
    var weights = [], empty = [];
    words.forEach(function (query, i) {
      weights.push(softmax(scores[i], mask[i]));  // a row with no key: zeros, as qkv
      if (mask[i].indexOf(true) < 0) { empty.push(t("quoted", {word: query})); }
    });
    var top = maxOf(weights);
    weights.forEach(function (row, i) {
      row.forEach(function (w, j) {
        cells[i][j].textContent = fmt(w, dec);
        cells[i][j].className = mask[i][j] ? "" : "qkv-x-off";
        cells[i][j].style.backgroundColor = "";
        cells[i][j].style.color = "";
        if (mask[i][j]) { paint(cells[i][j], w, top); }
      });
      sums[i].textContent = fmt(row.reduce(function (a, b) { return a + b; }, 0), dec);
    });
    note.textContent = empty.length ? t("empty", {words: empty.join(", ")}) : "";
    publish("weights", weights);
    publish("mask", mask);
  }
  preset.addEventListener("change", function () { apply(); update(); });
  real.addEventListener("input", function () { apply(); update(); });
  preset.value = "custom";
  data.presets.slice(1).forEach(function (name) {
    if (preset.value === "custom" && same(pattern(name, data.real_words), mask)) {
      preset.value = name;
    }
  });
  update();
"""

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
        self.x = _check_vectors("x", x, max_rows=10, max_cols=64)
        n_words = self.x.shape[0]
        self.words = _check_words("words", words, n_words)
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
        self.scale = _check_scale(scale, self.x.shape[1])
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
            [_plain(w) for w in self.words],
            ax=ax,
            decimals=self.decimals,
            title=self._text("fig_title"),
        )
        return fig

    def static_alt(self) -> str:
        return self._text("alt", words=_word_list(self.words))

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
    picks a causal or a padding mask, and the weights follow.

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


# --- rotary positions -----------------------------------------------------------

PAIRS = ("interleaved", "halves")


def _rotate_pairs(x: Tensor, positions: Tensor, base: float, pairs: str) -> Tensor:
    """RoPE (:func:`qkv.positions.rope`): each pair of coordinates of ``x`` (T, E)
    rotated by the angle ``position * base ** (-2 i / E)`` for pair i; pairs
    (x_2i, x_2i+1) ("interleaved") or (x_i, x_i+E/2) ("halves"). The page's script
    does the same.
    """
    return rope(x, positions, base, interleaved=pairs == "interleaved")  # (T, E)


class RopeOffsets(_Explorable):
    """Move a query and keys along the sentence; see :func:`rope_offsets`."""

    kind = "qkv-x-rope"
    LABELS = {
        "en": {
            "title": "Try it: rotary positions (RoPE)",
            "m": "Position of the query, m",
            "n": "Position of the first key, n",
            "together": "Move both together",
            "dials": "Key drawn in the circles",
            "caption": "The query at position {m}; key j at position {n} + j",
            "key": "Key",
            "position": "Position",
            "offset": "Offset m − position",
            "score": "Score q·k",
            "weight": "Weight",
            "query": "query",
            "keyLegend": "key",
            "pair": "pair {i}",
            "status": "Query at {m}, keys at {n} to {last}: offsets {first} to "
            "{lastOffset}.",
            "fig_title": "The query at position {m}, the keys from position {n}",
            "fig_ylabel": "score q·k",
            "alt": "Bar chart of the scores of a query at position {m} with keys at "
            "positions {n} to {last}, all rotated by RoPE.",
        },
        "fr": {
            "title": "À vous\u00a0: positions par rotation (RoPE)",
            "m": "Position de la requête, m",
            "n": "Position de la première clé, n",
            "together": "Déplacer les deux ensemble",
            "dials": "Clé dessinée dans les cercles",
            "caption": "La requête en position {m}\u202f; la clé j en position {n} + j",
            "key": "Clé",
            "position": "Position",
            "offset": "Décalage m − position",
            "score": "Score q·k",
            "weight": "Poids",
            "query": "requête",
            "keyLegend": "clé",
            "pair": "paire {i}",
            "status": "Requête en {m}, clés de {n} à {last}\u00a0: "
            "décalages de {first} à {lastOffset}.",
            "fig_title": "La requête en position {m}, les clés à partir de {n}",
            "fig_ylabel": "score q·k",
            "alt": "Diagramme en barres des scores d’une requête en position {m} avec "
            "des clés en positions {n} à {last}, toutes tournées par RoPE.",
        },
    }
    SCRIPT = """
  var q = data.query, K = data.keys, words = data.words, E = q.length, S = K.length;
  var P = data.max_position, half = E / 2, dec = data.decimals, theta = [];
  var NS = "http://www.w3.org/2000/svg";
  for (var h = 0; h < half; h++) { theta.push(Math.pow(data.base, -2 * h / E)); }
  function pair(i) {
    return data.pairs === "halves" ? [i, i + half] : [2 * i, 2 * i + 1];
  }
  function rotate(v, p) {
    var out = v.slice();
    for (var i = 0; i < half; i++) {
      var ab = pair(i), c = Math.cos(p * theta[i]), s = Math.sin(p * theta[i]);
      out[ab[0]] = v[ab[0]] * c - v[ab[1]] * s;
      out[ab[1]] = v[ab[0]] * s + v[ab[1]] * c;
    }
    return out;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    for (var name in attrs) { node.setAttribute(name, attrs[name]); }
    return node;
  }
  title(t("title"));
  function slider(value) {
    return el("input", {type: "range", min: 0, max: P, step: 1, value: value});
  }
  var mSlider = slider(data.query_position), nSlider = slider(data.key_position);
  var mLabel = labelled(mSlider, t("m")), nLabel = labelled(nSlider, t("n"));
  var mOut = el("output", {"for": mSlider.id});
  var nOut = el("output", {"for": nSlider.id});
  var together = el("input", {type: "checkbox"}), togetherLabel = labelled(together,
    t("together"));
  var chosen = el("select", {}, words.map(function (w, j) {
    return el("option", {value: j}, w);
  }));
  var chosenLabel = labelled(chosen, t("dials"));
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [
    el("span", {}, [mLabel, mSlider, mOut]), el("span", {}, [nLabel, nSlider, nOut]),
    el("span", {}, [together, " ", togetherLabel])]));
  var caption = el("caption"), rows = [];
  words.forEach(function (word, j) {
    rows.push(el("tr", {}, [el("th", {scope: "row"}, word), el("td"), el("td"),
      el("td"), el("td")]));
  });
  live.appendChild(el("table", {}, [caption, el("thead", {}, el("tr", {},
    ["key", "position", "offset", "score", "weight"].map(function (k) {
      return el("th", {scope: "col"}, t(k));
    }))), el("tbody", {}, rows)]));
  var said = status();
  live.appendChild(el("div", {"class": "qkv-x-controls"}, [chosenLabel, chosen]));
  live.appendChild(el("p", {"class": "qkv-x-legend", "aria-hidden": "true"}, [
    el("span", {"class": "qkv-x-swatch", style: "background:var(--qkv-accent)"}),
    t("query"),
    el("span", {"class": "qkv-x-swatch", style: "background:var(--qkv-second)"}),
    t("keyLegend")]));
  var dials = live.appendChild(el("div", {"class": "qkv-x-dials",
    "aria-hidden": "true"}));
  var last = {m: +mSlider.value, n: +nSlider.value};

  function arrow(parent, a, b, scale, colour) {
    parent.appendChild(svg("line", {x1: 40, y1: 40, x2: 40 + a * scale,
      y2: 40 - b * scale, stroke: colour, "stroke-width": 3,
      "stroke-linecap": "round"}));
  }
  function drawDials(qr, kr) {
    while (dials.firstChild) { dials.removeChild(dials.firstChild); }
    for (var i = 0; i < half; i++) {
      var ab = pair(i), box = svg("svg", {width: 80, height: 80, viewBox: "0 0 80 80"});
      var longest = Math.max(Math.hypot(qr[ab[0]], qr[ab[1]]),
        Math.hypot(kr[ab[0]], kr[ab[1]]), 1e-12);
      box.appendChild(svg("circle", {cx: 40, cy: 40, r: 34, fill: "none",
        stroke: "currentColor", "stroke-opacity": 0.4}));
      arrow(box, qr[ab[0]], qr[ab[1]], 34 / longest, "var(--qkv-accent)");
      arrow(box, kr[ab[0]], kr[ab[1]], 34 / longest, "var(--qkv-second)");
      dials.appendChild(el("figure", {}, [box,
        el("figcaption", {}, t("pair", {i: i}))]));
    }
  }
  function update() {
    var m = +mSlider.value, n = +nSlider.value, qr = rotate(q, m), scores = [];
    var rotated = K.map(function (k, j) { return rotate(k, n + j); });
    rotated.forEach(function (kr) {
      var s = 0;
      for (var c = 0; c < E; c++) { s += qr[c] * kr[c]; }
      scores.push(s);
    });
    var weights = softmax(scores.map(function (s) { return s * data.scale; }));
    rows.forEach(function (row, j) {
      var cells = row.querySelectorAll("td");
      cells[0].textContent = String(n + j);
      cells[1].textContent = String(m - n - j);
      cells[2].textContent = fmt(scores[j], dec);
      cells[3].textContent = fmt(weights[j], dec);
    });
    mOut.textContent = String(m);
    nOut.textContent = String(n);
    caption.textContent = t("caption", {m: m, n: n});
    said.textContent = t("status", {m: m, n: n, last: n + S - 1, first: m - n,
      lastOffset: m - n - S + 1});
    drawDials(qr, rotated[+chosen.value]);
    publish("weights", weights);
    publish("scores", scores);
    publish("positions", [m, n]);
  }
  function moved(which) {
    var m = +mSlider.value, n = +nSlider.value;
    if (together.checked) {
      var delta = which === "m" ? m - last.m : n - last.n;
      delta = Math.max(-Math.min(last.m, last.n), Math.min(P - Math.max(last.m, last.n),
        delta));
      m = last.m + delta;
      n = last.n + delta;
      mSlider.value = m;
      nSlider.value = n;
    }
    last = {m: m, n: n};
    update();
  }
  mSlider.addEventListener("input", function () { moved("m"); });
  nSlider.addEventListener("input", function () { moved("n"); });
  chosen.addEventListener("change", update);
  update();
"""

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
        query = _check_vectors("query", query, max_rows=1, max_cols=16)
        self.keys = _check_vectors("keys", keys, max_rows=8, max_cols=16)
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
        self.words = _check_words("words", words, n_keys)
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
        self.scale = _check_scale(scale, size)

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
                f"{_plain(w)}\n({o:+d})"
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
    or key at position p by the angle ``p * base ** (-2 i / E)`` (pair i), so
    that the score of a query at m and a key at n depends on m - n only. The page
    puts the query at m and key j at n + j (two sliders, and a box to move both
    together), shows the scores q·k and the weights ``softmax(scores * scale)``,
    and draws each rotated pair of the query and of one key in a circle.
    :meth:`RopeOffsets.weights_at` gives the same weights from ``qkv``.

    Args:
        query: the query, shape (E,) or (1, E), E even and at most 16.
        keys: the keys, shape (S, E), S at most 8.
        words: a name for each key (default ``k0``, ``k1``, ...).
        query_position: m at first (and in print), 0..max_position.
        key_position: n at first, 0..max_position.
        max_position: the end of both sliders.
        base: the base of the angles (10000 in the RoPE paper).
        pairs: ``"interleaved"``, pairs (x_2i, x_2i+1) as in the RoPE paper, or
            ``"halves"``, pairs (x_i, x_i+E/2) as in some implementations.
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
