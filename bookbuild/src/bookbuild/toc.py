"""The pages of the book, read from ``_toc.yml`` in one place.

Parsed by sphinx-external-toc itself (``parse_toc_yaml``), the same parser the
build uses, so nested ``sections:`` and every other form of the file are read as
Sphinx reads them. Used by the prefill, the notebook export, the handouts and
the tests, so that they all agree on what a page and a lesson are.
"""

from __future__ import annotations

from pathlib import Path

from sphinx_external_toc.api import SiteMap
from sphinx_external_toc.parsing import parse_toc_yaml


def book_root(srcdir: Path) -> Path:
    """The book's folder: Sphinx's source folder ``srcdir``, or, in Jupyter
    Book's one-page build (``jupyter-book build book/masking.md``, whose source
    folder is the page's own), the nearest folder above it with a ``_toc.yml``."""
    srcdir = Path(srcdir).resolve()
    for folder in (srcdir, *srcdir.parents):
        if (folder / "_toc.yml").is_file():
            return folder
    return srcdir


def is_one_page_build(srcdir: Path) -> bool:
    """True in Jupyter Book's one-page build: no table of contents, no chapters."""
    return not (Path(srcdir) / "_toc.yml").is_file()


def site_map(root: Path) -> SiteMap:
    """The parsed ``_toc.yml`` of the book in ``root``."""
    return parse_toc_yaml(Path(root) / "_toc.yml")


def _walk(sitemap: SiteMap, docname: str, numbered: bool):
    """Depth-first: (docname, numbered) for ``docname`` and every page below it."""
    yield docname, numbered
    for tree in sitemap[docname].subtrees:
        for item in tree.items:
            if isinstance(item, str) and item in sitemap:  # not a URL or glob
                yield from _walk(sitemap, item, numbered or bool(tree.numbered))


def pages(root: Path) -> list[str]:
    """Every page, as a path without suffix (``book/masking``), in reading order."""
    sitemap = site_map(root)
    return [docname for docname, _ in _walk(sitemap, sitemap.root.docname, False)]


def lessons(root: Path) -> list[str]:
    """The pages of the numbered parts (chapters and their sections), in order."""
    sitemap = site_map(root)
    return [
        docname
        for docname, numbered in _walk(sitemap, sitemap.root.docname, False)
        if numbered
    ]


def is_notebook(root: Path, page: str) -> bool:
    """True if the page is a MyST notebook (front matter naming a kernel)."""
    text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
    return text.startswith("---") and "kernelspec:" in text.split("\n---\n", 1)[0]
