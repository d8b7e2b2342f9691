"""Print every chapter of the built site to its own PDF handout: `make pdf`.

Uses the same local server and headless Chromium as the browser tests
(:mod:`bookbuild.tools.browser`). Each page is served from 127.0.0.1, its math is
typeset by the site's own MathJax, and it is printed with the print style sheet:
the navigation disappears and every interactive head view is replaced by its
static figure. What a screen needs and paper does not is settled here, at print
time, not in the site's CSS: code wraps at the margin instead of being clipped,
figures and equations are not split across pages, the source of a hidden code
cell is left out (its output stays), every other folded box ("Cite this
chapter", a dropdown) is printed open, the first page names the book, its version
and its commit (the footer of the site, :mod:`bookbuild.site.build_info`) and
which edition the handout is, and every page has its number out of the handout's
pages in its footer, beside the page's title.

Solutions only where asked: a lecturer hands out ``_build/pdf/*.pdf`` as they
are, so the default handouts hold no solution (the exercises' solutions and the
answers of the "Question" boxes are left out, as in the student edition,
:mod:`bookbuild.site.edition`); ``make pdf SOLUTIONS=1`` (``--solutions``)
prints them, open, into ``_build/pdf/solutions`` (French:
``_build/pdf/solutions/fr``), for the lecturer. The first page of each says
which it is, in its language (:func:`edition_label`).

The whole book is then one PDF too, ``book.pdf``: every page in the order of the
table of contents, one bookmark per page (its title), each page with its chapter's
title and its number in the book ("100 / 340", not the chapter's "3 / 22"):
Chromium prints every page without a number (the prints are kept in
``.unnumbered/``) and :func:`number_pages` stamps them, per handout and across the
book.

The site links a PDF only once it exists and only while it prints the page as it
is: a stale PDF is never linked silently. Printing records, per folder of PDFs,
a fingerprint of each page's HTML as printed (``.printed.json``, links left
out: :func:`fingerprint`). :func:`sync_links`, run after printing and at the end
of every ``make book`` (``--link``), links each chapter whose page is still the
one printed and unlinks the others: :func:`link_handouts` copies the PDFs into
the site (``_pdf/<label>.pdf`` and ``book.pdf`` beside ``index.html``), adds a
link to its handout beside each chapter's notebook link, and turns the
introduction's words "the whole book as one PDF" (``<span class="qkv-book-pdf">``)
into a link, the whole book only while every one of its pages is unchanged. A page
an edit rebuilt loses its link (and its PDF leaves the site) until ``make pdf``
prints it again; the build says how many and what to run.

Usage, from the book's folder: ``python -m bookbuild.tools.handouts [--edition
student | --solutions] [--link] [PAGE ...]`` (default: every page of
``_toc.yml``, and the whole book; ``--link``: print nothing, only bring the links
of the edition's site up to date). Writes ``_build/pdf/<label>.pdf`` and
``_build/pdf/book.pdf``; and, for each translation of the book
(``_build/html/<code>``), the same from its pages in ``_build/pdf/<code>/``. The
student edition (``make pdf EDITION=student``) is printed from
``_build/student/_build/html`` into ``_build/pdf/student``; the handouts with
solutions (``--solutions``) into ``_build/pdf/solutions``, and the site links
none of them (its links go to the handouts without solutions).
"""

from __future__ import annotations

import hashlib
import html as html_escape
import json
import os
import re
import shutil
import sys
from pathlib import Path

from bookbuild.i18n.catalogues import (
    sphinx_config,
    translate_message,
    translated_languages,
)
from bookbuild.i18n.messages import N_, gettext
from bookbuild.site.citation import title_of
from bookbuild.toc import lessons, pages
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
#: The page at 90 %: the screen's 16 px text prints at 10.8 pt, a handout's size.
SCALE = 0.9
MARGINS = {"top": "15mm", "bottom": "18mm", "left": "12mm", "right": "12mm"}

