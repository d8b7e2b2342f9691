"""The built site in headless Chromium: offline, no console error, math typeset.

Uses Debian's /usr/bin/chromium through the Python playwright package (never a
downloaded browser). Without Chromium the tests skip, except under CI=true, where
a missing browser is a failure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bookbuild.toc import lessons, pages
from bookbuild.tools.browser import (
    launch_async,
    wait_for_math,
    wait_for_math_async,
)
from bookbuild.tools.testing import require_chromium

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


pytestmark = [
    pytest.mark.book,
    pytest.mark.browser,
    pytest.mark.usefixtures("survey_started"),  # from the first test on
]


def visit(browser, url: str):
    """Load ``url`` in a fresh context; return the page, its requests and errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    seen = Visit(url)
    listen(page, seen)
    page.goto(url, wait_until="load")
    wait_for_math(page)
    return context, page, seen.requests, seen.errors


def outside_requests(requests: list[str], site: str) -> list[str]:
    """The requests that left the local site (data: and blob: URLs stay inside)."""
    host = urlparse(site).netloc
    return [
        url
        for url in requests
        if urlparse(url).netloc not in ("", host)
        and not url.startswith(("data:", "blob:"))
    ]


def page_urls(site: str) -> list[str]:
    listed = [f"{site}/{page}.html" for page in pages(ROOT)]
    extra = [f"{site}/{name}.html" for name in ("index", "search", "genindex")]
    french = [url.replace(site, f"{site}/fr", 1) for url in [*listed, *extra]]
    return [*listed, *extra, *french]


VIEW_PAGE = "book/pretrained-model.html"


def exercise_head_view(page) -> None:
    """Focus and hover tokens of the first head view; check what it highlights."""
    view = page.locator(".qkv-headview").first
    view.wait_for()
    status = view.locator(".qkv-hv-status")
    left = view.locator(".qkv-hv-left .qkv-hv-token")
    right = view.locator(".qkv-hv-right .qkv-hv-token")
    n_tokens = left.count()
    assert n_tokens > 3
    idle_lines = view.locator("line").count()
    assert "Hover or focus" in status.text_content()
    assert right.nth(0).get_attribute("data-weight") == ""

    left.nth(2).focus()  # keyboard: focus a token
    focused_text = status.text_content()
    assert "looks at" in focused_text
    assert left.nth(2).get_attribute("aria-pressed") == "true"
    weights = [
        float(right.nth(j).get_attribute("data-weight")) for j in range(n_tokens)
    ]
    assert abs(sum(weights) - 1) < 0.01, weights
    focused_lines = view.locator("line").count()
    assert 0 < focused_lines <= n_tokens < idle_lines

    page.keyboard.press("ArrowDown")  # moves to the next token
    assert left.nth(3).get_attribute("aria-pressed") == "true"
    assert status.text_content() != focused_text

    view.locator(".qkv-hv-head").select_option("0")  # another head redraws
    assert left.nth(3).get_attribute("aria-pressed") == "true"
    page.locator("body").click(position={"x": 5, "y": 5})  # blur
    left.nth(1).hover()  # mouse: hover a token
    assert left.nth(1).get_attribute("aria-pressed") == "true"
    assert "looks at" in status.text_content()


def test_head_view_reacts_to_focus_and_hover_over_http(site, browser):
    context, page, requests, errors = visit(browser, f"{site}/{VIEW_PAGE}")
    try:
        exercise_head_view(page)
        assert not outside_requests(requests, site)
        assert not errors, errors
    finally:
        context.close()


def test_head_view_speaks_french_on_a_french_page(site, browser):
    """On the French page the view's labels, its status line (with decimal
    commas) and the alt text of its static figure are French."""
    context, page, _, errors = visit(browser, f"{site}/fr/{VIEW_PAGE}")
    try:
        view = page.locator(".qkv-headview").first
        view.wait_for()
        status = view.locator(".qkv-hv-status")
        assert "Survolez" in status.text_content()
        assert view.locator(".qkv-hv-layer-name").text_content() == "Couche"
        assert view.locator(".qkv-hv-head-name").text_content() == "Tête"
        left = view.locator(".qkv-hv-left")
        assert left.get_attribute("aria-label") == "tokens qui portent attention"
        left.locator(".qkv-hv-token").nth(2).focus()
        text = status.text_content()
        assert "regarde\u202f:" in text and re.search(r"\d,\d\d", text), text
        alt = view.locator("img.qkv-w-static").get_attribute("alt")
        assert alt.startswith("Carte de chaleur"), alt
        assert not errors, errors
    finally:
        context.close()


