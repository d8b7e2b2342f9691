"""The KV-cache calculator of the chapter *decoders* in headless Chromium, English
and French: driven with the keyboard alone (every control one Tab away, the
arrows and typing), the bytes it shows equal ``kv_cache_bytes`` written by
``human_bytes`` in the page's language, a reader's numbers that do not fit are
said in the page, and huge sizes scroll inside the widget, never widen the page.

Reuses the session's built book (``site``); each test loads the chapter once.
"""

from __future__ import annotations

import json

import pytest

import qkv
from bookbuild.tools.browser import open_page, wait_for_math
from qkv.cost import kv_cache_bytes
from qkv.language import translated
from qkv.page.explorables.kv_cache import KVCacheCalculator
from qkv.page.glue import human_bytes

pytestmark = [pytest.mark.book, pytest.mark.browser]

PAGE = {"en": "book/decoders.html", "fr": "fr/book/decoders.html"}
#: The order of the controls, one Tab each: the model, its four numbers, the
#: bytes per number, the context (a box and a slider), the batch.
TAB_ORDER = ["select", "number", "number", "number", "number", "select", "number"]
TAB_ORDER += ["range", "number"]


@pytest.fixture
def calculator(site, browser):
    """``calculator(lang)``: the chapter in that language, loaded; returns
    (page, root). Page errors are kept in ``page.errors``."""
    contexts = []

    def open_(lang: str = "en"):
        context, page = open_page(browser, f"{site}/{PAGE[lang]}")
        contexts.append(context)
        wait_for_math(page)
        root = page.locator(".qkv-explorable.qkv-x-kv")
        assert root.count() == 1
        root.locator(".qkv-w-live").wait_for()
        return page, root

    yield open_
    for context in contexts:
        context.close()


def shown(root) -> dict[str, list[str]]:
    """Each row's cells as the page shows them: H_kv, per token, for the
    context, the ratio."""
    rows = {}
    for kind in ("model", "mha", "mqa"):
        cells = root.locator(f"tr[data-kind={kind}] td").all_text_contents()
        rows[kind] = cells[:4]
    return rows