#: The print style of a handout, added to the page before printing (the site's
#: own style sheets stay as they are).
PRINT_CSS = """
pre, .highlight pre, div.highlight, .cell_output pre {
    white-space: pre-wrap !important;
    overflow-wrap: anywhere !important;
    overflow: visible !important;
    max-height: none !important;
}
figure, .figure, img, svg, table, .sd-card, .admonition-title,
mjx-container[display="true"], .cell_output .output.text_html {
    break-inside: avoid;
}
h1, h2, h3, h4, .admonition-title { break-after: avoid; }
summary { list-style: none; }
summary::-webkit-details-marker { display: none; }
.qkv-notebook-link, .toggle-button, .tb-icon, button.copybtn,
.headerlink { display: none !important; }
.qkv-handout-provenance {
    font-size: 0.85em;
    color: #444;
    border-bottom: 1px solid #bbb;
    padding-bottom: 0.4em;
}
.qkv-handout-edition { font-weight: bold; }
"""

#: Folded boxes opened or left out before printing (the solutions left out
#: unless ``solutions``), the provenance line and the edition put under the
#: title; returns what would still spoil the page.
PREPARE = """({solutions, edition}) => {
    // A hidden code cell's source is left out: its output stays on the page.
    document.querySelectorAll('details.hide.above-input').forEach(
        (box) => box.remove());
    // The solutions (sphinx-exercise) and the answers of the "Question" boxes
    // (a dropdown), as the student edition leaves them out; unless asked for.
    const answers = '.solution, .question details.sd-dropdown';
    if (!solutions) {
        document.querySelectorAll(answers).forEach((box) => box.remove());
    }
    // Every other folded box is printed open: "Cite this chapter", dropdowns,
    // hidden outputs, and the solutions of sphinx-togglebutton.
    document.querySelectorAll('details').forEach((box) => { box.open = true; });
    document.querySelectorAll('details.hide.below-input > summary').forEach(
        (summary) => summary.remove());
    document.querySelectorAll('.toggle-hidden').forEach(
        (box) => box.classList.remove('toggle-hidden'));
    const footer = document.querySelector('.qkv-provenance');
    // The theme prints its own title (the article's is hidden in print):
    // with the chapter's number, as the figures and equations refer to it.
    const title = document.querySelector('#jb-print-docs-body h1')
        || document.querySelector('article h1');
    const number = document.querySelector('article h1 .section-number');
    if (title && number && !title.querySelector('.section-number')) {
        title.prepend(number.cloneNode(true));
    }
    if (footer && title && !document.querySelector('.qkv-handout-provenance')) {
        const line = document.createElement('p');
        line.className = 'qkv-handout-provenance';
        line.textContent = footer.textContent.trim() + ' · ';
        const which = document.createElement('span');
        which.className = 'qkv-handout-edition';
        which.textContent = edition;
        line.append(which);
        title.after(line);
    }
    const shown = (element) => element.getClientRects().length > 0;
    return {
        noProvenance: !(footer && title),
        solutionsLeft: solutions ? 0 : document.querySelectorAll(answers).length,
        folded: [...document.querySelectorAll('details:not([open])')].length
            + [...document.querySelectorAll('.toggle-hidden')].length,
        emptyHeaders: [...document.querySelectorAll('summary')].filter(
            (summary) => shown(summary) && !summary.parentElement.textContent
                .replace(summary.textContent, '').trim()).length,
    };
}"""

#: The footer of every printed page: the page's title; its number, "page /
#: pages", is stamped beside it afterwards (:func:`number_pages`): Chromium
#: numbers the pages of each document from 1, and the whole book needs its own.
FOOTER = (
    '<div style="font-size: 8px; width: 100%; margin: 0 12mm; color: #555;'
    ' display: flex; justify-content: space-between;">'
    '<span class="title"></span><span></span></div>'
)
#: The number: Helvetica (a PDF's standard font: nothing to embed) at the size
#: of the footer's 8 CSS px, its right end at the right margin (12 mm), on the
#: footer's baseline (in points from the bottom of the A4 page, as measured on
#: Chromium's footer); grey as the footer.
NUMBER_SIZE = 6.0
NUMBER_RIGHT = 12 / 25.4 * 72
NUMBER_BASELINE = 16.4
#: Helvetica's widths (thousandths of the size) of the characters of a number.
HELVETICA = {**dict.fromkeys("0123456789", 556), " ": 278, "/": 278}
#: Where the unnumbered prints are kept (the whole book is numbered from them).
UNNUMBERED = ".unnumbered"
#: No header: Chromium's default one prints the date and the page's address.
HEADER = "<span></span>"