def test_head_view_works_from_file_url(browser, built_book):
    context = browser.new_context()
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    try:
        page.goto((HTML / VIEW_PAGE).as_uri(), wait_until="load")
        exercise_head_view(page)
        assert not page_errors, page_errors
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_site_follows_the_readers_system_theme(browser, built_book, scheme):
    """Dark on a system set to dark, light on one set to light, until the
    reader chooses with the theme's switch (html_context default_mode: auto)."""
    context = browser.new_context(color_scheme=scheme)
    page = context.new_page()
    try:
        page.goto((HTML / "book" / "intro.html").as_uri(), wait_until="load")
        assert page.evaluate("document.documentElement.dataset.mode") == "auto"
        assert page.evaluate("document.documentElement.dataset.theme") == scheme
    finally:
        context.close()


def test_head_view_prints_as_a_static_figure(site, browser):
    context, page, _, errors = visit(browser, f"{site}/{VIEW_PAGE}")
    try:
        page.emulate_media(media="print")
        view = page.locator(".qkv-headview").first
        assert view.locator(".qkv-hv-print").is_visible()
        assert not view.locator(".qkv-hv-interactive").is_visible()
        page.emulate_media(media="screen")
        assert not view.locator(".qkv-hv-print").is_visible()
    finally:
        context.close()


def switch_language(page, name: str) -> None:
    """Open the language menu of the page's header and pick ``name``."""
    page.locator(".dropdown-language-buttons .dropdown-toggle").first.click()
    page.locator(".dropdown-language-buttons .dropdown-item", has_text=name).click()
    page.wait_for_load_state("load")


@pytest.mark.parametrize("over", ["http", "file"])
def test_language_menu_goes_to_the_same_section(site, browser, over):
    base = site if over == "http" else HTML.as_uri()
    context = browser.new_context()
    page = context.new_page()
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    try:
        page.goto(f"{base}/book/self-attention.html#self-attention-ex1")
        switch_language(page, "Français")
        assert page.url == f"{base}/fr/book/self-attention.html#self-attention-ex1"
        assert page.locator("html").get_attribute("lang") == "fr"
        assert "Exercice 5.1" in page.locator("#self-attention-ex1").inner_text()
        switch_language(page, "English")
        assert page.url == f"{base}/book/self-attention.html#self-attention-ex1"
        assert not page_errors, page_errors
    finally:
        context.close()


OPEN_EVERYTHING = """() => {
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    document.querySelectorAll('button.toggle-button[aria-expanded="false"]')
        .forEach(b => b.click());
}"""
SET_THEME = (
    "(theme) => { const root = document.documentElement;"
    " root.dataset.theme = theme; root.dataset.mode = theme; }"
)
# Colours change through CSS transitions: measure them once they are done.
TRANSITIONS_DONE = (
    "() => document.getAnimations().filter(a => a instanceof CSSTransition)"
    ".every(a => a.playState !== 'running')"
)


def open_everything(page) -> None:
    """Unfold every solution, folded code and details box, as a reader may."""
    page.evaluate(OPEN_EVERYTHING)
    page.wait_for_timeout(300)  # the toggles' transitions


def use_theme(page, theme: str) -> None:
    """Switch the loaded page to the theme's light or dark mode, as the theme's
    own switch does (the attributes its CSS depends on)."""
    page.evaluate(SET_THEME, theme)
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    page.wait_for_function(TRANSITIONS_DONE)


