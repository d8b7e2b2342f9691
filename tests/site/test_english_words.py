"""The English words left on the French site (issue 24), counted by
``bookbuild.tools.english_words`` in four places: page text, table cells, code
outputs and figures (SVG).

Held at zero: a French page that shows an English word fails ``make test``
(``BASELINE``, which went from 1,766 words to 0 with issue 24). The check of the
built site reads the session's build (``built_book``); the rules are checked on
a small handmade page and figure, without a build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.tools import english_words
from bookbuild.tools.english_words import PLACES, count_site

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"

#: The French site's counts: at most these (`make english-words` prints them,
#: with each word and where it stands).
BASELINE = {"pages": 0, "tables": 0, "outputs": 0, "figures": 0}


def english_words_json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "bookbuild.tools.english_words", "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


# -- the built site ------------------------------------------------------------------


def test_the_french_site_has_no_more_english_words_than_the_baseline(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    report = english_words_json(str(HTML))
    counts = report["counts"]
    over = {p: (counts[p], BASELINE[p]) for p in PLACES if counts[p] > BASELINE[p]}
    top = "\n".join(
        f"{place}:\n"
        + "\n".join(
            f"  {w['count']:4d} {w['word']}: {w['example']}"
            for w in report["top_words_by_place"][place][:15]
        )
        for place in over
    )
    assert not over, (
        f"more English words on the French site than the baseline "
        f"(count, baseline): {over}; `make english-words` lists them all; "
        f"the most frequent:\n{top}"
    )
    # Every French page read (none missing), every figure they show.
    pages = english_words.pages_of(ROOT)
    assert sorted(report["pages"]) == sorted(pages)
    assert all((HTML / "fr" / f"{page}.html").is_file() for page in pages)
    assert report["figures"] >= 50


def test_the_english_site_counts_thousands(built_book):
    """The same count on the English pages: the checker sees English (a theme
    that renamed the article, or an empty vocabulary, would count zero)."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    report = count_site(HTML, ROOT, language="", pages=["book/masking"])
    assert report.counts["pages"] > 1000, report.counts
    assert report.counts["figures"] > 10, report.counts


# -- the rules, on a handmade page -----------------------------------------------------

PAGE = """<html lang="fr"><body>
<nav>Search this book and the language menu</nav>
<article class="bd-article">
<h1>L’attention à la main</h1>
<p>Une phrase française compte zéro : la requête (<em>query</em>) cherche
« held-out » et le {token} <code class="docutils literal notranslate">
<span class="pre">split_heads</span></code> avec <span class="math notranslate
nohighlight">\\(\\mathrm{softmax}(QK^\\top)\\)</span>, et un vecteur one-hot.</p>
<p>This sentence is English and it counts its words.</p>
<div class="math notranslate nohighlight">\\[\\text{the weights of the keys}\\]</div>
<p>« Your journey starts with one step » et Your journey starts with one step.</p>
<table class="table"><tr><th>the loss</th><td>journey</td><td>0.5</td></tr></table>
<div class="cell docutils container">
<div class="cell_input docutils container"><div class="highlight"><pre>
print("with the query and the key")</pre></div></div>
<div class="cell_output docutils container"><div class="output stream"><pre>
largest weight 0.5
tensor([True, False]) None
Your 0.43 journey 0.55
le renard blanc -> the black mouse chases the white fox
</pre></div></div></div>
<figure><img alt="Carte de chaleur des poids" src="../_images/fig.svg"/></figure>
<div class="qkv-w-live" hidden><label>Layer</label></div>
<svg class="sd-octicon"><path d="M 0 0"/></svg>
<svg><!-- largest weight --><text>poids</text></svg>
</article>
<footer>Built with the Jupyter Book</footer>
</body></html>"""

SVG = """<svg xmlns="http://www.w3.org/2000/svg"><g id="text_1">
<!-- training step --><path d="M 0 0"/><!-- pas d’entraînement -->
<!-- journey --><!-- 0.25 --></g></svg>"""


