"""The explorable :func:`qkv.page.explorables.write_live` in headless Chromium:
the page's JavaScript forward pass gives PyTorch's logits (to 1e-4), writes with
the keyboard, greedy token for token as :func:`qkv.experiments.writer.generate`,
sampled as :meth:`WriteLive.write` from the same seed; labels and decimal commas
in French; a long prompt never widens the page.

The page is a standalone HTML file holding the widget of a small seeded random
:class:`~qkv.experiments.writer.Writer` (no book built). :func:`check_write_live`,
the core, takes any page URL, so that it runs on the built chapter too.
Debian's /usr/bin/chromium through playwright (the ``browser`` fixture).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import torch

from bookbuild.tools.browser import open_page
from qkv.experiments.writer import Writer, generate
from qkv.language import translated
from qkv.page.explorables import write_live
from qkv.page.explorables.writing import WriteLive

pytestmark = pytest.mark.browser

VOCABULARY = [chr(c) for c in range(32, 127)] + ["\n", "é", "à", "«", "»"]
PROMPT = "The model writes"
TESTS = ["The model", "a", "attention, « là »\nqkv"]


def small_widget(lang: str | None = None, **options) -> WriteLive:
    torch.manual_seed(25)
    model = Writer(len(VOCABULARY), 16, 2, 2, 32, max_len=48).eval()
    return write_live(
        model, VOCABULARY, prompt=PROMPT, test_prompts=TESTS, lang=lang, **options
    )


def standalone(folder, widget: WriteLive | str, lang: str = "en") -> str:
    """A page holding only ``widget`` (or its HTML), as a file:// URL."""
    block = widget if isinstance(widget, str) else widget.to_html()
    page = folder / f"write-{lang}.html"
    page.write_text(
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        f"<title>write_live</title></head><body><main>{block}</main>"
        "</body></html>",
        encoding="utf-8",
    )
    return page.as_uri()


def open_writer(browser, url: str, width: int = 1000):
    def listen(page) -> None:
        # a resource that fails to load, but the browser's own guess of a favicon
        page.on(
            "response",
            lambda r: (
                page.errors.append(f"{r.status} {r.url}")
                if r.status >= 400 and not r.url.endswith("/favicon.ico")
                else None
            ),
        )
        # nothing from outside: every request is the page itself
        page.requests = []
        page.on("request", lambda request: page.requests.append(request.url))

    context, page = open_page(
        browser, url, width=width, ignore="Failed to load resource", before=listen
    )
    root = page.locator(".qkv-explorable.qkv-x-write")
    assert root.count() == 1
    root.locator(".qkv-w-live").wait_for()
    return context, page, root


def page_logits(root, text: str) -> torch.Tensor:
    """The page's logits (T, V) at every position of ``text`` (its test hook)."""
    return torch.tensor(
        root.evaluate("(r, text) => r.qkvWriteLogits(text)", text),
        dtype=torch.float64,
    )


def tokens(root) -> list[int]:
    return json.loads(root.get_attribute("data-tokens"))


#: Focus the last focusable element before the widget's prompt (or blur all).
BEFORE_PROMPT = """(root) => {
    const prompt = root.querySelector(".qkv-x-prompt");
    const all = [...document.querySelectorAll(
        "a[href], button, input, select, textarea, [tabindex]")]
        .filter((e) => e.tabIndex >= 0 && !e.disabled && e.offsetParent !== null);
    const before = all[all.indexOf(prompt) - 1];
    if (before) { before.focus(); } else { document.activeElement.blur(); }
}"""


