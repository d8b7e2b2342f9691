"""The execution-time table of the build-info page in the page's language."""

from __future__ import annotations

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from bookbuild.site.build_info import EXEC_TABLE_HEADERS, translate_exec_table


def _document_with_table(headers, cells=None) -> nodes.document:
    document = new_document("test", get_default_settings(Parser))
    table = nodes.table()
    tgroup = nodes.tgroup(cols=len(headers))
    table += tgroup
    thead = nodes.thead()
    tgroup += thead
    row = nodes.row()
    thead += row
    for header in headers:
        row += nodes.entry("", nodes.paragraph(text=header))
    tbody = nodes.tbody()
    tgroup += tbody
    body_row = nodes.row()
    tbody += body_row
    for cell in cells or ["cache"] * len(headers):
        body_row += nodes.entry("", nodes.paragraph(text=cell))
    document += table
    return document


def test_the_execution_table_headers_in_french_and_english_unchanged():
    french = _document_with_table(EXEC_TABLE_HEADERS)
    assert translate_exec_table(french, "fr") == 1
    headers = [
        entry.astext()
        for thead in french.findall(nodes.thead)
        for entry in thead.findall(nodes.entry)
    ]
    assert headers == ["Document", "Modifié le", "Méthode", "Durée (s)", "État"]
    assert "cache" in french.astext()  # the cells stay as myst-nb wrote them

    english = _document_with_table(EXEC_TABLE_HEADERS)
    assert translate_exec_table(english, "en") == 1
    assert EXEC_TABLE_HEADERS[3] in english.astext()

    other = _document_with_table(["part", "parameters"])
    assert translate_exec_table(other, "fr") == 0
    assert "parameters" in other.astext()


def test_the_durations_in_the_page_language():
    cells = ["book/masking", "2026-12-02 04:56", "cache", "1.88", "✅"]
    french = _document_with_table(EXEC_TABLE_HEADERS, cells)
    assert translate_exec_table(french, "fr") == 1
    body = [e.astext() for e in next(french.findall(nodes.tbody)).findall(nodes.entry)]
    assert body == ["book/masking", "2026-12-02 04:56", "cache", "1,88", "✅"]
    english = _document_with_table(EXEC_TABLE_HEADERS, cells)
    translate_exec_table(english, "en")
    assert "1.88" in english.astext()
