"""The explorables of the built book in headless Chromium, English and French:
a message (a live region) when a number overflows and when a value is not
valid, cleared when it is valid again; the mask editor's boxes as one grid
(WAI-ARIA grid pattern: one tab stop, the arrow keys, Home/End, Space); the
numbers of a French page with a decimal comma.

Reuses the session's built book (``built_book``); each test loads a page or two
(a few seconds). Debian's /usr/bin/chromium through playwright, as in
``tests/site/test_browser.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import qkv
from bookbuild.tools.browser import open_page, wait_for_math
from qkv.language import translated
from qkv.page.explorables._base import SHARED_LABELS
from qkv.page.explorables.by_hand import AttentionByHand
from qkv.page.explorables.masking import MaskEditor

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

pytestmark = [pytest.mark.book, pytest.mark.browser]

CHAPTERS = {
    "qkv-x-abh": "book/attention-by-hand.html",
    "qkv-x-sdp": "book/scaled-dot-product.html",
    "qkv-x-mask": "book/masking.html",
    "qkv-x-rope": "book/positions.html",
}
PREFIX = {"en": "", "fr": "fr/"}


@pytest.fixture
def open_explorable(site, browser):
    """``open_explorable(kind, lang)``: the chapter of that explorable in that
    language, loaded; returns (page, root). Page errors are kept in
    ``page.errors``; the context is closed after the test."""
    contexts = []

    def open_(kind: str, lang: str = "en"):
        url = f"{site}/{PREFIX[lang]}{CHAPTERS[kind]}"
        context, page = open_page(browser, url)
        contexts.append(context)
        wait_for_math(page)
        root = page.locator(f".qkv-explorable.{kind}")
        assert root.count() == 1
        root.locator(".qkv-w-live").wait_for()
        return page, root

    yield open_
    for context in contexts:
        context.close()


def described_by(control) -> str:
    """The text of the element that ``control``'s aria-describedby names."""
    found = control.get_attribute("aria-describedby")
    assert found, "the control names no description"
    return control.page.locator(f"[id='{found}']").text_content()


# --- a message on overflow and on a value that is not valid -----------------------


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_an_overflow_is_said_in_the_page_language_and_cleared(open_explorable, lang):
    page, root = open_explorable("qkv-x-abh", lang)
    note = root.locator(".qkv-x-note")
    assert note.get_attribute("role") == "status"
    assert note.get_attribute("aria-live") == "polite"
    message = translated(SHARED_LABELS, lang)["overflow"]
    assert message not in note.text_content()
    box = root.locator("tbody tr.qkv-x-current input.qkv-x-number").first
    before = box.input_value()
    box.fill("1e200")  # the query's score with itself, 1e400, overflows a double
    assert message in note.text_content()
    weights = root.locator("tbody tr td:nth-last-child(1)").all_text_contents()
    assert "\u2014" in "".join(weights), weights  # the numbers show "—"
    box.fill(before)  # a number that fits again: the message goes
    assert message not in note.text_content()
    assert "\u2014" not in "".join(
        root.locator("tbody tr td:nth-last-child(1)").all_text_contents()
    )
    assert not page.errors, page.errors


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_an_invalid_count_of_real_words_is_said_next_to_it(open_explorable, lang):
    page, root = open_explorable("qkv-x-mask", lang)
    data = json.loads(root.locator(".qkv-w-data").text_content())
    n_words, first_count = len(data["words"]), data["real_words"]
    real = root.locator("input.qkv-x-number")
    warning = real.get_attribute("aria-describedby")
    region = root.locator(f"[id='{warning}']")
    assert region.get_attribute("role") == "status"
    assert region.get_attribute("aria-live") == "polite"
    assert described_by(real) == ""
    template = translated(MaskEditor.LABELS, lang)["realInvalid"].replace(
        "{max}", str(n_words)
    )
    mask = root.get_attribute("data-mask")
    for wrong in ("0", str(n_words + 1), "2.5", ""):
        real.fill(wrong)
        assert real.get_attribute("aria-invalid") == "true", wrong
        # the message names the count the mask still uses, not a silent stale value
        assert described_by(real) == template.replace("{used}", str(first_count))
        assert root.get_attribute("data-mask") == mask  # the mask stays as it was
    real.fill("2")  # valid again: the message and the red border go
    assert real.get_attribute("aria-invalid") is None
    assert described_by(real) == ""
    real.fill("0")  # wrong again: the last valid count is now 2
    assert described_by(real) == template.replace("{used}", "2")
    assert not page.errors, page.errors


# --- the mask editor's boxes: one grid --------------------------------------------

WHERE = """(grid) => {
    const boxes = [...grid.querySelectorAll("input[type=checkbox]")];
    return [boxes.indexOf(document.activeElement),
            boxes.filter((box) => box.tabIndex === 0).length,
            grid.contains(document.activeElement)];
}"""


