"""The French edition of the book, built by `make book` into _build/html/fr."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import nbformat
import pytest

from bookbuild.i18n.catalogues import page_messages, strict_pages
from bookbuild.i18n.glue import fill, template
from bookbuild.i18n.numbers import localise_number, localise_value
from bookbuild.toc import lessons, pages

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
FR = HTML / "fr"
SAMPLE = "book/self-attention"
MYST_LEFTOVERS = re.compile(r"\{[\w:-]+\}`|```\{|^:::|^\([\w-]+\)=|^\$\$ \(", re.M)

pytestmark = pytest.mark.book


def page(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def words(html: str) -> str:
    """The text of a page, tags removed, entities read (``&nbsp;``), ASCII
    spaces collapsed (no-break spaces kept)."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"[ \t\n\r\f\v]+", " ", unescape(re.sub(r"<[^>]+>", "", html)))


def test_every_page_has_its_french_page_at_the_same_path(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    for name in [*pages(ROOT), "search", "genindex"]:
        french = FR / f"{name}.html"
        assert french.is_file(), name
        assert '<html lang="fr"' in page(french), name
        assert '<html lang="en"' in page(HTML / f"{name}.html"), name


def test_the_french_pass_is_strict_and_executes_nothing(built_book):
    output = built_book.translations_output
    assert "build succeeded" in output, output[-3000:]
    assert "WARNING" not in output and "No key" not in output, output[-3000:]
    assert "Executed notebook" not in output
    assert "Using cached notebook" in output
    assert not (HTML / "jupyter_execute").exists(), "executed notebooks in the site"


def test_french_doctrees_hold_only_their_page(built_book):
    """Every node of a French page points at that page's document, not at the
    small document of the message it came from (whose settings hold the whole
    build environment): French doctrees weigh about what English ones do."""
    import pickle

    assert built_book.returncode == 0, built_book.output[-3000:]
    english = ROOT / "_build" / ".doctrees"
    french = ROOT / "_build" / ".doctrees-fr"
    for name in ("book/self-attention", "book/transformer-block"):
        doctree = pickle.loads((french / f"{name}.doctree").read_bytes())
        foreign = [
            node
            for node in doctree.findall()
            if getattr(node, "_document", None) not in (None, doctree)
        ]
        assert not foreign, (name, foreign[:3])
        size_fr = (french / f"{name}.doctree").stat().st_size
        size_en = (english / f"{name}.doctree").stat().st_size
        assert size_fr < 3 * size_en, (name, size_fr, size_en)


def test_the_sample_pages_are_french(built_book):
    strict = strict_pages(ROOT, "fr")
    assert strict == "all" or "book/self-attention" in strict
    expected = {
        "book/intro": "Ce que vous allez apprendre",
        "book/glossary": "Glossaire",
        SAMPLE: "L’auto-attention comme couche",
    }
    for name, text in expected.items():
        assert text in words(page(FR / f"{name}.html")), name
    # Every English page has its French twin, at the same path, in French.
    for name in pages(ROOT):
        french = page(FR / f"{name}.html")
        assert '<html lang="fr"' in french, name


def test_glued_values_are_the_same_in_both_languages(built_book):
    """Every number glued into the prose of the sample chapter appears on its
    French page, from the same execution (gap 1), written the French way."""
    glue = json.loads(
        (ROOT / "_build/jupyter_execute_fr/book/self-attention.glue.json").read_text()
    )
    french = words(page(FR / f"{SAMPLE}.html"))
    source = (ROOT / f"{SAMPLE}.md").read_text(encoding="utf-8")
    checked = 0
    for key, spec in re.findall(r"\{glue:text\}`([\w-]+):?([^`]*)`", source):
        value = glue[key]["data"]["text/plain"]
        shown = format(ast.literal_eval(value), spec) if spec else value
        assert localise_number(shown, "fr") in french, (key, shown)
        checked += 1
    assert checked >= 10
    english = words(page(HTML / f"{SAMPLE}.html"))
    assert "A layer of width 32 has" in english
    params = format(ast.literal_eval(glue["sa-params-32"]["data"]["text/plain"]), ",")
    assert f"A layer of width 32 has {params} parameters" in english
    assert "," in params  # 3,168 in English: 3 168 in French, with U+202F
    french_params = params.replace(",", "\u202f")
    assert f"Une couche de largeur 32 a {french_params} paramètres" in french


def test_glued_phrases_are_french(built_book):
    """A phrase a cell glues (what this machine measured: one of the phrases
    declared by qkv.page.verdicts, every one of them translated) is French on
    the French page, with its numbers written the French way."""
    chapter = "book/cost-of-attention"
    glue = json.loads(
        (ROOT / f"_build/jupyter_execute_fr/{chapter}.glue.json").read_text()
    )
    phrase = glue["cost-fused-vs-naive"]["data"]["text/markdown"]
    message, values = template(phrase)
    translation = page_messages(ROOT, "fr", chapter)[message]
    french = words(page(FR / f"{chapter}.html"))
    assert fill(translation, values, "fr") in french
    assert phrase not in french
    for value in values:
        assert localise_value(value, "fr") in french, value


def test_figure_alt_texts_are_french(built_book):
    """Every figure of the sample chapter (a page listed as translated) has its
    French alt text on its French page (gap 6)."""
    pattern = re.compile(r"<img [^>]*\balt=\"([^\"]*)\"")
    english = [unescape(a) for a in pattern.findall(page(HTML / f"{SAMPLE}.html"))]
    french = [unescape(a) for a in pattern.findall(page(FR / f"{SAMPLE}.html"))]
    source = (ROOT / f"{SAMPLE}.md").read_text(encoding="utf-8")
    alts = re.findall(r"^:alt: (.+)$", source, re.M)
    assert len(alts) >= 2 and set(alts) <= set(english)
    assert len(french) == len(english)
    for alt in alts:
        assert alt not in french, f"English alt text on the French page: {alt}"


def test_solutions_are_titled_in_french(built_book):
    html = page(FR / f"{SAMPLE}.html")
    text = words(html)
    exercises = re.findall(r'id="(self-attention-ex\d+)"', html)
    assert len(exercises) >= 5
    for number in range(1, len(exercises) + 1):
        assert f"Solution de l’exercice 5.{number}" in text, number
        assert f"Exercice 5.{number}" in text, number
    assert "Solution de Exercice" not in text and "Solution to" not in text


def test_part_captions_and_theme_strings_are_french(built_book):
    for name in ("book/intro", "book/masking"):
        text = words(page(FR / f"{name}.html"))
        for caption in ("Partie I : l’idée", "Partie II : le mécanisme", "Annexes"):
            assert caption.replace(" :", "\u202f:") in text, (name, caption)
        assert "Rechercher dans ce livre…" in page(FR / f"{name}.html")
        assert "L’attention, calculée" in text
    assert "Afficher le code" in page(FR / f"{SAMPLE}.html")
    assert "Show code" not in page(FR / f"{SAMPLE}.html")


def test_our_own_strings_are_french(built_book):
    html = page(FR / f"{SAMPLE}.html")
    text = words(html)
    assert "Citer ce chapitre" in text and "Cite this chapter" not in text
    assert "Chapitre 5, «\u00a0L’auto-attention comme couche\u00a0»" in text
    assert "Télécharger ce chapitre en notebook" in text
    assert re.search(r"construit le \d{4}-\d{2}-\d{2}", text)


def test_the_glossary_is_in_french_alphabetical_order(built_book):
    from bookbuild.i18n.languages import sort_key

    html = page(FR / "book/glossary.html")
    terms = [words(t).strip() for t in re.findall(r"<dt[^>]*>(.*?)</dt>", html, re.S)]
    terms = [re.sub(r"\s*#$", "", t) for t in terms]
    assert len(terms) >= 40 and "requête (query)" in terms
    assert terms == sorted(terms, key=sort_key)
    # Links from other pages still reach the terms (their ids are English).
    assert 'id="term-self-attention"' in html


def test_every_page_links_the_same_page_in_the_other_language(built_book):
    for language, site, other in (("en", HTML, FR), ("fr", FR, HTML)):
        for name in pages(ROOT):
            html = page(site / f"{name}.html")
            menu = re.findall(r"window\.location\.href='([^']+)'", html)
            assert len(menu) == 2, (language, name)
            targets = {(site / name).parent.joinpath(href).resolve() for href in menu}
            assert targets == {
                (HTML / f"{name}.html").resolve(),
                (FR / f"{name}.html").resolve(),
            }, (language, name)
            alternates = dict(
                re.findall(
                    r'<link rel="alternate" hreflang="([\w-]+)" href="([^"]+)"', html
                )
            )
            assert set(alternates) == {"en", "fr", "x-default"}, name
            target = (site / name).parent.joinpath(alternates["fr"]).resolve()
            assert target == (FR / f"{name}.html").resolve()
            assert other.exists()


def test_each_site_searches_in_its_language(built_book):
    assert (FR / "searchindex.js").is_file()
    options = page(FR / "_static" / "documentation_options.js")
    assert re.search(r"LANGUAGE: 'fr'", options), options
    assert "FrenchStemmer" in page(FR / "_static" / "language_data.js")
    assert "FrenchStemmer" not in page(HTML / "_static" / "language_data.js")


def test_the_site_roots_redirect_to_the_first_page(built_book):
    root = page(HTML / "index.html")
    assert '<html lang="en">' in root and 'url=book/intro.html"' in root
    french = page(FR / "index.html")
    assert '<html lang="fr">' in french and 'url=book/intro.html"' in french
    assert "L&#x27;attention" in french or "L’attention" in french


def test_french_notebooks_are_french_and_plain(built_book):
    for chapter in lessons(ROOT):
        path = FR / "_notebooks" / f"{Path(chapter).name}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        first = notebook.cells[0].source  # the install cell, its comment in French
        assert "Installe ce dont ce chapitre a besoin" in first, chapter
        markdown = "\n".join(
            c.source for c in notebook.cells if c.cell_type == "markdown"
        )
        assert not MYST_LEFTOVERS.findall(markdown), chapter
    notebook = nbformat.read(FR / "_notebooks" / "self-attention.ipynb", as_version=4)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "# L'auto-attention comme couche" in markdown
    assert "**Exercice.**" in markdown and "**Solution.**" in markdown
    assert "les mêmes vecteurs de sortie" in markdown  # a glued phrase
    english = nbformat.read(HTML / "_notebooks" / "self-attention.ipynb", as_version=4)
    code = [c.source for c in notebook.cells[1:] if c.cell_type == "code"]
    english_code = [c.source for c in english.cells[1:] if c.cell_type == "code"]
    # The French code: the same cells, its comments and strings in French, and
    # qkv in French from the first cell on (bookbuild.i18n.code).
    assert len(code) == len(english_code)
    assert 'qkv.set_language("fr")' in code[0]
    assert not any("set_language" in cell for cell in english_code)
    changed = [fr for fr, en in zip(code, english_code, strict=True) if fr != en]
    assert len(changed) >= len(code) // 2, changed


def test_the_catalogues_pass_the_check(built_book):
    """Complete for the pages listed as translated, markup kept everywhere."""
    done = subprocess.run(
        [sys.executable, "-m", "bookbuild.i18n.translations", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "translations: 0 problem(s)" in done.stdout


def test_citations_in_the_text_name_their_authors_in_french(built_book):
    """Two authors are joined by "et" on a French page, "and" on an English one
    (``bookbuild.i18n.citations``)."""
    english = words(page(HTML / "book" / "motivation.html"))
    french = words(page(FR / "book" / "motivation.html"))
    assert "Hochreiter and Schmidhuber" in english
    assert "Hochreiter et Schmidhuber" in french


def test_interactive_figures_have_their_static_alt_text_in_french(built_book):
    """The static figure of each explorable and of the head view (shown where
    scripts do not run) has its French alt text on a French page, its English
    one on an English page."""
    checked = 0
    for name in (
        "attention-by-hand",
        "scaled-dot-product",
        "masking",
        "positions",
        "pretrained-model",  # the head view
    ):
        for site, french in ((HTML, False), (FR, True)):
            for img in re.findall(
                r"<img [^>]*qkv-w-static[^>]*>", page(site / "book" / f"{name}.html")
            ):
                alt = unescape(re.search(r'\balt="([^"]*)"', img).group(1))
                alt_fr = unescape(re.search(r'data-alt-fr="([^"]*)"', img).group(1))
                assert (alt == alt_fr) == french, (name, site, alt)
                checked += 1
    assert checked == 10, checked
