"""The site's search: every page's index entries kept by an incremental build,
accents ignored, and the glossary first for its own terms in every language.

Problem 1: the site's search finds the glossary's terms through the index entries
of ``searchindex.js``. Sphinx 7.4 rebuilds that file from the previous one plus
the pages it writes again, but it reads back the previous words and titles only,
not the index entries (Sphinx issue #12599). So after ``make book`` re-reads one
edited page, the index holds that page's entries alone: every glossary term
disappears from the search (measured: 26 terms before, 0 after).

Answer: when the HTML builder loads the previous index, this extension restores
the index entries of every page that is not written again, from the previous
``searchindex.js``; the pages written again bring their own, as always. Before
the index is written, its entries are put in page order, so that an incremental
build writes the same file as a clean build of the same sources. The HTML
builder's two methods are wrapped by :mod:`bookbuild.patches` (which checks the
Sphinx version they were written for); the wrappers do nothing more than the
originals in a build that does not load this extension.

Problem 2: Sphinx's search is accent-sensitive. A French reader who types
"requete", "tete" or "attention croisee" (no accents: a phone, a QWERTY
keyboard) found nothing, or, for "tete", three pages through parts of other
words; the stems of the index ("requêt", "têt") and of the query ("requet",
"tet") differ.

Answer: the language's own search class (Sphinx's French one, with its
Snowball stemmer; in English, its English one), registered for this build
with one change: the text's accents are removed before it is split into words
and stemmed (:func:`fold`: Unicode NFD without the combining marks, and a
keyboard's apostrophe for a typographic one), and the stop words are listed
with and without theirs. The index entries are folded too (the search
compares them with the query as text, never shows them). On the search page,
``static/search.js`` folds the query the same way before Sphinx's own search
compares it (stop words included); it also makes the comparison of section
titles accent-blind while their display keeps its accents. The index's words
then match whichever way a word is typed: "requêtes", "requetes" and
"REQUETES" find the same pages, in the same order.

Problem 3: the glossary is found first for its terms through its index entries,
which Sphinx scores 100 when the query is the whole entry (at most 16 for a
page's title, 5 for a word of its text). In French a term is translated as
"masque causal (*causal mask*)", and its entry is that whole text: a query
"masque causal" is less than half of it, the entry does not match, and the
glossary came among the pages using the words, scored 5 like most of them and
ordered by title: first for 32 of its 66 French terms only, down to 18th
("tête" 16th, "requête" 17th, "masque causal" 10th); typed without accents,
14 of the 25 terms that have some found nothing.

Answer: a glossary entry of the form "term (English term)" is indexed as both
terms, each of which matches itself exactly. Each is indexed with its plurals
too (:func:`plurals`): Sphinx compares the query with an entry as text, so
"requêtes" did not match the entry "requête" and put the glossary 18th. The
printed index (``genindex.html``) keeps the term as the glossary writes it.

A change of what this module writes into the index changes
``book_search_index_version`` (a configuration value of category ``html``),
so that Sphinx writes every page again once, not only the edited ones: an
index is never half of one version and half of another.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable
from importlib import import_module
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.search import SearchLanguage, languages

from bookbuild import patches
from bookbuild.site.style import FOLDER

#: Changed whenever the words or entries written into the index change.
INDEX_VERSION = "accents and apostrophes folded, glossary terms split, plurals, 3"
#: The page that runs the search, and the script that folds its query.
SEARCH_PAGE = "search"
SEARCH_SCRIPT = "search.js"
#: Typographic apostrophes (’ and ‘), written as a keyboard writes them.
APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def fold(text: str) -> str:
    """``text`` without its accents: decomposed (NFD), its combining marks left
    out (``"tête croisée"`` -> ``"tete croisee"``), and with a keyboard's
    apostrophe for a typographic one (the page shows "poids d’attention", a
    reader types "poids d'attention"); what ``static/search.js`` does to the
    query."""
    decomposed = unicodedata.normalize("NFD", text.translate(APOSTROPHES))
    return "".join(c for c in decomposed if not unicodedata.category(c).startswith("M"))


def folding(base: type[SearchLanguage]) -> type[SearchLanguage]:
    """``base``, a Sphinx search language, splitting and stemming text without
    its accents and knowing its stop words with and without them."""
    if getattr(base, "folds_accents", False):
        return base

    class Folding(base):  # type: ignore[misc, valid-type]
        folds_accents = True
        stopwords = set(base.stopwords) | {fold(word) for word in base.stopwords}

        def split(self, input: str) -> list[str]:  # noqa: A002 - the base's name
            # Every word the indexer keeps, stemmed or not ("dès" is "des", a
            # stop word, as for the page's script); the titles shown keep theirs.
            return super().split(fold(input))

        def stem(self, word: str) -> str:
            return super().stem(fold(word))

    Folding.__name__ = Folding.__qualname__ = f"Folding{base.__name__}"
    return Folding


def search_language(config) -> type[SearchLanguage] | None:
    """The class registered for this build's language, found as Sphinx's
    indexer finds it (``sphinx.search.IndexBuilder``); None for a language
    Sphinx has none for (its indexer then uses English, unregistered)."""
    lang = config.html_search_language or config.language or "en"
    found = languages.get(lang) or languages.get(lang.split("_")[0])
    if found is None:
        return None
    if isinstance(found, str):
        module, name = found.rsplit(".", 1)
        found = getattr(import_module(module), name)
    return found


_TERM_AND_ORIGINAL = re.compile(r"^(?P<term>.+?)\s+\((?P<original>[^()]+)\)$")
#: Words after which a term's words are no longer its head ("tête d'attention",
#: "head of attention"): they stay as they are in its plural.
_LINKS = frozenset(
    "de du des à a au aux en par pour sur avec sans of for in on with per to".split()
)


def _plurals_of_word(word: str) -> set[str]:
    """The plurals a reader may type of one word, French or English. Every
    plural ends in s, x or z, which has no other plural: a plural's plural is
    itself (the index is the same after a second pass)."""
    if "-" in word:  # "auto-attention": its last part
        first, _, last = word.rpartition("-")
        return {f"{first}-{form}" for form in _plurals_of_word(last)}
    if not word.isalpha() or any(c.isupper() for c in word[1:]):
        return {word}  # an acronym (RoPE, KV), a number, "d'attention"
    if re.search(r"[sxz]$", word, re.I):
        return {word}
    if word.endswith("al"):
        return {word + "s", word[:-2] + "aux"}  # "causals", "causaux"
    if re.search(r"(eau|au|eu)$", word):
        return {word + "x", word + "s"}
    if re.search(r"[^aeiou]y$", word):
        return {word[:-1] + "ies", word + "s"}
    if re.search(r"(ch|sh)$", word):
        return {word + "es", word + "s"}
    return {word + "s"}


def plurals(text: str) -> set[str]:
    """The plurals of a glossary term: its head words all in the plural, as
    French writes them ("masques causaux"), and its last head word alone, as
    English does ("causal masks"); the rest of the term as it is."""
    words = text.split(" ")
    head = next(
        (i for i, w in enumerate(words) if w.lower() in _LINKS or "'" in w),
        len(words),
    )
    if head == 0:
        return set()
    found = set()
    for forms in itertools.product(*(_plurals_of_word(w) for w in words[:head])):
        found.add(" ".join([*forms, *words[head:]]))
    for form in _plurals_of_word(words[head - 1]):
        found.add(" ".join([*words[: head - 1], form, *words[head:]]))
    return found - {text}


def entries_to_index(
    entries: Iterable[tuple[str, str, str]],
) -> list[tuple[str, str, str]]:
    """A page's index entries (entry, anchor, main) as the search should know
    them: folded, a glossary term "term (original)" as both terms, and a
    glossary term with its plurals (:func:`plurals`)."""
    found: set[tuple[str, str, str]] = set()
    for entry, anchor, main in entries:
        match = _TERM_AND_ORIGINAL.match(entry)
        if anchor.startswith("term-") and match:
            texts = [match["term"], match["original"]]
        else:
            texts = [entry]
        if anchor.startswith("term-"):  # "requêtes" finds the glossary first too
            texts += [plural for text in texts for plural in plurals(text)]
        found.update((fold(text), anchor, main) for text in texts)
    return sorted(found)


def previous_entries(
    frozen: dict, keep: Iterable[str]
) -> dict[str, list[tuple[str, str, str]]]:
    """The index entries of the pages ``keep``, from a loaded ``searchindex.js``,
    in the form Sphinx's indexer keeps them: page -> sorted (entry, anchor, main).
    """
    keep = set(keep)
    docnames = frozen["docnames"]
    found: dict[str, set[tuple[str, str, str]]] = {}
    for entry, places in frozen.get("indexentries", {}).items():
        for doc_index, anchor, main in places:
            docname = docnames[doc_index]
            if docname in keep:
                found.setdefault(docname, set()).add(
                    (entry, anchor, "main" if main else "")
                )
    return {docname: sorted(entries) for docname, entries in found.items()}


#: Sphinx's private dict of the index's entries, page by page (checked against
#: the Sphinx it was written for: bookbuild.patches.INTERNALS).
_ENTRIES = patches.instance_attribute("sphinx.search:IndexBuilder._index_entries")


def _restore_entries(builder, docnames: Iterable[str]) -> None:
    indexer = builder.indexer
    path = Path(builder.outdir) / builder.searchindex_filename
    try:
        frozen = builder.indexer_format.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # no previous index: every page is written, nothing to restore
    if not isinstance(frozen, dict) or frozen.get("envversion") != builder.env.version:
        return  # an index Sphinx itself refuses to load
    keep = set(builder.env.all_docs) - set(docnames)
    for docname, entries in previous_entries(frozen, keep).items():
        getattr(indexer, _ENTRIES).setdefault(docname, entries)


def _in_page_order(builder) -> None:
    entries = getattr(builder.indexer, _ENTRIES)
    ordered = sorted(
        (docname, entries_to_index(found))
        for docname, found in entries.items()
        if docname in builder.env.all_docs
    )
    entries.clear()
    entries.update(ordered)


def _loaded(builder) -> bool:
    return __name__ in builder.app.extensions


def restoring_entries(load_indexer):
    """Wrap ``StandaloneHTMLBuilder.load_indexer``: the previous index's entries
    of the pages not written again are restored."""

    @functools.wraps(load_indexer)
    def load_and_restore(builder, docnames: Iterable[str]) -> None:
        docnames = list(docnames)
        load_indexer(builder, docnames)
        if _loaded(builder):
            _restore_entries(builder, docnames)

    return load_and_restore


def in_page_order(dump_search_index):
    """Wrap ``StandaloneHTMLBuilder.dump_search_index``: the entries in page
    order, folded, a glossary term with its original as two entries."""

    @functools.wraps(dump_search_index)
    def dump_in_page_order(builder) -> None:
        if _loaded(builder) and builder.indexer is not None:
            _in_page_order(builder)
        dump_search_index(builder)

    return dump_in_page_order


# -- accents ------------------------------------------------------------------------


def _folding_language(app: Sphinx) -> None:
    """The build's search language, folding accents, for this build only."""
    base = search_language(app.config)
    if base is not None:
        app.add_search_language(folding(base))
        app.connect("build-finished", lambda app, exc: app.add_search_language(base))


def _static_folder(app: Sphinx) -> None:
    # The folder bookbuild.site.style also adds, once (a book may load either).
    if str(FOLDER) not in map(str, app.config.html_static_path):
        app.config.html_static_path = [*app.config.html_static_path, str(FOLDER)]


def _search_script(app: Sphinx, pagename: str, templatename, context, doctree):
    if pagename == SEARCH_PAGE:
        app.add_js_file(SEARCH_SCRIPT, loading_method="defer")  # this page only


def setup(app: Sphinx) -> dict:
    # Applies restoring_entries and in_page_order.
    app.setup_extension("bookbuild.patches")
    app.add_config_value("book_search_index_version", INDEX_VERSION, "html", [str])
    app.connect("builder-inited", _folding_language)
    app.connect("builder-inited", _static_folder)
    app.connect("html-page-context", _search_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
