"""The built site in headless Chromium: offline, no console error, math typeset.

Uses Debian's /usr/bin/chromium through the Python playwright package (never a
downloaded browser). Without Chromium the tests skip, except under CI=true, where
a missing browser is a failure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlparse

import pytest

from bookbuild.toc import lessons, pages
from bookbuild.tools.browser import (
    launch,
    launch_async,
    serve,
    wait_for_math,
    wait_for_math_async,
)
from bookbuild.tools.testing import require_chromium

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


pytestmark = [pytest.mark.book, pytest.mark.browser]


@pytest.fixture(scope="module")
def site(built_book) -> Iterator[str]:
    """The built site served on 127.0.0.1 (a free port), as a base URL."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    with serve(HTML) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def visit(browser, url: str):
    """Load ``url`` in a fresh context; return the page, its requests and errors."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []

    def on_console(message):
        if message.type == "error":
            where = (message.location or {}).get("url") or "?"
            errors.append(f"console: {message.text} (at {where})")

    def on_response(response):
        if response.status >= 400:
            errors.append(f"HTTP {response.status}: {response.url}")

    page.on("request", lambda request: requests.append(request.url))
    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: errors.append(f"failed: {request.url}"))
    page.on("response", on_response)
    page.goto(url, wait_until="load")
    wait_for_math(page)
    return context, page, requests, errors


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


def test_every_page_is_offline_clean_and_typesets_math(site, browser):
    math_pages = 0
    for url in page_urls(site):
        context, page, requests, errors = visit(browser, url)
        try:
            outside = outside_requests(requests, site)
            assert not outside, f"{url} requested {outside}"
            assert not errors, f"{url} logged errors: {errors}"
            if page.locator(".math").count():
                math_pages += 1
                typeset = page.locator("mjx-container").count()
                assert typeset > 0, f"{url}: math left untypeset"
                assert page.locator("mjx-merror").count() == 0, f"{url}: MathJax error"
        finally:
            context.close()
    assert math_pages > 0, "no page with math was checked"


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


def test_figure_text_is_as_large_as_the_caption(site, browser):
    """On a 1280-pixel window, no text in a figure is smaller than the caption."""
    from bookbuild.tools.figures import smallest_text_px

    too_small = []
    for chapter in lessons(ROOT):
        context, page, _, _ = visit(browser, f"{site}/{chapter}.html")
        try:
            figures = page.evaluate(
                """() => [...document.querySelectorAll('figure')].map(f => {
                    const img = f.querySelector('img'), cap = f.querySelector(
                        'figcaption');
                    return img && cap && img.src.endsWith('.svg') ? {
                        src: img.getAttribute('src'),
                        width: img.getBoundingClientRect().width,
                        caption: parseFloat(getComputedStyle(cap).fontSize),
                        id: f.id} : null;
                }).filter(Boolean)"""
            )
        finally:
            context.close()
        for figure in figures:
            svg = (HTML / chapter).parent.joinpath(figure["src"]).resolve()
            smallest = smallest_text_px(
                svg.read_text(encoding="utf-8"), figure["width"]
            )
            if smallest is not None and smallest < figure["caption"] - 0.05:
                too_small.append(
                    f"{chapter} #{figure['id']}: {smallest:.1f} px < caption "
                    f"{figure['caption']:.1f} px"
                )
    assert not too_small, "\n".join(too_small)


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


SERIOUS = {"serious", "critical"}


def serious_violations(results: dict, where: str) -> list[str]:
    return [
        f"{where}: {violation['id']} ({violation['impact']}): {violation['help']}; "
        f"at {[', '.join(node['target']) for node in violation['nodes']][:3]}"
        for violation in results["violations"]
        if violation["impact"] in SERIOUS
    ]


#: How many pages axe checks at once (one Chromium renderer each; two cores).
AXE_PAGES_AT_ONCE = 2


async def axe_problems(urls: list[str], at_once: int) -> tuple[int, list[str]]:
    """Run axe-core on every page of ``urls``, ``at_once`` pages at a time in one
    Chromium (each page renders in its own process: the cores work in parallel);
    return how many pages were checked and the serious violations."""
    from axe_playwright_python.async_playwright import Axe
    from playwright.async_api import async_playwright

    axe = Axe()
    contrast_only = {
        "resultTypes": ["violations"],
        "runOnly": {"type": "rule", "values": ["color-contrast"]},
    }
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    problems: list[str] = []
    checked = 0

    async def check_pages(browser) -> None:
        nonlocal checked
        while not queue.empty():
            url = queue.get_nowait()
            context = await browser.new_context(viewport={"width": 1280, "height": 900})
            try:
                page = await context.new_page()
                await page.goto(url, wait_until="load")
                await wait_for_math_async(page)
                await page.evaluate(OPEN_EVERYTHING)
                await page.wait_for_timeout(300)  # the toggles' transitions
                for theme in ("light", "dark"):
                    await page.evaluate(SET_THEME, theme)
                    assert (
                        await page.evaluate("document.documentElement.dataset.theme")
                        == theme
                    )
                    await page.wait_for_function(TRANSITIONS_DONE)
                    if theme == "light":
                        results = await axe.run(page)
                    else:
                        exclude = {"exclude": [["mjx-container"]]}
                        results = await axe.run(page, exclude, contrast_only)
                    problems.extend(
                        serious_violations(results.response, f"{theme} {url}")
                    )
                checked += 1
            finally:
                await context.close()

    async with async_playwright() as playwright:
        browser = await launch_async(playwright)
        try:
            await asyncio.gather(*(check_pages(browser) for _ in range(at_once)))
        finally:
            await browser.close()
    return checked, problems


def test_no_serious_accessibility_violation_on_any_page(site, browser):
    """axe-core (bundled with axe-playwright-python: offline) on every page with
    every folded box opened: every rule in the light theme, and the colour
    contrast again in the dark theme (the only rule the theme changes; math is
    left out there: MathJax draws it in the colour of the text around it).
    Two pages at a time, through playwright's asynchronous API in a thread of its
    own (the module's browser is the synchronous API's, in this thread)."""
    urls = page_urls(site)
    with ThreadPoolExecutor(max_workers=1) as thread:
        run = thread.submit(asyncio.run, axe_problems(urls, AXE_PAGES_AT_ONCE))
        checked, problems = run.result()
    assert checked == len(urls)
    assert not problems, "\n".join(problems)


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


def equations_of(browser, url: str, width: int, height: int) -> list[dict]:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(url, wait_until="load")
        wait_for_math(page)
        return page.evaluate(EQUATIONS)
    finally:
        context.close()


def test_french_search_finds_french_words(site, browser):
    context, page, _, errors = visit(browser, f"{site}/fr/search.html?q=requêtes")
    try:
        page.wait_for_selector("#search-results li", timeout=30_000)
        results = page.locator("#search-results li").all_inner_texts()
        assert any("auto-attention" in r.lower() for r in results), results
        assert not errors, errors
    finally:
        context.close()


def test_display_equations_fit_the_column_on_a_laptop(site, browser):
    """At 1280 pixels, no display equation is wider than the space it is given."""
    too_wide, measured = [], 0
    for page_name in pages(ROOT):
        for eq in equations_of(browser, f"{site}/{page_name}.html", 1280, 900):
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


def test_display_equations_scroll_but_are_never_cut_off_on_a_phone(site, browser):
    """At 390 pixels an equation may be wider than the screen: it then scrolls in
    its own box, which stays within the column; no part is out of reach."""
    cut_off, scrolling = [], 0
    for page_name in pages(ROOT):
        for eq in equations_of(browser, f"{site}/{page_name}.html", 390, 844):
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
