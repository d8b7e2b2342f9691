"""The model that writes (qkv.experiments.writer): its KV-cache step gives the
logits of the whole pass, and generation with the cache writes the same tokens."""

from __future__ import annotations

import math

import pytest
import torch

from qkv.experiments import writer
from qkv.experiments.writer import (
    CORPUS,
    HELDOUT_SHARE,
    LANGUAGES,
    UNKNOWN,
    Corpus,
    Writer,
    bigram_loss,
    corpus_digest,
    decode,
    encode,
    generate,
    heldout_loss,
    load_corpus,
    longest_copied_run,
    train,
    write,
)


def small_model(seed: int = 0) -> Writer:
    torch.manual_seed(seed)
    return Writer(
        vocab_size=11, embed_dim=16, num_heads=2, num_layers=2, ff_dim=32, max_len=24
    ).eval()


def test_step_with_the_cache_gives_the_logits_of_the_whole_pass():
    model = small_model()
    tokens = torch.randint(0, 11, (20,), generator=torch.Generator().manual_seed(1))
    whole = model(tokens)  # (T, V)
    caches = model.new_caches()
    pieces = [model.step(tokens[:7], caches)]  # a prompt of 7, then one by one
    pieces += [model.step(tokens[t : t + 1], caches) for t in range(7, 20)]
    torch.testing.assert_close(torch.cat(pieces), whole, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("temperature", "top_k"), [(0.0, None), (0.8, 3), (1.5, None)])
def test_generation_with_the_cache_writes_the_same_tokens(temperature, top_k):
    model = small_model()
    prompt = torch.tensor([1, 2, 3])
    written = [
        generate(
            model,
            prompt,
            18,
            temperature,
            top_k,
            torch.Generator().manual_seed(5),
            use_cache=use_cache,
        )
        for use_cache in (True, False)
    ]
    assert written[0] == written[1] and len(written[0]) == 18


def test_bad_input_names_the_argument():
    model = small_model()
    with pytest.raises(ValueError, match="tokens"):
        model(torch.tensor([[0.5]]))
    with pytest.raises(ValueError, match="max_len"):
        generate(model, torch.tensor([1, 2]), 30)
    with pytest.raises(ValueError, match="generator"):
        generate(model, torch.tensor([1, 2]), 3, temperature=1.0)
    with pytest.raises(ValueError, match=r"\[0, 11\)"):
        model(torch.tensor([3, 11]))


# -- the corpus, the tokenizer, the baselines, memorisation ---------------------


def test_the_corpus_ships_with_qkv_in_both_languages_split_the_same_way():
    corpus = load_corpus()
    for language in LANGUAGES:
        train_lines = corpus.train[language].split("\n")
        heldout_lines = corpus.heldout[language].split("\n")
        assert len(train_lines) > 500 and len(heldout_lines) > 50
        share = len(heldout_lines) / (len(train_lines) + len(heldout_lines))
        assert share == pytest.approx(HELDOUT_SHARE, abs=0.01)
        assert "`" not in corpus.train[language] + corpus.heldout[language]
        assert "{glue" not in corpus.train[language]
    # the same paragraphs held out in both languages: as many lines
    assert len(corpus.heldout["en"].split("\n")) == len(
        corpus.heldout["fr"].split("\n")
    )
    assert "é" in corpus.vocabulary and "e" in corpus.vocabulary
    assert corpus.vocabulary[0] == UNKNOWN
    assert len(set(corpus.vocabulary)) == len(corpus.vocabulary) < 150
    assert len(CORPUS) == 64 and corpus_digest() == CORPUS


def test_encode_and_decode_are_inverse_and_unknown_characters_share_one_id():
    vocabulary = load_corpus().vocabulary
    text = "L'attention écrit."
    assert decode(encode(text, vocabulary), vocabulary) == text
    ids = encode("a\u4e2db\u4e2e", vocabulary)
    assert ids[1] == ids[3] == 0
    assert decode(ids, vocabulary) == f"a{UNKNOWN}b{UNKNOWN}"
    with pytest.raises(ValueError, match="text"):
        encode("", vocabulary)


def test_the_bigram_baseline_counts_pairs_with_add_one_smoothing():
    train_tokens = torch.tensor([0, 1, 0, 1, 0, 2])
    heldout = torch.tensor([0, 1, 0])
    # pairs from 0: (0 1) twice, (0 2) once; P(1 | 0) = (2 + 1) / (3 + 3)
    # pairs from 1: (1 0) twice; P(0 | 1) = (2 + 1) / (2 + 3)
    expected = -(math.log(3 / 6) + math.log(3 / 5)) / 2
    assert bigram_loss(train_tokens, heldout, 3, max_len=2) == pytest.approx(expected)
    with pytest.raises(ValueError, match="k"):
        bigram_loss(train_tokens, heldout, 3, max_len=2, k=0)


def test_heldout_loss_reads_windows_of_max_len():
    model = small_model()
    tokens = torch.randint(0, 11, (50,), generator=torch.Generator().manual_seed(2))
    inputs, targets = tokens[:48].view(2, 24), tokens[1:49].view(2, 24)
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(
            model(inputs).flatten(0, 1), targets.flatten()
        )
    assert heldout_loss(model, tokens) == pytest.approx(float(expected), rel=1e-5)
    with pytest.raises(ValueError, match="max_len"):
        heldout_loss(model, tokens[:10])


