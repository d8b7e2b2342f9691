"""How to cite the book and each chapter, from one source: ``CITATION.cff``.

Problem: a lecturer who cites a chapter in a slide needs its BibTeX where they read
it, with the current version, the chapter's number and a link that works; the cite
page alone (one long page of BibTeX) makes them search.

Answer: one function, :func:`chapter_entry`, writes a chapter's reference from
``CITATION.cff`` (title, authors, version, year), the commit it was built from,
the chapter's number as the table of contents gives it, its stable label, a
``publisher`` (its authors: BibTeX's plain, unsrt and alpha styles require one
in a ``@book`` and an ``@incollection``) and,
when the book has a public address (``html.baseurl`` in ``_config.yml``, which
the publishing workflow fills), its URL; in a translated build, the edition's
own title (``book_citation_title`` of its ``book_i18n_overrides``, else its
``html_title``) as the title and ``booktitle``, the original one as
``origtitle``, its own name for the authors (its ``author``), the address
of the page in that language, and a note and a ``language`` field that say
which edition it is; the one-line reference names the edition too (« Dans
L’attention, calculée, édition française, version … »). This Sphinx extension
uses it twice:

* every lesson page ends with a folded "Cite this chapter" box: a one-line
  reference and the BibTeX entry (with the theme's copy button);
* the directive ``{citations}`` on the cite page lists the book's entry, every
  chapter's entry and the stable labels of their figures, equations and exercises.

Jupyter Book's one-page build (``jupyter-book build book/masking.md``) reads the
page from its own folder, where there is no table of contents: the book's
files are found in the nearest folder above that has one
(:func:`bookbuild.toc.book_root`),
and the page gets no box (it has no chapter number). The bibliography, logo and
favicon that ``_config.yml`` names from the book's folder are found there too,
and the page's references to the other pages (labels, glossary terms, the
bibliography), which such a build cannot have, are not reported
(:func:`_one_page_build`): the book's strict build checks them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import N_, base_language, gettext
from bookbuild.site.build_info import build_commit
from bookbuild.toc import book_root, is_one_page_build, lessons

#: The ``language`` field of a translated edition's entries (babel's names).
BIBTEX_LANGUAGES = {"en": "english", "fr": "french"}


@dataclass
class Book:
    """What ``CITATION.cff`` says of the book."""

    title: str
    authors: list[str]
    version: str
    year: str
    url: str  # the site's address (of this language's edition), "" when none
    commit: str = ""  # the commit built, "" outside a git checkout
    language: str = ""  # "fr" in a translated edition, "" in the root language
    original_title: str = ""  # a translated edition's: the root language's title

    @classmethod
    def read(
        cls,
        root: Path,
        url: str = "",
        commit: str = "",
        language: str = "",
        title: str = "",
        authors: list[str] | None = None,
    ) -> Book:
        """The book of ``CITATION.cff``; in a translated edition (``language``),
        under that edition's ``title`` and ``authors`` when it has its own."""
        citation = yaml.safe_load((Path(root) / "CITATION.cff").read_text("utf-8"))
        own = bool(language and title and title != citation["title"])
        if not (language and authors):
            authors = [a.get("name") or _person(a) for a in citation["authors"]]
        return cls(
            title=title if own else citation["title"],
            authors=authors,
            version=str(citation["version"]),
            year=str(citation["date-released"])[:4],
            url=url.rstrip("/"),
            commit="" if commit == "unknown" else commit,
            language=language,
            original_title=citation["title"] if own else "",
        )

    @property
    def bibtex_authors(self) -> str:
        return " and ".join("{" + name + "}" for name in self.authors)

    @property
    def publisher(self) -> str:
        """Who publishes the book: its authors (BibTeX's standard styles
        require a ``publisher`` in a ``@book`` and an ``@incollection``)."""
        return ", ".join(self.authors)


def _person(author: dict) -> str:
    return f"{author.get('given-names', '')} {author.get('family-names', '')}".strip()


def _notes(book: Book, *first: str) -> list[str]:
    """The fields that say which edition, version and commit an entry cites."""
    _ = gettext(book.language or "en")
    notes = [_("This language's edition")] if book.language else []
    notes += list(first)
    provenance = _("Version {version}").format(version=book.version)
    if book.commit:
        provenance = _("Version {version}, commit {commit}").format(
            version=book.version, commit=book.commit
        )
    fields = [f"  note = {{{'. '.join([*notes, provenance])}}},"]
    if book.language:
        language = BIBTEX_LANGUAGES.get(book.language, book.language)
        fields.append(f"  language = {{{language}}},")
    if book.original_title:  # biblatex's field for the title of the original
        fields.append(f"  origtitle = {{{book.original_title}}},")
    return fields


def title_of(root: Path, page: str) -> str:
    """The H1 of a page (after its front matter, whose YAML comments start
    with ``#`` too)."""
    text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
    text = re.sub(r"\A---\n.*?^---$", "", text, count=1, flags=re.M | re.S)
    return re.search(r"^# (.+)$", text, re.M).group(1).strip()