# Every display equation: the width of its typeset math, of the box MathJax lays
# it out in (the column, less the equation's number), and how that box overflows.
EQUATIONS = """() => [...document.querySelectorAll('mjx-container[display="true"]')]
    .map((box, index) => {
        const math = box.querySelector('mjx-math').getBoundingClientRect();
        const rect = box.getBoundingClientRect();
        const column = (box.closest('.bd-article') || document.body)
            .getBoundingClientRect();
        const block = box.closest('div.math');
        return {
            name: (block && block.id) || `equation ${index + 1}`,
            math: math.width, box: box.clientWidth, scroll: box.scrollWidth,
            overflow: getComputedStyle(box).overflowX,
            left: rect.left, right: rect.right,
            columnLeft: column.left, columnRight: column.right,
            viewport: document.documentElement.clientWidth,
        };
    })"""


def test_french_search_finds_french_words(site, browser):
    context, page, _, errors = visit(browser, f"{site}/fr/search.html?q=requêtes")
    try:
        page.wait_for_selector("#search-results li", timeout=30_000)
        results = page.locator("#search-results li").all_inner_texts()
        assert any("auto-attention" in r.lower() for r in results), results
        assert not errors, errors
    finally:
        context.close()


#: A 1280x800 screen at 150% and 200% zoom, as the page sees it (CSS pixels).
ZOOMED = [{"width": 853, "height": 533}, {"width": 640, "height": 400}]

# Scroll the page until the widget's top is just below the page's sticky header
# (or, with "bottom", its bottom at the bottom of the screen), the last move
# upwards: the theme shows "Back to top" while the reader scrolls up.
PLACE_WIDGET = """async ([index, where]) => {
    const root = document.querySelectorAll('.qkv-w-ready')[index];
    const header = document.querySelector('.bd-header-article');
    const below = header ? header.getBoundingClientRect().bottom : 0;
    const rect = root.getBoundingClientRect();
    const shift = where === 'top'
        ? rect.top - below - 8 : rect.bottom - innerHeight + 8;
    const frames = () => new Promise(
        done => requestAnimationFrame(() => requestAnimationFrame(done)));
    const target = scrollY + shift;
    window.scrollTo(0, target + 80);
    await frames();
    window.scrollTo(0, target);
    await frames();
}"""
# The widget's box, the room under the header, and what covers the widget's last
# row (its bottom 30 pixels, sampled every 15 pixels across): any element on top
# there that is not part of the widget, or a point off the screen.
WIDGET_FIT = """(index) => {
    const root = document.querySelectorAll('.qkv-w-ready')[index];
    const header = document.querySelector('.bd-header-article');
    const below = header ? header.getBoundingClientRect().bottom : 0;
    const rect = root.getBoundingClientRect();
    const covered = new Set();
    for (const up of [3, 15, 27]) {
        for (let x = rect.left + 3; x < rect.right - 3; x += 15) {
            const hit = document.elementFromPoint(x, rect.bottom - up);
            if (!hit) covered.add('off the screen');
            else if (!root.contains(hit)) {
                covered.add(hit.id || hit.getAttribute('class') || hit.tagName);
            }
        }
    }
    const button = document.getElementById('pst-back-to-top');
    return {
        id: root.id, height: rect.height, top: rect.top, bottom: rect.bottom,
        room: innerHeight - below, below, viewport: innerHeight,
        button: button ? getComputedStyle(button).display : 'none',
        covered: [...covered],
    };
}"""


def widget_pages() -> list[str]:
    """The English pages with a widget (the head view, the explorables)."""
    return [
        name
        for name in pages(ROOT)
        if 'class="qkv-w-live' in (HTML / f"{name}.html").read_text(encoding="utf-8")
    ]


