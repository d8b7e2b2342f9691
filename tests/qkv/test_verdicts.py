"""Tests of qkv.page.verdicts: the phrases a page glues whose choice depends on
the machine, every branch, with made-up numbers; every declared phrase is what
the catalogue extracts, and has a French translation."""

from __future__ import annotations

import itertools
import math
import re
import time
from pathlib import Path

import pytest
import torch

from qkv.page.verdicts import (
    BOUNDS,
    CACHE,
    CLOCK,
    GROWTH,
    MEASURES,
    PADDING_ROWS,
    PHRASES_MIME,
    SCALING,
    SPEED,
    TABLES,
    Phrase,
    cache_growth_verdict,
    cache_verdict,
    choose,
    clock_phrase,
    compare_speed,
    fit_steps,
    padding_rows,
    scaling_verdict,
)

ROOT = Path(__file__).resolve().parents[2]
SIZES = [128, 256, 512, 1024, 2048, 4096]


def power_law(exponent: float, per_score_ns: float = 1.0) -> list[float]:
    """Made-up times proportional to n^exponent, per_score_ns at n = 512."""
    return [per_score_ns * 1e-9 * 512**2 * (n / 512) ** exponent for n in SIZES]


def line(fixed: float, per_token: float, n: int = 64) -> list[float]:
    """Made-up times of n steps on a line: fixed + per_token x t, t from 1."""
    return [fixed + per_token * t for t in range(1, n + 1)]


#: Made-up times of steps growing as t^2: the fitted line's intercept is negative.
SQUARES = [1e-8 * t**2 for t in range(1, 65)]


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
        cache_growth_verdict(steps, 16)
        for steps in (line(1e-4, 1e-6), line(1e-4, 0.0), SQUARES)
    ]
    phrases += [
        cache_verdict(120, r, 0.06, line(f, p), 64, 16)
        for r, f, p in (
            (6, 1e-5, 1e-7),
            (0.6, 1.5e-4, 1e-7),
            (0.6, 1e-5, 1e-6),
            (30, 1e-5, 1e-7),
        )
    ]
    phrases += [clock_phrase(time.process_time), clock_phrase(time.perf_counter)]
    nan = torch.full((2, 3), float("nan"))
    phrases += [padding_rows(r) for r in (torch.zeros(2, 3), nan, torch.ones(2, 3))]
    return phrases


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
    assert "while the fused kernel's is 0.5 ns at 512 and 0.5 ns at 4,096." in text
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
    rising = str(cache_growth_verdict(line(100e-6, 150e-9, 1024), 32))
    assert rising.startswith("A step costs 100 µs plus 150 ns for every token")
    assert "The last 32 steps took 2.5 times as long as the first 32." in rising
    flat = str(cache_growth_verdict(line(100e-6, -5e-9, 256), 32))
    assert flat.startswith("A step costs about 99 µs, and its time hardly rises")
    assert "the last 32 steps took 1.0 times as long as the first 32" in flat
    assert " ns " not in flat  # no fitted slope quoted
    # rising, but the fitted line's intercept is negative: no line quoted
    odd = str(cache_growth_verdict(SQUARES, 16))
    assert odd.startswith("The time of a step rises with the tokens in the cache")
    assert "µs" not in odd
    with pytest.raises(ValueError, match="window"):
        cache_growth_verdict(line(1e-4, 0.0, 20), 16)


def test_fit_steps_finds_the_line():
    fixed, per_token = fit_steps(line(100e-6, 150e-9))
    assert fixed == pytest.approx(100e-6) and per_token == pytest.approx(150e-9)
    with pytest.raises(ValueError, match="step_seconds"):
        fit_steps([1.0])


def test_cache_verdict_every_branch():
    steps = line(150e-6, 1e-7)  # steps 49 to 64: 150 + 5.65 µs on average
    follows = str(cache_verdict(120, 6.0, 0.06, steps, 64, 16))
    assert follows.startswith("Recomputing takes 120 times as many multiply-adds")
    assert "took 100 times as long: the measurement follows the count." in follows
    fixed = str(cache_verdict(120, 0.6, 0.06, steps, 64, 16))
    assert fixed.startswith("The counts promised more. Recomputing takes 120 times")
    assert "as the cache, but only 10.0 times as long." in fixed
    assert "fixed part, about 150 µs" in fixed and "most of its 156 µs" in fixed
    other = str(cache_verdict(120, 0.6, 0.06, line(50e-6, 2e-6), 64, 16))
    assert other.endswith("cost time that no count of multiply-adds sees.")
    assert "fixed part" not in other
    slower = str(cache_verdict(120, 0.06, 0.09, steps, 64, 16))
    assert "but only 0.7 times as long" in slower
    more = str(cache_verdict(120, 30.0, 0.06, steps, 64, 16))
    assert more.endswith("took 500 times as long: even more than the count predicts.")
    with pytest.raises(ValueError, match="window"):
        cache_verdict(120, 6.0, 0.06, steps, 65, 16)
    with pytest.raises(ValueError, match="positive"):
        cache_verdict(120, 0.0, 0.06, steps, 64, 16)


