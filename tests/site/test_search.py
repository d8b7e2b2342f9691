"""The site's search (``bookbuild.site.search_index`` and its ``static/search.js``):
accentless queries find what accented ones find, in the same order; the
glossary comes first for each of its terms, in both languages; the language
menu of the search page keeps the query.

The browser tests read the session's built site (``built_book``) in Debian's
Chromium; the first ones, on the folding and the index entries, build nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sphinx.search.en import SearchEnglish
from sphinx.search.fr import SearchFrench

from bookbuild.site.search_index import (
    entries_to_index,
    fold,
    folding,
    plurals,
    search_language,
)

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"


# -- the index, in Python ---------------------------------------------------------


def test_fold_removes_accents_and_keeps_the_rest():
    assert fold("Tête, requête, attention croisée, Ça, où") == (
        "Tete, requete, attention croisee, Ca, ou"
    )
    assert fold("poids d’attention") == "poids d'attention"  # as typed
    assert fold("œuvre — x₁ 12,5 %") == "œuvre — x₁ 12,5 %"  # no mark, unchanged
    assert fold("te\u0302te") == "tete"  # already decomposed
    assert fold(fold("élevé")) == fold("élevé")


def test_the_folding_language_stems_a_word_typed_either_way():
    french = folding(SearchFrench)({})
    for accented, plain in [
        ("requêtes", "requetes"),
        ("tête", "tete"),
        ("croisée", "croisee"),
        ("clés", "cles"),
        ("entraînement", "entrainement"),
    ]:
        assert french.stem(accented) == french.stem(plain), accented
    assert french.stem("requêtes") == SearchFrench({}).stem("requetes")
    assert french.split("Dès là, l’œuvre") == ["Des", "la", "l", "œuvre"]
    assert {"été", "ete", "à"} <= french.stopwords
    folded = folding(SearchFrench)
    assert folding(folded) is folded  # never folded twice
    english = folding(SearchEnglish)({})
    assert english.stem("naïve") == english.stem("naive")
    assert folding(SearchFrench).lang == "fr"


def test_the_search_language_is_found_as_sphinx_finds_it():
    class Config:
        html_search_language = None
        language = "fr_FR"

    assert search_language(Config) is SearchFrench
    Config.html_search_language = "en"
    assert search_language(Config) is SearchEnglish
    Config.html_search_language, Config.language = None, "el"
    assert search_language(Config) is None  # Sphinx falls back, unregistered


def test_a_glossary_term_and_its_original_are_two_entries():
    entries = [
        ("masque causal (causal mask)", "term-causal-mask", "main"),
        ("tête (head)", "term-head", "main"),
        ("ALiBi", "term-ALiBi", "main"),
        ("softmax (function)", "index-0", ""),  # not a glossary term: as it is
    ]
    indexed = entries_to_index(entries)
    assert {
        ("ALiBi", "term-ALiBi", "main"),
        ("causal mask", "term-causal-mask", "main"),
        ("head", "term-head", "main"),
        ("masque causal", "term-causal-mask", "main"),
        ("softmax (function)", "index-0", ""),
        ("tete", "term-head", "main"),
    } <= set(indexed)
    assert {text for text, anchor, _ in indexed if anchor == "term-ALiBi"} == {"ALiBi"}
    assert [e for e in indexed if e[1] == "index-0"] == [entries[-1]]
    assert entries_to_index(indexed) == indexed  # a second pass: the same index


def test_a_glossary_term_is_indexed_with_its_plurals():
    entries = [
        ("masque causal (causal mask)", "term-causal-mask", "main"),
        ("requête (query)", "term-query", "main"),
        ("tête d’attention (attention head)", "term-head", "main"),
        ("auto-attention (self-attention)", "term-self", "main"),
    ]
    texts = {text for text, _, _ in entries_to_index(entries)}
    plural = {"masques causaux", "causal masks", "requetes", "queries"}
    plural |= {"tetes d'attention", "attention heads", "auto-attentions"}
    assert plural <= texts, plural - texts
    assert plurals("softmax") == set() and plurals("RoPE") == set()


# -- the built site, in Chromium -----------------------------------------------------


#: True once Sphinx's search page has shown all its results (or none).
FINISHED = """() => {
    const summary = document.querySelector('#search-results .search-summary');
    return Boolean(summary && summary.innerText);
}"""
#: The links of the results the page shows, in order.
SHOWN = """() => [...document.querySelectorAll('#search-results ul.search > li > a')]
    .map(a => a.getAttribute('href'))"""
#: Each query's results, best first, as the search page runs them (through
#: search.js's wrappers): [link, title shown].
RESULTS = """(queries) => Object.fromEntries(queries.map(query => [query,
    Search._performSearch(...Search._parseQuery(query)).reverse()
        .map(([doc, title, anchor]) => [
            doc + DOCUMENTATION_OPTIONS.LINK_SUFFIX + anchor, title])]))"""
#: The glossary's terms: [id, text] of each.
TERMS = """() => [...document.querySelectorAll('dl.glossary > dt')].map(dt => {
    const term = dt.cloneNode(true);
    term.querySelectorAll('.headerlink').forEach(link => link.remove());
    return [dt.id, term.textContent.trim()];
})"""


class Page:
    """A page of the site in a fresh context, with the errors it raised."""

    def __init__(self, browser, url: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(url, wait_until="load")

    def search_finished(self) -> None:
        self.page.wait_for_function(FINISHED, timeout=30_000)

    def results(self, *queries: str) -> dict[str, list[list[str]]]:
        return self.page.evaluate(RESULTS, list(queries))

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc) -> None:
        self.context.close()


ACCENTLESS = {
    "requete": "requête",
    "tete": "tête",
    "attention croisee": "attention croisée",
    "REQUETES": "requêtes",
    "cle": "clé",
    "des le premier": "dès le premier",  # "dès" is "des", a stop word
}


@pytest.mark.book
@pytest.mark.browser
def test_accentless_french_queries_find_what_accented_ones_find(site, browser):
    """Typed without accents, a query finds the same pages in the same order,
    on the search page itself (``?q=tete``) as through Sphinx's search; the
    titles shown keep their accents."""
    with Page(browser, f"{site}/fr/search.html?q=tete") as page:
        page.search_finished()
        shown = page.page.evaluate(SHOWN)
        found = page.results(*ACCENTLESS, *ACCENTLESS.values())
        assert shown == [link for link, _ in found["tête"]]
        assert shown[0] == "book/glossary.html#term-head", shown
        for plain, accented in ACCENTLESS.items():
            assert found[plain], plain
            assert found[plain] == found[accented], (plain, accented)
        titles = [title for _, title in found["attention croisee"]]
        assert any("croisée" in title for title in titles), titles
        assert not any("croisee" in title for title in titles), titles
        assert not page.errors, page.errors


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_glossary_comes_first_for_each_of_its_terms(site, browser, language):
    """Every term of the glossary, searched as the glossary writes it (in French
    also its English original, in parentheses there, and without accents),
    finds that term of the glossary first."""
    folder = "" if language == "en" else f"{language}/"
    with Page(browser, f"{site}/{folder}book/glossary.html") as page:
        terms = page.page.evaluate(TERMS)
    assert len(terms) > 50, terms
    queries: dict[str, str] = {}  # query -> the term's anchor
    for anchor, text in terms:
        term, _, original = text.partition(" (")
        for query in {term, original.removesuffix(")"), fold(term)} - {""}:
            queries[query] = anchor
    plural = PLURALS[language]  # "requêtes" finds the glossary first, as "requête"
    queries.update({query: queries[singular] for query, singular in plural.items()})
    with Page(browser, f"{site}/{folder}search.html") as page:
        found = page.results(*queries)
        assert not page.errors, page.errors
    first = {
        query: (results or [["nothing"]])[0][0] for query, results in found.items()
    }
    wrong = {
        query: first[query]
        for query, anchor in queries.items()
        if first[query] != f"book/glossary.html#{anchor}"
    }
    assert not wrong, f"{len(wrong)} of {len(queries)} terms: {wrong}"


#: Plurals of core terms, each with the singular the glossary writes.
PLURALS = {
    "en": {"queries": "query", "keys": "key", "heads": "head"},
    "fr": {"requêtes": "requête", "requetes": "requête", "clés": "clé"}
    | {"têtes": "tête"},
}


def switch_language(page, name: str) -> None:
    """Open the language menu of the page's header and pick ``name``."""
    page.locator(".dropdown-language-buttons .dropdown-toggle").first.click()
    page.locator(".dropdown-language-buttons .dropdown-item", has_text=name).click()
    page.wait_for_load_state("load")


@pytest.mark.book
@pytest.mark.browser
def test_the_language_menu_keeps_the_query_of_the_search_page(site, browser):
    with Page(browser, f"{site}/search.html?q=attention") as page:
        page.search_finished()
        english = page.page.evaluate(SHOWN)
        switch_language(page.page, "Français")
        assert page.page.url == f"{site}/fr/search.html?q=attention"
        page.search_finished()
        assert page.page.locator("#search-results ul.search > li").count() > 0
        assert page.page.locator("input[name=q]").first.input_value() == "attention"
        switch_language(page.page, "English")
        assert page.page.url == f"{site}/search.html?q=attention"
        page.search_finished()
        assert page.page.evaluate(SHOWN) == english
        assert not page.errors, page.errors
