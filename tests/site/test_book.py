"""Checks of the built book: strict build, every chapter executed, nothing external."""

from __future__ import annotations

import pickle
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bookbuild.execute import kernels
from bookbuild.toc import is_notebook, lessons, pages

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "_build"
HTML = BUILD / "html"


pytestmark = pytest.mark.book


def test_book_builds_strictly(built_book):
    tail = built_book.output[-4000:]
    assert built_book.returncode == 0, f"strict build failed:\n{tail}"
    assert "build succeeded" in built_book.output, tail


def test_the_build_prints_no_error_line_of_a_kernel(built_book):
    """jupyter_client interrupts each kernel before it shuts it down; a kernel
    still ending a request logged an ERROR line for it (kernel_config)."""
    assert "KeyboardInterrupt caught in kernel" not in built_book.output
    assert "[IPKernelApp] ERROR" not in built_book.output


def test_chapters_ran_in_kernels_forked_from_the_warm_process(built_book):
    if "prefill: all chapters cached" in built_book.output:
        pytest.skip("every chapter came from the execution cache: nothing ran")
    launches = re.search(
        r"kernels: (\d+) forked from the warm process, (\d+) ordinary",
        built_book.output,
    )
    assert launches, built_book.output[-3000:]
    forked, ordinary = map(int, launches.groups())
    if kernels.enabled():
        assert forked > 0 and ordinary == 0, (forked, ordinary)
    else:
        assert forked == 0 and ordinary > 0, (forked, ordinary)


def test_every_listed_page_is_built(built_book):
    for page in pages(ROOT):
        assert (HTML / f"{page}.html").is_file(), f"{page} is in _toc.yml but not built"


def test_every_chapter_executed_without_error(built_book):
    with open(BUILD / ".doctrees" / "environment.pickle", "rb") as handle:
        env = pickle.load(handle)
    notebooks = [page for page in pages(ROOT) if is_notebook(ROOT, page)]
    assert notebooks, "no executable chapter found"
    for page in notebooks:
        data = env.nb_metadata.get(page, {}).get("exec_data")
        assert data is not None, f"{page} was not executed"
        assert data["succeeded"], f"{page} failed:\n{data.get('traceback')}"
    reports = HTML / "reports"
    failures = list(reports.glob("**/*")) if reports.exists() else []
    assert not failures, f"execution reports left by failing cells: {failures}"