def site(root: Path = Path("."), language: str = "", edition: str = "full") -> Path:
    """The built site of ``edition`` in ``language`` ("" for the root one)."""
    if edition == "student":
        return Path(root) / "_build" / "student" / "_build" / "html" / language
    return Path(root) / "_build" / "html" / language


def pdf_folder(
    root: Path = Path("."),
    language: str = "",
    edition: str = "full",
    solutions: bool = False,
) -> Path:
    """Where the handouts of ``edition`` in ``language`` are written: those with
    solutions in a folder of their own, never where the handouts are."""
    folder = Path(root) / "_build" / "pdf"
    if edition == "student":
        folder = folder / "student"
    elif solutions:
        folder = folder / "solutions"
    return folder / language


#: What the first page of a handout says it is, per (edition, solutions).
EDITIONS = {
    ("full", False): N_("Handout without solutions"),
    ("full", True): N_("Edition with solutions, for the lecturer"),
    ("student", False): N_("Student edition, without solutions"),
}


def edition_label(edition: str, solutions: bool, language: str = "") -> str:
    """What the first page of a handout of ``edition`` (with ``solutions`` or
    not) says it is, in ``language``. The student edition has no solution to
    print: asking for them is an error."""
    if (edition, solutions) not in EDITIONS:
        raise ValueError(
            f"no handouts of edition={edition!r} with solutions={solutions!r}: "
            "the student edition has no solution to print"
        )
    return gettext(language)(EDITIONS[edition, solutions])


def print_pages(
    pages: list[str],
    root: Path = Path("."),
    language: str = "",
    edition: str = "full",
    solutions: bool = False,
) -> list[Path]:
    """Print each page (``book/masking``) of the site built in ``root`` (of its
    translation into ``language``, if given; of the student edition if
    ``edition`` is "student"), without its solutions unless ``solutions``,
    ``PAGES_AT_ONCE`` at a time; return the PDFs in the order of ``pages``."""
    from concurrent.futures import ThreadPoolExecutor

    html = site(root, language, edition)
    out = pdf_folder(root, language, edition, solutions)
    options = {
        "solutions": solutions,
        "edition": edition_label(edition, solutions, language),
    }
    if not (html / "index.html").exists():
        sys.exit(f"no built site in {html}: run `make book` first")
    out.mkdir(parents=True, exist_ok=True)
    printed_from = {name: fingerprint(html / f"{name}.html") for name in pages}
    shares = [pages[start::PAGES_AT_ONCE] for start in range(PAGES_AT_ONCE)]
    with serve(html) as base, ThreadPoolExecutor(PAGES_AT_ONCE) as threads:
        # One playwright per thread: its synchronous API is not thread-safe.
        printed = dict(
            pair
            for share in threads.map(
                lambda share: _print(share, base, out, options), shares
            )
            for pair in share
        )
    record(out, {"pages": printed_from})
    return [printed[name] for name in pages]


#: The fingerprints of the pages a folder's PDFs were printed from.
PRINTED = ".printed.json"


def fingerprint(page: Path) -> str:
    """The SHA-256 of a built page without the links to PDFs that printing adds
    (:func:`link_handouts`): the same before and after linking, another once a
    build rewrote the page differently."""
    return hashlib.sha256(
        unlinked(page.read_text(encoding="utf-8")).encode()
    ).hexdigest()