@pytest.mark.release  # a whole-site audit: every page with a widget, twice
def test_widgets_fit_a_zoomed_laptop_screen(site, browser):
    """On a 1280x800 screen at 150% and 200% zoom, each widget fits in the screen
    under the page's header (what is longer scrolls inside it), and nothing,
    "Back to top" included, covers its last row when it is in view. One load per
    page: the zoom changes the viewport, which the page lays out again."""
    names = widget_pages()
    assert len(names) >= 5, names  # the head view and the four explorables
    problems, widgets = [], 0
    for name in names:
        context = browser.new_context(viewport=ZOOMED[0], device_scale_factor=2)
        try:
            page = context.new_page()
            page.goto(f"{site}/{name}.html", wait_until="load")
            wait_for_math(page)
            page.locator(".qkv-w-ready").first.wait_for()
            count = page.locator(".qkv-w-ready").count()
            for viewport in ZOOMED:
                page.set_viewport_size(viewport)
                for index in range(count):
                    widgets += 1
                    for where in ("top", "bottom"):
                        page.evaluate(PLACE_WIDGET, [index, where])
                        fit = page.evaluate(WIDGET_FIT, index)
                        at = f"{name} {fit['id']} at {viewport['width']}x"
                        at += f"{viewport['height']} ({where})"
                        if fit["height"] > fit["room"]:
                            problems.append(
                                f"{at}: {fit['height']:.0f} px high, "
                                f"{fit['room']:.0f} px under the header"
                            )
                        elif fit["covered"]:
                            problems.append(f"{at}: last row under {fit['covered']}")
                        if fit["button"] == "none":
                            problems.append(f"{at}: Back to top not shown")
        finally:
            context.close()
    assert widgets >= 2 * len(names), widgets
    assert not problems, "\n".join(problems)


# Every SVG figure with a caption: its source, width on the page and the
# caption's font size.
FIGURES = """() => [...document.querySelectorAll('figure')].map(f => {
    const img = f.querySelector('img'), cap = f.querySelector('figcaption');
    return img && cap && img.src.endsWith('.svg') ? {
        src: img.getAttribute('src'),
        width: img.getBoundingClientRect().width,
        caption: parseFloat(getComputedStyle(cap).fontSize),
        id: f.id} : null;
}).filter(Boolean)"""

SERIOUS = {"serious", "critical"}


def serious_violations(results: dict, where: str) -> list[str]:
    return [
        f"{where}: {violation['id']} ({violation['impact']}): {violation['help']}; "
        f"at {[', '.join(node['target']) for node in violation['nodes']][:3]}"
        for violation in results["violations"]
        if violation["impact"] in SERIOUS
    ]


#: How many pages the survey loads at once (one Chromium renderer each; two
#: cores, and each page waits on Python between its steps).
PAGES_AT_ONCE = 3
# Two animation frames: the layout of a resized window is done.
TWO_FRAMES = """() => new Promise(done =>
    requestAnimationFrame(() => requestAnimationFrame(done)))"""
LAPTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


# The document's width against the viewport's; if wider, the elements that stick
# out of the viewport with no box around them that scrolls or clips (a code
# cell's long line scrolls in its own box: not one of them).
DOCUMENT_WIDTH = """() => {
    const width = document.documentElement.scrollWidth;
    const viewport = document.documentElement.clientWidth;
    const boxed = (element) => {
        for (let box = element.parentElement; box && box !== document.body;
             box = box.parentElement) {
            if (getComputedStyle(box).overflowX !== 'visible') return true;
        }
        return false;
    };
    const culprits = width <= viewport ? [] : [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > viewport + 1 && !boxed(e))
        .slice(0, 3)
        .map(e => `${e.tagName.toLowerCase()}.${e.getAttribute('class')}: `
            + (e.textContent || '').trim().slice(0, 50));
    return {width, viewport, culprits};
}"""


@dataclass
class Visit:
    """What one visit of a page saw. ``requests`` cover the whole visit;
    ``errors`` stop when axe-core starts (it fetches the page's stylesheets
    itself, with addresses of its own making)."""

    url: str
    axe_started: bool = False
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    math_blocks: int = 0  # elements of class "math" in the HTML
    typeset: int = 0  # MathJax containers
    math_errors: int = 0
    equations: list[dict] = field(default_factory=list)  # EQUATIONS, if measured
    figures: list[dict] = field(default_factory=list)  # FIGURES, if measured
    accessibility: list[str] = field(default_factory=list)  # serious violations
    width: dict = field(default_factory=dict)  # DOCUMENT_WIDTH, at a phone's width


