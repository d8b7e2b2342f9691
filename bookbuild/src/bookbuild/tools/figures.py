"""How large a figure's text is on the page: for lecturers who project the book.

matplotlib writes text into SVG as glyph paths, each group scaled by the font
size: ``transform="translate(x y) scale(0.12 -0.12)"`` is 12-point text (glyphs
are drawn at 100 units per point size). The page shows an SVG at some width;
its text then measures ``size * shown width / viewBox width`` CSS pixels.
``tests/site/test_browser.py`` compares that with the page's caption text.
"""

from __future__ import annotations

import re

_TEXT_SCALE = re.compile(r"scale\(([\d.]+) -([\d.]+)\)")
_VIEW_BOX = re.compile(r'viewBox="[\d.]+ [\d.]+ ([\d.]+) [\d.]+"')


def text_sizes(svg: str) -> list[float]:
    """The size (in the SVG's own units) of every piece of text in ``svg``."""
    return [
        float(x) * 100
        for x, y in _TEXT_SCALE.findall(svg)
        if abs(float(x) - float(y)) < 1e-9
    ]


def view_width(svg: str) -> float:
    """The width of the SVG's viewBox, in its own units."""
    found = _VIEW_BOX.search(svg)
    if not found:
        raise ValueError("the SVG has no viewBox")
    return float(found.group(1))


def smallest_text_px(svg: str, shown_width_px: float) -> float | None:
    """The smallest text of ``svg`` in CSS pixels when it is shown that wide
    (None for a figure without text)."""
    sizes = text_sizes(svg)
    if not sizes:
        return None
    return min(sizes) * shown_width_px / view_width(svg)