def recorded(out: Path) -> dict:
    """What :func:`record` kept for the PDFs of ``out`` (nothing if none)."""
    try:
        found = json.loads((out / PRINTED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"pages": {}, "book": {}}
    return {"pages": found.get("pages") or {}, "book": found.get("book") or {}}


def record(out: Path, update: dict) -> None:
    """Add ``update`` ("pages": page -> fingerprint of its handout; "book": the
    fingerprints of every page of ``book.pdf``) to ``out``'s record."""
    known = recorded(out)
    known["pages"].update(update.get("pages") or {})
    if "book" in update:
        known["book"] = update["book"]
    (out / PRINTED).write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def _print(
    pages: list[str], base: str, out: Path, options: dict
) -> list[tuple[str, Path]]:
    """Print ``pages`` from the site served at ``base`` into ``out``, in one
    Chromium (``options`` of :data:`PREPARE`); return (page, PDF) pairs."""
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page()
        for name in pages:
            page.goto(f"{base}/{name}.html", wait_until="load")
            wait_for_math(page)
            problems = page.evaluate(NOT_READY)
            page.add_style_tag(content=PRINT_CSS)
            problems.update(page.evaluate(PREPARE, options))
            if any(problems.values()):
                raise RuntimeError(f"{name}: not ready to print: {problems}")
            target = out / f"{Path(name).name}.pdf"
            plain = unnumbered(target)
            plain.parent.mkdir(exist_ok=True)
            page.pdf(
                path=str(plain),
                format="A4",
                print_background=True,
                margin=MARGINS,
                display_header_footer=True,
                header_template=HEADER,
                footer_template=FOOTER,
                scale=SCALE,
            )
            number_pages([plain], target)
            written.append((name, target))
            print(f"pdf: {target}")
        browser.close()
    return written


#: Where a chapter's handout is put in the site, beside ``index.html``.
SITE_FOLDER = "_pdf"
#: The introduction's words that become a link to the whole book, once it exists.
BOOK_WORDS = re.compile(r'<span class="qkv-book-pdf">(.*?)</span>', re.S)
#: The paragraph of a chapter's notebook links (bookbuild.site.notebooks).
NOTEBOOK_LINKS = re.compile(r'(<p class="qkv-notebook-link">.*?)(</p>)', re.S)
#: A link that an earlier run added (replaced, never doubled).
OLD_LINK = re.compile(r' · <a class="qkv-handout-link"[^>]*>.*?</a>', re.S)


def link_handouts(
    html: Path,
    handouts: dict[str, Path],
    book: Path | None,
    chapters: list[str],
    language: str = "",
    pages: list[str] | None = None,
) -> list[str]:
    """Copy the handouts (page -> PDF) into the site ``html`` and link them: each
    page of ``chapters`` that has a handout gets a link to it beside its notebook
    link, and the ``qkv-book-pdf`` words of ``pages`` (default: those printed)
    link ``book`` (if given). Only files that exist are linked; a translation's
    pages, in a folder of ``html``, are left to its own call. Returns the pages
    changed."""

    _ = gettext(language)
    label = html_escape.escape(_("Download this chapter as a PDF"))
    changed = []
    for page in chapters:
        handout = handouts.get(page)
        target = html / f"{page}.html"
        if handout is None or not handout.exists() or not target.exists():
            continue
        (html / SITE_FOLDER).mkdir(exist_ok=True)
        shutil.copy2(handout, html / SITE_FOLDER / handout.name)
        href = "../" * page.count("/") + f"{SITE_FOLDER}/{handout.name}"
        link = f' · <a class="qkv-handout-link" href="{href}">{label}</a>'
        old = target.read_text(encoding="utf-8")
        text, found = NOTEBOOK_LINKS.subn(
            lambda match, link=link: match[1] + link + match[2],
            OLD_LINK.sub("", old),
            count=1,
        )
        if found:
            rewrite(target, old, text)
            changed.append(page)
    if book is not None and book.exists():
        shutil.copy2(book, html / "book.pdf")
        for page in pages if pages is not None else list(handouts):
            target = html / f"{page}.html"
            if not target.exists():
                continue
            href = "../" * page.count("/") + "book.pdf"
            old = target.read_text(encoding="utf-8")
            text, found = BOOK_WORDS.subn(
                lambda match, href=href: (
                    f'<a class="qkv-book-pdf" href="{href}">{match[1]}</a>'
                ),
                old,
            )
            if found:
                rewrite(target, old, text)
                changed.append(page)
    return changed


#: The introduction's words once they link the whole book.
BOOK_LINK = re.compile(r'<a class="qkv-book-pdf" href="[^"]*">(.*?)</a>', re.S)


def unlinked(text: str) -> str:
    """A page's HTML without the links :func:`link_handouts` adds (as the build
    wrote it)."""
    return BOOK_LINK.sub(
        lambda match: f'<span class="qkv-book-pdf">{match[1]}</span>',
        OLD_LINK.sub("", text),
    )


def rewrite(page: Path, old: str, text: str) -> None:
    """``page`` with ``text`` instead of ``old``, if they differ, its time kept
    (the build's own record of when it wrote the page)."""
    if text == old:
        return
    times = page.stat()
    page.write_text(text, encoding="utf-8")
    os.utime(page, ns=(times.st_atime_ns, times.st_mtime_ns))


def sync_links(
    root: Path = Path("."), language: str = "", edition: str = "full"
) -> tuple[list[str], list[str]]:
    """Link, in the site of ``edition`` in ``language``, the handouts (and the
    whole book) printed from its pages as they are now, and unlink the rest,
    their copies removed from the site. Returns (linked pages, stale pages)."""
    html = site(root, language, edition)
    out = pdf_folder(root, language, edition)
    known = recorded(out)
    everything = pages(root)
    now = {
        page: fingerprint(html / f"{page}.html")
        for page in everything
        if (html / f"{page}.html").exists()
    }
    handouts, stale = {}, []
    for page in everything:
        handout = out / f"{Path(page).name}.pdf"
        if not handout.exists() or page not in now:
            continue
        if known["pages"].get(page) == now[page]:
            handouts[page] = handout
        else:
            stale.append(page)
    book = out / "book.pdf"
    book_fresh = book.exists() and known["book"] == now and bool(now)
    for page in now:  # every link taken away first
        target = html / f"{page}.html"
        old = target.read_text(encoding="utf-8")
        rewrite(target, old, unlinked(old))
    for page in stale:
        (html / SITE_FOLDER / f"{Path(page).name}.pdf").unlink(missing_ok=True)
    if not book_fresh:
        (html / "book.pdf").unlink(missing_ok=True)
    linked = link_handouts(
        html,
        handouts,
        book if book_fresh else None,
        lessons(root),
        language,
        pages=everything,
    )
    return linked, stale


def unnumbered(handout: Path) -> Path:
    """The print of ``handout`` before its pages were numbered."""
    return handout.parent / UNNUMBERED / handout.name


def number_stream(number: int, total: int, width: float) -> bytes:
    """The PDF drawing of "number / total" at the right of the footer of a page
    ``width`` points wide."""
    text = f"{number} / {total}"
    length = sum(HELVETICA[char] for char in text) * NUMBER_SIZE / 1000
    x = width - NUMBER_RIGHT - length
    return (
        f"q 0.333 g BT /QkvNumber {NUMBER_SIZE:g} Tf {x:.2f} {NUMBER_BASELINE:g} Td "
        f"({text}) Tj ET Q"
    ).encode("ascii")


def number_pages(
    prints: list[Path],
    target: Path,
    titles: list[str] | None = None,
    book_title: str | None = None,
) -> Path:
    """The pages of ``prints`` (unnumbered) in order, as one PDF ``target``,
    each stamped "page / pages" of ``target``; with ``titles``, a bookmark per
    print (its title) on its first page; with ``book_title``, that title."""
    from pypdf import PageObject, PdfReader, PdfWriter
    from pypdf.generic import (
        DecodedStreamObject,
        DictionaryObject,
        NameObject,
    )

    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        }
    )
    readers = [PdfReader(str(path)) for path in prints]
    total = sum(len(reader.pages) for reader in readers)
    writer = PdfWriter()
    for index, reader in enumerate(readers):
        first_page = len(writer.pages)
        writer.append(reader)
        if titles is not None:
            writer.add_outline_item(title=titles[index], page_number=first_page)
    for number, page in enumerate(writer.pages, start=1):
        width = float(page.mediabox.width)
        stamp = PageObject.create_blank_page(
            width=width, height=float(page.mediabox.height)
        )
        stamp[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/QkvNumber"): font})}
        )
        drawing = DecodedStreamObject()
        drawing.set_data(number_stream(number, total, width))
        stamp[NameObject("/Contents")] = drawing
        page.merge_page(stamp)
    if book_title is not None:
        writer.add_metadata({"/Title": book_title})
    else:
        metadata = readers[0].metadata if readers else None
        if metadata:
            writer.add_metadata(dict(metadata))
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        writer.write(out)
    return target


