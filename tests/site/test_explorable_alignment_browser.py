"""The alignment explorable of the built chapter *cross-attention* in headless
Chromium: driven with the keyboard alone (the menu of sentences, the English
words as one tab stop with the arrows, Home and End), the weights it shows and
publishes are those of its data (which tests/qkv/test_explorable_alignment.py
compares with ``tr.align``); the French page speaks French with decimal commas;
a long sentence on a narrow screen does not widen the page.

Reuses the session's built book (``built_book``); each test loads a page (a few
seconds). Debian's /usr/bin/chromium through playwright, as in
``tests/site/test_browser.py``.
"""

from __future__ import annotations

import json

import pytest

from bookbuild.tools.browser import open_page
from qkv.language import translated
from qkv.page.explorables.alignment import AlignmentExplorer

pytestmark = [pytest.mark.book, pytest.mark.browser]

PAGES = {"en": "book/cross-attention.html", "fr": "fr/book/cross-attention.html"}


@pytest.fixture
def open_explorer(site, browser):
    """``open_explorer(lang, width)``: the chapter loaded; (page, root, data)."""
    contexts = []

    def open_(lang: str = "en", width: int = 1280):
        url = f"{site}/{PAGES[lang]}"
        context, page = open_page(browser, url, width=width, console=False)
        contexts.append(context)
        root = page.locator(".qkv-explorable.qkv-x-align")
        assert root.count() == 1
        root.locator(".qkv-w-live").wait_for()
        data = json.loads(root.locator(".qkv-w-data").text_content())
        return page, root, data

    yield open_
    for context in contexts:
        context.close()


def shown_weights(root) -> dict[str, list[str]]:
    """The weights as the tables show them, per score."""
    return {
        table.get_attribute("data-score"): table.locator(
            "td.qkv-x-weight"
        ).all_text_contents()
        for table in root.locator("table.qkv-x-model").all()
    }


def test_driven_by_the_keyboard_the_shown_weights_are_the_data(open_explorer):
    page, root, data = open_explorer("en")
    select = root.locator("select")
    select.focus()
    page.keyboard.press("ArrowDown")  # the second sentence
    page.keyboard.press("Tab")  # to the English words: one tab stop
    focused = page.evaluate("document.activeElement.getAttribute('role')")
    assert focused == "radio"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert json.loads(root.get_attribute("data-picked")) == [1, 2]
    page.keyboard.press("End")
    sentence = data["sentences"][1]
    last = len(sentence["english"]) - 1
    assert json.loads(root.get_attribute("data-picked")) == [1, last]
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert json.loads(root.get_attribute("data-picked")) == [1, 1]
    published = json.loads(root.get_attribute("data-weights"))
    shown = shown_weights(root)
    for score in data["scores"]:
        row = sentence["weights"][score][1]  # the English word 1
        assert published[score] == pytest.approx(row, abs=1e-9)
        assert shown[score] == [f"{w:.{data['decimals']}f}" for w in row]
        top = max(range(len(row)), key=row.__getitem__)
        current = root.locator(f"table[data-score={score}] tr.qkv-x-current th")
        assert current.text_content().startswith(sentence["french"][top])
    expected = sentence["french"][sentence["expected"][1]]
    marked = root.locator("table[data-score=dot] th:has(.qkv-x-expected)")
    assert marked.text_content().startswith(expected)
    statuses = root.locator(".qkv-x-status").all_text_contents()
    assert len(statuses) == 2 and all(expected in text for text in statuses)
    hint = translated(AlignmentExplorer.LABELS, "en")["hint"]
    assert root.get_by_text(hint).is_visible()
    assert page.errors == []


def test_the_french_page_speaks_french_with_decimal_commas(open_explorer):
    page, root, data = open_explorer("fr")
    labels = translated(AlignmentExplorer.LABELS, "fr")
    assert root.locator(".qkv-x-title").text_content() == labels["title"]
    assert root.get_by_text(labels["hint"]).is_visible()
    shown = shown_weights(root)
    word = json.loads(root.get_attribute("data-picked"))
    assert word == [data["start"], 0]
    for score in data["scores"]:
        row = data["sentences"][data["start"]]["weights"][score][0]
        assert shown[score] == [
            f"{w:.{data['decimals']}f}".replace(".", ",") for w in row
        ]
    caption = root.locator("table[data-score=dot] caption").text_content()
    assert caption.startswith(labels["model_dot"])
    assert page.errors == []


def test_a_long_sentence_on_a_narrow_screen_stays_inside(open_explorer):
    page, root, data = open_explorer("en", width=360)
    lengths = [len(" ".join(s["french"])) for s in data["sentences"]]
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    root.locator("select").select_option(str(longest))
    root.locator("[role=radio]").last.click()
    width = page.evaluate("document.documentElement.clientWidth")
    # the words and the tables wrap: nothing scrolls sideways inside the widget
    assert root.evaluate("r => r.scrollWidth <= r.clientWidth")
    box = root.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1
    words = root.locator(".qkv-x-words").bounding_box()
    assert words["x"] + words["width"] <= box["x"] + box["width"] + 1
    assert page.errors == []
