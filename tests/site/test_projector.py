"""The reading pages on a projector: every page of the built site, both
languages, in a 1280x720 window (issue 38). No widget is taller than the room
under the page's sticky header, and each shows whole in its first state (what
grows later scrolls inside it); no output or text line is cut at the right
(they wrap: bookbuild.css); one search box.

Debian's /usr/bin/chromium through playwright, as in tests/site/test_browser.py.
Each page is loaded once (module fixture ``projected``); the three tests read
what it measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bookbuild.toc import pages
from bookbuild.tools.browser import wait_for_math

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = [pytest.mark.book, pytest.mark.browser]

#: A projector's resolution (and a common laptop's window at 150% zoom).
PROJECTOR = {"width": 1280, "height": 720}

# Every folded box opened (solutions, folded code and outputs, "Cite this
# chapter"): what a lecturer may unfold must fit too.
OPEN_EVERYTHING = """() => {
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    document.querySelectorAll('button.toggle-button[aria-expanded="false"]')
        .forEach(b => b.click());
}"""

# The visible search boxes: the theme's search fields and buttons, and a
# search form with its input (one box), outside the closed search dialog.
SEARCH_BOXES = """() => {
    const shown = e => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0
            && getComputedStyle(e).visibility !== 'hidden';
    };
    return [...document.querySelectorAll(
        '.search-button-field, .search-button, form.bd-search, '
        + 'input[type=search]:not(form.bd-search input)')]
        .filter(shown)
        .map(e => `${e.tagName.toLowerCase()}.${e.getAttribute('class')} at `
            + `${Math.round(e.getBoundingClientRect().top)} px`);
}"""

# What code printed and the text blocks (writing samples, BibTeX, a shell line):
# those whose longest line is wider than their box. Python code is not among
# them (it scrolls in its own box: bookbuild.css says why).
TEXT_BLOCKS = [
    ".bd-article .cell_output pre",
    ".bd-article div.highlight-text pre",
    ".bd-article div.highlight-none pre",
    ".bd-article div.highlight-bibtex pre",
    ".bd-article div.highlight-bash pre",
]
CUT_LINES = """(selector) => [...document.querySelectorAll(selector)]
    .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
    .map(e => {
        const lines = e.textContent.split('\\n');
        const longest = lines.reduce((a, b) => a.length >= b.length ? a : b, '');
        return `${e.scrollWidth} px in ${e.clientWidth}: ${longest.slice(0, 60)}`;
    })"""

# Scroll the page until the widget's top is just below the sticky header.
PLACE_WIDGET = """async (index) => {
    const root = document.querySelectorAll('.qkv-w-ready')[index];
    const header = document.querySelector('.bd-header-article');
    const below = header ? header.getBoundingClientRect().bottom : 0;
    window.scrollBy(0, root.getBoundingClientRect().top - below - 4);
    await new Promise(done =>
        requestAnimationFrame(() => requestAnimationFrame(done)));
}"""
# The widget's height, the room under the header, and how its content fits.
WIDGET_FIT = """(index) => {
    const root = document.querySelectorAll('.qkv-w-ready')[index];
    const header = document.querySelector('.bd-header-article');
    const below = header ? header.getBoundingClientRect().bottom : 0;
    return {
        id: root.id, height: root.getBoundingClientRect().height,
        room: innerHeight - below, content: root.scrollHeight,
        shown: root.clientHeight, overflow: getComputedStyle(root).overflowY,
    };
}"""


@dataclass
class Projected:
    """What one page showed at 1280x720."""

    url: str
    search: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)
    widgets: list[dict] = field(default_factory=list)


def page_names() -> list[str]:
    english = [*pages(ROOT), "index", "search", "genindex"]
    return [*english, *(f"fr/{name}" for name in english)]


def project(browser, site: str, name: str) -> Projected:
    seen = Projected(f"{site}/{name}.html")
    context = browser.new_context(viewport=PROJECTOR)
    try:
        page = context.new_page()
        page.goto(seen.url, wait_until="load")
        wait_for_math(page)
        live = page.locator(".qkv-w-live").count()
        if live:  # every widget built by its script
            page.wait_for_function(
                f"document.querySelectorAll('.qkv-w-ready').length >= {live}"
            )
        seen.search = page.evaluate(SEARCH_BOXES)
        for index in range(live):
            page.evaluate(PLACE_WIDGET, index)
            seen.widgets.append(page.evaluate(WIDGET_FIT, index))
        page.evaluate(OPEN_EVERYTHING)
        page.wait_for_timeout(300)  # the toggles' transitions
        for selector in TEXT_BLOCKS:
            seen.cut += page.evaluate(CUT_LINES, selector)
    finally:
        context.close()
    return seen


@pytest.fixture(scope="module")
def projected(site, browser) -> dict[str, Projected]:
    """Every page of both languages, loaded once at 1280x720."""
    return {name: project(browser, site, name) for name in page_names()}


def test_every_widget_fits_a_projector(projected):
    """Under the sticky header, no widget is taller than the window; each shows
    whole in its first state (the [CLS] view and the live writer used to
    scroll inside: bookbuild.css lays them out for short screens); and what a
    widget holds beyond its box scrolls in the widget itself."""
    problems, widgets = [], 0
    for name, seen in projected.items():
        for fit in seen.widgets:
            widgets += 1
            at = f"{name} {fit['id']}"
            if fit["height"] > fit["room"] + 1:
                problems.append(
                    f"{at}: {fit['height']:.0f} px high, {fit['room']:.0f} px "
                    "under the header"
                )
            if fit["content"] > fit["shown"] + 1:
                problems.append(
                    f"{at}: shows {fit['shown']} of {fit['content']} px "
                    f"(overflow-y: {fit['overflow']})"
                )
    # the head view and the eight explorables, in both languages
    assert widgets >= 18, widgets
    assert not problems, "\n".join(problems)


def test_no_output_line_is_cut_at_the_right(projected):
    """What code printed (token lists, samples, errors) and the text blocks
    wrap at the column's edge instead of scrolling out of sight."""
    cut = [f"{name}: {line}" for name, seen in projected.items() for line in seen.cut]
    assert not cut, "\n".join(cut)


def test_one_search_box(projected):
    """One search box on every page: the sidebar's field (pydata-sphinx-theme's
    bar above the page, with a second one, is off: _config.yml), or on the
    search page the page's own form."""
    wrong = [
        f"{name}: {len(seen.search)} search boxes: {seen.search}"
        for name, seen in projected.items()
        if len(seen.search) != 1
    ]
    assert len(projected) == len(page_names())
    assert not wrong, "\n".join(wrong)
