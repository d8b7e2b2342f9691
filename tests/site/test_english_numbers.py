"""The numbers written the English way in what the French pages' code printed
(issue 37), counted by ``bookbuild.tools.english_numbers``: decimal points,
ungrouped thousands, e-notation, and English binary units on the whole page;
and on both sites, e-notation and ungrouped thousands in the prose and tables
(glued values: the one rule of :mod:`qkv.page.numbers` writes ``1.2 × 10⁵``
and ``79,972``; 24 e-notations on each site before it did).

Held at zero: a French page whose code prints ``0.976``, ``79972``,
``3,4e-09`` or ``1.5 GiB`` fails ``make test`` (``BASELINE``: 383 decimal
points, 7 ungrouped thousands, 24 e-notations and 54 English units before
chapters printed through :func:`qkv.page.numbers.num`). The check of the built
site reads the session's build (``built_book``); the rules are checked on a small
handmade page, without a build."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookbuild.tools import english_numbers
from bookbuild.tools.english_numbers import KINDS, count_site, output_lines

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

#: The French site's counts: at most these (`python -m
#: bookbuild.tools.english_numbers --all` lists each with its line).
BASELINE = dict.fromkeys(KINDS, 0)


def test_the_french_outputs_have_no_english_format_numbers(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    report = count_site(HTML, ROOT)
    over = {k: report.counts[k] for k in KINDS if report.counts[k] > BASELINE[k]}
    examples = "\n".join(
        f"  {hit.page} [{hit.kind}] {hit.text}: {hit.line}" for hit in report.hits[:30]
    )
    assert not over, (
        f"English-format numbers on the French site (count): {over}; print them "
        f"with qkv.page.numbers.num; the first:\n{examples}"
    )
    assert sorted(report.pages) == sorted(english_numbers.pages_of(ROOT))


def test_the_english_prose_and_tables_follow_the_number_rule(built_book):
    """Glued values and tables on the English site: no ``1.2e+05``, no
    ``79972`` (powers of ten and thousands by :mod:`qkv.page.numbers`)."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    report = count_site(HTML, ROOT, language="en")
    examples = "\n".join(
        f"  {hit.page} ({hit.place}) [{hit.kind}] {hit.text}: {hit.line}"
        for hit in report.hits[:30]
    )
    assert sum(report.counts.values()) == 0, (
        f"numbers against the rule on the English site: {report.counts}; the "
        f"first:\n{examples}"
    )


PAGE = """<html lang="fr"><body><article class="bd-article">
<p>Le cache occupe 1,5 Kio ; en anglais 1.5 KiB.</p>
<table class="table"><tr><td>0.5</td><td>4 MiB</td></tr></table>
<div class="cell docutils container">
<div class="cell_input docutils container"><div class="highlight"><pre>
print(f"{num(x):.3f} 0.25 12345")</pre></div></div>
<div class="cell_output docutils container"><div class="output stream"><pre>
exactitude de test 0.976, 79972 paramètres, 100.0%
exactitude de test 0,976, 79\u202f972 paramètres, 100,0\u202f%
écart 3,4e-09 ; écart 3,4\u202f×\u202f10⁻⁹
torch 2.13.0, model.pt, 4096 | 8192, graine 1234
tensor([[0.1000, 0.2000],
        [0.3000, 0.4000]])
[0.5, 0.25]
température 1.0 [0.665, 0.245], poids tensor([0.7381, 0.6431])
</pre></div>
<div class="output text_plain highlight-myst-ansi notranslate"><div class="highlight">
<pre>(22.25, 4.724328517913818)</pre></div></div></div></div>
</article></body></html>"""


@pytest.fixture(scope="module")
def handmade(tmp_path_factory) -> english_numbers.Report:
    site = tmp_path_factory.mktemp("site")
    (site / "fr" / "book").mkdir(parents=True)
    (site / "fr" / "book" / "page.html").write_text(PAGE, encoding="utf-8")
    return count_site(site, ROOT, pages=["book/page"])


def found(report: english_numbers.Report, kind: str) -> list[str]:
    return [hit.text for hit in report.hits if hit.kind == kind]


def test_outputs_count_english_numbers_and_nothing_else(handmade):
    # the English line counts; the French one, versions, names, 4-digit
    # integers, code, tables' and prose's numbers, tensor and list reprs: not
    assert found(handmade, "decimal points") == ["0.976", "100.0", "1.0"]
    assert found(handmade, "thousands") == ["79972"]
    assert found(handmade, "e-notation") == ["3,4e-09"]


def test_units_count_on_the_whole_page(handmade):
    assert found(handmade, "units") == ["KiB", "MiB"]
    assert handmade.counts == {
        "decimal points": 3,
        "thousands": 1,
        "e-notation": 1,
        "units": 2,
    }


ENGLISH_PAGE = """<html lang="en"><body><article class="bd-article">
<p>The gradient is <span class="pasted-text">1.1e-07</span>, then
<span class="pasted-text">1.1\u202f×\u202f10⁻⁷</span>; 79972 and 79,972
parameters, 0.5 of 1.5 KiB, issue pytorch#131863, torch 2.13.0.</p>
<table class="table"><tr><td>4.2e+01</td><td>123456</td><td>4096</td></tr></table>
<div class="cell_output docutils container"><div class="output stream"><pre>
gap 3.4e-09, 0.976, 12345 steps
</pre></div></div>
</article></body></html>"""


@pytest.fixture(scope="module")
def english_handmade(tmp_path_factory) -> english_numbers.Report:
    site = tmp_path_factory.mktemp("site")
    (site / "book").mkdir(parents=True)
    (site / "book" / "page.html").write_text(ENGLISH_PAGE, encoding="utf-8")
    (site / "fr" / "book").mkdir(parents=True)
    french = ENGLISH_PAGE.replace("0.976", "0,976").replace("0.5 ", "0,5 ")
    (site / "fr" / "book" / "page.html").write_text(french, encoding="utf-8")
    return site


def test_e_notation_and_thousands_count_in_prose_and_tables_on_both_sites(
    english_handmade,
):
    english = count_site(english_handmade, ROOT, language="en", pages=["book/page"])
    # prose and tables: e-notation and 5+ digit integers; an issue number, a
    # version, 4 digits, the rule's own writing, decimals and units: not
    assert found(english, "e-notation") == ["1.1e-07", "4.2e+01", "3.4e-09"]
    assert found(english, "thousands") == ["79972", "123456", "12345"]
    assert english.counts["decimal points"] == english.counts["units"] == 0
    assert {hit.place for hit in english.hits} == {"pages", "tables", "outputs"}
    french = count_site(english_handmade, ROOT, pages=["book/page"])
    assert found(french, "e-notation") == ["1.1e-07", "4.2e+01", "3.4e-09"]
    assert found(french, "thousands") == ["79972", "123456", "12345"]
    assert found(french, "units") == ["KiB"]
    assert found(french, "decimal points") == []  # only outputs' are counted


def test_a_repr_and_its_continuation_lines_are_left_out():
    text = "tensor([[1.5, 2.5],\n        [3.5, 4.5]])\nloss 0.25\n(0.5, 1.5)\n"
    assert output_lines(text) == ["loss 0.25"]
