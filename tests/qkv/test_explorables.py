"""qkv.page.explorables, the interactive figures of the chapters, and qkv.page.widgets.

Without a browser: they start from qkv's numbers, escape what they are given, load
nothing from outside, stay small, speak English and French, and refuse bad
arguments. In Debian's Chromium, on a test page (the four explorables, RoPE's
included) and on the built chapters: driven with the keyboard alone, their
``data-weights`` equal qkv's weights on the same inputs (to 1e-6); hostile words
do not run; the labels follow ``<html lang>``; axe-core finds no serious
violation in the light and dark themes; without scripts and in print, a static
figure stands in.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import re
from pathlib import Path

import pytest
import torch

import qkv
from bookbuild.tools.browser import open_page, wait_for_math
from bookbuild.tools.testing import outside_references
from qkv.examples import SIX_WORDS, six_word_embeddings
from qkv.language import translated
from qkv.page import explorables
from qkv.page.explorables import seeded
from qkv.page.widgets import Widget, static_text


def both(labels: dict[str, str]) -> dict[str, dict[str, str]]:
    """The labels (English messages) in English and in French."""
    return {lang: translated(labels, lang) for lang in ("en", "fr")}


ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
TOLERANCE = 1e-6

EVIL = [
    "</script><script>window.__pwned=1</script>",
    '"><img src=x onerror="window.__pwned=2">',
    "<b onmouseover=window.__pwned=3>bold</b>",
    "&amp;",
    "$x$",
    "step",
]


def rope_example(words=None, **options) -> Widget:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(8, generator=generator)
    keys = torch.randn(5, 8, generator=generator)
    return explorables.rope_offsets(query, keys, words, **options)


def examples(words=SIX_WORDS, **options) -> dict[str, Widget]:
    """One of each explorable, as the chapters call them (RoPE: 5 keys)."""
    x = six_word_embeddings()
    return {
        "abh": explorables.attention_by_hand(x, words, query=1, **options),
        "sdp": explorables.scaled_scores(d_k=512, scaled=False, **options),
        "mask": explorables.mask_editor(
            x, words, mask=qkv.causal_mask(len(words)), scale=1.0, **options
        ),
        "rope": rope_example(list(words[:5]), **options),
    }


def data_of(block: str) -> dict:
    found = re.search(r'class="qkv-w-data">(.*?)</script>', block, re.S)
    return json.loads(found.group(1))


# --- without a browser -------------------------------------------------------------


def test_they_start_from_qkvs_numbers():
    x = six_word_embeddings()
    _, weights = qkv.scaled_dot_product_attention(x, x, x, scale=1.0)
    made = examples()
    torch.testing.assert_close(made["abh"].weights.float(), weights[1])
    _, causal = qkv.scaled_dot_product_attention(x, x, x, is_causal=True, scale=1.0)
    torch.testing.assert_close(made["mask"].weights.float(), causal)
    query, key = made["sdp"].vectors()
    assert query.shape == (8, 512) and key.shape == (8, 512)
    raw = torch.softmax(query @ key.T, dim=-1)
    torch.testing.assert_close(made["sdp"].weights, raw)


def test_the_vectors_of_a_smaller_d_k_are_the_first_coordinates():
    scores = explorables.scaled_scores(d_k=64, max_d_k=256, seed=3)
    small, _ = scores.vectors(8)
    large, _ = scores.vectors(256)
    assert torch.equal(small, large[:, :8])
    assert scores.vectors()[0].shape == (8, 64)


def test_the_division_lowers_the_largest_weight_of_the_scaling_explorable():
    """book/faq.md: the explorable's averages differ from the chapter's, "but the
    division lowers them there too", at every d_k of the slider above 1."""
    scores = explorables.scaled_scores(d_k=512, scaled=False)
    for d_k in [2**k for k in range(1, 11)]:
        raw = scores.weights_at(d_k, scaled=False).max(dim=-1).values.mean()
        scaled = scores.weights_at(d_k, scaled=True).max(dim=-1).values.mean()
        assert scaled < raw, d_k


def test_seeded_normal_is_reproducible_and_standard_normal():
    first = explorables.seeded_normal(7, 200, 500)
    assert first.dtype == torch.float64 and first.shape == (200, 500)
    assert torch.equal(first, explorables.seeded_normal(7, 200, 500))
    assert not torch.equal(first, explorables.seeded_normal(8, 200, 500))
    assert abs(float(first.mean())) < 0.01 and abs(float(first.std()) - 1) < 0.01
    # an odd count takes the first numbers of the same stream
    assert torch.equal(explorables.seeded_normal(7, 5), first.flatten()[:5])
    draws = seeded._mulberry32(2**32 - 1)  # 32-bit integers, whatever the seed
    assert all(0 <= next(draws) < 2**32 for _ in range(1000))