@pytest.mark.parametrize("table", list(BOUNDS), ids=lambda t: t[0][:30])
def test_every_table_is_bounded_and_covers_every_value(table):
    """Each phrase declares a closed interval of every measure its table reads,
    inside the measure's domain; together they leave no value uncovered (tried
    at every bound, just beside it, and between bounds)."""
    bounds = BOUNDS[table]
    assert len(bounds) == len(table)
    names = set(bounds[0])
    points = {}
    for name in names:
        domain = MEASURES[name]
        edges = {*domain}
        for phrase_bounds in bounds:
            assert set(phrase_bounds) == names
            low, high = phrase_bounds[name]
            assert domain[0] <= low <= high <= domain[1], (name, low, high)
            edges |= {low, high}
        finite = sorted(e for e in edges if math.isfinite(e))
        tried = set(edges)
        for edge in finite:
            tried |= {math.nextafter(edge, -math.inf), math.nextafter(edge, math.inf)}
            tried |= {edge - 1, edge + 1}
        tried |= {(a + b) / 2 for a, b in itertools.pairwise(finite)}
        points[name] = sorted(v for v in tried if domain[0] <= v <= domain[1])
    for values in itertools.product(*points.values()):
        measures = dict(zip(points, values, strict=True))
        assert 0 <= choose(table, **measures) < len(table), measures


def test_choose_rejects_bad_measures():
    with pytest.raises(ValueError, match="measures must be"):
        choose(SPEED, speed=2.0)
    with pytest.raises(ValueError, match="speed-up"):
        choose(SPEED, **{"speed-up": float("nan")})
    with pytest.raises(ValueError, match="speed-up"):
        choose(SPEED, **{"speed-up": -1.0})
    with pytest.raises(ValueError, match="table"):
        choose(CLOCK)


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"-?[\d,]*\d\.?\d*", text)]


@pytest.mark.parametrize(
    "speedup", [0.1, 1 / 1.1 - 1e-9, 1 / 1.1, 0.95, 1.0, 1.1, 1.1 + 1e-9, 1.149, 30]
)
def test_each_speed_phrase_is_true_where_it_is_chosen(speedup):
    text = str(compare_speed(1.0, speedup))
    if "faster" in text:
        assert speedup >= 1.1 and numbers(text)[0] == pytest.approx(speedup, abs=0.05)
    elif "slower" in text:
        assert speedup <= 1 / 1.1
        assert numbers(text)[0] == pytest.approx(1 / speedup, abs=0.05)
    else:
        assert 1 / 1.1 <= speedup <= 1.1


@pytest.mark.parametrize("fixed_us", [-20, 0.4, 80, 99.4, 99.6, 110, 140, 150, 200])
@pytest.mark.parametrize("per_token_ns", [-300, 0, 0.4, 2, 300, 5000])
def test_each_growth_phrase_is_true_where_it_is_chosen(fixed_us, per_token_ns):
    steps = line(fixed_us * 1e-6, per_token_ns * 1e-9, 256)
    if min(steps) <= 0:
        with pytest.raises(ValueError, match="positive"):
            cache_growth_verdict(steps, 32)
        return
    head, tail = sum(steps[:32]) / 32, sum(steps[-32:]) / 32
    text = str(cache_growth_verdict(steps, 32))
    shown = numbers(text)
    if text.startswith("A step costs about"):  # "hardly rises"
        assert tail / head <= 1.1
        assert shown[0] == pytest.approx(sum(steps) / len(steps) * 1e6, abs=0.5)
    else:
        assert tail / head >= 1.1
        if "ns for every token" in text:  # the line, positive as shown
            assert shown[0] >= 1 and shown[1] >= 1
            assert shown[0] == pytest.approx(fixed_us, abs=0.5)
            assert shown[1] == pytest.approx(per_token_ns, abs=0.5)
    assert f"took {tail / head:.1f} times as long" in text


@pytest.mark.parametrize("time_ratio", [1.0, 59.9, 60.0, 61.0, 200.0, 240.0, 241.0])
@pytest.mark.parametrize("fixed_us", [-10, 50, 109, 110, 111, 199, 200, 201, 230])
def test_each_cache_phrase_is_true_where_it_is_chosen(time_ratio, fixed_us):
    """ "Follows the count" within a factor of 2; "most of its ... µs": the two
    numbers shown, from one generation, more than half and no more than all."""
    steps = line(fixed_us * 1e-6, 0.0, 64)
    if fixed_us <= 0:
        with pytest.raises(ValueError, match="positive"):
            cache_verdict(120, time_ratio * 0.01, 0.01, steps, 64, 16)
        return
    steps[48:] = [200e-6] * 16  # the steps compared, 200 µs
    text = str(cache_verdict(120, time_ratio * 0.01, 0.01, steps, 64, 16))
    if "follows the count" in text:
        assert 0.5 <= time_ratio / 120 <= 2
    elif "even more than the count" in text:
        assert time_ratio / 120 >= 2
    else:
        assert time_ratio / 120 <= 0.5
    if "most of its" in text:
        fixed, step = re.search(
            r"about (-?\d+) µs .* most of its (\d+) µs", text
        ).groups()
        assert int(step) / 2 < int(fixed) <= int(step), text


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
    from bookbuild.i18n.catalogues import read_catalogue
    from bookbuild.i18n.checks import markup_problems

    catalogue = read_catalogue(ROOT / "locales/fr/LC_MESSAGES/book" / f"{page}.po")
    for table in TABLES[page]:
        for phrase in table:
            message = catalogue.get(phrase)
            assert message is not None and message.translated, phrase
            assert markup_problems(phrase, message.msgstr) == [], phrase
