"""qkv.page.explorables.alignment_explorer (chapter *cross-attention*), without a
browser: its data are the weights of ``tr.align`` for the same models (the last
decoder layer, the mean of the heads, to 1e-6), its expected French words those
of ``Sentence.alignment``; it loads nothing from outside, stays small, speaks
English and French, and refuses bad arguments by name.

The chapter's two models (seed 0, dot product and additive) are read back from
the build's trained results (``_build/results``), or trained once (seconds of
CPU): the tests that use them are marked slow, as tests/qkv/test_translate.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from qkv.experiments import translate as tr
from qkv.language import translated
from qkv.page import explorables
from qkv.page.explorables.alignment import AlignmentExplorer
from qkv.page.widgets import json_for_script


def both(labels: dict[str, str]) -> dict[str, dict[str, str]]:
    """The labels (English messages) in English and in French."""
    return {lang: translated(labels, lang) for lang in ("en", "fr")}


ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def models():
    """The chapter's two trained models (seed 0): dot product, additive. While
    the module runs, results are kept in the build's ``_build/results`` and
    torch uses one thread, as in the book's kernels (``trained_results``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QKV_RESULTS", str(ROOT / "_build" / "results"))
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield tr.train(seed=0), tr.train(seed=0, score="additive")
        finally:
            torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def explorer(models):
    dot, additive = models
    heldout = dot.heldout
    shown = [heldout[0], heldout[1], *[s for s in heldout if s.object][:4]]
    return explorables.alignment_explorer(shown, [dot.model, additive.model])


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_data_are_the_weights_of_tr_align(models, explorer):
    dot, additive = models
    data = explorer._payload()
    assert data["scores"] == ["dot", "additive"]
    assert len(data["sentences"]) == len(explorer.sentences) == 6
    for sentence, shown in zip(explorer.sentences, data["sentences"], strict=True):
        assert shown["french"] == sentence.french()
        for score, run in (("dot", dot), ("additive", additive)):
            alignment = tr.align(run.model, sentence.french())
            written = alignment.target[:-1]  # without [eos]
            assert shown["english"] == written
            expected = alignment.mean[-1, : len(written)].double()  # (L, S)
            got = torch.tensor(shown["weights"][score], dtype=torch.float64)
            assert got.shape == (len(written), len(sentence.french()))
            torch.testing.assert_close(got, expected, atol=TOLERANCE, rtol=0)
            torch.testing.assert_close(got.sum(-1), torch.ones(len(written)).double())


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_expected_words_are_the_reference_alignment(explorer):
    for i, sentence in enumerate(explorer.sentences):
        assert explorer.english[i] == sentence.english()  # translated right
        pairs = dict(sentence.alignment())
        assert explorer.expected(i) == [pairs[e] for e in range(len(pairs))]


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_a_wrong_translation_has_no_expected_word(explorer):
    english = explorer.english[0]
    explorer.english[0] = ["a", *english[1:]]
    try:
        assert explorer.expected(0) == [None] * len(english)
    finally:
        explorer.english[0] = english


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_offline_small_and_escaped(explorer):
    html = explorer.to_html()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "http://" not in html and "https://" not in html
    payload = json_for_script(explorer._payload())
    assert len(payload) < 12_000  # six sentences, two models: a few kB
    assert len(html) < 120_000
    assert json.loads(payload)["start"] == 0


def test_labels_in_english_and_french():
    labels = both(AlignmentExplorer.LABELS)
    assert labels["en"].keys() == labels["fr"].keys()
    for key, text in labels["fr"].items():
        assert text != labels["en"][key] or key == "fig_title", key
        assert " :" not in text and "« " not in text, key  # no-break spaces
    for lang in ("en", "fr"):
        for key in ("topExpected", "topOther", "topNoReference"):
            assert "{model}" in labels[lang][key] and "{weight}" in labels[lang][key]


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_static_figure_and_alt_follow_the_language(explorer):
    png = explorer.static_png()
    assert png.startswith(b"\x89PNG") and len(png) < 80_000
    assert "dot product" in explorer.static_alt()
    assert "produit scalaire" in explorer.static_alts()["fr"]


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_bad_arguments_are_refused_by_name(models):
    dot, additive = models
    sentences = dot.heldout[:2]
    with pytest.raises(ValueError, match="models must be a list"):
        explorables.alignment_explorer(sentences, dot.model)
    with pytest.raises(ValueError, match="models must be a list"):
        explorables.alignment_explorer(sentences, [])
    with pytest.raises(ValueError, match="different scores"):
        explorables.alignment_explorer(sentences, [dot.model, dot.model])
    with pytest.raises(ValueError, match="sentences must be a list"):
        explorables.alignment_explorer([], [dot.model])
    with pytest.raises(ValueError, match="sentences must be a list"):
        explorables.alignment_explorer(["le chat noir dort"], [dot.model])
    with pytest.raises(ValueError, match=r"start must be in 0\.\.1.*got 2"):
        explorables.alignment_explorer(sentences, [dot.model], start=2)
    with pytest.raises(ValueError, match="lang"):
        explorables.alignment_explorer(sentences, [dot.model], lang="de")


# slow: the chapter's two full training runs (fixture models), read back or trained
@pytest.mark.slow
def test_models_that_write_different_translations_are_refused(models):
    dot, _ = models
    # 20 steps (a second): it writes "the brown [eos]" for "the grey cat sleeps"
    early = tr.train(seed=0, score="additive", steps=20, n_heldout=20)
    with pytest.raises(ValueError, match="same translation"):
        explorables.alignment_explorer(dot.heldout[:1], [dot.model, early.model])
