"""The search index keeps every page's index entries after an incremental build.

Problem: the site's search finds the glossary's terms through the index entries
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
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

from sphinx.application import Sphinx


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
        indexer._index_entries.setdefault(docname, entries)


def _in_page_order(builder) -> None:
    entries = builder.indexer._index_entries
    ordered = sorted(
        (docname, found)
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
    """Wrap ``StandaloneHTMLBuilder.dump_search_index``: the entries in page order."""

    @functools.wraps(dump_search_index)
    def dump_in_page_order(builder) -> None:
        if _loaded(builder) and builder.indexer is not None:
            _in_page_order(builder)
        dump_search_index(builder)

    return dump_in_page_order


def setup(app: Sphinx) -> dict:
    # Applies restoring_entries and in_page_order.
    app.setup_extension("bookbuild.patches")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
