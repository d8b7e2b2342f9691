r"""Glued numbers written as the page's language writes them.

Problem: a number glued into the prose (``{glue:text}`key:,```) is formatted by
Python, the English way: ``3,168``, ``0.174``. On a French page a reader takes
``3,168`` for three point one six eight. The same holds for the numbers put
back into a translated glued phrase (:mod:`bookbuild.i18n.glue`), whose quoted
words also keep English quotes.

Answer: each glued value that is entirely a number is written again by the
book's one rule, :func:`qkv.language.localise` (the rule of what chapters
print with :func:`qkv.page.numbers.num`), on the pages of both languages:
thousands grouped from four digits (``4,096``; French ``4 096`` with a narrow
no-break space, U+202F), powers of ten written as such (``1.2 × 10⁵``, never
``1.2e+05``, a value glued with a spec such as ``:.1e`` included), and in
French a decimal comma and a narrow no-break space before ``%``. Anything
else (a word, a version ``2.13.0``, a shape ``(2, 6)``, a list ``5, 3, 2``)
stays as it is. Only what is glued: a number a translator types is checked by
``python -m bookbuild.i18n.translations check``, and the numbers of code
outputs are written by the chapters themselves (``num``).

Math too: on such a page every formula (typed in the source or a catalogue,
or glued, such as a matrix of ``{glue:math}``) writes its decimal numbers with
a comma that TeX does not space, ``2{,}3``, its thousands with a thin space,
``4\,096``, and, where it has decimal commas, separates a list of numbers
with a semicolon, ``(0{,}9\,; 0{,}1)``, as French typesetting does
(:func:`localise_math`). The catalogues keep the formulas of the English
source, as the check asks.

A post-transform rewrites the ``{glue:text}`` values and the formulas of a
page (after myst-nb has resolved the values pasted from other pages);
:func:`~bookbuild.i18n.glue.fill` uses :func:`localise_value` for the values of
a glued phrase, and :mod:`bookbuild.site.notebooks` for the notebooks' values.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookbuild.i18n.messages import NBSP, base_language

__all__ = ["localise_math", "localise_number", "localise_value"]

#: The languages whose numbers the one rule writes.
RULED = ("en", "fr")

QUOTED = re.compile(r'"([^"\n]*)"|“([^”\n]*)”')

#: Per language that writes numbers otherwise than English: its quotes.
STYLES = {"fr": (f"«{NBSP}", f"{NBSP}»")}


def has_own_numbers(language: str | None) -> bool:
    """True when ``language`` writes numbers otherwise than English."""
    return base_language(language) in STYLES


def localise_number(text: str, language: str | None) -> str:
    """``text``, if it is entirely a number, written by the book's one rule
    (:func:`qkv.language.localise`) for ``language``: ``"3,168"`` ->
    ``"3\u202f168"``, ``"0.174"`` -> ``"0,174"``, ``"1.0e-06"`` ->
    ``"1,0 × 10⁻⁶"``, ``"12.5%"`` -> ``"12,5\u202f%"`` in French; ``"4096"`` ->
    ``"4,096"``, ``"1.0e-06"`` -> ``"1.0 × 10⁻⁶"`` in English; any other text,
    or a language without a rule, unchanged."""
    base = base_language(language)
    if base not in RULED:
        return text
    # imported here: the build checks its environment (torch, under qkv)
    # before anything imports qkv
    from qkv.language import localise

    return localise(text, base)


def localise_value(value: str, language: str | None) -> str:
    """A value of a glued phrase (a number or a quoted word) in ``language``:
    numbers by :func:`localise_number`, ``"word"`` and ``“word”`` in the
    language's quotes (French: ``«\u00a0word\u00a0»``)."""
    style = STYLES.get(base_language(language))
    if style is None:
        return value
    quoted = QUOTED.fullmatch(value)
    if quoted:
        opening, closing = style
        return f"{opening}{quoted.group(1) or quoted.group(2) or ''}{closing}"
    return localise_number(value, language)


#: In a formula: a number with thousands grouped by commas (``4,096``), a
#: decimal number (``2.3``; not a version ``2.13.0``), and a comma between
#: two numbers of a list (``0.9, 0.1``).
_MATH_THOUSANDS = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w.,])")
_MATH_DECIMAL = re.compile(r"(?<![\w.])(\d+)\.(\d+)(?![\w.])")
_MATH_LIST_COMMA = re.compile(r"(?<=\d),(?=\s*[-+]?\d)")
#: TeX's way of each language, (thousands, decimal sign, list separator).
MATH_STYLES = {"fr": (r"\,", "{,}", r"\,;")}


def localise_math(latex: str, language: str | None) -> str:
    """A formula with its numbers written the way of ``language``: in French,
    ``2.3`` -> ``2{,}3``, ``4,096`` -> ``4\\,096``, and in a formula with
    decimal commas, a list ``(0.9, 0.1)`` -> ``(0{,}9\\,; 0{,}1)``."""
    style = MATH_STYLES.get(base_language(language))
    if style is None:
        return latex
    thousands, decimal, separator = style
    latex = _MATH_THOUSANDS.sub(lambda m: m.group(0).replace(",", thousands), latex)
    localised = _MATH_DECIMAL.sub(rf"\1{decimal}\2", latex)
    if localised != latex:  # decimal commas: a comma no longer separates numbers
        localised = _MATH_LIST_COMMA.sub(lambda m: separator, localised)
    return localised


class LocaliseGluedNumbers(SphinxPostTransform):
    """On every page, each ``{glue:text}`` value that is a number written by
    the book's one rule; on a page of a language with its own numbers, the
    numbers of every formula written that language's way too."""

    default_priority = 6  # after myst-nb pastes values of other pages (5)

    def run(self) -> None:
        language = self.config.language
        for node in self.document.findall(nodes.inline):
            if "pasted-text" not in node.get("classes", []) or len(node) != 1:
                continue
            text = node[0]
            if not isinstance(text, nodes.Text):
                continue
            localised = localise_number(str(text), language)
            if localised != str(text):
                node.replace(text, nodes.Text(localised))
        if not has_own_numbers(language):
            return
        for node in self.document.findall(
            lambda n: isinstance(n, (nodes.math, nodes.math_block))
        ):
            for text in list(node.findall(nodes.Text)):
                localised = localise_math(str(text), language)
                if localised != str(text):
                    text.parent.replace(text, nodes.Text(localised))


def setup(app: Sphinx) -> dict:
    app.add_post_transform(LocaliseGluedNumbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