def test_rope_scores_depend_only_on_the_offset():
    rope = rope_example()
    for m, n, shift in [(4, 0, 3), (0, 7, 9), (10, 2, 100)]:
        torch.testing.assert_close(
            rope.weights_at(m, n),
            rope.weights_at(m + shift, n + shift),
            rtol=0,
            atol=1e-9,
        )
    assert (rope.weights_at(4, 0) - rope.weights_at(5, 0)).abs().max() > 1e-3
    query, keys = rope.rotated(0, 0)
    torch.testing.assert_close(query, rope.query)  # position 0: no rotation
    torch.testing.assert_close(keys[0], rope.keys[0])
    # pairs (x0, x1) rotated by the angle p at position p (i = 0: base**0 = 1)
    query, _ = rope.rotated(1, 0)
    c, s = math.cos(1.0), math.sin(1.0)
    q0, q1 = float(rope.query[0]), float(rope.query[1])
    assert query[0].item() == pytest.approx(q0 * c - q1 * s)
    assert query[1].item() == pytest.approx(q0 * s + q1 * c)
    halves = rope_example(pairs="halves")
    query, _ = halves.rotated(1, 0)
    q0, q4 = float(halves.query[0]), float(halves.query[4])
    assert query[0].item() == pytest.approx(q0 * c - q4 * s)


@pytest.mark.parametrize("name", ["abh", "sdp", "mask", "rope"])
def test_they_escape_what_they_are_given_and_load_nothing_from_outside(name):
    made = examples(EVIL)[name]
    block, again = made.to_html(), made.to_html()
    assert re.search(r'id="([^"]+)"', block).group(1) != re.search(
        r'id="([^"]+)"', again
    ).group(1)  # two copies on one page do not share an id
    assert "<script>window" not in block and "<img src=x" not in block
    assert "<b onmouseover" not in block
    assert block.count("<script") == 2  # the JSON data and the widget's own code
    assert outside_references(block) == []
    if name != "sdp":  # the words are in the data, intact
        words = data_of(block)["words"]
        assert words == list(EVIL[: len(words)])
    assert re.search(r'<div class="[^"]*\bqkv-explorable\b', block)


CHAPTER_CALLS = {
    "attention_by_hand": lambda: explorables.attention_by_hand(
        six_word_embeddings(), SIX_WORDS, query=1
    ),
    "scaled_scores": lambda: explorables.scaled_scores(d_k=512, scaled=False),
    "mask_editor": lambda: explorables.mask_editor(
        six_word_embeddings(), SIX_WORDS, mask=qkv.causal_mask(6), scale=1.0
    ),
    "rope_offsets": rope_example,
}


@pytest.mark.parametrize("name", CHAPTER_CALLS)
def test_they_are_small(name):
    size = len(CHAPTER_CALLS[name]().to_html().encode())
    print(f"{name}: {size} bytes")
    assert 10_000 < size < 50_000, size


@pytest.mark.parametrize("name", ["abh", "sdp", "mask", "rope"])
def test_they_give_notebooks_html_and_a_png(name):
    from PIL import Image

    made = examples()[name]
    bundle = made._repr_mimebundle_()
    assert set(bundle) == {"text/html", "image/png", "text/plain"}
    image = Image.open(io.BytesIO(base64.b64decode(bundle["image/png"])))
    assert image.format == "PNG" and image.width > 400
    assert f'src="data:image/png;base64,{bundle["image/png"]}"' in bundle["text/html"]
    assert "<img" in bundle["text/html"] and 'alt=""' not in bundle["text/html"]
    assert type(made).__name__ in bundle["text/plain"]


# Labels written the same way in both languages (symbols, names).
SAME_IN_BOTH = {"score", "softmax", "position", "fig_softmax", "dkValue", "fig_title"}
SAME_IN_BOTH |= {"fig_ylabel", "preset_causal"}
FRENCH_SPACES = re.compile(r"[^\u00a0\u202f][:;?!](?:\s|$)|«[^\u00a0]|[^\u00a0]»")