def book_entry(book: Book) -> str:
    """The BibTeX entry of the whole book."""
    fields = [
        f"  title = {{{book.title}}},",
        f"  author = {{{book.bibtex_authors}}},",
        f"  publisher = {{{book.publisher}}},",
        f"  year = {{{book.year}}},",
        f"  edition = {{{book.version}}},",
        *_notes(book),
    ]
    if book.url:
        fields.append(f"  url = {{{book.url}/}},")
    return "@book{attention-computed,\n" + "\n".join(fields) + "\n}"


def chapter_entry(
    book: Book, page: str, number: str, title: str, language: str = "en"
) -> str:
    """The BibTeX entry of one chapter (``page`` such as ``book/masking``);
    no ``chapter`` field without a number (a one-page build)."""
    _ = gettext(language)
    label = Path(page).name
    fields = [
        # In braces: BibTeX's styles lower-case a chapter's title ("Kv cache").
        f"  title = {{{{{title}}}}},",
        f"  booktitle = {{{book.title}}},",
        f"  author = {{{book.bibtex_authors}}},",
        *([f"  chapter = {{{number}}},"] if number else []),
        f"  publisher = {{{book.publisher}}},",
        f"  year = {{{book.year}}},",
        f"  edition = {{{book.version}}},",
        *_notes(book, _("Chapter label: {label}").format(label=label)),
    ]
    if book.url:
        fields.append(f"  url = {{{book.url}/{page}.html}},")
    return f"@incollection{{attention-computed-{label},\n" + "\n".join(fields) + "\n}"


def chapter_reference(
    book: Book, page: str, number: str, title: str, language: str = "en"
) -> str:
    """A one-line reference for a slide: authors, year, chapter, book (and, in a
    translated edition, which edition), version."""
    _ = gettext(language)
    where = f" {book.url}/{page}.html" if book.url else ""
    quoted = _("“{title}”").format(title=title)
    edition = ", " + _("this language's edition") if book.language else ""
    return (
        f"{_(' and ').join(book.authors)} ({book.year}). {_('Chapter')} {number}, "
        f"{quoted}. {_('In')} {book.title}{edition}, {_('version')} "
        f"{book.version}.{where}"
    )


def _reference_paragraph(
    book: Book, page: str, number: str, title: str, language: str = "en"
):
    """:func:`chapter_reference` as a paragraph, the book's title in italics."""
    reference = chapter_reference(book, page, number, title, language)
    before, after = reference.split(book.title, 1)
    return nodes.paragraph(
        "",
        "",
        nodes.Text(before),
        nodes.emphasis(book.title, book.title),
        nodes.Text(after),
    )


def chapter_number(env, page: str) -> str:
    """The chapter's number in the table of contents ("7"), as Sphinx numbers it."""
    for numbers in env.toc_secnumbers.get(page, {}).values():
        if numbers:
            return ".".join(map(str, numbers))
    return ""


def _title(app, page: str) -> str:
    """A chapter's title, translated in a translated build (Sphinx's own)."""

    if "book_languages" in app.config and is_translation(app.config):
        return app.env.titles[page].astext()
    return title_of(book_root(app.srcdir), page)


def _book(app) -> Book:

    root = book_root(app.srcdir)
    translated = "book_languages" in app.config and is_translation(app.config)
    language = base_language(app.config.language) if translated else ""
    # What the edition's overrides name its own (book_i18n_overrides).
    own = (app.config.book_i18n_overrides or {}).get(language, {}) if language else {}
    return Book.read(
        root,
        # In a translation, the address of its folder (bookbuild.i18n.languages).
        app.config.html_baseurl or "",
        # As the footer and the build-info page give it (+changes included).
        build_commit(app),
        language,
        # The edition's full title, else the title of its pages.
        own.get("book_citation_title") or own.get("html_title", ""),
        # The authors as the edition's footer names them ("author").
        [own["author"]] if own.get("author") else None,
    )


def _bibtex_block(text: str) -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = "bibtex"
    return block


def _cite_box(app, doctree: nodes.document, docname: str) -> None:
    """Append the folded "Cite this chapter" box to a lesson page (HTML only;
    not in a one-page build, which has no table of contents)."""
    if app.builder.format != "html" or is_one_page_build(app.srcdir):
        return
    if docname not in lessons(Path(app.srcdir)):
        return
    book = _book(app)
    language = app.config.language or "en"
    _ = gettext(language)
    number = chapter_number(app.env, docname)
    title = _title(app, docname)
    box = nodes.container(classes=["qkv-cite"])
    box += nodes.raw(
        "",
        f'<details class="qkv-cite"><summary>{_("Cite this chapter")}</summary>',
        format="html",
    )
    box += _reference_paragraph(book, docname, number, title, language)
    box += _bibtex_block(chapter_entry(book, docname, number, title, language))
    box += nodes.raw("", "</details>", format="html")
    doctree += box


LABEL_KINDS = [
    (N_("figures"), re.compile(r"^:name: (\S+)", re.M)),
    (
        N_("equations"),
        re.compile(r"^\$\$ \((\S+)\)$|^:label: ((?!\S+-ex\d)\S+)$", re.M),
    ),
    (N_("exercises"), re.compile(r"^:label: (\S+-ex\d+)$", re.M)),
]