@dataclass
class Survey:
    """Every page of the site, each loaded once at a laptop's width (offline
    checks, math, equations, figures), then measured at a phone's width (the
    document's width; the English pages' equations), then back at a laptop's
    width for axe-core (which opens every folded box)."""

    laptop: dict[str, Visit]
    phone: dict[str, Visit]
    code_styles: dict[str, set[str]]  # code_styles of each English page
    code_checked: set[str]  # the pages whose code's contrast axe measures


def listen(page, visit: Visit) -> None:
    """Record the page's requests and errors (console, script, HTTP) in ``visit``."""

    def error(text: str) -> None:
        if not visit.axe_started:
            visit.errors.append(text)

    def on_console(message):
        if message.type == "error":
            where = (message.location or {}).get("url") or "?"
            error(f"console: {message.text} (at {where})")

    def on_response(response):
        if response.status >= 400:
            error(f"HTTP {response.status}: {response.url}")

    page.on("request", lambda request: visit.requests.append(request.url))
    page.on("console", on_console)
    page.on("pageerror", lambda exception: error(f"page error: {exception}"))
    page.on("requestfailed", lambda request: error(f"failed: {request.url}"))
    page.on("response", on_response)


# A block of highlighted code or of output, and the classes of its spans.
CODE_BLOCK = re.compile(
    r'class="[^"]*\bhighlight-([\w-]+)[^"]*"><div class="highlight"><pre>(.*?)</pre>',
    re.S,
)


def code_styles(page_html: str) -> set[str]:
    """What the page's code and output blocks are coloured with: "language
    class" for every span class in them (Pygments' tokens, ANSI colours), and
    "language text" for the block's own text."""
    styles = set()
    for language, block in CODE_BLOCK.findall(page_html):
        styles.add(f"{language} text")
        for classes in re.findall(r'<span class="([^"]+)"', block):
            styles.update(f"{language} {name}" for name in classes.split())
    return styles


def code_contrast_pages(styles: dict[str, set[str]]) -> set[str]:
    """Few pages whose code shows every style of every page (a greedy cover):
    the colour contrast of code is checked on those pages, in both themes.
    Code is styled by its token classes alone (one stylesheet for every page),
    and it is half of what the contrast rule measures on a chapter."""
    left, chosen = set().union(*styles.values()), set()
    while left:
        best = max(sorted(styles), key=lambda page: len(styles[page] & left))
        chosen.add(best)
        left -= styles[best]
    return chosen


async def check_accessibility(
    page, axe, visit: Visit, translation: bool, with_code: bool
) -> None:
    """axe-core with every folded box opened: every rule in the light theme, and
    the colour contrast again in the dark theme (the only rule the theme changes;
    math is left out there: MathJax draws it in the colour of the text around it).

    A page of a translation (``translation``) has the same elements and the same
    stylesheets as its English twin, in its own words: it gets every rule but
    the colour contrast (the slowest rule by far, about half of axe's time),
    which the English pages check in both themes. The contrast of code and
    output blocks is measured on the pages ``with_code`` only
    (code_contrast_pages); elsewhere they get every other rule. Only violations
    are collected (axe then skips the details of what passed)."""
    violations = {"resultTypes": ["violations"]}
    contrast_only = {
        **violations,
        "runOnly": {"type": "rule", "values": ["color-contrast"]},
    }
    no_contrast = {**violations, "rules": {"color-contrast": {"enabled": False}}}
    code = [] if with_code else [[".highlight"]]
    await page.evaluate(OPEN_EVERYTHING)
    await page.wait_for_timeout(300)  # the toggles' transitions
    for theme in ("light",) if translation else ("light", "dark"):
        await page.evaluate(SET_THEME, theme)
        assert await page.evaluate("document.documentElement.dataset.theme") == theme
        await page.wait_for_function(TRANSITIONS_DONE)
        visit.axe_started = True
        runs = []
        if translation:
            runs.append((None, no_contrast))
        elif theme == "light" and with_code:
            runs.append((None, violations))
        elif theme == "light":
            runs.append((None, no_contrast))
            runs.append(({"exclude": code}, contrast_only))
        else:
            runs.append(({"exclude": [["mjx-container"], *code]}, contrast_only))
        for context, options in runs:
            results = await axe.run(page, context, options)
            visit.accessibility += serious_violations(
                results.response, f"{theme} {visit.url}"
            )


