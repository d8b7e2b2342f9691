"""Print every chapter of the built site to its own PDF handout: `make pdf`.

Uses the same local server and headless Chromium as the browser tests
(:mod:`bookbuild.tools.browser`). Each page is served from 127.0.0.1, its math is
typeset by the site's own MathJax, and it is printed with the print style sheet:
the navigation disappears and every interactive head view is replaced by its
static figure.

The whole book is then one PDF too, ``book.pdf``: every page in the order of the
table of contents, one bookmark per page (its title), written to ``_build/pdf``
and into the site itself, where the introduction links it.

Usage, from the book's folder: ``python -m bookbuild.tools.handouts [PAGE ...]``
(default: every page of ``_toc.yml``, and the whole book). Writes
``_build/pdf/<label>.pdf`` and ``_build/pdf/book.pdf``; and, for each translation
of the book (``_build/html/<code>``), the same from its pages in
``_build/pdf/<code>/``, its whole book also in ``_build/html/<code>/book.pdf``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bookbuild.toc import pages
from bookbuild.tools.browser import launch, serve, wait_for_math

#: How many pages are printed at once (one Chromium each: the cores work in parallel).
PAGES_AT_ONCE = 2

#: What would spoil a printed page: math left untypeset, MathJax errors, images
#: that did not load.
NOT_READY = """() => ({
    untypeset: document.querySelectorAll('.math:not(:has(mjx-container))').length,
    errors: document.querySelectorAll('mjx-merror').length,
    brokenImages: [...document.images].filter(
        (img) => !img.complete || img.naturalWidth === 0).length,
})"""
MARGINS = {"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"}


def print_pages(
    pages: list[str], root: Path = Path("."), language: str = ""
) -> list[Path]:
    """Print each page (``book/masking``) of the site built in ``root`` (of its
    translation into ``language``, if given), ``PAGES_AT_ONCE`` at a time; return
    the PDFs in the order of ``pages``."""
    from concurrent.futures import ThreadPoolExecutor

    html = Path(root) / "_build" / "html" / language
    out = Path(root) / "_build" / "pdf" / language
    if not (html / "index.html").exists():
        sys.exit(f"no built site in {html}: run `make book` first")
    out.mkdir(parents=True, exist_ok=True)
    shares = [pages[start::PAGES_AT_ONCE] for start in range(PAGES_AT_ONCE)]
    with serve(html) as base, ThreadPoolExecutor(PAGES_AT_ONCE) as threads:
        # One playwright per thread: its synchronous API is not thread-safe.
        printed = dict(
            pair
            for share in threads.map(lambda share: _print(share, base, out), shares)
            for pair in share
        )
    return [printed[name] for name in pages]


def _print(pages: list[str], base: str, out: Path) -> list[tuple[str, Path]]:
    """Print ``pages`` from the site served at ``base`` into ``out``, in one
    Chromium; return (page, PDF) pairs."""
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page()
        for name in pages:
            page.goto(f"{base}/{name}.html", wait_until="load")
            wait_for_math(page)
            problems = page.evaluate(NOT_READY)
            if any(problems.values()):
                raise RuntimeError(f"{name}: not ready to print: {problems}")
            target = out / f"{Path(name).name}.pdf"
            page.pdf(
                path=str(target),
                format="A4",
                print_background=True,
                margin=MARGINS,
            )
            written.append((name, target))
            print(f"pdf: {target}")
        browser.close()
    return written


def whole_book(
    handouts: list[Path],
    titles: list[str],
    target: Path,
    book_title: str = "Attention, Computed",
) -> Path:
    """One PDF of ``handouts`` in order, a bookmark per handout (its title)."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    for handout, title in zip(handouts, titles, strict=True):
        first_page = len(writer.pages)
        writer.append(str(handout))
        writer.add_outline_item(title=title, page_number=first_page)
    writer.add_metadata({"/Title": book_title})
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        writer.write(out)
    return target


def main(argv: list[str], root: Path = Path(".")) -> None:
    import shutil

    from bookbuild.i18n.translations import (
        sphinx_config,
        translate_message,
        translated_languages,
    )
    from bookbuild.site.citation import title_of

    chosen = argv or pages(root)
    built = [
        language
        for language in translated_languages(root)
        if (root / "_build" / "html" / language / "index.html").exists()
    ]
    overrides = sphinx_config(root).get("book_i18n_overrides") or {}
    for language in ["", *built]:
        handouts = print_pages(chosen, root, language)
        if argv:
            continue
        titles = [
            translate_message(root, language, page, title_of(root, page))
            for page in chosen
        ]
        book_title = (overrides.get(language) or {}).get("html_title")
        book = whole_book(
            handouts,
            titles,
            root / "_build" / "pdf" / language / "book.pdf",
            book_title or "Attention, Computed",
        )
        site = root / "_build" / "html" / language / "book.pdf"
        shutil.copy2(book, site)
        print(f"pdf: {book} (and in the site, {site})")


if __name__ == "__main__":
    main(sys.argv[1:])
