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
* :func:`alignment_explorer` (chapter *cross-attention*): pick a held-out
  sentence and an English word of its translation; the cross-attention weights
  on the French words, for each trained model side by side (computed by
  ``qkv`` when the page is built: the page only shows them).
* :func:`cls_view` (chapter *attention-on-images*): pick a held-out digit, a
  layer and a head of a trained Vision Transformer; the [CLS] token's weights
  over the patches, computed by ``qkv`` at build time, and what the model reads.
* :func:`kv_cache_calculator` (chapter *decoders*): the KV cache of published
  decoders or of a reader's own numbers, per token and for a context, with and
  without grouped-query attention, in binary units.
* :func:`write_live` (chapter *writing*): the trained decoder writes in the page,
  its forward pass in JavaScript from its exported weights (:mod:`.writing`).

Conventions, each tested in Chromium against ``qkv`` (to 1e-6; the writer's
logits to 1e-4, the bound of its float32 forward pass):

* the root element has the class ``qkv-explorable`` and, after every change, its
  current attention weights as JSON in ``data-weights``;
* standard form controls with labels, usable with the keyboard alone; a grid
  of boxes (the mask editor's) is one tab stop, its boxes reached with the
  arrow keys (the WAI-ARIA grid pattern);
* colours from the page's theme (pydata-sphinx-theme's CSS variables, light and
  dark), labels in English or French from the page's ``<html lang>``, and
  numbers as that language writes them (``0,25`` on a French page);
* a message in a live region, never only a red border or a "—": for a value
  that is not valid and for a number that overflows;
* words are text, never markup: escaped in the data, inserted with
  ``textContent``.

Each lives in its own module (:mod:`.by_hand`, :mod:`.scaling`, :mod:`.masking`,
:mod:`.rotary`, with :mod:`.seeded` for :func:`seeded_normal`); its page script
and the shared runtime and stylesheet are files of ``qkv/page/static``
(``explorable.js``, ``explorable.css``, one ``.js`` per explorable).

Shapes: T words, D features per word, L queries, S keys, E query/key size.
"""

from qkv.page.explorables._base import LANGUAGES
from qkv.page.explorables.alignment import alignment_explorer
from qkv.page.explorables.by_hand import attention_by_hand
from qkv.page.explorables.cls_view import cls_view
from qkv.page.explorables.kv_cache import kv_cache_calculator
from qkv.page.explorables.masking import mask_editor
from qkv.page.explorables.rotary import rope_offsets
from qkv.page.explorables.scaling import scaled_scores
from qkv.page.explorables.seeded import seeded_normal
from qkv.page.explorables.writing import write_live

__all__ = [
    "LANGUAGES",
    "alignment_explorer",
    "attention_by_hand",
    "cls_view",
    "kv_cache_calculator",
    "mask_editor",
    "rope_offsets",
    "scaled_scores",
    "seeded_normal",
    "write_live",
]
