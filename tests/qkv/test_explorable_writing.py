"""The explorable :func:`qkv.page.explorables.write_live` in Python: its data
(the weights round-trip to the state dict, PyTorch's logits of the test
prompts), its page's size for a model of about 100k parameters, its labels in
both languages, its static figure, and a ValueError naming each bad argument.
What the page does with the data is tested in Chromium
(``tests/site/test_explorable_writing_browser.py``).
"""

from __future__ import annotations

import json
import re

import pytest
import torch

from qkv.experiments.writer import Writer, generate
from qkv.language import translated
from qkv.page.explorables import write_live
from qkv.page.explorables.writing import WriteLive, visible, weights_from_data


def both(labels: dict[str, str]) -> dict[str, dict[str, str]]:
    """The labels (English messages) in English and in French."""
    return {lang: translated(labels, lang) for lang in ("en", "fr")}


VOCABULARY = [chr(c) for c in range(32, 127)] + ["\n", "é", "à", "«", "»"]
PROMPT = "The model writes"


def small_model(seed: int = 0, **sizes) -> Writer:
    torch.manual_seed(seed)
    options = {"embed_dim": 16, "num_heads": 2, "num_layers": 2, "ff_dim": 32}
    options.update(sizes)
    return Writer(len(VOCABULARY), max_len=48, **options).eval()


def data_of(block: str) -> dict:
    found = re.search(r'class="qkv-w-data">(.*?)</script>', block, re.S)
    assert found
    return json.loads(found.group(1))


def test_the_weights_round_trip_from_the_data_to_the_state_dict():
    model = small_model()
    data = data_of(write_live(model, VOCABULARY, prompt=PROMPT).to_html())
    state = weights_from_data(data)
    assert list(state) == list(model.state_dict())
    for name, tensor in model.state_dict().items():
        assert state[name].dtype == torch.float32
        assert torch.equal(state[name], tensor), name
    again = small_model(seed=1)
    again.load_state_dict(state)
    tokens = torch.tensor([1, 5, 9, 2])
    torch.testing.assert_close(again(tokens), model(tokens), rtol=0, atol=0)


def test_the_data_carry_pytorchs_logits_of_the_test_prompts():
    model = small_model()
    tests = ["The", "a\nb", "« là »"]
    widget = write_live(model, VOCABULARY, prompt=PROMPT, test_prompts=tests)
    data = data_of(widget.to_html())
    assert data["test_prompts"] == tests
    for text, logits in zip(tests, data["test_logits"], strict=True):
        ids = torch.tensor([VOCABULARY.index(c) for c in text])
        with torch.no_grad():
            expected = model(ids)[-1]
        torch.testing.assert_close(torch.tensor(logits), expected, rtol=0, atol=1e-6)
    assert data["sizes"] == {"V": 100, "D": 16, "H": 2, "N": 2, "F": 32, "max_len": 48}
    assert data["vocabulary"] == VOCABULARY


def test_the_attention_shown_is_qkvs_and_rows_sum_to_one():
    widget = write_live(small_model(), VOCABULARY, prompt=PROMPT)
    weights = widget.attention(PROMPT)  # (N, H, T, T)
    assert weights.shape == (2, 2, len(PROMPT), len(PROMPT))
    torch.testing.assert_close(
        weights.sum(-1), torch.ones(2, 2, len(PROMPT)), rtol=0, atol=1e-6
    )
    assert torch.all(weights.triu(1) == 0)  # causal


def test_greedy_writing_as_the_page_draws_is_generate():
    widget = write_live(small_model(), VOCABULARY, prompt=PROMPT)
    written = widget.write(PROMPT, 20, 0, 10, 0)
    expected = generate(widget.model, widget.ids(PROMPT), 20, temperature=0)
    assert written == "".join(VOCABULARY[i] for i in expected)
    sampled = widget.write(PROMPT, 20, 1.0, 5, 7)
    assert sampled == widget.write(PROMPT, 20, 1.0, 5, 7)  # the seed replays it
    assert len(widget.write(PROMPT, 100, 0, 10, 0)) == 48 - len(PROMPT)  # max_len


