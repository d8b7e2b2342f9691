"""The [CLS] view of the chapter *attention-on-images* in the built book, in
headless Chromium, English and French: driven with the keyboard alone, the
weights it shows equal ``vision.cls_attention``'s on the chapter's trained model
(read back from the build's trained results, not trained again) and the same
digits; its labels and numbers are the page's language's; it never widens the
page, axe-core finds no serious violation in the light and dark themes, and in
print its static figure stands in.

Reuses the session's built book (``built_book``); each test loads a page (a few
seconds). Debian's /usr/bin/chromium through playwright, as in
``tests/site/test_browser.py``.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from bookbuild.tools.browser import open_page, wait_for_math
from qkv.language import translated
from qkv.page.explorables.cls_view import ClsView

pytestmark = [pytest.mark.book, pytest.mark.browser]

CHAPTER = "book/attention-on-images.html"
PREFIX = {"en": "", "fr": "fr/"}
TOLERANCE = 1e-6
DECIMAL = {"en": re.compile(r"\d\.\d"), "fr": re.compile(r"\d,\d")}


@pytest.fixture
def open_view(site, browser):
    """``open_view(lang, width)``: the chapter in that language, loaded; returns
    (page, root). Page errors are kept in ``page.errors``."""
    contexts = []

    def open_(lang: str = "en", width: int = 1280):
        url = f"{site}/{PREFIX[lang]}{CHAPTER}"
        context, page = open_page(browser, url, width=width, console=False)
        contexts.append(context)
        wait_for_math(page)
        root = page.locator(".qkv-explorable.qkv-x-cls")
        assert root.count() == 1
        root.locator(".qkv-w-live").wait_for()
        return page, root

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture
def chapter_model(trained_results):
    """The chapter's trained model, read back from the build's results."""
    from qkv.experiments import vision

    result = vision.train(seed=0, patch_size=4, epochs=12, data=vision.load_digits())
    return result.model


def state(root) -> tuple[int, int, int | None]:
    head = root.get_attribute("data-head")
    return (
        int(root.get_attribute("data-digit")),
        int(root.get_attribute("data-layer")),
        None if head == "mean" else int(head),
    )


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_keyboard_drives_it_and_its_weights_are_cls_attentions(
    open_view, chapter_model, lang
):
    from qkv.experiments import vision

    page, root = open_view(lang)
    assert root.locator("xpath=ancestor::figure").count() == 1  # with a caption
    data = json.loads(root.locator(".qkv-w-data").text_content())
    images = torch.tensor(data["images"], dtype=torch.float32)  # (B, 8, 8)
    maps = vision.cls_attention(chapter_model, images).double()  # (B, Ly, H, M)
    shipped = torch.tensor(data["maps"], dtype=torch.float64)
    assert float((shipped - maps).abs().max()) < TOLERANCE
    classes = data["classes"]
    assert set(classes) == set(range(10)) and classes == sorted(classes)
    labels = translated(ClsView.LABELS, lang)
    text = root.locator(".qkv-w-live").inner_text()
    for key in ("title", "keys", "layer", "head"):
        assert labels[key] in text, key

    def agrees() -> None:
        digit, layer, head = state(root)
        expected = maps[digit, layer]  # (H, M)
        expected = expected.mean(0) if head is None else expected[head]
        shown = torch.tensor(json.loads(root.get_attribute("data-weights")))
        assert float((shown.double() - expected).abs().max()) < TOLERANCE
        column = len(maps[0, 0]) if head is None else head
        cells = root.locator(f"tbody tr td:nth-child({column + 2})")
        for m, weight in enumerate(expected.tolist()):
            written = f"{weight:.3f}"
            written = written.replace(".", ",") if lang == "fr" else written
            assert cells.nth(m).text_content() == written
            title = root.locator(f"svg g[data-patch='{m}'] title").text_content()
            assert title.endswith(written), title

    root.locator("input[type=range]").focus()
    assert state(root) == (0, 2, None)
    agrees()
    page.keyboard.press("8")  # the first 8 of the set
    digit = state(root)[0]
    assert classes[digit] == 8 and digit == classes.index(8)
    page.keyboard.press("ArrowLeft")  # the last 7
    assert state(root)[0] == digit - 1 and classes[digit - 1] == 7
    page.keyboard.press("Tab")  # the layers
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Tab")  # the heads: the mean, then head 0 and 1
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert state(root) == (digit - 1, 1, 1)
    agrees()
    said = root.locator(".qkv-x-status").text_content()
    pred = data["predictions"][digit - 1]
    sentence = labels["right" if pred == 7 else "wrong"]
    assert said.startswith(sentence.split("{")[0] + "7"), said
    assert f"{pred}" in said.split(":", 1)[1], said
    live = root.locator(".qkv-w-live").inner_text()
    assert DECIMAL[lang].search(live)
    assert not DECIMAL["fr" if lang == "en" else "en"].search(live)
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [360, 1280])
def test_it_never_widens_the_page(open_view, width):
    page, root = open_view("fr", width)
    # its box stays inside the article's; what does not fit scrolls inside it
    inside = page.evaluate(
        """(root) => {
            const box = root.getBoundingClientRect();
            const article = root.closest("article, main").getBoundingClientRect();
            return [box.left >= article.left - 1, box.right <= article.right + 1,
                    root.scrollWidth, root.clientWidth];
        }""",
        root.element_handle(),
    )
    assert inside[0] and inside[1], inside
    assert not page.errors, page.errors


def test_in_both_themes_axe_finds_nothing_serious_and_print_shows_the_figure(
    open_view,
):
    sync = pytest.importorskip("axe_playwright_python.sync_playwright")
    page, root = open_view("en")
    root_id = root.get_attribute("id")
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        violations = sync.Axe().run(page, context=f"#{root_id}").response["violations"]
        serious = [
            (v["id"], [n["target"] for n in v["nodes"]][:3])
            for v in violations
            if v["impact"] in ("serious", "critical")
        ]
        assert not serious, (theme, serious)
    page.emulate_media(media="print")
    assert root.locator(".qkv-w-static").is_visible()
    assert not root.locator(".qkv-w-live").is_visible()
    assert not page.errors, page.errors