class _Resources(HTMLParser):
    """Collects every URL a page would load (not plain links a reader may follow)."""

    LOADING_RELS = {"stylesheet", "icon", "preload", "modulepreload", "manifest"}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.images: list[dict[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag in {"script", "img", "iframe", "audio", "video", "source", "embed"}:
            self.urls.append(attributes.get("src") or "")
        if tag == "img":
            self.images.append(attributes)
        if tag in {"img", "source"} and attributes.get("srcset"):
            self.urls.extend(p.split()[0] for p in attributes["srcset"].split(","))
        if tag == "object":
            self.urls.append(attributes.get("data") or "")
        if tag == "link" and self.LOADING_RELS & set(
            (attributes.get("rel") or "").split()
        ):
            self.urls.append(attributes.get("href") or "")
        style = attributes.get("style") or ""
        self.urls.extend(re.findall(r"url\(\s*['\"]?([^'\")]+)", style))


EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


def html_pages() -> list[Path]:
    return sorted(p for p in HTML.rglob("*.html") if "_static" not in p.parts)


def test_site_loads_nothing_from_outside(built_book):
    assert built_book.returncode == 0
    pages = html_pages()
    assert pages
    for page in pages:
        parser = _Resources()
        parser.feed(page.read_text(encoding="utf-8"))
        external = [url for url in parser.urls if url and EXTERNAL.match(url)]
        assert not external, f"{page.relative_to(HTML)} loads {external}"
    for sheet in HTML.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        urls = re.findall(r"url\(\s*['\"]?([^'\")]+)", text)
        external = [url for url in urls if EXTERNAL.match(url)]
        assert not external, f"{sheet.relative_to(HTML)} loads {external}"
        imports = re.findall(r"@import\s+['\"]((?:https?:)?//[^'\"]+)", text)
        assert not imports, f"{sheet.relative_to(HTML)} imports {imports}"


def machine_paths() -> set[str]:
    """Folders of this machine that a page must never show: the book's folder,
    the environment's, the home folder and the temporary folder."""
    import site
    import sysconfig
    import tempfile

    folders = {
        ROOT,
        Path(sysconfig.get_paths()["purelib"]),
        Path(tempfile.gettempdir()),
    }
    folders |= {Path(p) for p in site.getsitepackages()} | {Path.home()}
    return {str(folder.resolve()) for folder in folders if len(folder.parts) > 1}


def test_no_machine_path_in_the_site(built_book):
    """No page, notebook, source or index of the site gives a path of the
    machine that built it (a traceback's file names, a library's warning)."""
    assert built_book.returncode == 0
    paths = machine_paths()
    assert str(ROOT.resolve()) in paths
    leaks, checked = [], 0
    for file in HTML.rglob("*"):
        if not file.is_file() or file.suffix not in {".html", ".ipynb", ".js", ".txt"}:
            continue
        if "_static" in file.parts and file.suffix == ".js":
            continue  # the theme's and MathJax's scripts
        text = file.read_text(encoding="utf-8", errors="replace")
        checked += 1
        leaks += [f"{file.relative_to(HTML)}: {p}" for p in paths if p in text]
    assert checked > 20, checked
    assert not leaks, "\n".join(leaks)


ICON = re.compile(r'<link rel="(?:shortcut )?icon" href="([^"]+)"')


def test_every_page_declares_an_icon_that_exists(built_book):
    """A page without an icon makes the browser ask /favicon.ico: a 404."""
    for page in html_pages():
        found = ICON.search(page.read_text(encoding="utf-8"))
        name = page.relative_to(HTML)
        assert found, f"{name} declares no icon"
        if found[1].startswith("data:image/"):
            continue  # inlined (the site root: a request would race its redirect)
        assert (page.parent / found[1]).is_file(), f"{name}: no file {found[1]}"


def test_site_root_redirects_to_the_first_page(built_book):
    index = (HTML / "index.html").read_text(encoding="utf-8")
    first = pages(ROOT)[0]
    assert f'content="0; url={first}.html"' in index
    assert f'<a href="{first}.html">' in index, "no link for browsers without redirects"
    icon = ICON.search(index)[1]
    assert icon.startswith("data:image/svg+xml;base64,"), "the icon must not be fetched"


def test_math_is_served_locally(built_book):
    assert (HTML / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    fonts = list((HTML / "_static" / "mathjax" / "output").rglob("*.woff"))
    assert fonts, "MathJax fonts were not copied"


def test_every_figure_has_alt_text(built_book):
    for page in pages(ROOT):
        parser = _Resources()
        parser.feed((HTML / f"{page}.html").read_text(encoding="utf-8"))
        for image in parser.images:
            if "_images/" in (image.get("src") or ""):
                alt = (image.get("alt") or "").strip()
                assert alt, f"{page}: image {image.get('src')} has no alt text"


def test_no_launch_or_thebe_buttons(built_book):
    for page in pages(ROOT):
        html = (HTML / f"{page}.html").read_text(encoding="utf-8")
        for marker in ("thebe", "binder", "colab.research", "launch-buttons"):
            assert marker not in html.lower(), f"{page} contains {marker!r}"


def test_cite_page_has_one_entry_per_chapter(built_book):
    lessons_ = lessons(ROOT)
    page = (HTML / "book" / "cite.html").read_text(encoding="utf-8")
    for number, lesson in enumerate(lessons_, 1):
        label = Path(lesson).name
        assert f"attention-computed-{label}" in page, label
        entry = page.split(f"attention-computed-{label}", 1)[1][:2000]
        assert re.search(rf"chapter\W+=\W+\{{{number}\}}", re.sub("<[^>]+>", "", entry))


def test_every_page_footer_gives_provenance(built_book):
    import torch

    checked = 0
    for page in html_pages():
        html = page.read_text(encoding="utf-8")
        if "bd-footer" not in html:
            continue  # redirects and the like
        checked += 1
        match = re.search(r'qkv-provenance">([^<]*)<', html)
        assert match, f"{page.relative_to(HTML)} has no provenance footer"
        provenance = match.group(1)
        assert "commit" in provenance and f"torch {torch.__version__}" in provenance
    assert checked >= len(pages(ROOT))


def test_build_info_page_is_stamped(built_book):
    page = (HTML / "book" / "build-info.html").read_text(encoding="utf-8")
    assert "%%BUILD" not in page
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", page)
    assert page.count("<tr") > 10  # the versions and the execution times


def test_chapters_link_their_terms_to_the_glossary(built_book):
    glossary = (HTML / "book" / "glossary.html").read_text(encoding="utf-8")
    terms = set(re.findall(r'id="term-([^"]+)"', glossary))
    assert len(terms) >= 20
    linking = [
        page
        for page in pages(ROOT)
        if "glossary.html#term-" in (HTML / f"{page}.html").read_text(encoding="utf-8")
    ]
    assert len(linking) >= 6, linking
    for page in linking:  # every link points at a defined term
        html = (HTML / f"{page}.html").read_text(encoding="utf-8")
        for term in re.findall(r'glossary\.html#term-([^"]+)"', html):
            assert term in terms, (page, term)


def test_publishing_workflow_tests_then_deploys_main():
    import yaml

    workflow = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "publish.yml").read_text(encoding="utf-8")
    )
    steps = workflow["jobs"]["test"]["steps"]
    assert any(".ci/run" in step.get("run", "") for step in steps)
    upload = [s for s in steps if "upload-pages-artifact" in s.get("uses", "")]
    assert upload and upload[0]["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "test" and "refs/heads/main" in deploy["if"]
    assert any("deploy-pages" in s.get("uses", "") for s in deploy["steps"])


def test_no_glue_call_is_visible_on_the_site(built_book):
    """The bookkeeping cells are removed from the pages, folded code included."""
    for page in pages(ROOT):
        html = (HTML / f"{page}.html").read_text(encoding="utf-8")
        code = " ".join(
            re.sub(r"<[^>]+>", "", block)
            for block in re.findall(r'<div class="cell_input.*?</pre>', html, re.S)
        )
        assert "glue(" not in code and "myst_nb" not in code, page


def test_no_markdown_table_is_left_unrendered(built_book):
    """A table glued inline (the ``{glue:md}`` role) is printed as its Markdown
    source, pipes and dashes (typeset as em dashes); a table needs the
    ``{glue:md}`` directive."""
    raw_row = re.compile(r"\|\s*:?(?:-{3,}|\u2014)+:?\s*\|")
    for page in pages(ROOT):
        for site in (HTML, HTML / "fr"):
            html = (site / f"{page}.html").read_text(encoding="utf-8")
            text = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", html, flags=re.S)
            text = re.sub(r"<[^>]+>", " ", text)
            assert not raw_row.search(text), (site.name, page, raw_row.search(text))