def test_the_mask_grid_is_one_tab_stop_and_the_arrows_move_in_it(open_explorable):
    page, root = open_explorable("qkv-x-mask")
    data = json.loads(root.locator(".qkv-w-data").text_content())
    n = len(data["words"])
    grid = root.locator("table[role=grid]")
    assert grid.count() == 1
    assert grid.locator("[role=gridcell] input[type=checkbox]").count() == n * n
    assert grid.locator("tbody tr[role=row]").count() == n
    handle = grid.element_handle()

    def where() -> tuple[int, int]:
        index, tab_stops, inside = page.evaluate(WHERE, handle)
        assert tab_stops == 1, f"{tab_stops} tab stops in the grid"
        assert inside and index >= 0, "the focus left the grid"
        return divmod(index, n)

    root.locator("input.qkv-x-number").focus()
    page.keyboard.press("Tab")  # one Tab: into the grid, on its first box
    assert where() == (0, 0)
    moves = [
        ("ArrowRight", (0, 1)),
        ("ArrowDown", (1, 1)),
        ("End", (1, n - 1)),
        ("ArrowRight", (1, n - 1)),  # at the edge: stays
        ("Home", (1, 0)),
        ("Control+End", (n - 1, n - 1)),
        ("PageUp", (0, n - 1)),
        ("Control+Home", (0, 0)),
        ("ArrowUp", (0, 0)),
        ("PageDown", (n - 1, 0)),
        ("ArrowUp", (n - 2, 0)),
        ("ArrowRight", (n - 2, 1)),
    ]
    for key, expected in moves:
        page.keyboard.press(key)
        assert where() == expected, key
    i, j = expected
    mask = torch.tensor(json.loads(root.get_attribute("data-mask")))
    page.keyboard.press("Space")  # toggles the pair; the weights follow
    mask[i, j] = ~mask[i, j]
    assert torch.equal(torch.tensor(json.loads(root.get_attribute("data-mask"))), mask)
    x = torch.tensor(data["x"], dtype=torch.float64)
    _, expected_weights = qkv.scaled_dot_product_attention(
        x, x, x, attn_mask=mask, scale=data["scale"]
    )
    shown = torch.tensor(
        json.loads(root.get_attribute("data-weights")), dtype=torch.float64
    )
    torch.testing.assert_close(shown, expected_weights, rtol=0, atol=1e-6)
    assert root.locator("select").input_value() == "custom"
    page.keyboard.press("Tab")  # one Tab: out of the grid
    assert not page.evaluate(WHERE, handle)[2], "Tab stayed in the grid"
    page.keyboard.press("Shift+Tab")  # back in, on the box last focused
    assert where() == (i, j)
    page.keyboard.press("Shift+Tab")  # and out again, to the count of real words
    assert page.evaluate("document.activeElement.className") == "qkv-x-number"
    assert not page.errors, page.errors


# --- numbers the French way ----------------------------------------------------------

ENGLISH_DECIMAL = re.compile(r"\d\.\d")
FRENCH_DECIMAL = re.compile(r"\d,\d")


@pytest.mark.parametrize("kind", CHAPTERS)
def test_on_a_french_page_an_explorable_prints_decimal_commas(open_explorable, kind):
    page, root = open_explorable(kind, "fr")
    if kind == "qkv-x-sdp":  # after a change too: a smaller d_k
        root.locator("input[type=range]").focus()
        page.keyboard.press("ArrowLeft")
    text = root.locator(".qkv-w-live").inner_text()
    assert FRENCH_DECIMAL.search(text), text
    assert not ENGLISH_DECIMAL.search(text), ENGLISH_DECIMAL.findall(text)
    assert not page.errors, page.errors


def test_on_an_english_page_the_points_stay(open_explorable):
    page, root = open_explorable("qkv-x-mask")
    text = root.locator(".qkv-w-live").inner_text()
    assert ENGLISH_DECIMAL.search(text) and not FRENCH_DECIMAL.search(text), text
    assert not page.errors, page.errors


# --- numbers the reader types: either decimal separator, never a silent other number


@pytest.mark.parametrize("lang, typed", [("fr", "0,9"), ("en", "0.9"), ("en", "0,9")])
def test_a_typed_decimal_is_read_as_the_reader_means_it(open_explorable, lang, typed):
    page, root = open_explorable("qkv-x-abh", lang)
    data = json.loads(root.locator(".qkv-w-data").text_content())
    x = torch.tensor(data["x"], dtype=torch.float64)
    box = root.locator("tbody tr").first.locator("input.qkv-x-number").first
    shown = box.input_value()  # the page's own format
    assert ("," if lang == "en" else ".") not in shown, shown
    box.fill(typed)
    x[0, 0] = 0.9
    q = int(root.get_attribute("data-query"))
    scores = torch.tensor(json.loads(root.get_attribute("data-scores")))
    torch.testing.assert_close(scores, (x @ x[q]).float(), rtol=0, atol=1e-9)
    assert box.get_attribute("aria-invalid") is None
    assert not page.errors, page.errors


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_what_cannot_be_read_is_refused_with_a_message(open_explorable, lang):
    page, root = open_explorable("qkv-x-abh", lang)
    message = translated(AttentionByHand.LABELS, lang)["invalid"]
    box = root.locator("tbody tr").first.locator("input.qkv-x-number").first
    box.fill("0,5")
    scores = root.get_attribute("data-scores")
    wrong = ["abc", "0,5,1", "1.2.3", ""] + (["1,500"] if lang == "en" else [])
    for text in wrong:  # the last number is kept, and said
        box.fill(text)
        assert box.get_attribute("aria-invalid") == "true", text
        assert message in described_by(box), text
        assert root.get_attribute("data-scores") == scores, text
    box.fill("\u22120,5")  # a typographic minus: a number again, the message goes
    assert box.get_attribute("aria-invalid") is None
    assert message not in described_by(box)
    assert root.get_attribute("data-scores") != scores
    box.press("ArrowUp")  # the step of a number box, shown as the page writes it
    stepped = box.input_value()
    assert ("," if lang == "en" else ".") not in stepped, stepped
    step = json.loads(root.locator(".qkv-w-data").text_content())["step"]
    assert float(stepped.replace(",", ".")) == pytest.approx(-0.5 + step)
    assert not page.errors, page.errors