def expected(lang, dim, heads, kv_heads, layers, size=2, tokens=4096, batch=1):
    """The rows from ``qkv``: kv_cache_bytes written by human_bytes in ``lang``."""
    qkv.set_language(lang)
    try:
        rows = {}
        for kind, kv in (("model", kv_heads), ("mha", heads), ("mqa", 1)):
            kv_dim = kv * (dim // heads)
            rows[kind] = [
                str(kv),
                human_bytes(kv_cache_bytes(1, layers, kv_dim, size)),
                human_bytes(kv_cache_bytes(tokens * batch, layers, kv_dim, size)),
                str(heads // kv),
            ]
        return rows
    finally:
        qkv.set_language("en")


def type_into(page, text: str) -> None:
    """Replace the focused box's text, with the keyboard."""
    page.keyboard.press("Control+A")
    page.keyboard.type(text)


def focused(page) -> str:
    return page.evaluate(
        "document.activeElement.type === 'select-one' ? 'select' : "
        "document.activeElement.classList.contains('qkv-x-number') ? 'number' : "
        "document.activeElement.type"
    )


def page_is_not_wider(page) -> bool:
    """Nothing sticks out of the page, nor the widget out of its column."""
    return page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        " && [...document.querySelectorAll('.qkv-x-kv')].every("
        "(root) => root.offsetWidth <= root.parentElement.clientWidth)"
    )


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_driven_with_the_keyboard_the_bytes_are_qkvs(calculator, lang):
    page, root = calculator(lang)
    labels = translated(KVCacheCalculator.LABELS, lang)
    assert root.locator(".qkv-x-title").text_content() == labels["title"]
    assert root.locator(".qkv-x-legend").first.text_content() == labels["hint"]
    # the figure's start: Llama 2 70B, 16-bit numbers, 4,096 tokens
    assert shown(root) == expected(lang, 8192, 64, 8, 80)
    model = root.locator("select").first
    model.focus()
    for kind in TAB_ORDER[1:]:  # every control, one Tab each
        page.keyboard.press("Tab")
        assert focused(page) == kind
    model.focus()
    page.keyboard.press("ArrowUp")  # Llama 2 7B
    assert model.input_value() == "Llama 2 7B"
    assert shown(root) == expected(lang, 4096, 32, 32, 32)
    page.keyboard.press("ArrowDown")  # back to Llama 2 70B
    assert root.get_attribute("data-model") == "Llama 2 70B"
    for _ in range(6):  # to the context's box
        page.keyboard.press("Tab")
    type_into(page, "131072")
    assert shown(root) == expected(lang, 8192, 64, 8, 80, tokens=131072)
    page.keyboard.press("Tab")  # the slider: one power of two up
    page.keyboard.press("ArrowRight")
    assert root.locator("input.qkv-x-number").nth(4).input_value() == "262144"
    page.keyboard.press("Tab")
    type_into(page, "8")  # a batch of 8
    assert shown(root) == expected(lang, 8192, 64, 8, 80, tokens=262144, batch=8)
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")  # the size of numbers: 8 bits
    page.keyboard.press("ArrowDown")
    assert shown(root) == expected(lang, 8192, 64, 8, 80, 1, 262144, 8)
    sizes = json.loads(root.get_attribute("data-sizes"))
    assert int(sizes["model"][1]) == kv_cache_bytes(262144 * 8, 80, 1024, 1)
    # own numbers: D = 5120, H = 40, H_kv = 8 (Tab from the model's menu)
    model.focus()
    page.keyboard.press("Tab")
    type_into(page, "5120")
    assert model.input_value() != "Llama 2 70B"  # your own numbers now
    assert root.get_attribute("data-model") == ""
    page.keyboard.press("Tab")
    type_into(page, "40")
    assert shown(root) == expected(lang, 5120, 40, 8, 80, 1, 262144, 8)
    assert labels["yourModel"] in root.locator("caption").text_content()
    assert not page.errors, page.errors


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_numbers_that_do_not_fit_are_said_in_the_page(calculator, lang):
    page, root = calculator(lang)
    labels = translated(KVCacheCalculator.LABELS, lang)
    boxes = root.locator("input.qkv-x-number")
    note = root.locator(".qkv-x-note")
    assert note.get_attribute("aria-live") == "polite"
    boxes.nth(2).focus()  # H_kv = 3 does not divide H = 64
    type_into(page, "3")
    assert note.text_content().startswith(labels["notDivide"][:12])
    assert boxes.nth(2).get_attribute("aria-invalid") == "true"
    assert set(shown(root)["model"]) == {"\u2014"}
    type_into(page, "16")  # valid again: the message goes
    assert note.text_content() == ""
    assert boxes.nth(2).get_attribute("aria-invalid") is None
    assert shown(root) == expected(lang, 8192, 64, 16, 80)
    boxes.nth(0).focus()
    type_into(page, "0")
    assert note.text_content().startswith(labels["notInt"][:8].replace("{name}", "D"))
    type_into(page, "8192")
    assert note.text_content() == ""
    assert not page.errors, page.errors


def test_huge_numbers_scroll_inside_the_widget(calculator):
    page, root = calculator("en")
    assert page_is_not_wider(page)
    boxes = root.locator("input.qkv-x-number")
    # the largest reader's model the page takes: every size in PiB, long
    for index, value in enumerate(["1048576", "1", "1", "10000", "1000000000"]):
        boxes.nth(index).focus()
        type_into(page, value)
    boxes.nth(5).focus()
    type_into(page, "4096")
    total = kv_cache_bytes(10**9 * 4096, 10_000, 1 << 20, 2)
    assert shown(root)["model"][2] == human_bytes(total)
    assert len(human_bytes(total)) > 12
    assert page_is_not_wider(page)
    boxes.nth(0).focus()
    type_into(page, "9" * 80)  # a number far too long: said, and no wider page
    assert root.locator(".qkv-x-note").text_content()
    assert page_is_not_wider(page)
    assert not page.errors, page.errors


def test_french_labels_and_decimal_commas(calculator):
    page, root = calculator("fr")
    labels = translated(KVCacheCalculator.LABELS, "fr")
    text = root.locator(".qkv-w-live").text_content()
    for key in ("model", "tokens", "batch", "perToken", "total"):
        assert labels[key] in text, key
    per_token = shown(root)["model"][1]
    assert per_token == "320,0 Kio"  # French binary units (issue 37)
    assert "4\u202f096" in root.locator("caption").text_content()
    assert not page.errors, page.errors
