"""The KV-cache calculator of the chapter *decoders*
(:func:`qkv.page.explorables.kv_cache_calculator`): the data it carries, the
sizes it shows (from ``qkv.cost.kv_cache_bytes``), the formula its script
computes (mirrored here), bad arguments and the static figure."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

import qkv
from qkv.cost import kv_cache_bytes
from qkv.language import translated
from qkv.page.explorables import kv_cache_calculator
from qkv.page.explorables.kv_cache import LIMITS, KVCacheCalculator, cache_sizes
from qkv.page.glue import human_bytes
from qkv.page.numbers import byte_units


def both(labels: dict[str, str]) -> dict[str, dict[str, str]]:
    """The labels (English messages) in English and in French."""
    return {lang: translated(labels, lang) for lang in ("en", "fr")}


ROOT = Path(__file__).resolve().parents[2]

#: The configurations of the chapter *decoders* (book/decoders.md).
CONFIGS = {
    "Llama 2 7B": (4096, 32, 32, 32),
    "Llama 2 70B": (8192, 64, 8, 80),
    "Mistral 7B": (4096, 32, 8, 32),
}


def script_sizes(dim, heads, kv_heads, layers, bytes_per_number, n_tokens, batch):
    """What kv_cache.js computes, written the same way: 2 * tokens * layers *
    H_kv * (D / H) * bytes, for H_kv, H and 1."""
    head_dim = dim // heads
    return {
        kind: (
            2 * layers * kv * head_dim * bytes_per_number,
            2 * n_tokens * batch * layers * kv * head_dim * bytes_per_number,
        )
        for kind, kv in (("model", kv_heads), ("mha", heads), ("mqa", 1))
    }


def test_data_are_the_chapters_configs():
    widget = kv_cache_calculator(CONFIGS, model="Llama 2 70B", lang="en")
    data = widget._payload()
    assert data["configs"] == [[name, *config] for name, config in CONFIGS.items()]
    assert data["model"] == "Llama 2 70B"
    assert (data["bytes_per_number"], data["n_tokens"], data["batch"]) == (2, 4096, 1)
    assert data["units"] == {
        "en": ["B", "KiB", "MiB", "GiB", "TiB", "PiB"],
        "fr": ["o", "Kio", "Mio", "Gio", "Tio", "Pio"],
    }
    chapter = (ROOT / "book" / "decoders.md").read_text(encoding="utf-8")
    for name, config in CONFIGS.items():  # the chapter's own table
        assert f'"{name}": {config},' in chapter


def test_sizes_are_kv_cache_bytes():
    sizes = cache_sizes(CONFIGS["Llama 2 70B"], 2, 4096, 3)
    per_token = kv_cache_bytes(1, 80, 8 * 128, 2)
    assert sizes["model"] == (per_token, kv_cache_bytes(4096 * 3, 80, 8 * 128, 2))
    assert sizes["mha"][0] == kv_cache_bytes(1, 80, 8192, 2) == 8 * per_token
    assert sizes["mqa"][0] * 8 == per_token
    assert human_bytes(per_token) == "320.0 KiB"


def test_script_formula_equals_kv_cache_bytes():
    rng = random.Random(0)
    for _ in range(300):
        heads = 2 ** rng.randrange(0, 8) * rng.choice([1, 3, 5])
        dim = heads * rng.randrange(1, 300)
        kv_heads = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
        layers = rng.randrange(1, LIMITS["layers"] + 1)
        numbers = (
            rng.choice([1, 2, 4]),
            rng.randrange(1, 10**9),
            rng.randrange(1, 4097),
        )
        config = (dim, heads, kv_heads, layers)
        assert cache_sizes(config, *numbers) == script_sizes(*config, *numbers)


def js_human_bytes(n_bytes: int, lang: str = "en") -> str:
    """kv_cache.js's humanBytes, line for line: the bytes as a double, then exact
    integer arithmetic, halves rounded up."""
    n = int(float(n_bytes))
    sep, point = (",", ".") if lang == "en" else ("\u202f", ",")
    units = byte_units(lang)

    def group(digits: str) -> str:
        return re.sub(r"\B(?=(\d{3})+(?!\d))", sep, digits)

    if n < 1024:
        return f"{group(str(n))} {units[0]}"
    d = 1
    for i, unit in enumerate(units[1:]):
        d *= 1024
        tenths = (20 * n + d) // (2 * d)
        if tenths < 10240 or i == 4:
            return f"{group(str(tenths // 10))}{point}{tenths % 10} {unit}"
    raise AssertionError


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_script_human_bytes_equals_human_bytes(lang):
    rng = random.Random(1)
    values = [0, 1, 1023, 1024, 1535, 1536, 1024**2 - 52, 1024**2 - 51, 10**23]
    values += [rng.randrange(1, 10 ** rng.randrange(1, 24)) for _ in range(2000)]
    values += [1024**k * (2 * m + 1) // 20 for k in range(1, 6) for m in range(40)]
    values += [2 * 10**9 * 4096 * 10_000 * (1 << 20) * 4]  # the largest the page takes
    qkv.set_language(lang)
    try:
        for value in values:
            assert js_human_bytes(value, lang) == human_bytes(value), value
    finally:
        qkv.set_language("en")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"configs": {}}, "configs must be a mapping"),
        ({"configs": {"x": (4096, 32, 32)}}, "four ints"),
        ({"configs": {"x": (4096, 30, 10, 2)}}, "H must divide D"),
        ({"configs": {"x": (4096, 32, 5, 2)}}, "H_kv must divide H"),
        ({"configs": {"x": (0, 32, 5, 2)}}, "configs['x'][0]"),
        ({"configs": {"x": (1 << 21, 32, 8, 2)}}, "dim must be at most"),
        ({"configs": CONFIGS, "model": "GPT"}, "model must be one of"),
        ({"configs": CONFIGS, "bytes_per_number": 3}, "bytes_per_number must be"),
        ({"configs": CONFIGS, "n_tokens": 0}, "n_tokens"),
        ({"configs": CONFIGS, "n_tokens": 10**10}, "n_tokens must be at most"),
        ({"configs": CONFIGS, "batch": 5000}, "batch must be at most"),
        ({"configs": CONFIGS, "lang": "de"}, "lang must be"),
    ],
)
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        kv_cache_calculator(**kwargs)


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_static_figure_and_alt(lang):
    widget = kv_cache_calculator(CONFIGS, model="Llama 2 70B", lang=lang)
    assert widget.static_png().startswith(b"\x89PNG")
    alt = widget.static_alt()
    total = kv_cache_bytes(4096, 80, 1024, 2)
    qkv.set_language(lang)
    try:
        assert human_bytes(total) in alt
        assert human_bytes(8 * total) in alt
    finally:
        qkv.set_language("en")
    assert ("4,096" if lang == "en" else "4\u202f096") in alt
    html = widget._repr_html_()
    assert "qkv-x-kv" in html
    assert json.dumps("Llama 2 70B") in html


def test_labels_in_both_languages():
    labels = both(KVCacheCalculator.LABELS)
    assert labels["en"].keys() == labels["fr"].keys()
    for key, english in labels["en"].items():
        assert set(re.findall(r"\{\w+\}", english)) == set(
            re.findall(r"\{\w+\}", labels["fr"][key])
        ), key


def test_the_largest_sizes_it_accepts_draw():
    """At every limit at once the cache passes 2**63 bytes: the printed figure
    still draws (matplotlib's bars overflowed on such ints, issue 39)."""
    largest = (LIMITS["dim"], LIMITS["heads"], LIMITS["kv_heads"], LIMITS["layers"])
    widget = kv_cache_calculator(
        {"largest": largest},
        bytes_per_number=4,
        n_tokens=LIMITS["n_tokens"],
        batch=LIMITS["batch"],
    )
    assert (
        cache_sizes(largest, 4, LIMITS["n_tokens"], LIMITS["batch"])["mha"][1] > 2**63
    )
    assert widget.static_png().startswith(b"\x89PNG")
    assert "PiB" in widget.static_alt()