def test_a_model_of_about_100k_parameters_fits_in_a_page_under_1_mb():
    torch.manual_seed(0)
    model = Writer(100, 64, 4, 2, 256, max_len=128).eval()
    params = sum(p.numel() for p in model.parameters())
    widget = write_live(model, VOCABULARY, prompt=PROMPT)
    assert widget.weight_bytes == 4 * params
    block = widget.to_html()
    data = data_of(block)
    assert len(data["weights"]) == 4 * -(-widget.weight_bytes // 3)  # base64
    assert len(block.encode()) < 1_000_000
    assert data["params"] == params


def test_labels_exist_in_both_languages_and_french_typography():
    labels = both(WriteLive.LABELS)
    assert set(labels) == {"en", "fr"} and set(labels["en"]) == set(labels["fr"])
    french_spaces = re.compile(r"[^\u00a0\u202f][:;?!](?:\s|$)|«[^\u00a0]|[^\u00a0]»")
    for key, text in labels["fr"].items():
        assert not french_spaces.search(text), f"{key}: {text!r}"
        assert '"' not in text and "“" not in text, key
        if key not in ("topK", "token"):  # the same word in both languages
            assert text != labels["en"][key], f"{key} is not translated"
        found = set(re.findall(r"\{(\w+)\}", text))
        assert found == set(re.findall(r"\{(\w+)\}", labels["en"][key])), key


def test_the_static_figure_and_its_alt_in_each_language():
    widget = write_live(small_model(), VOCABULARY, prompt=PROMPT, decimals=2)
    png = widget.static_png()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    top = widget.probabilities(PROMPT).max().item()
    assert f"{top:.2f}" in widget.static_alt()
    french = widget.static_alts()["fr"]
    assert f"{top:.2f}".replace(".", ",") in french and "«\u00a0" in french
    assert visible(" ") == "\u2423" and visible("\n") == "\u21b5"


def test_nothing_is_loaded_from_outside():
    block = write_live(small_model(), VOCABULARY, prompt=PROMPT).to_html()
    assert not re.search(r"(src|href)=\"(https?:)?//", block)
    assert "fetch(" not in block and "XMLHttpRequest" not in block


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": torch.nn.Linear(2, 2)}, r"model must be a .*Writer, got Linear"),
        ({"vocabulary": VOCABULARY[:-1]}, r"vocabulary must hold 100 .* got 99"),
        ({"vocabulary": ["ab"] * 100}, r"vocabulary must be a list of single"),
        ({"prompt": "caf€"}, r"prompt must use the vocabulary's .*'€'"),
        ({"prompt": "x" * 48}, r"prompt must be shorter than max_len=48 .* got 48"),
        ({"prompt": ""}, r"prompt must hold non-empty strings"),
        ({"test_prompts": "abc"}, r"test_prompts must be a list of 1 to 8"),
        ({"test_prompts": ["ok", "ü"]}, r"test_prompts must use the vocabulary"),
        ({"temperature": -1}, r"temperature must be a number in 0..10, got -1"),
        ({"top_k": 101}, r"top_k must be at most V=100, got 101"),
        ({"seed": 2**32}, r"seed must be an int in 0..2\*\*32 - 1"),
        ({"count": 49}, r"count must be at most max_len=48, got 49"),
        ({"layer": 2}, r"layer must be in 0..1, got 2"),
        ({"head": 2}, r"head must be in 0..1, got 2"),
        ({"shown": 31}, r"shown must be at most 30"),
        ({"lang": "de"}, r"lang must be None .* got 'de'"),
    ],
)
def test_bad_arguments_raise_a_value_error_that_names_them(change, message):
    arguments = {"model": small_model(), "vocabulary": VOCABULARY, "prompt": PROMPT}
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        write_live(**arguments)


def test_markup_in_the_text_stays_text_and_notebooks_get_html_and_a_png():
    tricky = "</script><b>&amp;"
    widget = write_live(small_model(), VOCABULARY, prompt=tricky, test_prompts=[tricky])
    bundle = widget._repr_mimebundle_()
    assert bundle["image/png"] and "WriteLive" in bundle["text/plain"]
    block = bundle["text/html"]
    assert block.count("</script>") == 2  # the data's and the script's own
    data = data_of(block)
    assert data["prompt"] == tricky and data["test_prompts"] == [tricky]