@pytest.mark.parametrize(
    ("sample", "text", "run"),
    [
        ("the cat sat", "a cat sat on the mat", " cat sat"),
        ("xyz", "abc", ""),
        ("abcabd", "xxabdxxabc", "abc"),
        ("", "abc", ""),
        ("aaaa", "aa", "aa"),
    ],
)
def test_longest_copied_run_is_the_longest_verbatim_substring(sample, text, run):
    assert longest_copied_run(sample, text) == run
    brute = max(
        (
            sample[i:j]
            for i in range(len(sample))
            for j in range(i, len(sample) + 1)
            if sample[i:j] in text
        ),
        key=len,
        default="",
    )
    assert len(brute) == len(run)


def test_longest_copied_run_checks_its_arguments():
    with pytest.raises(ValueError, match="sample"):
        longest_copied_run(3, "abc")


def small_corpus() -> Corpus:
    """A slice of the corpus, for a training of seconds."""
    corpus = load_corpus()
    cut = {language: corpus.train[language][:3000] for language in LANGUAGES}
    held = {language: corpus.heldout[language][:400] for language in LANGUAGES}
    return Corpus(cut, held, corpus.vocabulary)


def test_a_short_training_is_deterministic_and_beats_the_uniform_guess(
    monkeypatch,
):
    monkeypatch.setattr(writer, "load_corpus", small_corpus)
    first = train.__wrapped__(0, steps=4, batch_size=2, eval_every=2)
    again = train.__wrapped__(0, steps=4, batch_size=2, eval_every=2)
    assert first.curve.keys() == again.curve.keys()
    for key, values in first.curve.items():  # no float compared with ==
        assert again.curve[key] == pytest.approx(values, rel=1e-6, abs=1e-9)
    assert first.curve["step"] == [2, 4]
    assert set(first.heldout) == set(first.bigram) == {"en", "fr", "all"}
    assert first.uniform == pytest.approx(math.log(len(first.vocabulary)))
    assert first.bigram["all"] < first.uniform
    assert not first.model.training
    assert first.parameters == sum(p.numel() for p in first.model.parameters())
    assert torch.get_num_threads() == THREADS  # restored
    with pytest.raises(ValueError, match="corpus"):
        train.__wrapped__(0, steps=1, corpus="0" * 64)
    with torch.no_grad():  # as a chapter that turned gradients off calls it
        quiet = train.__wrapped__(0, steps=4, batch_size=2, eval_every=2)
    for key, values in first.curve.items():
        assert quiet.curve[key] == pytest.approx(values, rel=1e-6, abs=1e-9)


THREADS = torch.get_num_threads()


# -- the chapter's claims on seeds 0-4 (the build's trained results) -----------

SEEDS = range(5)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_every_seed_0_to_4_beats_the_bigram_and_the_uniform_guess(
    trained_results, seed
):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    result = train(seed)
    assert 50_000 <= result.parameters <= 150_000
    for name in ("en", "fr", "all"):
        assert result.heldout[name] < result.bigram[name] - 0.3
        assert result.bigram[name] < result.uniform
    assert result.heldout["en"] - result.heldout["fr"] > 0.04  # measured 0.075+
    assert result.curve["en"][-1] < result.curve["en"][0]
    assert result.curve["fr"][-1] < result.curve["fr"][0]
    for prompt in ("The attention of ", "L'attention de "):
        cached = write(result, prompt, 100)
        tokens = encode(prompt, result.vocabulary)
        uncached = generate(result.model, tokens, 100, use_cache=False)
        assert cached == decode(uncached, result.vocabulary)


PROMPTS = ("The attention of ", "L'attention de ")


def has_loop(text: str, length: int = 20) -> bool:
    """Some `length` characters of text equal those p before them, for a p."""
    return any(
        text[start : start + length] == text[start - p : start - p + length]
        for p in range(1, len(text) - length + 1)
        for start in range(p, len(text) - length + 1)
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_samples_copy_a_few_words_on_seeds_0_to_4(trained_results, seed):
    """slow: trains the chapter's run of this seed (shared with the build)."""
    result = train(seed)
    training_text = load_corpus().training_text
    for prompt in PROMPTS:
        sample = write(result, prompt, 100, 0.8, top_k=10)
        # measured 8 to 14 characters natively and under the emulated CPUs
        assert len(longest_copied_run(sample, training_text)) < 30


@pytest.mark.slow
def test_most_greedy_texts_loop_on_seeds_0_to_4(trained_results):
    """slow: trains the chapter's five runs (shared with the build)."""
    texts = [write(train(seed), prompt, 100) for seed in SEEDS for prompt in PROMPTS]
    # The chapter's exercise: measured 9 or 10 of the 10 natively and under the
    # emulated CPUs (which text does not loop changes with the CPU): at most two
    # may not.
    assert sum(has_loop(text) for text in texts) >= len(texts) - 2