def labels_of(text: str) -> dict[str, list[str]]:
    """The stable labels of a chapter source, by kind."""
    found = {}
    for kind, pattern in LABEL_KINDS:
        matches = pattern.findall(text)
        found[kind] = ["".join(m) if isinstance(m, tuple) else m for m in matches]
    return found


class citations_node(nodes.General, nodes.Element):  # noqa: N801 - docutils style
    """Where ``{citations}`` stood: filled once every chapter is numbered."""


class Citations(SphinxDirective):
    """``{citations}``: the book's entry, each chapter's, and the stable labels."""

    def run(self) -> list[nodes.Node]:
        root = book_root(self.env.srcdir)
        self.env.note_dependency(str(root / "CITATION.cff"))
        self.env.note_dependency(str(root / "_toc.yml"))
        return [citations_node()]


def _fill_citations(app, doctree: nodes.document, docname: str) -> None:
    for placeholder in list(doctree.findall(citations_node)):
        root = book_root(app.srcdir)
        book = _book(app)
        language = app.config.language or "en"
        _ = gettext(language)
        new: list[nodes.Node] = [
            nodes.rubric("", _("The book")),
            _bibtex_block(book_entry(book)),
        ]
        new.append(nodes.rubric("", _("Each chapter")))
        entries = []
        table_rows = []
        for page in lessons(root):
            number = chapter_number(app.env, page)
            title = _title(app, page)
            entries.append(chapter_entry(book, page, number, title, language))
            labels = labels_of((root / f"{page}.md").read_text(encoding="utf-8"))
            table_rows.append((Path(page).name, labels))
        new.append(_bibtex_block("\n\n".join(entries)))
        new.append(nodes.rubric("", _("Stable labels")))
        new.append(_labels_table(table_rows, _))
        placeholder.replace_self(new)


def _labels_table(rows, say=str) -> nodes.table:
    headers = [say("chapter")] + [say(kind) for kind, _ in LABEL_KINDS]
    table = nodes.table(classes=["qkv-labels"])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for _ in headers:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += _row(headers, literal=False)
    body = nodes.tbody()
    group += body
    for label, labels in rows:
        body += _row([label] + [labels[kind] for kind, _ in LABEL_KINDS])
    return table


def _row(cells: list[str | list[str]], literal: bool = True) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        paragraph = nodes.paragraph()
        for number, text in enumerate([cell] if isinstance(cell, str) else cell):
            if number:
                paragraph += nodes.Text(", ")
            paragraph += nodes.literal(text, text) if literal else nodes.Text(text)
        row += nodes.entry("", paragraph)
    return row


#: What a one-page build does not report: references to the other pages (their
#: labels, glossary terms, and the bibliography, which is a page of its own).
ONE_PAGE_SUPPRESSED = [
    *("ref.ref", "ref.term", "ref.numref", "ref.doc", "ref.eq"),
    "bibtex.key_not_found",
]


def _one_page_build(app, config) -> None:
    """``jupyter-book build book/<page>.md``: the book's files (named relative
    to the book's folder) found from the page's folder; no warning for a
    reference to another page."""
    import os

    srcdir = Path(app.srcdir)
    if not is_one_page_build(srcdir):
        return
    root = book_root(srcdir)

    def from_page(name: str) -> str:
        if not name or "://" in name or not (root / name).is_file():
            return name
        return os.path.relpath(root / name, srcdir)

    for setting in ("html_logo", "html_favicon"):
        if getattr(config, setting, None):
            setattr(config, setting, from_page(getattr(config, setting)))
    if getattr(config, "bibtex_bibfiles", None):
        config.bibtex_bibfiles = [from_page(name) for name in config.bibtex_bibfiles]
    config.suppress_warnings = [*config.suppress_warnings, *ONE_PAGE_SUPPRESSED]


def cached_entry_points(original):
    """pybtex's ``entry_points``, each lookup made once per build: pybtex looks
    up its plugins (styles, backends) at every bibliography and citation, 156
    times a build, and each lookup reads every installed distribution's entry
    points (5 ms), about 0.8 s of each language's build."""

    @functools.cache
    def lookup(group: str | None = None, name: str | None = None) -> tuple:
        found = original(group=group, name=name) if name else original(group=group)
        return tuple(found)

    def entry_points(group: str | None = None, name: str | None = None) -> tuple:
        return lookup(group, name)

    return entry_points


def setup(app) -> dict:
    app.setup_extension("bookbuild.site.style")  # the box's style
    app.setup_extension("bookbuild.patches")  # pybtex's plugin lookups, cached
    # A translated edition's full title, set in its book_i18n_overrides.
    app.add_config_value("book_citation_title", "", "html", [str])
    app.connect("config-inited", _one_page_build)
    app.add_node(citations_node)
    app.add_directive("citations", Citations)
    app.connect("doctree-resolved", _cite_box)
    app.connect("doctree-resolved", _fill_citations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
