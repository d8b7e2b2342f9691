"""qkv.page.explorables.cls_view, the [CLS] attention over a digit the reader picks.

Without a browser: its numbers are ``vision.cls_attention``'s (and the model's
probabilities) on the same model and images, it loads nothing from outside,
stays small, speaks English and French, and refuses bad arguments. In Debian's
Chromium, on a bare test page (no book build): driven with the keyboard alone,
what it shows and its ``data-weights`` equal ``qkv``'s (to 1e-6). The chapter's
copy is tested in ``tests/site/test_explorable_cls_view_browser.py``.
"""

from __future__ import annotations

import html
import json
import re

import pytest
import torch

from bookbuild.tools.testing import outside_references
from qkv.experiments import vision
from qkv.language import translated
from qkv.page import explorables
from qkv.page.explorables.cls_view import ClsView
from qkv.page.widgets import json_for_script


def both(labels: dict[str, str]) -> dict[str, dict[str, str]]:
    """The labels (English messages) in English and in French."""
    return {lang: translated(labels, lang) for lang in ("en", "fr")}


TOLERANCE = 1e-6
N_IMAGES = 12
FRENCH_SPACES = re.compile(r"[^\u00a0\u202f][:;?!](?:\s|$)|«[^\u00a0]|[^\u00a0]»")
SAME_IN_BOTH = {"patch", "scaleEnd"}


@pytest.fixture(scope="module")
def model_and_digits():
    """An untrained model and random 8x8 images of sixteenths, as the digits'
    pixels are (seeded; no scikit-learn to load)."""
    torch.manual_seed(3)
    model = vision.VisionTransformer(patch_size=4).eval()
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 17, (N_IMAGES, 8, 8), generator=generator) / 16.0
    labels = torch.randint(0, 10, (N_IMAGES,), generator=generator)
    return model, images, labels


def made(model_and_digits, **options) -> ClsView:
    return explorables.cls_view(*model_and_digits, **options)


def test_its_numbers_are_qkvs(model_and_digits):
    model, images, labels = model_and_digits
    view = made(model_and_digits, head=2, layer=1, digit=5)
    maps = vision.cls_attention(model, images)  # (B, Ly, H, M)
    torch.testing.assert_close(view.maps, maps.double(), rtol=0, atol=0)
    logits, weights = model(images)
    torch.testing.assert_close(
        view.probabilities, torch.softmax(logits.double(), -1), rtol=0, atol=1e-12
    )
    assert torch.equal(view.predictions, logits.argmax(-1))
    # [CLS] on itself and on the patches: the whole row, summing to 1
    torch.testing.assert_close(view.self_weights, weights[..., 0, 0].double())
    torch.testing.assert_close(
        view.self_weights + view.maps.sum(-1),
        torch.ones_like(view.self_weights),
    )
    torch.testing.assert_close(view.weights, maps[5, 1, 2].double())
    torch.testing.assert_close(view.view(5, 1, None), maps[5, 1].double().mean(0))
    # what the page receives: the same numbers, to 7 significant digits
    data = json.loads(json_for_script(view._payload()))
    shipped = torch.tensor(data["maps"], dtype=torch.float64)
    assert float((shipped - maps.double()).abs().max()) < TOLERANCE
    assert data["classes"] == labels.tolist()
    assert torch.equal(torch.tensor(data["images"]), images.double())  # k / 16
    assert (data["digit"], data["layer"], data["head"]) == (5, 1, 2)
    assert data["labels"]["fr"]["title"] == both(ClsView.LABELS)["fr"]["title"]


def test_the_last_layer_and_the_mean_by_default(model_and_digits):
    view = made(model_and_digits)
    assert (view.digit, view.layer, view.head) == (0, 2, None)
    assert made(model_and_digits, layer=-3).layer == 0


def test_it_loads_nothing_from_outside_and_stays_small(model_and_digits):
    block = made(model_and_digits).to_html()
    assert outside_references(block) == []
    assert block.count("<script") == 2
    size = len(block.encode())
    print(f"{N_IMAGES} digits: {size} bytes")
    assert size < 80_000, size


def test_labels_exist_in_english_and_correct_french():
    labels = both(ClsView.LABELS)
    assert set(labels) == {"en", "fr"} and set(labels["en"]) == set(labels["fr"])
    for key, text in labels["fr"].items():
        assert not FRENCH_SPACES.search(text), f"{key}: {text!r}"
        assert '"' not in text and "“" not in text, f"{key}: French quotes « »"
        if key not in SAME_IN_BOTH:
            assert text != labels["en"][key], f"{key} is not translated"
        names = set(re.findall(r"\{(\w+)\}", labels["en"][key]))
        assert set(re.findall(r"\{(\w+)\}", text)) == names, key


def test_the_static_figure_speaks_the_language_and_carries_its_alt(model_and_digits):
    from PIL import Image

    english = made(model_and_digits)
    french = made(model_and_digits, lang="fr")
    assert "manuscrit" in french.static_alt() and "handwritten" in english.static_alt()
    block = english.to_html()
    img = re.search(r"<img [^>]*>", block)[0]
    assert f'alt="{html.escape(english.static_alt(), quote=True)}"' in img
    assert f'data-alt-fr="{html.escape(french.static_alt(), quote=True)}"' in img
    import io

    png = Image.open(io.BytesIO(french.static_png()))
    assert png.format == "PNG" and png.width > 400
    assert french._number(0.25) == "0,250" and english._number(0.25) == "0.250"