@pytest.mark.parametrize("name", ["abh", "sdp", "mask", "rope"])
def test_labels_exist_in_english_and_correct_french(name):
    labels = both(type(examples()[name]).LABELS)
    assert set(labels) == {"en", "fr"} and set(labels["en"]) == set(labels["fr"])
    for key, text in labels["fr"].items():
        assert not FRENCH_SPACES.search(text), f"{key}: {text!r}"
        assert '"' not in text and "“" not in text, f"{key}: French quotes « »"
        if key not in SAME_IN_BOTH:
            assert text != labels["en"][key], f"{key} is not translated"
    # the check can fail
    for wrong in ("Masque : x", "« mot »", "Vraiment ?", "mot»"):
        assert FRENCH_SPACES.search(wrong), wrong


def test_the_shared_labels_exist_in_english_and_correct_french():
    """The labels every explorable's page uses (the overflow warning, the list
    separator), under each one's own, in both languages."""
    from qkv.page.explorables._base import SHARED_LABELS

    SHARED_LABELS = both(SHARED_LABELS)
    assert set(SHARED_LABELS) == set(explorables.LANGUAGES)
    assert set(SHARED_LABELS["en"]) == set(SHARED_LABELS["fr"])
    for key, text in SHARED_LABELS["fr"].items():
        assert not FRENCH_SPACES.search(text), f"{key}: {text!r}"
        assert '"' not in text and "“" not in text, f"{key}: French quotes « »"
        assert text != SHARED_LABELS["en"][key], f"{key} is not translated"
    labels = data_of(examples()["mask"].to_html())["labels"]
    assert labels["fr"]["overflow"] == SHARED_LABELS["fr"]["overflow"]
    mask_labels = both(type(examples()["mask"]).LABELS)
    assert labels["fr"]["title"] == mask_labels["fr"]["title"]


def test_the_page_language_can_be_forced():
    block = examples(lang="fr")["abh"].to_html()
    assert data_of(block)["lang"] == "fr"
    assert "requête" in examples(lang="fr")["abh"].static_alt()
    with pytest.raises(ValueError, match=r"lang must be None .* got 'de'"):
        explorables.scaled_scores(lang="de")


@pytest.mark.parametrize("name", ["abh", "sdp", "mask", "rope"])
def test_the_static_figure_carries_its_alt_text_in_each_language(name):
    """Where the page decides the language, the static figure's ``alt`` is
    English and ``data-alt-fr`` French; a French build of the book moves the
    French one into ``alt`` (``bookbuild.i18n.alt_texts``)."""
    from bookbuild.i18n.alt_texts import localise_widget_alts

    english, french = examples()[name], examples(lang="fr")[name]
    block = english.to_html()
    img = re.search(r"<img [^>]*>", block).group(0)
    assert f'alt="{html.escape(english.static_alt(), quote=True)}"' in img
    assert f'data-alt-fr="{html.escape(french.static_alt(), quote=True)}"' in img
    localised = re.search(r"<img [^>]*>", localise_widget_alts(block, "fr")).group(0)
    assert f'alt="{html.escape(french.static_alt(), quote=True)}"' in localised
    assert localise_widget_alts(block, "de") == block
    assert "data-alt-" not in french.to_html()  # a forced language: one alt