def check_write_live(browser, url: str) -> dict:
    """The core checks of the widget at ``url`` (a standalone page or the built
    chapter): the page's logits on the data's test prompts within 1e-4 of
    PyTorch's (computed at build time, in the data); a prompt typed and three
    tokens written with the keyboard alone (Tab to the prompt, Enter); the
    published probabilities are the softmax of the page's logits; the head's
    attention sums to 1 over the text; labels in the page's language; no request
    outside the page; no error. Returns what it read, for more checks."""
    context, page, root = open_writer(browser, url)
    try:
        data = json.loads(root.locator(".qkv-w-data").text_content())
        for text, expected in zip(
            data["test_prompts"], data["test_logits"], strict=True
        ):
            shown = page_logits(root, text)[-1]
            torch.testing.assert_close(
                shown, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-4
            )
        lang = page.evaluate("document.documentElement.lang")[:2]
        labels = translated(WriteLive.LABELS, lang)
        live = root.locator(".qkv-w-live")
        assert labels["keys"] in live.inner_text()
        assert root.get_by_role("button", name=labels["next"]).count() == 1
        # the keyboard alone: from the focusable element before the widget (or
        # the top of the page), one Tab reaches the prompt
        page.evaluate(BEFORE_PROMPT, root.element_handle())
        page.keyboard.press("Tab")
        assert page.evaluate(
            "document.activeElement.classList.contains('qkv-x-prompt')"
        ), "Tab does not reach the prompt"
        page.keyboard.press("Control+A")
        page.keyboard.type("a")
        start = tokens(root)
        assert len(start) == 1
        for _ in range(3):
            page.keyboard.press("Enter")
        written = tokens(root)
        assert written[:1] == start and len(written) == 4
        text = "".join(data["vocabulary"][i] for i in written)
        probabilities = torch.tensor(
            json.loads(root.get_attribute("data-probabilities"))
        )
        expected = torch.softmax(page_logits(root, text)[-1], dim=-1)
        torch.testing.assert_close(
            probabilities, expected.float(), rtol=0, atol=1e-6, check_dtype=False
        )
        weights = torch.tensor(json.loads(root.get_attribute("data-weights")))
        assert weights.shape == (4,) and abs(float(weights.sum()) - 1) < 1e-6
        here = urlsplit(url)
        outside = [
            r
            for r in page.requests
            if urlsplit(r).scheme != "data"
            and (urlsplit(r).scheme, urlsplit(r).netloc) != (here.scheme, here.netloc)
        ]
        assert not outside, outside
        assert not page.errors, page.errors
        return {"data": data, "written": written, "lang": lang}
    finally:
        context.close()


@pytest.fixture(scope="module")
def widget() -> WriteLive:
    return small_widget()


@pytest.fixture(scope="module")
def pages(tmp_path_factory, widget) -> dict[str, str]:
    """The standalone page of ``widget`` in English and in French (rendered
    once: its static figure takes a second or two)."""
    folder, block = tmp_path_factory.mktemp("write-live"), widget.to_html()
    return {lang: standalone(folder, block, lang) for lang in ("en", "fr")}


def settle(page, root, length: int) -> None:
    """Wait until the text has ``length`` tokens ("write N" writes one per frame)."""
    page.wait_for_function(
        f"(r) => JSON.parse(r.getAttribute('data-tokens')).length === {length}",
        arg=root.element_handle(),
    )


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_core_checks_pass_on_a_standalone_page(browser, pages, lang):
    seen = check_write_live(browser, pages[lang])
    assert seen["lang"] == lang


def test_the_logits_and_what_the_page_shows_equal_pytorch(browser, pages, widget):
    context, page, root = open_writer(browser, pages["en"])
    try:
        for text in TESTS:
            torch.testing.assert_close(
                page_logits(root, text),
                widget.logits(text).double(),
                rtol=0,
                atol=1e-4,
            )
        shown = torch.tensor(json.loads(root.get_attribute("data-probabilities")))
        expected = widget.probabilities(PROMPT).float()
        torch.testing.assert_close(shown, expected, rtol=0, atol=1e-6)
        # typed and erased a character at a time (the cache keeps the prefix)
        prompt = root.locator("input.qkv-x-prompt")
        prompt.fill(PROMPT[:5])
        prompt.press("End")
        page.keyboard.type(PROMPT[5:])
        for text in (PROMPT, PROMPT[:-2]):
            shown = torch.tensor(json.loads(root.get_attribute("data-probabilities")))
            expected = widget.probabilities(text).float()
            torch.testing.assert_close(shown, expected, rtol=0, atol=1e-6)
            prompt.press("Backspace")
            prompt.press("Backspace")
        prompt.fill(PROMPT)
        attention = widget.attention(PROMPT)  # (N, H, T, T)
        # layers and heads numbered from 0, as in the rest of the book
        for name, count in (
            ("Layer", attention.shape[0]),
            ("Head", attention.shape[1]),
        ):
            options = root.get_by_label(name, exact=True).locator("option")
            assert options.all_text_contents() == [str(i) for i in range(count)]
        # the last layer's first head at first; then layer 1, head 2 (keyboard)
        for layer, head in ((1, 0), (0, 1)):
            if (layer, head) == (0, 1):
                root.get_by_label("Layer", exact=True).focus()
                page.keyboard.press("ArrowUp")
                root.get_by_label("Head", exact=True).focus()
                page.keyboard.press("ArrowDown")
            weights = torch.tensor(json.loads(root.get_attribute("data-weights")))
            torch.testing.assert_close(
                weights, attention[layer, head, -1], rtol=0, atol=1e-5
            )
    finally:
        context.close()


