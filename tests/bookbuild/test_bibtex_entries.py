"""The BibTeX entries the book offers (bookbuild.site.citation) and its
``CITATION.cff``: read whole by BibTeX and CFF tools, with no warning.

No ``bibtex`` binary and no ``.bst`` file on the build machine: the entries go
through pybtex's own plain, unsrt and alpha styles in strict mode (a missing
field or a parse error raises), and each entry holds the fields that the
classic ``plain.bst`` requires of its type (a missing one is its "empty
publisher" warning)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pybtex import errors
from pybtex.database import parse_string
from pybtex.plugin import find_plugin

from bookbuild.site.citation import Book, book_entry, chapter_entry
from bookbuild.site.urls import set_citation

ROOT = Path(__file__).resolve().parents[2]
SITE = "https://example-org.github.io/attention-book"

#: The fields ``plain.bst`` (and unsrt.bst, alpha.bst) warns about when empty.
REQUIRED = {
    "book": ("author", "title", "publisher", "year"),
    "incollection": ("author", "title", "booktitle", "publisher", "year"),
}


def _books() -> list[Book]:
    french = dict(
        language="fr",
        title="L’attention, calculée : un manuel exécutable",
        authors=["Les auteurs de «\u00a0L’attention, calculée\u00a0»"],
    )
    return [
        Book.read(ROOT),  # a lecturer's local build: no address, no commit
        Book.read(ROOT, url=SITE + "/", commit="407d65c+changes"),
        Book.read(ROOT, url=SITE + "/fr", commit="407d65c", **french),
    ]


def _entries(book: Book) -> str:
    chapters = [
        chapter_entry(book, "book/masking", "3", "Masking", book.language or "en"),
        chapter_entry(book, "book/kv-cache", "9", "The KV cache"),
        chapter_entry(book, "book/faq", "", "FAQ"),  # a one-page build: no number
    ]
    return "\n\n".join([book_entry(book), *chapters])


@pytest.fixture
def strict():
    errors.set_strict_mode(True)
    yield
    errors.set_strict_mode(False)


@pytest.mark.parametrize("style", ["plain", "unsrt", "alpha"])
def test_the_standard_styles_format_every_entry_without_a_warning(strict, style):
    formatter = find_plugin("pybtex.style.formatting", style)()
    backend = find_plugin("pybtex.backends", "text")()
    for book in _books():
        data = parse_string(_entries(book), "bibtex")
        assert len(data.entries) == 4
        for key, entry in data.entries.items():
            for name in REQUIRED[entry.type]:
                present = entry.persons.get(name) or entry.fields.get(name, "")
                assert str(present).strip(), (key, name)
            authors = entry.persons["author"]  # each read whole, as one name
            assert len(authors) == len(book.authors), authors
            assert all(not a.first_names and len(a.last_names) == 1 for a in authors)
        formatted = formatter.format_entries(data.entries.values())
        texts = [entry.text.render(backend) for entry in formatted]
        publisher = book.publisher.replace("\xa0", " ")
        for text in texts:
            assert publisher in text and book.year in text, text
        assert "The KV cache." in "".join(texts) and "FAQ." in "".join(texts)


def test_an_entry_has_the_address_only_when_the_site_has_one():
    local, published, french = _books()
    for book in (local, published, french):
        text = _entries(book)
        assert "url = {}" not in text and "publisher = {}" not in text
    assert "url =" not in _entries(local)
    assert f"url = {{{SITE}/book/masking.html}}," in _entries(published)
    assert "title = {{Masking}}," in _entries(local)
    assert f"url = {{{SITE}/}}," in _entries(published)
    assert f"url = {{{SITE}/fr/book/masking.html}}," in _entries(french)
    assert "commit 407d65c+changes}," in _entries(published)


#: The top-level keys of the Citation File Format 1.2.0 schema.
CFF_KEYS = {
    *("abstract", "authors", "cff-version", "commit", "contact", "date-released"),
    *("doi", "identifiers", "keywords", "license", "license-url", "message"),
    *("preferred-citation", "references", "repository", "repository-artifact"),
    *("repository-code", "title", "type", "url", "version"),
}
CFF_REQUIRED = {"authors", "cff-version", "message", "title"}
PERSON_KEYS = {"family-names", "given-names", "name-particle", "name-suffix"}


def _check_cff(cff: dict) -> None:
    assert CFF_REQUIRED <= set(cff) <= CFF_KEYS, set(cff) ^ CFF_KEYS
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] in ("software", "dataset")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(cff["date-released"]))
    for author in [
        *cff["authors"],
        *(a for r in cff["references"] for a in r["authors"]),
    ]:
        # An entity (name) or a person (family-names...), never both.
        assert ("name" in author) != bool(PERSON_KEYS & set(author)), author
        # CFF tools write an entity's name into BibTeX as it is: a comma
        # would split it into a family name and given names.
        assert "," not in author.get("name", ""), author
    for key in ("url", "repository-code"):
        if key in cff:
            assert re.fullmatch(r"https://\S+", cff[key]), cff[key]


def test_citation_cff_parses_and_has_the_structure_of_cff_1_2():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    _check_cff(yaml.safe_load(text))
    repository = "https://github.com/example-org/attention-book"
    published = yaml.safe_load(set_citation(text, repository, SITE + "/", "0" * 40))
    _check_cff(published)  # as make addresses leaves it
    assert published["url"] == SITE + "/"
    assert published["repository-code"] == repository
    assert Book.read(ROOT).authors == ["The authors of Attention Computed"]


def test_every_place_names_the_authors_as_citation_cff_does():
    """_config.yml (the site's footer and BibTeX) and the package's metadata name
    the authors as CITATION.cff does, a name CFF tools read whole."""
    import tomllib

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    (name,) = [author["name"] for author in cff["authors"]]
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["author"] == name
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["authors"] == [{"name": name}]
