"""The French edition's own chrome (issue 24): its logo and the edition's name
under it, its citations (title, authors, edition, address under fr/), the
source its "download" button serves, and the French handouts linked from its
pages. The checks of the built site read the session's build (``built_book``);
the others build nothing."""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path
from types import SimpleNamespace

from pypdf import PdfReader, PdfWriter

from bookbuild.i18n.catalogues import page_messages, sphinx_config
from bookbuild.i18n.code import translated_source
from bookbuild.site import citation
from bookbuild.site.edition import UNTRANSLATED, translate_source
from bookbuild.tools import handouts

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
FR = HTML / "fr"
CHAPTER = "book/masking"
OVERRIDES = sphinx_config(ROOT)["book_i18n_overrides"]["fr"]


def page(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def text(html: str) -> str:
    """What a reader reads (and copies) of some HTML."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def logo(html: str) -> str:
    """The sidebar's logo link of a page."""
    found = re.search(r'<a class="navbar-brand logo".*?</a>', html, re.S)
    assert found, "no logo"
    return found[0]


# -- the logo ----------------------------------------------------------------------


def test_the_french_logo_is_the_english_one_with_french_words():
    english = page(ROOT / "img" / "logo.svg")
    french = page(ROOT / "img" / OVERRIDES["html_logo"].removeprefix("img/"))
    assert ">Attention,</text>" in english and ">Computed</text>" in english
    assert ">L’attention,</text>" in french and ">calculée</text>" in french
    assert "<title>L’attention, calculée</title>" in french
    assert not re.search(r"Attention|Computed", french)
    # Same drawing and style: only the words differ.
    drawing = [line for line in english.splitlines() if "<text" not in line]
    assert [line for line in french.splitlines() if "<text" not in line] == [
        line.replace("Attention, Computed", "L’attention, calculée") for line in drawing
    ]
    words = re.compile(r">[^<]*</text>")
    assert [words.sub("", line) for line in french.splitlines() if "<text" in line] == [
        words.sub("", line) for line in english.splitlines() if "<text" in line
    ]


def test_french_pages_show_the_french_logo_and_name_the_edition(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    for name in ["book/intro", CHAPTER, "search"]:
        french = logo(page(FR / f"{name}.html"))
        assert "_static/logo-fr.svg" in french and "logo.svg" not in french, name
        alts = re.findall(r'alt="([^"]*)"', french)
        assert alts and set(alts) == {"L’attention, calculée – Accueil"}, alts
        assert '<p class="title logo__title">Édition française</p>' in french
        english = logo(page(HTML / f"{name}.html"))
        assert "_static/logo.svg" in english and "Édition" not in english, name
        assert 'alt="Attention, Computed - Home"' in english
    assert (FR / "_static" / "logo-fr.svg").is_file()
    footer = text(page(FR / f"{CHAPTER}.html").split("<footer", 1)[1])
    assert "Les auteurs de «\u00a0L’attention, calculée\u00a0»" in footer
    assert "L’attention, calculée 0." in footer and "Computed" not in footer


# -- citations -----------------------------------------------------------------------


def entries(html: str) -> list[str]:
    return re.findall(r"@\w+\{attention-computed[^@]*?\n\}", text(html))


def test_the_french_citations_give_the_french_edition(built_book):
    """Title and ``booktitle`` the French edition's, its authors' name in French,
    « édition française » in the one-line reference and the note; the English
    title only as ``origtitle``."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    full = OVERRIDES["book_citation_title"]
    chapter = page(FR / f"{CHAPTER}.html")
    box = text(chapter.split('<details class="qkv-cite">', 1)[1])
    authors = OVERRIDES["author"]
    assert authors == "Les auteurs de «\u00a0L’attention, calculée\u00a0»"
    assert re.search(
        rf"{re.escape(authors)} \(\d{{4}}\)\. Chapitre \d+, "
        rf"«\u00a0Le masquage\u00a0»\. Dans {re.escape(full)}, "
        r"édition française, version [\d.]+\.",
        box,
    ), box[:400]
    assert f"<em>{full}</em>, édition française" in chapter
    cite = entries(page(FR / "book" / "cite.html"))
    assert len(cite) > 10
    for entry in [*cite, *entries(chapter)]:
        field = "title" if entry.startswith("@book") else "booktitle"
        assert f"  {field} = {{{full}}}," in entry, entry
        assert f"  author = {{{{{authors}}}}}," in entry, entry
        assert "note = {Édition française. " in entry and "language = {french}" in entry
        assert "  origtitle = {Attention, Computed: " in entry, entry
        others = [line for line in entry.splitlines() if "origtitle" not in line]
        assert "Computed" not in "\n".join(others), entry
    english = page(HTML / f"{CHAPTER}.html")
    assert "In <em>Attention, Computed: an executable textbook" in english
    assert "origtitle" not in english and "édition" not in english


def test_a_published_french_entry_gives_the_french_address():
    """With the site's address set (``make addresses``), the French edition's
    entries and reference point under ``fr/``, from the same ``_config.yml``
    overrides as the build (no book built)."""
    from bookbuild.i18n.languages import _apply_overrides

    class Config(SimpleNamespace):  # what Sphinx's Config answers to "in"
        def __contains__(self, name: str) -> bool:
            return hasattr(self, name)

    settings = sphinx_config(ROOT)
    config = Config(
        language="fr",
        html_baseurl="https://example.org/attention/",
        html_title="Attention, Computed",
        author="The authors of Attention Computed",
        html_theme_options={},
        book_languages=settings["book_languages"],
        book_i18n_overrides=settings["book_i18n_overrides"],
    )
    _apply_overrides(None, config)
    book = citation._book(SimpleNamespace(config=config, srcdir=str(ROOT)))
    assert book.url == "https://example.org/attention/fr"
    assert book.title == OVERRIDES["book_citation_title"]
    assert book.original_title.startswith("Attention, Computed")
    entry = citation.chapter_entry(book, CHAPTER, "7", "Le masquage", "fr")
    assert "url = {https://example.org/attention/fr/book/masking.html}," in entry
    line = citation.chapter_reference(book, CHAPTER, "7", "Le masquage", "fr")
    assert line.endswith(" https://example.org/attention/fr/book/masking.html")
    assert "url = {https://example.org/attention/fr/}," in citation.book_entry(book)


# -- the source download ------------------------------------------------------------


def test_translate_source_leaves_front_matter_and_code_alone():
    code = (
        "```{code-cell} ipython3\n# Masking\n"
        "print('A mask says which pairs may attend.')\n```\n\n"
    )
    source = (
        "---\njupytext:\n  text_representation: x\n---\n\n# Masking\n\n"
        "A mask says which pairs\nmay attend.\n\n"
        + code
        + "- A mask says which pairs may attend.\n"
    )
    messages = {
        "Masking": "Le masquage",
        "A mask says which pairs may attend.": "Un masque dit quelles paires.",
    }
    translated = translate_source(source, messages)
    assert translated == (
        "---\njupytext:\n  text_representation: x\n---\n\n# Le masquage\n\n"
        "Un masque dit quelles paires.\n\n" + code + "- Un masque dit quelles paires.\n"
    )
    assert translate_source(source, {}) == source


def test_the_french_source_download_serves_the_french_chapter(built_book):
    """« Télécharger le fichier source » on a French page: the chapter's
    Markdown with its prose in French (every message of its catalogue that is
    in the source), the same front matter as the English one, and the code
    cells the French edition runs (comments and strings in French)."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    html = page(FR / f"{CHAPTER}.html")
    button = re.search(r'<a href="([^"]+)"[^>]*\n[^>]*btn-download-source-button', html)
    assert button and button[1] == "../_sources/book/masking.md", button
    assert 'title="Télécharger le fichier source"' in html
    english = page(ROOT / f"{CHAPTER}.md")
    for name in ["book/intro", CHAPTER, "book/glossary", "book/cost-of-attention"]:
        source = page(ROOT / f"{name}.md")
        served = page(FR / "_sources" / f"{name}.md")
        assert served != source, name
        french_code = translated_source(ROOT, name, "fr")
        assert [m[0] for m in UNTRANSLATED.finditer(served)] == [
            m[0] for m in UNTRANSLATED.finditer(french_code)
        ], name
        flat = " ".join(served.split())
        messages = page_messages(ROOT, "fr", name)
        prose = " ".join(UNTRANSLATED.sub(" ", source).split())
        in_source = [
            msgid
            for msgid in messages
            # (a word or two, such as "NaN", may be a glued phrase's)
            if len(msgid.split()) > 2
            and " ".join(msgid.split()) in prose
            and messages[msgid]
            and messages[msgid] != msgid
        ]
        sentences = [msgid for msgid in messages if len(msgid.split()) > 2]
        # The others are phrases glued by the code (a quarter of the cost of
        # attention's), not in the Markdown.
        assert len(in_source) >= 0.7 * len(sentences), name
        missing = [m for m in in_source if " ".join(messages[m].split()) not in flat]
        assert not missing, (name, missing[:3])
    assert page(FR / "_sources" / f"{CHAPTER}.md").count("\n# Le masquage\n") == 1
    assert "\n# Masking\n" in english
    # The English site's sources stay English.
    assert page(HTML / "_sources" / f"{CHAPTER}.md") == english


def test_the_french_notebook_download_is_french(built_book):
    """The other download of a French page, its notebook: French prose, and
    the code the French edition runs (the same cells, in French)."""
    import nbformat

    assert built_book.returncode == 0, built_book.output[-3000:]
    assert 'href="../_notebooks/masking.ipynb"' in page(FR / f"{CHAPTER}.html")
    french = nbformat.read(FR / "_notebooks" / "masking.ipynb", as_version=4)
    english = nbformat.read(HTML / "_notebooks" / "masking.ipynb", as_version=4)
    titles = [c.source for c in french.cells if c.cell_type == "markdown"]
    assert titles and titles[0].startswith("# Le masquage"), titles[:1]
    code = [c.source for c in english.cells if c.cell_type == "code"][1:]
    french_code = [c.source for c in french.cells if c.cell_type == "code"][1:]
    assert len(french_code) == len(code)
    assert 'qkv.set_language("fr")' in french_code[0]
    assert "# ce chapitre ne fait que des passes avant" in french_code[0]


# -- the handouts -------------------------------------------------------------------


def fake_handout(path: Path, language: str) -> Path:
    """A one-page PDF that says which edition it was printed from."""
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_metadata({"/Subject": f"edition {language or 'en'}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        writer.write(out)
    return path


def test_make_pdf_links_the_french_pages_to_the_french_handouts(
    built_book, tmp_path, monkeypatch
):
    """``make pdf`` (``handouts.main``) on a copy of a few built pages, the
    printing replaced by one-page PDFs marked with their edition: each French
    chapter links its French handout, the French introduction the French whole
    book; the English pages the English ones."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    root = tmp_path / "book"
    root.mkdir()
    for name in ["_config.yml", "_toc.yml", "book", "locales"]:
        (root / name).symlink_to(ROOT / name)
    chosen = ["book/intro", CHAPTER, "book/self-attention"]
    for language in ["", "fr"]:
        site = root / "_build" / "html" / language
        (site / "book").mkdir(parents=True)
        shutil.copy(HTML / language / "index.html", site)
        for name in chosen:
            shutil.copy(HTML / language / f"{name}.html", site / "book")

    def print_pages(pages, root, language="", edition="full", solutions=False):
        """As ``make pdf``: each print kept unnumbered too, and the pages it
        printed recorded (the site links only what prints its page)."""
        out = handouts.pdf_folder(root, language, edition, solutions)
        site = handouts.site(root, language, edition)
        printed = []
        for name in pages:
            target = out / f"{Path(name).name}.pdf"
            fake_handout(handouts.unnumbered(target), language)
            printed.append(fake_handout(target, language))
        fingerprints = {
            p: handouts.fingerprint(site / f"{p}.html")
            for p in pages
            if (site / f"{p}.html").exists()  # only a few pages are copied
        }
        handouts.record(out, {"pages": fingerprints})
        return printed

    monkeypatch.setattr(handouts, "print_pages", print_pages)
    handouts.main([], root)

    def edition_of(pdf: Path) -> str:
        return PdfReader(pdf).metadata.subject

    for language, expected in [("", "edition en"), ("fr", "edition fr")]:
        site = root / "_build" / "html" / language
        for name in [CHAPTER, "book/self-attention"]:
            html = page(site / f"{name}.html")
            href = re.search(r'class="qkv-handout-link" href="([^"]+)"', html)
            assert href, (language, name)
            assert edition_of((site / "book" / href[1]).resolve()) == expected
        intro = page(site / "book" / "intro.html")
        href = re.search(r'<a class="qkv-book-pdf" href="([^"]+)"', intro)
        assert href and href[1] == "../book.pdf", language
    english_book = PdfReader(root / "_build" / "html" / "book.pdf")
    assert english_book.metadata.title == "Attention, Computed"
    french_book = PdfReader(root / "_build" / "html" / "fr" / "book.pdf")
    assert french_book.metadata.title == "L’attention, calculée"
    assert "Le masquage" in [item.title for item in french_book.outline]
    label = page(root / "_build" / "html" / "fr" / f"{CHAPTER}.html")
    assert ">Télécharger ce chapitre en PDF</a>" in label