def test_greedy_in_the_page_is_generate_token_for_token(browser, pages, widget):
    context, page, root = open_writer(browser, pages["en"])
    try:
        root.get_by_label("Temperature (0 = greedy)").fill("0")
        root.get_by_label("Tokens to write").fill("20")
        root.get_by_role("button", name="Write 20").press("Enter")
        settle(page, root, len(PROMPT) + 20)
        expected = generate(widget.model, widget.ids(PROMPT), 20, temperature=0)
        assert tokens(root)[len(PROMPT) :] == expected
        # Escape stops the writing: nothing more is written after it
        root.get_by_role("button", name="Reset").press("Enter")
        root.get_by_role("button", name="Write 20").press("Enter")
        page.keyboard.press("Escape")
        stopped = tokens(root)
        page.wait_for_timeout(300)  # several frames of "write N"
        assert tokens(root) == stopped
        assert not page.errors, page.errors
    finally:
        context.close()


def test_a_seed_replays_the_sample_as_python_draws_it(browser, pages, widget):
    context, page, root = open_writer(browser, pages["en"])
    try:
        root.get_by_label("Temperature (0 = greedy)").fill("1.5")
        root.get_by_label("Top-k").fill("7")
        root.get_by_label("Seed of the sampling").fill("2026")
        expected = widget.write(PROMPT, 12, 1.5, 7, 2026)
        runs = []
        for _ in range(2):
            root.get_by_role("button", name="Reset").press("Enter")
            root.get_by_role("button", name="Next token").focus()
            for _ in range(12):
                page.keyboard.press("Enter")
            runs.append("".join(VOCABULARY[i] for i in tokens(root)[len(PROMPT) :]))
        assert runs == [expected, expected]
        assert expected != widget.write(PROMPT, 12, 1.5, 7, 2027)  # the seed counts
        assert not page.errors, page.errors
    finally:
        context.close()


def test_unknown_characters_are_skipped_and_said_and_max_len_stops(browser, pages):
    context, page, root = open_writer(browser, pages["fr"])
    try:
        root.locator("input.qkv-x-prompt").fill("ab€c😀")
        note = translated(WriteLive.LABELS, "fr")["skipped"].split("{")[0]
        said = root.locator(".qkv-x-note").all_text_contents()
        assert any(note in s and "€" in s and "😀" in s for s in said), said
        assert len(tokens(root)) == 3
        # nothing the model knows: said, and nothing to write from (no error)
        root.locator("input.qkv-x-prompt").fill("€")
        assert translated(WriteLive.LABELS, "fr")["empty"] in root.inner_text()
        root.locator("input.qkv-x-prompt").press("Enter")
        assert tokens(root) == []
        root.locator("input.qkv-x-prompt").fill("ab€c😀")
        # the temperature the French way: a decimal comma, the arrows step it
        temperature = root.get_by_label("Température (0 = glouton)")
        temperature.press("ArrowUp")
        assert temperature.input_value() == "0,9"
        assert "T = 0,9" in root.locator("thead").inner_text()
        temperature.fill("abc")  # not valid: said; the last valid value is kept
        assert temperature.get_attribute("aria-invalid") == "true"
        assert (
            translated(WriteLive.LABELS, "fr")["invalid"].split("{")[0]
            in root.inner_text()
        )
        assert "T = 0,9" in root.locator("thead").inner_text()
        temperature.fill("0,8")
        assert temperature.get_attribute("aria-invalid") is None
        root.get_by_label("Tokens à écrire").fill("48")
        root.get_by_role("button", name="Écrire 48").press("Enter")
        settle(page, root, 48)
        full = translated(WriteLive.LABELS, "fr")["full"].replace("{max}", "48")
        assert full in root.inner_text()
        root.get_by_role("button", name="Token suivant").press("Enter")
        assert len(tokens(root)) == 48  # no further
        # French numbers: a decimal comma, never a point
        text = root.locator(".qkv-w-live").inner_text()
        assert re.search(r"\d,\d", text) and not re.search(r"\d\.\d", text)
        assert not page.errors, page.errors
    finally:
        context.close()


def test_a_long_prompt_wraps_inside_the_widget(browser, pages):
    context, page, root = open_writer(browser, pages["en"], width=400)
    try:
        root.locator("input.qkv-x-prompt").fill("x" * 40)
        root.get_by_label("Tokens to write").fill("30")
        root.get_by_role("button", name="Write 30").click()
        settle(page, root, 48)
        wide = page.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not wide, "the widget widened the page"
        box = root.locator(".qkv-x-text")
        assert box.evaluate("b => b.scrollWidth <= b.clientWidth + 1")
        assert not page.errors, page.errors
    finally:
        context.close()


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.book
@pytest.mark.parametrize("prefix", ["", "fr/"])
def test_the_core_checks_pass_on_the_built_chapter(site, browser, prefix):
    """The chapter *writing* shows :func:`write_live`: the same checks on the
    trained model, and the page under 1 MB."""
    built = ROOT / "_build" / "html" / prefix / "book" / "writing.html"
    assert "qkv-x-write" in built.read_text("utf-8")
    assert built.stat().st_size < 1_000_000, built.stat().st_size
    check_write_live(browser, f"{site}/{prefix}book/writing.html")