BAD = {
    "x not a tensor": (
        lambda: explorables.attention_by_hand([[1.0]], ["a"]),
        r"x must be a torch.Tensor, got list",
    ),
    "x of ints": (
        lambda: explorables.attention_by_hand(torch.ones(2, 2, dtype=torch.long), "ab"),
        r"x must be a 2-D floating tensor, got shape \(2, 2\) and dtype torch.int64",
    ),
    "x too large": (
        lambda: explorables.attention_by_hand(torch.ones(13, 3), ["w"] * 13),
        r"x must have 1 to 12 rows and 1 to 6 columns .* got shape \(13, 3\)",
    ),
    "x not finite": (
        lambda: explorables.attention_by_hand(torch.tensor([[float("nan")]]), ["a"]),
        r"x must be finite, got \[\[nan\]\]",
    ),
    "too few words": (
        lambda: explorables.attention_by_hand(torch.ones(3, 2), ["a", "b"]),
        r"words must hold 3 words, one per row, got 2",
    ),
    "a word not a string": (
        lambda: explorables.attention_by_hand(torch.ones(2, 2), ["a", 2]),
        r"words must be a list of strings, got \['a', 2\]",
    ),
    "query out of range": (
        lambda: explorables.attention_by_hand(torch.ones(2, 2), ["a", "b"], query=2),
        r"query must be an int in 0..1, got 2",
    ),
    "step zero": (
        lambda: explorables.attention_by_hand(torch.ones(2, 2), ["a", "b"], step=0),
        r"step must be a positive number, got 0",
    ),
    "decimals": (
        lambda: explorables.scaled_scores(decimals=9),
        r"decimals must be an int in 0..8, got 9",
    ),
    "d_k not a power of two": (
        lambda: explorables.scaled_scores(d_k=48),
        r"d_k must be a power of two from 1 to 1024, got 48",
    ),
    "d_k above max_d_k": (
        lambda: explorables.scaled_scores(d_k=512, max_d_k=256),
        r"d_k must be a power of two from 1 to 256, got 512",
    ),
    "scaled not a bool": (
        lambda: explorables.scaled_scores(scaled="yes"),
        r"scaled must be True or False, got 'yes'",
    ),
    "too many keys": (
        lambda: explorables.scaled_scores(n_keys=33),
        r"n_queries must be at most 16 and n_keys at most 32 .* got 8 and 33",
    ),
    "seed negative": (
        lambda: explorables.scaled_scores(seed=-1),
        r"seed must be an int >= 0, got -1",
    ),
    "mask not bool": (
        lambda: explorables.mask_editor(
            torch.ones(2, 2), ["a", "b"], mask=torch.ones(2, 2)
        ),
        r"mask must be a bool tensor \(True = may attend\)",
    ),
    "mask shape": (
        lambda: explorables.mask_editor(
            torch.ones(2, 2), ["a", "b"], mask=torch.ones(3, 3, dtype=torch.bool)
        ),
        r"mask must have shape \(T, T\) = \(2, 2\), got \(3, 3\)",
    ),
    "scale infinite": (
        lambda: explorables.mask_editor(
            torch.ones(2, 2), ["a", "b"], scale=float("inf")
        ),
        r"scale must be finite, got inf",
    ),
    "real_words zero": (
        lambda: explorables.mask_editor(torch.ones(2, 2), ["a", "b"], real_words=0),
        r"real_words must be an int in 1..2, got 0",
    ),
    "rope odd size": (
        lambda: explorables.rope_offsets(torch.ones(3), torch.ones(2, 3)),
        r"query and keys must have the same even size E .* got query \(1, 3\) "
        r"and keys \(2, 3\)",
    ),
    "rope position": (
        lambda: rope_example(query_position=17),
        r"query_position must be an int in 0..16, got 17",
    ),
    "rope pairs": (
        lambda: rope_example(pairs="random"),
        r"pairs must be one of \('interleaved', 'halves'\), got 'random'",
    ),
    "rope base": (
        lambda: rope_example(base=1),
        r"base must be a number above 1, got 1",
    ),
}