def whole_book(
    handouts: list[Path],
    titles: list[str],
    target: Path,
    book_title: str = "Attention, Computed",
) -> Path:
    """One PDF of ``handouts`` in order (their prints before numbering), a
    bookmark per handout (its title), its pages numbered across the book."""
    return number_pages(
        [unnumbered(handout) for handout in handouts], target, titles, book_title
    )


def options(argv: list[str]) -> tuple[str, bool, list[str]]:
    """``(edition, solutions, pages)`` of the command line ``[--edition student
    | --solutions] [PAGE ...]``; the student edition with solutions is refused."""
    edition, solutions = "full", False
    argv = list(argv)
    while argv[:1] in (["--edition"], ["--solutions"]):
        if argv[0] == "--solutions":
            solutions, argv = True, argv[1:]
        else:
            edition, argv = argv[1], argv[2:]
    edition_label(edition, solutions)  # a ValueError for an impossible choice
    return edition, solutions, argv


def link_only(root: Path, edition: str) -> None:
    """``--link`` (the end of ``make book``): every language's links brought up
    to date; one line if some PDFs no longer print their page."""
    for language in ["", *translated_languages(root)]:
        if not (site(root, language, edition) / "index.html").exists():
            continue
        _, stale = sync_links(root, language, edition)
        if stale:
            where = pdf_folder(root, language, edition)
            again = "make pdf" + (" EDITION=student" if edition == "student" else "")
            print(
                f"pdf: {len(stale)} handout(s) of {where} older than their page "
                f"(no longer linked, as the whole book): `{again}` prints them again"
            )


