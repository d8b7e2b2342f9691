"""How to cite the book and each chapter, from one source: ``CITATION.cff``.

Problem: a lecturer who cites a chapter in a slide needs its BibTeX where they read
it, with the current version, the chapter's number and a link that works; the cite
page alone (one long page of BibTeX) makes them search.

Answer: one function, :func:`chapter_entry`, writes a chapter's reference from
``CITATION.cff`` (title, authors, version, year), the chapter's number as the
table of contents gives it, its stable label and, when the book has a public
address (``html.baseurl`` in ``_config.yml``, which the publishing workflow
fills), its URL. This Sphinx extension uses it twice:

* every lesson page ends with a folded "Cite this chapter" box: a one-line
  reference and the BibTeX entry (with the theme's copy button);
* the directive ``{citations}`` on the cite page lists the book's entry, every
  chapter's entry and the stable labels of their figures, equations and exercises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from bookbuild.i18n.messages import gettext
from bookbuild.toc import lessons


@dataclass
class Book:
    """What ``CITATION.cff`` says of the book."""

    title: str
    authors: list[str]
    version: str
    year: str
    url: str  # the site's address, "" when the book has none

    @classmethod
    def read(cls, root: Path, url: str = "") -> Book:
        citation = yaml.safe_load((Path(root) / "CITATION.cff").read_text("utf-8"))
        return cls(
            title=citation["title"],
            authors=[a.get("name") or _person(a) for a in citation["authors"]],
            version=str(citation["version"]),
            year=str(citation["date-released"])[:4],
            url=url.rstrip("/"),
        )

    @property
    def bibtex_authors(self) -> str:
        return " and ".join("{" + name + "}" for name in self.authors)


def _person(author: dict) -> str:
    return f"{author.get('given-names', '')} {author.get('family-names', '')}".strip()


def title_of(root: Path, page: str) -> str:
    """The H1 of a page."""
    text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
    return re.search(r"^# (.+)$", text, re.M).group(1).strip()


def book_entry(book: Book) -> str:
    """The BibTeX entry of the whole book."""
    fields = [
        f"  title = {{{book.title}}},",
        f"  author = {{{book.bibtex_authors}}},",
        f"  year = {{{book.year}}},",
        f"  edition = {{{book.version}}},",
    ]
    if book.url:
        fields.append(f"  url = {{{book.url}/}},")
    return "@book{attention-computed,\n" + "\n".join(fields) + "\n}"


def chapter_entry(
    book: Book, page: str, number: str, title: str, language: str = "en"
) -> str:
    """The BibTeX entry of one chapter (``page`` such as ``book/masking``)."""
    _ = gettext(language)
    label = Path(page).name
    fields = [
        f"  title = {{{title}}},",
        f"  booktitle = {{{book.title}}},",
        f"  author = {{{book.bibtex_authors}}},",
        f"  chapter = {{{number}}},",
        f"  year = {{{book.year}}},",
        f"  edition = {{{book.version}}},",
        f"  note = {{{_('Chapter label: {label}').format(label=label)}}},",
    ]
    if book.url:
        fields.append(f"  url = {{{book.url}/{page}.html}},")
    return f"@incollection{{attention-computed-{label},\n" + "\n".join(fields) + "\n}"


def chapter_reference(
    book: Book, page: str, number: str, title: str, language: str = "en"
) -> str:
    """A one-line reference for a slide: authors, year, chapter, book, version."""
    _ = gettext(language)
    where = f" {book.url}/{page}.html" if book.url else ""
    quoted = _("“{title}”").format(title=title)
    return (
        f"{_(' and ').join(book.authors)} ({book.year}). {_('Chapter')} {number}, "
        f"{quoted}. {_('In')} {book.title}, {_('version')} {book.version}.{where}"
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
    from bookbuild.i18n.languages import is_translation

    if "book_languages" in app.config and is_translation(app.config):
        return app.env.titles[page].astext()
    return title_of(Path(app.srcdir), page)


def _book(app) -> Book:
    return Book.read(Path(app.srcdir), app.config.html_baseurl or "")


def _bibtex_block(text: str) -> nodes.literal_block:
    block = nodes.literal_block(text, text)
    block["language"] = "bibtex"
    return block


def _cite_box(app, doctree: nodes.document, docname: str) -> None:
    """Append the folded "Cite this chapter" box to a lesson page (HTML only)."""
    if app.builder.format != "html" or docname not in lessons(Path(app.srcdir)):
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
    ("figures", re.compile(r"^:name: (\S+)", re.M)),
    ("equations", re.compile(r"^\$\$ \((\S+)\)$|^:label: ((?!\S+-ex\d)\S+)$", re.M)),
    ("exercises", re.compile(r"^:label: (\S+-ex\d+)$", re.M)),
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
        root = Path(self.env.srcdir)
        self.env.note_dependency(str(root / "CITATION.cff"))
        self.env.note_dependency(str(root / "_toc.yml"))
        return [citations_node()]


def _fill_citations(app, doctree: nodes.document, docname: str) -> None:
    for placeholder in list(doctree.findall(citations_node)):
        root = Path(app.srcdir)
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


def setup(app) -> dict:
    app.setup_extension("bookbuild.site.style")  # the box's style
    app.add_node(citations_node)
    app.add_directive("citations", Citations)
    app.connect("doctree-resolved", _cite_box)
    app.connect("doctree-resolved", _fill_citations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