async def survey_pages(site: str) -> Survey:
    """Load every page once, ``PAGES_AT_ONCE`` at a time in one Chromium (each
    page renders in its own process: the cores work in parallel), and record
    what each test of this module checks, at both widths (Survey)."""
    from axe_playwright_python.async_playwright import Axe
    from playwright.async_api import async_playwright

    axe = Axe()
    english = set(pages(ROOT))
    chapters = set(lessons(ROOT))
    styles = {
        name: code_styles((HTML / f"{name}.html").read_text(encoding="utf-8"))
        for name in english
    }
    with_code = code_contrast_pages(styles)
    laptop = {url: Visit(url) for url in page_urls(site)}
    phone = {url: Visit(url) for url in page_urls(site)}
    queue: asyncio.Queue[Visit] = asyncio.Queue()
    for visit in laptop.values():
        queue.put_nowait(visit)

    async def work(browser) -> None:
        while not queue.empty():
            visit = queue.get_nowait()
            name = visit.url.removeprefix(f"{site}/").removesuffix(".html")
            context = await browser.new_context(viewport=LAPTOP)
            try:
                page = await context.new_page()
                listen(page, visit)
                await page.goto(visit.url, wait_until="load")
                await wait_for_math_async(page)
                if name in english:
                    visit.equations = await page.evaluate(EQUATIONS)
                visit.math_blocks = await page.locator(".math").count()
                visit.typeset = await page.locator("mjx-container").count()
                visit.math_errors = await page.locator("mjx-merror").count()
                if name in chapters:
                    visit.figures = await page.evaluate(FIGURES)
                # The same page at a phone's width (the layout follows the
                # window: CSS media queries, no script sizes anything once).
                await page.set_viewport_size(PHONE)
                await page.evaluate(TWO_FRAMES)
                small = phone[visit.url]
                small.width = await page.evaluate(DOCUMENT_WIDTH)
                if name in english:
                    small.equations = await page.evaluate(EQUATIONS)
                await page.set_viewport_size(LAPTOP)
                await page.evaluate(TWO_FRAMES)
                translation = name.startswith("fr/")  # see check_accessibility
                await check_accessibility(
                    page, axe, visit, translation, with_code=name in with_code
                )
            finally:
                await context.close()

    async with async_playwright() as playwright:
        browser = await launch_async(playwright)
        try:
            await asyncio.gather(*(work(browser) for _ in range(PAGES_AT_ONCE)))
        finally:
            await browser.close()
    return Survey(laptop, phone, styles, with_code)


@pytest.fixture(scope="module")
def survey_started(request, site) -> Iterator[Future | None]:
    """The survey of every page, started by the module's first test, through
    playwright's asynchronous API in a thread of its own (the module's
    ``browser`` is the synchronous API's, in this thread): the module's other
    tests, above, run while it works; its five whole-site tests, last in the
    module, wait for it. Not started when no selected test reads it."""
    wanted = any("survey" in item.fixturenames for item in request.session.items)
    if not wanted:
        yield None
        return
    require_chromium()
    with ThreadPoolExecutor(max_workers=1) as thread:
        yield thread.submit(asyncio.run, survey_pages(site))


@pytest.fixture(scope="module")
def survey(survey_started) -> Survey:
    return survey_started.result()


def test_every_page_is_offline_clean_and_typesets_math(survey, site):
    problems, math_pages = [], 0
    for url, visit in survey.laptop.items():
        outside = outside_requests(visit.requests, site)
        if outside:
            problems.append(f"{url} requested {outside}")
        if visit.errors:
            problems.append(f"{url} logged errors: {visit.errors}")
        if visit.math_blocks:
            math_pages += 1
            if not visit.typeset:
                problems.append(f"{url}: math left untypeset")
            if visit.math_errors:
                problems.append(f"{url}: MathJax error")
    assert len(survey.laptop) == len(page_urls(site))
    assert math_pages > 0, "no page with math was checked"
    assert not problems, "\n".join(problems)