BAD = {
    "model": (
        lambda m, x, y: explorables.cls_view(torch.nn.Linear(2, 2), x, y),
        r"model must be a qkv\.experiments\.vision\.VisionTransformer, got Linear",
    ),
    "images shape": (
        lambda m, x, y: explorables.cls_view(m, x[:, :4], y),
        r"images must be a floating tensor of shape \(B, 8, 8\) .* got shape "
        r"\(12, 4, 8\)",
    ),
    "images count": (
        lambda m, x, y: explorables.cls_view(m, x.repeat(6, 1, 1), y.repeat(6)),
        r"images must hold 1 to 60 digits .* got shape \(72, 8, 8\)",
    ),
    "labels": (
        lambda m, x, y: explorables.cls_view(m, x, y[:5]),
        r"labels must be a long tensor of shape \(12,\) .* images, shape "
        r"\(12, 8, 8\).* got shape \(5,\), dtype torch.int64",
    ),
    "labels range": (
        lambda m, x, y: explorables.cls_view(m, x, y + 10),
        r"labels must be .* of classes 0 to 9, got shape \(12,\), dtype "
        r"torch.int64, values 1\d to 1\d",
    ),
    "labels dtype": (
        lambda m, x, y: explorables.cls_view(m, x, y.float()),
        r"labels must be a long tensor .* got shape \(12,\), dtype torch.float32",
    ),
    "layer below the first": (
        lambda m, x, y: explorables.cls_view(m, x, y, layer=-4),
        r"layer must be an int in -3\.\.2 \(negative counts from the last\), "
        r"got -4",
    ),
    "digit": (
        lambda m, x, y: explorables.cls_view(m, x, y, digit=12),
        r"digit must be an int in 0\.\.11, got 12",
    ),
    "head": (
        lambda m, x, y: explorables.cls_view(m, x, y, head=4),
        r"head must be an int in 0\.\.3, got 4",
    ),
    "layer": (
        lambda m, x, y: explorables.cls_view(m, x, y, layer=3),
        r"layer must be an int in 0\.\.2, got 3",
    ),
}


@pytest.mark.parametrize("make, message", BAD.values(), ids=BAD)
def test_bad_arguments_raise_a_value_error_that_names_them(
    model_and_digits, make, message
):
    with pytest.raises(ValueError, match=message):
        make(*model_and_digits)


# --- in the browser, on a bare page ----------------------------------------------


def shown_table(root) -> list[list[str]]:
    """The text of the table's body cells, one list per row."""
    return [
        row.locator("td").all_text_contents() for row in root.locator("tbody tr").all()
    ]


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_on_a_bare_page_the_keyboard_drives_it_and_qkv_agrees(
    browser, tmp_path, model_and_digits, lang
):
    view = made(model_and_digits)
    path = tmp_path / "page.html"
    path.write_text(
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        "<title>cls</title></head><body><main><h1>cls</h1>"
        f"<p><a href='#'>before</a></p>{view.to_html()}</main></body></html>",
        encoding="utf-8",
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(path.as_uri(), wait_until="load")
        root = page.locator(".qkv-x-cls")
        labels = both(ClsView.LABELS)[lang]
        assert labels["title"] in root.locator(".qkv-w-live").inner_text()
        assert labels["keys"] in root.inner_text()
        classes = view.labels.tolist()

        def state() -> tuple[int, int, int | None]:
            head = root.get_attribute("data-head")
            return (
                int(root.get_attribute("data-digit")),
                int(root.get_attribute("data-layer")),
                None if head == "mean" else int(head),
            )

        def agrees() -> None:
            digit, layer, head = state()
            shown = torch.tensor(json.loads(root.get_attribute("data-weights")))
            expected = view.view(digit, layer, head)
            assert float((shown.double() - expected).abs().max()) < TOLERANCE
            table = shown_table(root)  # rows: patches, then [CLS] itself
            column = view.maps.shape[2] if head is None else head
            for m, weight in enumerate(expected.tolist()):
                text = f"{weight:.3f}"
                assert table[m][column] == (
                    text.replace(".", ",") if lang == "fr" else text
                )
            labelled = root.locator("svg text.qkv-x-weight").all_text_contents()
            assert labelled == [table[m][column] for m in range(len(expected))]

        page.keyboard.press("Tab")  # the link before, then the slider: keyboard only
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.type") == "range"
        assert state() == (0, 2, None)
        agrees()
        page.keyboard.press("ArrowRight")
        assert state()[0] == 1
        agrees()
        target = classes[7]  # a class of the set: its key jumps to it
        page.keyboard.press(str(target))
        digit = state()[0]
        assert classes[digit] == target and digit == classes.index(target, 2)
        page.keyboard.press("Tab")  # the layers: the checked one has the focus
        page.keyboard.press("ArrowLeft")
        assert state()[1] == 1
        page.keyboard.press("Tab")  # the heads
        page.keyboard.press("ArrowRight")  # after the mean: back to head 0
        assert state() == (digit, 1, 0)
        page.keyboard.press("ArrowRight")
        assert state() == (digit, 1, 1)
        agrees()
        said = root.locator(".qkv-x-status").text_content()
        pred = int(view.predictions[digit])
        key = "right" if pred == classes[digit] else "wrong"
        start = labels[key].split("{label}")[0]  # "Class " / "Classe "
        assert said.startswith(start + str(classes[digit])), said
        prob = f"{float(view.probabilities[digit, pred]):.3f}"
        assert (prob.replace(".", ",") if lang == "fr" else prob) in said
        assert not errors, errors
    finally:
        context.close()
