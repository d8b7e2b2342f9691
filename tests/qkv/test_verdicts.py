"""Tests of qkv.page.verdicts: the phrases a page glues whose choice depends on
the machine, every branch, with made-up numbers; every declared phrase is what
the catalogue extracts, and has a French translation."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
import torch

from qkv.page.verdicts import (
    CACHE,
    CLOCK,
    GROWTH,
    PADDING_ROWS,
    PHRASES_MIME,
    SCALING,
    SPEED,
    TABLES,
    Phrase,
    cache_growth_verdict,
    cache_verdict,
    clock_phrase,
    compare_speed,
    describe_slope,
    padding_rows,
    scaling_verdict,
)

ROOT = Path(__file__).resolve().parents[2]
SIZES = [128, 256, 512, 1024, 2048, 4096]


def power_law(exponent: float, per_score_ns: float = 1.0) -> list[float]:
    """Made-up times proportional to n^exponent, per_score_ns at n = 512."""
    return [per_score_ns * 1e-9 * 512**2 * (n / 512) ** exponent for n in SIZES]


def every_branch() -> list[Phrase]:
    """One phrase of each branch of each function (and a few more)."""
    phrases = [
        scaling_verdict(SIZES, power_law(a), power_law(b), 2, level)
        for a, b, level in itertools.product(
            (1.5, 2.0, 2.6), (2.0, 2.05, 2.9), (None, 2**20, 2**30)
        )
    ]
    phrases += [compare_speed(1.0, 3.2), compare_speed(3.0, 2.0), compare_speed(1, 1)]
    phrases += [
        cache_growth_verdict(1e-4, p, g, 32) for p, g in ((1e-7, 2.0), (-1e-9, 1.0))
    ]
    phrases += [
        cache_verdict(120, r, c, f, 2e-4)
        for r, c, f in ((6, 0.06, 1e-5), (0.6, 0.06, 1.5e-4), (0.6, 0.06, 1e-5))
    ]
    phrases += [clock_phrase(time.process_time), clock_phrase(time.perf_counter)]
    nan = torch.full((2, 3), float("nan"))
    phrases += [padding_rows(r) for r in (torch.zeros(2, 3), nan, torch.ones(2, 3))]
    return phrases


def test_describe_slope():
    assert describe_slope(2.05) == "close"
    assert describe_slope(2.5) == "above"
    assert describe_slope(1.5) == "below"
    with pytest.raises(ValueError, match="slope"):
        describe_slope(float("nan"))


def test_scaling_verdict_when_both_follow_the_count():
    text = str(scaling_verdict(SIZES, power_law(2.0), power_law(2.05), fit_from=2))
    assert text.startswith("Both are close to 2: doubling the length")
    assert "as the count predicts" in text


@pytest.mark.parametrize("level2", [2**20, None])
def test_scaling_verdict_when_the_naive_version_outgrows_the_caches(level2):
    naive, fused = power_law(2.6), power_law(2.0, per_score_ns=0.5)
    text = str(scaling_verdict(SIZES, naive, fused, fit_from=2, level2=level2))
    assert text.startswith("The naive version's slope is the steeper")
    per_score = naive[-1] / SIZES[-1] ** 2 * 1e9
    assert f"rises from 1.0 ns at 512 tokens to {per_score:.1f} ns at 4,096" in text
    assert "while the fused kernel's is 0.5 ns and 0.5 ns." in text
    if level2:
        assert "level-2 cache holds 1 MiB" in text
        assert "one matrix of 4,096 tokens takes 64 MiB" in text
    else:
        assert "level-2" not in text and "caches, every score" in text


@pytest.mark.parametrize(
    ("naive_exponent", "fused_exponent", "level2"),
    [
        (1.5, 1.6, None),
        (2.6, 2.9, None),
        (2.0, 2.6, None),
        # steeper, but one matrix fits in this (large) level-2 cache: no such story
        (2.6, 2.0, 2**30),
    ],
)
def test_scaling_verdict_otherwise_gives_the_trend(
    naive_exponent, fused_exponent, level2
):
    naive, fused = power_law(naive_exponent), power_law(fused_exponent)
    phrase = scaling_verdict(SIZES, naive, fused, fit_from=2, level2=level2)
    assert phrase.template == SCALING[3]
    assert str(phrase).startswith("The count predicts a slope of 2. ")


def test_scaling_verdict_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        scaling_verdict(SIZES, power_law(2.0)[:-1], power_law(2.0))
    with pytest.raises(ValueError, match="fit_from"):
        scaling_verdict(SIZES, power_law(2.0), power_law(2.0), fit_from=5)


def test_compare_speed():
    assert str(compare_speed(1.0, 3.2)) == "3.2 times faster than"
    assert str(compare_speed(3.0, 2.0)) == "1.5 times slower than"
    assert str(compare_speed(1.0, 1.05)) == "about as fast as"
    assert str(compare_speed(1.05, 1.0)) == "about as fast as"
    with pytest.raises(ValueError, match="positive"):
        compare_speed(0.0, 1.0)


def test_cache_growth_verdict():
    rising = str(cache_growth_verdict(100e-6, 150e-9, 2.4, 32))
    assert rising.startswith("A step costs 100 µs plus 150 ns for every token")
    assert "The last 32 steps took 2.4 times as long as the first 32." in rising
    for per_token, growth in ((-5e-9, 1.1), (5e-9, 0.9)):
        flat = str(cache_growth_verdict(100e-6, per_token, growth, 32))
        assert flat.startswith("A step costs about 100 µs, and its time does not rise")
        assert " ns " not in flat  # no fitted slope quoted


def test_cache_verdict_every_branch():
    follows = str(cache_verdict(120, 6.0, 0.06, 40e-6, 200e-6))
    assert follows.startswith("Recomputing takes 120 times as many multiply-adds")
    assert "took 100 times as long: the measurement follows the count." in follows
    fixed = str(cache_verdict(120, 0.6, 0.06, 150e-6, 200e-6))
    assert fixed.startswith("The counts promised more. Recomputing takes 120 times")
    assert "as the cache, but only 10.0 times as long." in fixed
    assert "fixed part, about 150 µs" in fixed and "most of its 200 µs" in fixed
    other = str(cache_verdict(120, 0.6, 0.06, 50e-6, 200e-6))
    assert other.endswith("cost time that no count of multiply-adds sees.")
    assert "fixed part" not in other
    slower = str(cache_verdict(120, 0.06, 0.09, 50e-6, 200e-6))
    assert "but only 0.7 times as long" in slower


def test_clock_and_padding_rows():
    assert "`time.process_time`" in str(clock_phrase(time.process_time))
    assert "`time.perf_counter`" in str(clock_phrase(time.perf_counter))
    assert str(padding_rows(torch.zeros(2, 4))) == "zeros"
    assert str(padding_rows(torch.full((2, 4), float("nan")))) == "NaN"
    mixed = torch.tensor([0.0, float("nan"), 1.0])
    assert str(padding_rows(mixed)) == "numbers that are neither 0 nor NaN"
    with pytest.raises(ValueError, match="rows"):
        padding_rows(torch.zeros(0))
    with pytest.raises(ValueError, match="index"):
        Phrase(SPEED, 3)


def test_every_branch_reads_as_sentences():
    """No branch leaves a placeholder or a doubled space; sentences end."""
    for phrase in every_branch():
        text = str(phrase)
        assert "  " not in text and "{" not in text, text
        if phrase.choices in (SCALING, GROWTH, CACHE):
            assert text.endswith("."), text


def test_every_declared_phrase_is_reached_and_is_its_message():
    """Each phrase of each table is chosen by some branch; what the page shows,
    made a template as the catalogue extracts it, is the declared phrase."""
    from bookbuild.i18n.glue import PHRASES_MIME as EXTRACTED
    from bookbuild.i18n.glue import template

    assert PHRASES_MIME == EXTRACTED  # what the extraction of the catalogues reads

    reached = set()
    for phrase in every_branch():
        assert phrase.template in phrase.choices
        assert template(str(phrase))[0] == phrase.template, str(phrase)
        bundle = {PHRASES_MIME: {"phrases": list(phrase.choices)}}
        assert phrase._repr_mimebundle_() == bundle
        assert phrase._repr_markdown_() == str(phrase)
        reached.add(phrase.template)
    declared = [p for tables in TABLES.values() for table in tables for p in table]
    assert set(declared) == reached
    assert {SCALING, SPEED, GROWTH, CACHE, CLOCK, PADDING_ROWS} == {
        t for tables in TABLES.values() for t in tables
    }


@pytest.mark.parametrize("page", sorted(TABLES))
def test_every_declared_phrase_has_a_french_translation(page):
    """Whichever branch this machine takes, the French page has its phrase: the
    catalogue holds every declared phrase, translated, with its placeholders."""
    from bookbuild.i18n.translations import markup_problems, read_catalogue

    catalogue = read_catalogue(ROOT / "locales/fr/LC_MESSAGES/book" / f"{page}.po")
    for table in TABLES[page]:
        for phrase in table:
            message = catalogue.get(phrase)
            assert message is not None and message.translated, phrase
            assert markup_problems(phrase, message.msgstr) == [], phrase