def test_no_serious_accessibility_violation_on_any_page(survey):
    """axe-core (bundled with axe-playwright-python: offline) on every page of
    both languages, every folded box opened; the colour contrast in both themes
    on the English pages (check_accessibility)."""
    problems = [p for visit in survey.laptop.values() for p in visit.accessibility]
    assert not problems, "\n".join(problems)
    every_style = set().union(*survey.code_styles.values())
    checked = set().union(*(survey.code_styles[p] for p in survey.code_checked))
    assert len(every_style) > 20 and checked == every_style, every_style - checked


def test_figure_text_is_as_large_as_the_caption(survey, site):
    """On a 1280-pixel window, no text in a figure is smaller than the caption."""
    from bookbuild.tools.figures import smallest_text_px

    too_small, measured = [], 0
    for chapter in lessons(ROOT):
        for figure in survey.laptop[f"{site}/{chapter}.html"].figures:
            measured += 1
            svg = (HTML / chapter).parent.joinpath(figure["src"]).resolve()
            smallest = smallest_text_px(
                svg.read_text(encoding="utf-8"), figure["width"]
            )
            if smallest is not None and smallest < figure["caption"] - 0.05:
                too_small.append(
                    f"{chapter} #{figure['id']}: {smallest:.1f} px < caption "
                    f"{figure['caption']:.1f} px"
                )
    assert measured > 30, measured
    assert not too_small, "\n".join(too_small)


def test_display_equations_fit_the_column_on_a_laptop(survey, site):
    """At 1280 pixels, no display equation is wider than the space it is given."""
    too_wide, measured = [], 0
    for page_name in pages(ROOT):
        for eq in survey.laptop[f"{site}/{page_name}.html"].equations:
            measured += 1
            wide = eq["math"] > eq["box"] + 1 or eq["right"] > eq["columnRight"] + 1
            if not wide:
                continue
            too_wide.append(
                f"{page_name} {eq['name']}: {eq['math']:.0f} px of math in a box of "
                f"{eq['box']} px: break it over lines (aligned)"
            )
    assert measured > 30, measured
    assert not too_wide, "\n".join(too_wide)


def test_display_equations_scroll_but_are_never_cut_off_on_a_phone(survey, site):
    """At 390 pixels an equation may be wider than the screen: it then scrolls in
    its own box, which stays within the column; no part is out of reach."""
    with_equations = {url for url, visit in survey.laptop.items() if visit.equations}
    assert with_equations <= set(survey.phone), with_equations - set(survey.phone)
    cut_off, scrolling = [], 0
    for page_name in pages(ROOT):
        visit = survey.phone.get(f"{site}/{page_name}.html", Visit(page_name))
        for eq in visit.equations:
            where = f"{page_name} {eq['name']}"
            if eq["left"] < eq["columnLeft"] - 1 or eq["right"] > eq["columnRight"] + 1:
                cut_off.append(f"{where}: its box leaves the column")
            if eq["math"] <= eq["box"] + 1:
                continue  # fits
            scrolling += 1
            if eq["overflow"] not in ("auto", "scroll"):
                cut_off.append(f"{where}: wider than its box, which does not scroll")
            elif eq["scroll"] + 1 < eq["math"]:
                cut_off.append(f"{where}: scrolls {eq['scroll']} of {eq['math']} px")
    assert scrolling > 0, "no equation is wider than a phone: the check checked nothing"
    assert not cut_off, "\n".join(cut_off)


def test_no_page_is_wider_than_a_phone(survey, site):
    """At 390 pixels no page of either language scrolls sideways: what is wider
    than the screen (a code cell, an equation, a table) scrolls in its own box,
    and a long name in inline code breaks (bookbuild.css)."""
    assert sorted(survey.phone) == sorted(page_urls(site))
    too_wide = [
        f"{url}: {visit.width['width']} px wide in {visit.width['viewport']} px; "
        f"{visit.width['culprits']}"
        for url, visit in survey.phone.items()
        if visit.width["width"] > visit.width["viewport"]
    ]
    assert not too_wide, "\n".join(too_wide)