@pytest.mark.parametrize("make, message", BAD.values(), ids=BAD)
def test_bad_arguments_raise_a_value_error_that_names_them(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# --- in the browser ----------------------------------------------------------------


def write_page(folder: Path, name: str, blocks: list[str], lang: str = "en") -> str:
    """A bare page holding ``blocks``, as a file:// URL."""
    path = folder / f"{name}.html"
    path.write_text(
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{name}</title></head><body><main><h1>{name}</h1>"
        + "".join(blocks)
        + "</main></body></html>",
        encoding="utf-8",
    )
    return path.as_uri()


@pytest.fixture(scope="module")
def test_pages(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("explorables")
    return {
        "en": write_page(folder, "en", [e.to_html() for e in examples().values()]),
        "fr": write_page(
            folder, "fr", [e.to_html() for e in examples().values()], lang="fr"
        ),
        "evil": write_page(
            folder, "evil", [e.to_html() for e in examples(EVIL).values()]
        ),
    }


def weights_of(root, name: str = "weights") -> torch.Tensor:
    return torch.tensor(
        json.loads(root.get_attribute(f"data-{name}")), dtype=torch.float64
    )


def same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Equal to ``TOLERANCE`` (and the same shape)."""
    expected = expected.double()
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    gap = float((actual - expected).abs().max())
    assert gap <= TOLERANCE, f"largest difference {gap:.2e}"


def root_data(root) -> dict:
    return json.loads(root.locator(".qkv-w-data").text_content())


def tab_to(page, target, key: str = "Tab", limit: int = 800) -> None:
    """Press Tab (or ``key``) until ``target`` has the focus: the keyboard only."""
    handle = target.element_handle()
    for _ in range(limit):
        page.keyboard.press(key)
        if page.evaluate("(el) => document.activeElement === el", handle):
            return
    raise AssertionError(f"{key} never reached {target}")


def focused(page, attribute: str = "aria-label") -> str | None:
    return page.evaluate(f"document.activeElement.getAttribute({attribute!r})")


def drive_attention_by_hand(page, root) -> None:
    data = root_data(root)
    x = torch.tensor(data["x"], dtype=torch.float64)
    words, decimals = data["words"], data["decimals"]

    def check():
        query = int(root.get_attribute("data-query"))
        _, weights = qkv.scaled_dot_product_attention(x, x, x, scale=1.0)
        scores = x @ x[query]  # (T,)
        same(weights_of(root), weights[query])
        same(weights_of(root, "scores"), scores)
        same(weights_of(root, "weights-by-sum"), scores / scores.sum())
        same(weights_of(root, "context"), weights[query] @ x)
        shown = root.locator("tbody tr td:nth-last-child(1)").all_text_contents()
        assert shown == [f"{float(w):.{decimals}f}" for w in weights[query]]
        return query

    assert check() == data["query"]
    tab_to(page, root.locator("select"))
    page.keyboard.press("ArrowDown")  # the next word becomes the query
    assert check() == data["query"] + 1
    page.keyboard.press("Tab")  # the first number of the first word
    assert focused(page) == f"{words[0]}, coordinate 1"
    for _ in range(3):
        page.keyboard.press("ArrowUp")
    value = float(page.evaluate("document.activeElement.value"))
    assert value == pytest.approx(float(x[0, 0]) + 3 * data["step"])
    x[0, 0] = value
    check()
    page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type("-2.5")  # typed: the scores of some words turn negative
    x[0, 1] = -2.5
    check()
    assert "outside 0 to 1" in root.locator(".qkv-x-note").text_content()


def drive_scaled_scores(page, root) -> None:
    data = root_data(root)

    def check(seed=data["seed"]):
        made = explorables.scaled_scores(
            d_k=data["d_k"],
            n_queries=data["n_queries"],
            n_keys=data["n_keys"],
            seed=seed,
            max_d_k=data["max_d_k"],
        )
        d_k, scaled = (
            int(root.get_attribute("data-d-k")),
            root.get_attribute("data-scaled"),
        )
        same(weights_of(root), made.weights_at(d_k, scaled == "true"))
        return d_k, scaled

    assert check() == (data["d_k"], str(data["scaled"]).lower())
    slider = root.locator("input[type=range]")
    tab_to(page, slider)
    page.keyboard.press("ArrowLeft")
    assert check()[0] == data["d_k"] // 2
    assert slider.get_attribute("aria-valuetext") == f"dₖ = {data['d_k'] // 2}"
    page.keyboard.press("Home")
    assert check()[0] == 1
    page.keyboard.press("End")
    assert check()[0] == data["max_d_k"]
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # the scaling switches
    assert check()[1] == str(not data["scaled"]).lower()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # new random vectors: the next seed
    assert root.get_attribute("data-seed") == str(data["seed"] + 1)
    check(seed=data["seed"] + 1)


def drive_mask_editor(page, root) -> None:
    data = root_data(root)
    x = torch.tensor(data["x"], dtype=torch.float64)
    words, n_words = data["words"], len(data["words"])

    def check(mask):
        _, weights = qkv.scaled_dot_product_attention(
            x, x, x, attn_mask=mask, scale=data["scale"]
        )
        same(weights_of(root), weights)
        assert torch.equal(
            torch.tensor(json.loads(root.get_attribute("data-mask"))), mask
        )
        return weights

    causal = qkv.causal_mask(n_words)
    preset = root.locator("select")
    assert torch.equal(torch.tensor(data["mask"]), causal), "start from the causal mask"
    check(causal)
    assert preset.input_value() == "causal"
    tab_to(page, preset)
    page.keyboard.press("ArrowUp")  # everything allowed
    check(torch.ones(n_words, n_words, dtype=torch.bool))
    page.keyboard.press("ArrowDown")  # causal again
    check(causal)
    page.keyboard.press("Tab")  # the number of real words
    page.keyboard.press("Tab")  # the first box: may the first word attend to itself?
    assert focused(page) == f"{words[0]} may attend to {words[0]}"
    page.keyboard.press("Space")
    mask = causal.clone()
    mask[0, 0] = False  # the first word may attend to nothing
    weights = check(mask)
    assert torch.equal(weights[0], torch.zeros(n_words, dtype=torch.float64))
    assert words[0] in root.locator(".qkv-x-status").text_content()
    assert preset.input_value() == "custom"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert focused(page) == f"{words[1]} may attend to {words[1]}"
    page.keyboard.press("Space")
    mask[1, 1] = False
    check(mask)
    tab_to(page, preset, key="Shift+Tab")
    for _ in range(3):  # your own -> everything -> causal -> padding at the end
        page.keyboard.press("ArrowDown")
    real = data["real_words"]
    keys_kept = torch.arange(n_words) < real
    check(keys_kept.expand(n_words, n_words).clone())
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowUp")  # one more real word
    check((torch.arange(n_words) < real + 1).expand(n_words, n_words).clone())
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowDown")  # causal, with padding in front
    in_front = causal & (torch.arange(n_words) >= n_words - (real + 1))
    weights = check(in_front)
    pads = n_words - (real + 1)
    assert torch.equal(weights[:pads], torch.zeros(pads, n_words, dtype=torch.float64))


def drive_rope(page, root) -> None:
    data = root_data(root)
    made = explorables.rope_offsets(
        torch.tensor(data["query"]),
        torch.tensor(data["keys"]),
        data["words"],
        max_position=data["max_position"],
        base=data["base"],
        pairs=data["pairs"],
        scale=data["scale"],
    )

    def check():
        m, n = json.loads(root.get_attribute("data-positions"))
        query, keys = made.rotated(m, n)
        same(weights_of(root), made.weights_at(m, n))
        same(weights_of(root, "scores"), keys @ query)
        return m, n

    m, n = data["query_position"], data["key_position"]
    assert check() == (m, n)
    tab_to(page, root.locator("input[type=range]").first)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert check() == (m + 2, n)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    assert check() == (m + 2, n + 1)
    before = weights_of(root)
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # move both together
    page.keyboard.press("Shift+Tab")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert check() == (m + 5, n + 4)
    gap = float((weights_of(root) - before).abs().max())
    assert gap < 1e-9, "the same offsets must give the same weights"


DRIVERS = {
    "qkv-x-abh": drive_attention_by_hand,
    "qkv-x-sdp": drive_scaled_scores,
    "qkv-x-mask": drive_mask_editor,
    "qkv-x-rope": drive_rope,
}


@pytest.mark.browser
@pytest.mark.parametrize("kind", DRIVERS)
def test_on_a_test_page_the_keyboard_drives_them_and_qkv_agrees(
    browser, test_pages, kind
):
    context, page = open_page(browser, test_pages["en"])
    try:
        root = page.locator(f".qkv-explorable.{kind}")
        assert root.count() == 1
        DRIVERS[kind](page, root)
        assert not page.errors, page.errors
    finally:
        context.close()


@pytest.mark.browser
def test_the_page_draws_the_same_random_numbers_as_python(browser, test_pages):
    generator = static_text("seeded.js")  # what the page of scaled_scores runs
    context, page = open_page(browser, test_pages["en"])
    try:
        for seed in (0, 7, 2**31 + 5, 2**32 - 1):  # seeds above 2**31: signed in JS
            call = f"Array.from(qkvSeededNormal({seed}, 1001))"
            drawn = page.evaluate(f"() => {{ {generator} return {call}; }}")
            expected = explorables.seeded_normal(seed, 1001)
            gap = float(
                (torch.tensor(drawn, dtype=torch.float64) - expected).abs().max()
            )
            assert gap < 1e-12, (seed, gap)
    finally:
        context.close()


@pytest.mark.browser
def test_hostile_words_stay_text(browser, test_pages):
    context, page = open_page(browser, test_pages["evil"])
    try:
        assert page.locator(".qkv-explorable[data-weights]").count() == 4
        for cell in page.locator("th").all()[:40]:
            cell.hover()  # a mouse over the words runs nothing either
        assert page.evaluate("window.__pwned") is None
        assert page.locator("img:not(.qkv-w-static), b").count() == 0
        headers = page.locator(".qkv-x-abh tbody th").all_text_contents()
        assert headers == EVIL
        options = page.locator(".qkv-x-abh select option").all_text_contents()
        assert options == EVIL
        assert not page.errors, page.errors
    finally:
        context.close()


@pytest.mark.browser
def test_labels_follow_the_page_language(browser, test_pages):
    titles = {}
    for lang in ("en", "fr"):
        context, page = open_page(browser, test_pages[lang])
        try:
            titles[lang] = page.locator(".qkv-x-title").all_text_contents()
            labels = page.locator(".qkv-explorable label").all_text_contents()
            assert not page.errors, page.errors
        finally:
            context.close()
        if lang == "fr":
            assert "Mot requête" in labels and "Masque" in labels
    assert titles["en"][0] == "Try it: attention by hand"
    assert titles["fr"][0] == "À vous\u00a0: l’attention à la main"
    assert len(titles["fr"]) == 4 and all(t.startswith("À vous") for t in titles["fr"])


@pytest.mark.browser
def test_without_scripts_and_in_print_the_static_figure_stands_in(browser, test_pages):
    context, page = open_page(browser, test_pages["en"], java_script_enabled=False)
    try:
        roots = page.locator(".qkv-explorable")
        assert roots.count() == 4
        for i in range(4):
            assert roots.nth(i).locator(".qkv-w-static").is_visible()
            assert not roots.nth(i).locator(".qkv-w-live").is_visible()
    finally:
        context.close()
    context, page = open_page(browser, test_pages["en"])
    try:
        roots = page.locator(".qkv-explorable")
        for i in range(4):
            assert roots.nth(i).locator(".qkv-w-live").is_visible()
            assert not roots.nth(i).locator(".qkv-w-static").is_visible()
        page.emulate_media(media="print")
        for i in range(4):
            assert roots.nth(i).locator(".qkv-w-static").is_visible()
            assert not roots.nth(i).locator(".qkv-w-live").is_visible()
    finally:
        context.close()


def axe_violations(page, selector: str) -> list[dict]:
    """axe-core's violations inside ``selector`` (the package is optional)."""
    sync = pytest.importorskip(
        "axe_playwright_python.sync_playwright",
        reason="axe-playwright-python is not installed",
    )
    results = sync.Axe().run(page, context=selector)
    return results.response["violations"]


def serious(violations: list[dict]) -> list[str]:
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in violations
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.browser
def test_axe_finds_no_serious_violation_on_the_test_page(browser, test_pages):
    context, page = open_page(browser, test_pages["en"])
    try:
        for kind in DRIVERS:
            root_id = page.locator(f".{kind}").get_attribute("id")
            violations = axe_violations(page, f"#{root_id}")
            print(kind, [(v["id"], v["impact"]) for v in violations])
            assert not serious(violations), serious(violations)
    finally:
        context.close()


# --- in the built book -------------------------------------------------------------

CHAPTERS = {
    "qkv-x-abh": "book/attention-by-hand.html",
    "qkv-x-sdp": "book/scaled-dot-product.html",
    "qkv-x-mask": "book/masking.html",
    "qkv-x-rope": "book/positions.html",
}


def open_chapter(browser, url: str):
    context, page = open_page(browser, url)
    wait_for_math(page)
    return context, page


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("kind", CHAPTERS)
def test_in_the_chapter_the_keyboard_drives_it_and_qkv_agrees(browser, site, kind):
    context, page = open_chapter(browser, f"{site}/{CHAPTERS[kind]}")
    try:
        root = page.locator(f".qkv-explorable.{kind}")
        assert root.count() == 1
        assert root.locator("xpath=ancestor::figure").count() == 1  # with a caption
        DRIVERS[kind](page, root)
        assert not page.errors, page.errors
        try:  # and after the changes (notes, empty rows), if axe-core is here
            import axe_playwright_python  # noqa: F401
        except ImportError:
            return
        violations = axe_violations(page, f"#{root.get_attribute('id')}")
        assert not serious(violations), serious(violations)
    finally:
        context.close()


# The text and background colours of an explorable's root, and the theme's own.
THEME_COLOURS = """(id) => {
    const probe = document.createElement("div");
    probe.style.color = "var(--pst-color-text-base)";
    probe.style.background = "var(--pst-color-background)";
    document.body.appendChild(probe);
    const root = getComputedStyle(document.getElementById(id));
    const theme = getComputedStyle(probe);
    const found = [root.color, root.backgroundColor];
    const expected = [theme.color, theme.backgroundColor];
    probe.remove();
    return [found, expected];
}"""


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("kind", CHAPTERS)
def test_in_the_chapter_axe_finds_no_serious_violation_in_either_theme(
    browser, site, kind
):
    context, page = open_chapter(browser, f"{site}/{CHAPTERS[kind]}")
    try:
        root_id = page.locator(f".{kind}").get_attribute("id")
        seen = {}
        for theme in ("light", "dark"):
            page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
            seen[theme] = page.evaluate(THEME_COLOURS, root_id)
            violations = axe_violations(page, f"#{root_id}")
            print(
                kind, theme, seen[theme], [(v["id"], v["impact"]) for v in violations]
            )
            assert not serious(violations), (theme, serious(violations))
        for theme, (root, theme_colours) in seen.items():
            assert root == theme_colours, f"{theme}: {root} is not the theme's colours"
        assert seen["light"][0] != seen["dark"][0]
    finally:
        context.close()


@pytest.mark.book
@pytest.mark.browser
def test_in_the_chapter_it_prints_as_its_static_figure_and_works_from_file(browser):
    for kind, chapter in CHAPTERS.items():
        context, page = open_page(browser, (HTML / chapter).as_uri())
        try:
            root = page.locator(f".qkv-explorable.{kind}")
            assert root.get_attribute("data-weights")  # it ran from file://
            assert root.locator(".qkv-w-live").is_visible()
            page.emulate_media(media="print")
            assert root.locator(".qkv-w-static").is_visible()
            assert not root.locator(".qkv-w-live").is_visible()
            assert not page.errors, page.errors
        finally:
            context.close()


@pytest.mark.book
def test_the_chapter_notebooks_keep_the_cell_and_the_static_figure(built_book):
    import nbformat

    cells = {
        "attention-by-hand": (
            "qkv.page.explorables.attention_by_hand(",
            "abh-explorable",
        ),
        "scaled-dot-product": ("qkv.page.explorables.scaled_scores(", "sdp-explorable"),
        "masking": ("qkv.page.explorables.mask_editor(", "mask-explorable"),
        "positions": ("qkv.page.explorables.rope_offsets(", "pos-explorable"),
    }
    for chapter, (call, key) in cells.items():
        notebook = nbformat.read(HTML / "_notebooks" / f"{chapter}.ipynb", as_version=4)
        code = [c.source for c in notebook.cells if c.cell_type == "code"]
        assert any(call in source for source in code), chapter
        figures = [c.get("attachments", {}) for c in notebook.cells]
        assert any(f"{key}.png" in found for found in figures), chapter


# --- words with right-to-left overrides ------------------------------------------

OVERRIDE = "b\u202ec"  # U+202E: everything after it would be drawn mirrored

READ_ORDER = """([selector, needle]) => {
  const node = [...document.querySelector(selector).childNodes]
    .find((child) => child.nodeType === Node.TEXT_NODE);
  const at = node.textContent.indexOf(needle);
  if (at < 0) { return null; }
  const lefts = [];
  for (let i = at; i < at + needle.length; i++) {
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + 1);
    lefts.push(range.getBoundingClientRect().left);
  }
  return lefts;
}"""


def drawn_left_to_right(page, selector: str, needle: str) -> bool:
    """Are the characters of ``needle`` in the element drawn from left to right,
    as written (not mirrored by a bidi control before them)?"""
    lefts = page.evaluate(READ_ORDER, [selector, needle])
    assert lefts, f"{needle!r} not in {selector}"
    return all(a < b for a, b in itertools.pairwise(lefts))


@pytest.mark.browser
def test_a_right_to_left_override_in_a_word_cannot_mirror_the_numbers(
    browser, tmp_path
):
    """A token holding U+202E is isolated wherever it is put into a sentence:
    the weights printed after it are drawn as written ("0.33", not "33.0")."""
    from qkv.page.headview import head_view
    from qkv.pretrained import AttentionMaps

    maps = AttentionMaps(["a", OVERRIDE, "d"], torch.full((1, 1, 3, 3), 1 / 3))
    words = ["one", OVERRIDE, "three", "four", "five", "six"]
    by_hand = explorables.attention_by_hand(six_word_embeddings(), words, query=1)
    url = write_page(tmp_path, "bidi", [head_view(maps).to_html(), by_hand.to_html()])
    context, page = open_page(browser, url)
    try:
        page.locator(".qkv-hv-left .qkv-hv-token").nth(1).focus()
        status = page.locator(".qkv-hv-status").text_content()
        assert f"\u2068{OVERRIDE}\u2069" in status
        assert drawn_left_to_right(page, ".qkv-hv-status", "0.33")
        select = page.locator(".qkv-x-abh select")
        select.select_option(index=0)
        select.select_option(index=1)  # announce the override word's weights
        said = page.locator(".qkv-x-abh .qkv-x-status")
        text = said.text_content()
        assert f"\u2068{OVERRIDE}\u2069" in text, text
        weight = re.search(r"\d\.\d+", text).group()
        assert drawn_left_to_right(page, ".qkv-x-abh .qkv-x-status", weight)
        assert not page.errors, page.errors
    finally:
        context.close()


@pytest.mark.parametrize("lang, quotes", [("en", "“”"), ("fr", "«»")])
def test_the_static_alt_quotes_the_words_as_its_language_does(lang, quotes):
    """The words of an alt text are quoted “a” in English, « a » in French."""
    from qkv.page.explorables.by_hand import attention_by_hand
    from qkv.page.explorables.masking import mask_editor

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 2, generator=gen)
    for explorable in (
        attention_by_hand(x, ["one", "two", "three"], lang=lang),
        mask_editor(x, ["one", "two", "three"], lang=lang),
    ):
        alt = explorable.static_alt()
        assert quotes[0] in alt and quotes[1] in alt, alt
        other = "«»" if lang == "en" else "“”"
        assert other[0] not in alt and other[1] not in alt, alt
