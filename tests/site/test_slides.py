"""The lecture decks (bookbuild.site.slides) in headless Chromium: every deck of
both languages opens from the local site with no outside request and no console
error, no slide is larger than 1280x720, every figure on a slide is one its page
shows, an explorable in a deck computes what it computes on the page, and the
keyboard drives a deck, the speaker view of a French deck is French. The
student decks are scanned with the student edition
(tests/site/test_student_edition.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.site.slides import FOLDER
from bookbuild.toc import lessons
from bookbuild.tools.browser import wait_for_math

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = [pytest.mark.book, pytest.mark.browser]

#: Slides whose content is larger than the slide (the slide's own box, in the
#: deck's 1280x720 coordinates; what scrolls inside a box of its own is inside).
OVERFLOWING = """() => [...document.querySelectorAll(
    '.slides section[data-qkv-kind]')].map(
    (section, index) => {
        const slide = section.querySelector('.qkv-slide');
        return {index, kind: section.dataset.qkvKind,
                height: slide.scrollHeight, boxHeight: slide.clientHeight,
                width: slide.scrollWidth, boxWidth: slide.clientWidth};
    }).filter((s) => s.height > s.boxHeight + 1 || s.width > s.boxWidth + 1
        || s.boxHeight > 720 || s.boxWidth > 1280)"""
IMAGES = """() => [...document.querySelectorAll('.slides img')]
    .map((img) => img.getAttribute('src'))
    .filter((src) => !src.startsWith('data:'))"""
BROKEN_IMAGES = """() => [...document.querySelectorAll('.slides img')].filter(
    (img) => !img.complete || img.naturalWidth === 0).length"""


def decks() -> list[tuple[str, str]]:
    return [
        (language, Path(docname).name)
        for language in ("", "fr")
        for docname in lessons(ROOT)
    ]


def open_deck(browser, url: str, base: str):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    seen = {"errors": [], "outside": []}
    page.on(
        "console",
        lambda message: message.type == "error" and seen["errors"].append(message.text),
    )
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on(
        "request",
        lambda request: (
            not request.url.startswith((base, "data:", "blob:"))
            and seen["outside"].append(request.url)
        ),
    )
    page.goto(url, wait_until="load")
    page.wait_for_function("() => window.Reveal && Reveal.isReady()")
    wait_for_math(page)
    return context, page, seen


@pytest.mark.release  # a whole-site audit: every deck of both languages
def test_every_deck_opens_offline_fits_the_screen_and_shows_its_pages_figures(
    site, browser
):
    problems = []
    counted = 0
    for language, chapter in decks():
        prefix = f"{language}/" if language else ""
        url = f"{site}/{prefix}{FOLDER}/{chapter}.html?print-pdf"
        context, page, seen = open_deck(browser, url, site)
        try:
            page.wait_for_timeout(200)  # the print layout, after the math
            where = f"{prefix}{chapter}"
            if seen["errors"] or seen["outside"]:
                problems.append((where, seen))
            overflowing = page.evaluate(OVERFLOWING)
            if overflowing:
                problems.append((where, "overflows", overflowing))
            if page.evaluate(BROKEN_IMAGES):
                problems.append((where, "an image did not load"))
            shown = set(page.evaluate(IMAGES))
            text = (HTML / prefix / "book" / f"{chapter}.html").read_text("utf-8")
            glued = set(re.findall(r'<img[^>]*\bsrc="([^"]+)"', text))
            if shown - glued:
                problems.append((where, "not the page's", shown - glued))
            if page.locator("html").get_attribute("lang") != (language or "en"):
                problems.append((where, "language"))
            slides = page.locator(".slides section[data-qkv-kind]").count()
            kinds = page.evaluate(
                "() => [...document.querySelectorAll('.slides section[data-qkv-kind]')]"
                ".map((s) => s.dataset.qkvKind)"
            )
            if kinds[:2] != ["title", "goals"] or kinds[-1] != "summary":
                problems.append((where, "plan", kinds))
            if "figure" not in kinds:
                problems.append((where, "no figure", kinds))
            counted += slides
        finally:
            context.close()
    assert not problems, problems
    assert counted > 5 * len(decks())


def test_a_french_deck_is_french(site, browser):
    context, page, seen = open_deck(browser, f"{site}/fr/{FOLDER}/masking.html", site)
    try:
        assert page.locator(".qkv-deck-back").text_content() == "Retour au chapitre"
        assert page.title().endswith("(diapositives)")
        text = page.locator(".slides").text_content()  # hidden slides too
        assert "Vous allez apprendre" in text and "Résumé" in text
        assert "You will learn" not in text and "Summary" not in text
        assert re.search(r"Exercice \d+\.\d", text)
        notes = page.locator("aside.notes").all_text_contents()
        assert notes and all(" the " not in note for note in notes)
        assert not seen["errors"], seen["errors"]
    finally:
        context.close()


def test_the_keyboard_drives_a_deck_and_switches_light_and_dark(site, browser):
    context, page, seen = open_deck(
        browser, f"{site}/{FOLDER}/scaled-dot-product.html", site
    )
    try:
        page.keyboard.press("ArrowRight")
        assert page.evaluate("() => Reveal.getIndices().h") == 1
        page.keyboard.press("End")
        last = page.evaluate("() => Reveal.getTotalSlides()") - 1
        assert page.evaluate("() => Reveal.getIndices().h") == last
        page.keyboard.press("Home")
        before = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        page.keyboard.press("m")
        after = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert before != after
        assert page.locator("html").get_attribute("data-mode") in ("dark", "light")
        assert not seen["errors"], seen["errors"]
    finally:
        context.close()


def test_a_deck_in_auto_mode_follows_the_systems_dark_scheme(site, browser):
    context = browser.new_context(
        viewport={"width": 1280, "height": 720}, color_scheme="dark"
    )
    try:
        page = context.new_page()
        page.goto(f"{site}/{FOLDER}/masking.html", wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()")
        root = page.locator("html")
        assert root.get_attribute("data-mode") == "auto"
        assert root.get_attribute("data-theme") == "dark"
        dark = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        page.emulate_media(color_scheme="light")  # the system's scheme changes
        page.wait_for_function(
            "() => document.documentElement.dataset.theme === 'light'", timeout=5000
        )
        light = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert dark != light == "rgb(255, 255, 255)"
    finally:
        context.close()


#: English words of reveal.js's speaker view and pause overlay.
SPEAKER_ENGLISH = re.compile(
    r"Speaker|Loading|Upcoming|\bTime\b|Reset|Pacing|Layout|Default|Wide|Tall"
    r"|Notes only|\b[AP]M\b|Resume|presentation\b"
)
#: What the speaker view shows: its title, its text, its menu of layouts.
SPEAKER_TEXT = """() => [document.title, document.body.innerText,
    ...[...document.querySelectorAll('option')].map((o) => o.textContent)]
    .join(' | ')"""


def test_a_french_decks_speaker_view_and_pause_are_french(site, browser):
    """Key S opens the speaker view (reveal.js's notes plugin), key B pauses:
    in a French deck, every word of either is French."""
    context, page, seen = open_deck(browser, f"{site}/fr/{FOLDER}/masking.html", site)
    try:
        page.evaluate(  # the first figure's slide: it has notes
            "() => Reveal.slide([...document.querySelectorAll("
            "'.slides section[data-qkv-kind]')]"
            ".findIndex((s) => s.dataset.qkvKind === 'figure'))"
        )
        with context.expect_page() as opened:
            page.keyboard.press("s")
        speaker = opened.value
        speaker.wait_for_function(
            "() => document.querySelector('.clock-value').textContent.includes(':')"
            " && document.querySelector('.speaker-controls-notes .value')"
            ".textContent.trim().length > 0"
        )
        text = speaker.evaluate(SPEAKER_TEXT)
        assert speaker.locator("html").get_attribute("lang") == "fr"
        assert "Vue présentateur" in text and "Diapositive suivante" in text, text
        assert not SPEAKER_ENGLISH.findall(text), text
        assert re.fullmatch(
            r"\d\d:\d\d", speaker.locator(".clock-value").text_content().strip()
        )
        page.bring_to_front()
        page.keyboard.press("b")
        resume = page.locator(".pause-overlay .resume-button")
        assert resume.text_content() == "Reprendre la présentation"
        assert not seen["errors"], seen["errors"]
    finally:
        context.close()


#: The live part of an explorable, as text (its numbers and labels).
LIVE = "(root) => root.querySelector('.qkv-w-live').innerText"


def explorable_text(page, figure: str, show) -> tuple[str, str]:
    """The explorable of ``figure``: its text once built, then after three
    presses of the left arrow on its first slider."""
    show(page)
    root = page.locator(f"#{figure} .qkv-explorable")
    page.locator(f"#{figure} .qkv-explorable.qkv-w-ready").wait_for()
    start = root.evaluate(LIVE)
    slider = root.locator("input[type=range]").first
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(100)
    return start, root.evaluate(LIVE)


@pytest.mark.parametrize("language", ["", "fr"])
def test_an_explorable_in_a_deck_computes_what_it_computes_on_the_page(
    site, browser, language
):
    prefix = f"{language}/" if language else ""
    figure = "fig-sdp-explorable"
    context, page, seen = open_deck(
        browser, f"{site}/{prefix}{FOLDER}/scaled-dot-product.html", site
    )
    try:

        def to_its_slide(page):
            index = page.evaluate(
                "(id) => [...document.querySelectorAll("
                "'.slides section[data-qkv-kind]')]"
                ".findIndex((s) => s.querySelector('#' + id))",
                figure,
            )
            assert index > 0
            page.evaluate(f"() => Reveal.slide({index})")

        in_deck = explorable_text(page, figure, to_its_slide)
        assert not seen["errors"], seen["errors"]
    finally:
        context.close()
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.goto(f"{site}/{prefix}book/scaled-dot-product.html", wait_until="load")
        on_page = explorable_text(
            page,
            figure,
            lambda page: page.locator(f"#{figure}").scroll_into_view_if_needed(),
        )
    finally:
        context.close()
    assert in_deck[0] == on_page[0]
    assert in_deck[1] == on_page[1] and in_deck[1] != in_deck[0]


def test_each_chapter_page_links_its_deck_in_its_language():
    for language, chapter in decks():
        prefix = f"{language}/" if language else ""
        text = (HTML / prefix / "book" / f"{chapter}.html").read_text("utf-8")
        label = "Présenter ce chapitre" if language else "Present this chapter"
        assert (
            f'<a class="qkv-present-link" href="../{FOLDER}/{chapter}.html">{label}</a>'
            in text
        ), f"{prefix}{chapter}"
        deck = (HTML / prefix / FOLDER / f"{chapter}.html").read_text("utf-8")
        assert f'href="../book/{chapter}.html"' in deck


def test_a_deck_prints_one_slide_a_page_with_version_and_commit(built_book):
    """``make pdf`` prints the decks (bookbuild.site.slides print): here one
    chapter's, in both languages."""
    from pypdf import PdfReader

    from bookbuild.tools.testing import require_chromium

    require_chromium()
    # in a process of its own: Playwright's sync API refuses to start where a
    # browser of this test session already runs its event loop
    done = subprocess.run(
        [sys.executable, "-m", "bookbuild.site.slides", "print", "masking"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    printed = [
        ROOT / line.removeprefix("pdf: ")
        for line in done.stdout.splitlines()
        if line.startswith("pdf: ")
    ]
    assert len(printed) == 2, done.stdout
    for pdf in printed:
        language = "fr" if "/fr/" in pdf.as_posix() else ""
        deck = (HTML / language / FOLDER / "masking.html").read_text("utf-8")
        reader = PdfReader(pdf)
        assert len(reader.pages) == deck.count("data-qkv-kind=")
        first = reader.pages[0]
        ratio = float(first.mediabox.width) / float(first.mediabox.height)
        assert abs(ratio - 16 / 9) < 1e-3
        title = " ".join(reader.pages[0].extract_text().split())
        assert re.search(r"commit [0-9a-f]{7}", title) and "0." in title, title
