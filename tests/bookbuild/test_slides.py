"""The lecture decks (bookbuild.site.slides) assembled from a small built page:
what goes on the slides, in which order, the solutions only in the full edition,
the notes, the links back to the page. Pure Python, no book, no browser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bookbuild.i18n.messages import gettext
from bookbuild.site import slides

ROOT = Path(__file__).resolve().parents[2]

PAGE = """<html><head><title>4. Scaled - Book</title>
<script>window.MathJax = {"tex": {}}</script>
<script defer="defer" src="../_static/mathjax/tex-mml-chtml.js?v=1"></script>
</head><body><article class="bd-article">
<section id="scaled"><h1><span class="section-number">4. </span>Scaled<a
 class="headerlink" href="#scaled">#</a></h1>
<div class="tip admonition"><p class="admonition-title">You will learn</p>
<ul class="simple"><li><p>the formula;</p></li><li><p>why it is scaled.</p></li></ul>
</div>
<section id="the-formula"><h2>4.1. The formula</h2>
<p>For queries and keys of size d:</p>
<div class="math notranslate nohighlight" id="equation-eq-att">
<span class="eqno">(4.1)</span>\\[A = QK\\]</div>
<p>The first step scores each key.</p>
<p>See <a class="reference internal" href="#fig-b">Fig. 4.2</a> and
<a class="reference internal" href="masking.html#x">masking</a>.</p>
<div class="cell docutils container"><pre>code</pre></div>
<figure id="fig-a"><img src="../_images/a.svg" alt="A"/><figcaption>
<p>Fig. 4.1 A.</p></figcaption></figure>
<p>After A.</p>
<figure id="fig-b"><img src="../_images/b.svg" alt="B"/></figure>
</section>
<section id="summary"><h2>4.2. Summary</h2>
<ul><li><p>One.</p></li><li><p>Two.</p></li></ul></section>
<section id="exercises"><h2>4.3. Exercises</h2>
<div class="exercise admonition" id="ch-ex1">
<p class="admonition-title">Exercise 4.1</p>
<section id="exercise-content"><p>Compute it.</p>
<figure id="fig-in-exercise"><img src="../_images/c.svg" alt="C"/></figure>
</section></div>
<div class="solution dropdown admonition" id="sol-1"><p class="admonition-title">
Solution to <a class="reference internal" href="#ch-ex1">exercise 4.1</a></p>
<section id="solution-content"><p>It is 42.</p></section></div>
</section></section>
<p class="qkv-provenance">Book 0.1.0 · commit abc1234 · built 2026-01-01</p>
</article></body></html>"""


def kinds(deck: list[slides.Slide]) -> list[str]:
    return [slide.kind for slide in deck]


def test_the_chosen_items_in_their_order_between_goals_and_summary():
    deck = slides.deck_slides(
        PAGE, ["fig-b", "eq-att", "ch-ex1"], "full", gettext("en")
    )
    assert kinds(deck) == [
        "title",
        "goals",
        "figure",
        "equation",
        "exercise",
        "solution",
        "summary",
    ]
    assert deck[0].title.endswith("Scaled") and "#" not in deck[0].title
    assert "the formula;" in deck[1].body and deck[1].title == "You will learn"
    assert 'id="fig-b"' in deck[2].body and deck[2].title == "4.1. The formula"
    # the equation with its short lead sentence; the next paragraph in its notes
    assert "For queries" in deck[3].body and "QK" in deck[3].body
    assert "scores each key" in deck[3].notes
    assert "Compute it." in deck[4].body and "42" not in deck[4].body
    assert "It is 42." in deck[5].body and "dropdown" not in deck[5].body
    # no <section> inside a slide: reveal.js would make it a slide of its own
    assert not any("<section" in slide.body for slide in deck)
    assert "One." in deck[6].body and "Two." in deck[6].body


def test_the_student_edition_has_the_question_and_no_solution():
    deck = slides.deck_slides(PAGE, ["ch-ex1"], "student", gettext("en"))
    assert kinds(deck) == ["title", "goals", "exercise", "summary"]


def test_without_a_list_every_figure_outside_the_exercises():
    deck = slides.deck_slides(PAGE, None, "full", gettext("en"))
    assert kinds(deck) == ["title", "goals", "figure", "figure", "summary"]
    assert 'id="fig-a"' in deck[2].body and 'id="fig-b"' in deck[3].body
    # notes: the paragraph before the figure (code cells skipped), the one after
    assert "masking" in deck[2].notes and "After A." in deck[2].notes


def test_a_labelled_cell_shows_its_output_and_a_literal_block_its_text():
    page = PAGE.replace(
        '<div class="cell docutils container"><pre>code</pre></div>',
        '<div class="cell docutils container" id="live"><div class="cell_input">'
        "<pre>view = widget()</pre></div>"
        '<div class="cell_output docutils container"><div id="w">LIVE</div>'
        "</div></div>"
        '<div class="highlight-text notranslate" id="samples"><pre>abc</pre></div>',
    )
    deck = slides.deck_slides(page, ["live", "samples"], "full", gettext("en"))
    assert kinds(deck) == ["title", "goals", "live", "text", "summary"]
    assert "LIVE" in deck[2].body and "view = widget()" not in deck[2].body
    assert deck[2].title == "4.1. The formula" and "masking" in deck[2].notes
    assert "abc" in deck[3].body


def test_a_label_the_page_does_not_have_fails():
    with pytest.raises(slides.DeckError, match="fig-missing"):
        slides.deck_slides(PAGE, ["fig-missing"], "full", gettext("en"))


def test_a_long_list_is_split_over_slides_in_the_decks_language():
    items = "".join(f"<li><p>{'word ' * 40}{n}</p></li>" for n in range(6))
    page = PAGE.replace("<li><p>One.</p></li>", items)
    deck = slides.deck_slides(page, [], "full", gettext("fr"))
    summary = [slide for slide in deck if slide.kind == "summary"]
    assert len(summary) > 1
    assert summary[1].title == "4.2. Summary (suite)"
    listed = "".join(slide.body for slide in summary)
    assert all(f" {n}</p>" in listed for n in range(6))


def test_the_deck_links_back_and_loads_the_sites_own_files():
    deck = slides.deck_slides(PAGE, ["eq-att", "fig-a"], "full", gettext("fr"))
    html = slides.render(PAGE, "scaled", "fr", deck)
    assert '<html lang="fr"' in html
    assert html.count('href="../book/scaled.html"') == 2  # title slide, corner
    assert "Retour au chapitre" in html and "Back to" not in html
    assert 'href="../book/scaled.html#fig-b"' in html  # the page's anchor
    assert 'href="../book/masking.html#x"' in html  # another page
    assert 'src="../_static/mathjax/tex-mml-chtml.js?v=1"' in html
    assert "commit abc1234" in html  # provenance on the title slide
    assert '<aside class="notes">' in html
    addresses = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert not [a for a in addresses if a.startswith(("http:", "https:", "//"))]


def test_the_chapters_slides_lists_name_their_own_items():
    """Each label of a chapter's `slides:` is one of its figures, equations,
    exercises or labelled blocks (the build fails otherwise: this says which,
    without a build); every chapter has its list, chosen by its author."""
    from bookbuild.toc import lessons

    listed = 0
    for docname in lessons(ROOT):
        source = ROOT / f"{docname}.md"
        items = slides.chosen_items(source)
        if items is None:
            continue
        listed += 1
        text = source.read_text(encoding="utf-8")
        for label in items:
            assert re.search(
                rf"^:(?:name|label): {re.escape(label)}$"
                rf"|^\$\$ \({re.escape(label)}\)$|^\({re.escape(label)}\)=$",
                text,
                re.M,
            ), f"{docname}: {label}"
    assert listed == len(lessons(ROOT))


def test_reveal_js_is_shipped_by_the_pinned_package():
    folder = slides.reveal_folder()
    for name in slides.REVEAL_FILES:
        assert (folder / name).is_file(), name
    assert "reveal.js 5." in (folder / "dist" / "reveal.js").read_text()[:200]


SMALL_TOC = """format: jb-book
root: index
parts:
  - caption: Lessons
    numbered: true
    chapters:
      - file: book/lesson