def main(argv: list[str], root: Path = Path(".")) -> None:
    from pypdf import PdfReader

    try:
        link = "--link" in argv
        edition, solutions, argv = options([a for a in argv if a != "--link"])
    except ValueError as error:
        sys.exit(f"pdf: {error}")
    if link:
        link_only(root, edition)
        return
    chosen = argv or pages(root)
    built = [
        language
        for language in translated_languages(root)
        if (site(root, language, edition) / "index.html").exists()
    ]
    overrides = sphinx_config(root).get("book_i18n_overrides") or {}
    for language in ["", *built]:
        handouts = print_pages(chosen, root, language, edition, solutions)
        book = None
        if not argv:
            titles = [
                translate_message(root, language, page, title_of(root, page))
                for page in chosen
            ]
            book_title = (overrides.get(language) or {}).get("html_title")
            book = whole_book(
                handouts,
                titles,
                pdf_folder(root, language, edition, solutions) / "book.pdf",
                book_title or "Attention, Computed",
            )
            print(f"pdf: {book} ({len(PdfReader(book).pages)} pages)")
            out = pdf_folder(root, language, edition, solutions)
            printed_from = recorded(out)["pages"]
            book_pages = {p: printed_from[p] for p in chosen if p in printed_from}
            record(out, {"book": book_pages})
        if solutions:  # the site links the handouts without solutions only
            continue
        linked, _ = sync_links(root, language, edition)
        html = site(root, language, edition)
        print(f"pdf: linked from {len(linked)} page(s) of {html}")


if __name__ == "__main__":
    main(sys.argv[1:])