@pytest.fixture(scope="module")
def handmade_site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    (site / "fr" / "book").mkdir(parents=True)
    (site / "fr" / "_images").mkdir()
    (site / "fr" / "book" / "page.html").write_text(PAGE, encoding="utf-8")
    (site / "fr" / "_images" / "fig.svg").write_text(SVG, encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def handmade(handmade_site) -> english_words.Report:
    return count_site(handmade_site, ROOT, pages=["book/page"])


def found(report: english_words.Report, place: str) -> list[str]:
    return [hit.word for hit in report.hits if hit.place == place]


def test_page_text_counts_english_prose_and_nothing_else(handmade):
    # The English sentence counts its words ("it", "its" are English too);
    # the French sentence, its gloss, quote, code, math, the running example
    # (whole or quoted), the chrome, the hidden widget and the alt text: none.
    assert found(handmade, "pages") == [
        "this", "sentence", "is", "english", "and", "it", "counts", "its", "words",
    ]  # fmt: skip


def test_tables_outputs_and_figures_are_counted_apart(handmade):
    assert found(handmade, "tables") == ["the", "loss"]  # "journey" alone: example
    # Output lines: True/None and tensor(...) are Python's, the six words with
    # their numbers and a translation of the task are examples; not the code.
    assert found(handmade, "outputs") == ["largest", "weight"]
    # A figure's text is read from matplotlib's comments (and <text>), in the
    # page's inline SVG first, then in the SVG files its images show.
    assert found(handmade, "figures") == ["largest", "weight", "training", "step"]
    assert handmade.counts == {"pages": 9, "tables": 2, "outputs": 2, "figures": 4}
    assert handmade.figures == 1
    [(word, count, example)] = handmade.top_words(1)
    assert (word, count) == ("largest", 2)
    assert example == "book/page (outputs): largest weight 0.5"


def test_the_command_prints_the_counts_and_the_words(
    handmade_site, capsys, monkeypatch
):
    monkeypatch.setattr(english_words, "pages_of", lambda root: ["book/page"])
    assert english_words.main([str(handmade_site)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(
        f"english-words: 17 English words on {handmade_site / 'fr'} (1 pages, 1 "
        "figures): pages 9, tables 2, outputs 2, figures 4\n"
    )
    assert "     17  book/page  (pages 9, tables 2, outputs 2, figures 4)" in printed
    assert "      2  largest        book/page (outputs): largest weight 0.5" in printed
    assert english_words.main([str(handmade_site), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"pages": 9, "tables": 2, "outputs": 2, "figures": 4}
    assert report["top_words_by_place"]["figures"][0]["word"] == "largest"
    assert report["top_words"][0] == {
        "word": "largest",
        "count": 2,
        "example": "book/page (outputs): largest weight 0.5",
    }
    assert english_words.main([str(handmade_site / "nowhere")]) == 2


def test_words_skip_identifiers_numbers_names_and_acronyms():
    text = "the W_q x1 0.5 qkv.check PyTorch GPU RoPE e.g. d’interroger held-out"
    assert [w for w, _ in english_words.words(text)] == [
        "the", "e.g", "interroger", "held", "out",
    ]  # fmt: skip


def test_the_vocabulary_is_the_books_english_less_its_french():
    vocabulary = english_words.vocabulary(ROOT)
    assert {"the", "with", "query", "training", "held", "weights"} <= vocabulary
    # Words the French prose uses are not English, nor the allowed terms.
    assert not {"attention", "position", "normalisation", "question"} & vocabulary
    assert not {"softmax", "token", "one-hot"} & vocabulary
    assert not {"requête", "poids", "entraînement", "phrase"} & vocabulary


def test_code_math_labels_and_pieces_in_text_are_not_words():
    """What a French output or figure may show that is not English prose:
    code between backquotes, a keyword argument, a tokenizer's pieces, math,
    a page's label."""
    text = (
        "`query` et `key` (masks=False) : ['[CLS]', 'pi', 're', '[SEP]'] "
        r"$\times\ W_o$ du chapitre attention-by-hand, d_k = query.shape[-1]"
    )
    for pattern in english_words.NOT_WORDS:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    assert [w for w, _ in english_words.words(text)] == ["et", "du", "chapitre"]
    assert [w for w, _ in english_words.words("e.g. this")] == ["e.g", "this"]