"""
SMALL_LESSON = """---
slides:
  - fig-square
---

# A lesson

:::{admonition} You will learn
:class: tip

- what a square is.
:::

## Squares

A square has four equal sides.

```{figure} square.svg
:name: fig-square

A square.
```

It is drawn above.

## Summary

- Squares have four sides.
"""
SQUARE = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
    '<rect width="10" height="10"/></svg>'
)


def test_a_build_writes_the_decks_and_links_them(small_book):
    """The extension in a real (small) build: the chapter's deck is written
    beside it, the page links it, the deck links back."""
    from bookbuild.tools.testing import build_book

    root = small_book(
        {"index": "# Index\n\nThe book.\n", "book/lesson": SMALL_LESSON},
        toc=SMALL_TOC,
        extensions=["bookbuild.site.edition", "bookbuild.site.slides"],
        files={"book/square.svg": SQUARE},
    )
    built = build_book(root)
    assert built.returncode == 0, built.output[-3000:]
    page = (built.html / "book" / "lesson.html").read_text(encoding="utf-8")
    assert '<a class="qkv-present-link" href="../slides/lesson.html">' in page
    deck = (built.html / "slides" / "lesson.html").read_text(encoding="utf-8")
    assert deck.count("data-qkv-kind=") == 4  # title, goals, figure, summary
    assert 'id="fig-square"' in deck and "It is drawn above." in deck
    assert 'class="qkv-deck-back" href="../book/lesson.html"' in deck
    assert 'src="../_images/square' in deck
    assert (built.html / "_slides" / "dist" / "reveal.js").is_file()


#: What reveal.js's speaker view says in English (its words, its clock).
SPEAKER_ENGLISH = (
    "Speaker View",
    "Loading speaker",
    "Upcoming",
    ">Time ",
    "Click to Reset",
    "Pacing –",
    "'Layout'",
    "'Default'",
    "'Wide'",
    "'Tall'",
    "'Notes only'",
    "Cross origin",
    "Error connecting",
    "popup failed",
    "Speaker notes view",
    "en-US",
    "AM<",
)


def test_the_speaker_view_of_a_french_deck_is_french():
    plugin = (slides.reveal_folder() / slides.NOTES).read_text(encoding="utf-8")
    assert all(english in plugin for english in SPEAKER_ENGLISH)
    assert slides.speaker_view(plugin, "en") == plugin
    french = slides.speaker_view(plugin, "fr")
    assert not [english for english in SPEAKER_ENGLISH if english in french]
    for word in ("Vue présentateur", "Diapositive suivante", "Disposition\u202f:"):
        assert word in french
    assert '<html lang=\\"fr\\">' in french and "hour12: false" in french


def test_a_new_reveal_js_that_words_its_speaker_view_otherwise_fails_loudly():
    plugin = (slides.reveal_folder() / slides.NOTES).read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="Upcoming"):
        slides.speaker_view(plugin.replace(">Upcoming<", ">Up next<"), "fr")


def test_the_dark_palette_is_written_once():
    css = (slides.STATIC / "slides.css").read_text(encoding="utf-8")
    assert css.count("--qkv-deck-bg:") == 2  # light, then dark
    assert 'html[data-theme="dark"]' in css and "@media (prefers-color" not in css
