"""Every link of the built site leads somewhere: each internal ``href`` and
``src`` of every HTML page (English, French, student edition) names a file of
the site, and each ``#anchor`` an id of the page it points to. Outside links are
not fetched (the tests run offline): they are listed, with the pages that use
them, in ``_build/outside-links.txt``. Pure Python over the session's built
site: a few seconds."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from bookbuild.toc import pages

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
OUTSIDE_LIST = ROOT / "_build" / "outside-links.txt"

#: Attributes that name another file or place (srcset is a list, read apart).
LINK_ATTRIBUTES = {"href", "src", "poster", "data"}
#: Addresses that are no file to check.
NOT_FILES = ("mailto:", "tel:", "javascript:", "data:", "blob:", "about:")
#: Links known to be missing, as ``page -> address``: none. (The PDFs are
#: linked by ``make pdf`` only once they exist: bookbuild.tools.handouts.)
KNOWN_MISSING: frozenset[str] = frozenset()


class _Page(HTMLParser):
    """The ids of one page, and every address it links to or loads."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attributes.get(name):
                self.ids.add(attributes[name])
        for name, value in attributes.items():
            if name in LINK_ATTRIBUTES and value is not None:
                self.links.append(value.strip())
            elif name == "srcset" and value:
                self.links += [part.split()[0] for part in value.split(",") if part]
        if tag == "meta" and (attributes.get("http-equiv") or "").lower() == "refresh":
            _, _, url = (attributes.get("content") or "").partition("url=")
            if url:
                self.links.append(url.strip())


@dataclass
class LinkCheck:
    """What :func:`check_links` found in one site."""

    pages: int = 0
    internal: int = 0
    anchors: int = 0
    broken: list[str] = field(default_factory=list)
    outside: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def check_links(site: Path, *, allowed: frozenset[str] = frozenset()) -> LinkCheck:
    """Check every link of every HTML page under ``site`` (see the module doc).
    ``allowed``: links (as ``page -> address``) known to be missing, each with
    its reason where it is given."""
    parsed: dict[Path, _Page] = {}

    def read(path: Path) -> _Page:
        if path not in parsed:
            page = _Page()
            page.feed(path.read_text(encoding="utf-8", errors="replace"))
            parsed[path] = page
        return parsed[path]

    exists: dict[Path, bool] = {}
    found = LinkCheck()
    root = site.resolve()
    for path in sorted(root.rglob("*.html")):
        name = path.relative_to(root).as_posix()
        if "_static" in Path(name).parts:
            continue  # the themes' assets (two Jinja macro files), no page
        found.pages += 1
        for link in read(path).links:
            where = f"{name} -> {link}"
            parts = urlsplit(link)
            if link.startswith(NOT_FILES) or not link:
                continue
            if parts.scheme or parts.netloc:
                found.outside[link].add(name)
                continue
            if parts.path:
                relative = posixpath.normpath(
                    posixpath.join(posixpath.dirname(name), unquote(parts.path))
                )
                if relative.startswith("../") or relative == "..":
                    found.broken.append(f"{where}: outside the site")
                    continue
                target = root / relative
                if target.is_dir():
                    target = target / "index.html"
            else:
                target = path  # "#anchor" or "?query" on the page itself
            found.internal += 1
            if target not in exists:
                exists[target] = target.is_file()
            if not exists[target]:
                if where not in allowed:
                    found.broken.append(f"{where}: no such file")
                continue
            anchor = unquote(parts.fragment)
            if anchor and target.suffix == ".html":
                found.anchors += 1
                if anchor not in read(target).ids:
                    found.broken.append(f"{where}: no id {anchor!r} in the page")
    return found


def write_outside(found: dict[str, LinkCheck]) -> None:
    """The outside links of each site checked, with the pages that use them."""
    lines = ["# Outside links of the built site, not fetched (test_links.py)"]
    for site, check in found.items():
        lines.append(f"\n## {site}: {len(check.outside)} addresses")
        for url in sorted(check.outside):
            pages = sorted(check.outside[url])
            more = f" (+{len(pages) - 3} more)" if len(pages) > 3 else ""
            lines.append(f"{url}\n    on {', '.join(pages[:3])}{more}")
    OUTSIDE_LIST.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_check_finds_a_missing_file_and_a_missing_anchor(tmp_path):
    """The checker itself, on a three-page site written here (no book built)."""
    (tmp_path / "book").mkdir()
    (tmp_path / "index.html").write_text(
        '<meta http-equiv="refresh" content="0; url=book/a.html">'
        '<a href="https://example.org/x">out</a><a href="mailto:a@b.c">mail</a>'
    )
    (tmp_path / "book" / "a.html").write_text(
        '<h1 id="top">A</h1><a href="b.html#part">ok</a><a href="#top">ok</a>'
        '<a href="b.html#gone">bad anchor</a><img src="../_images/none.png">'
        '<a href="../../elsewhere.html">outside the site</a>'
    )
    (tmp_path / "book" / "b.html").write_text(
        '<section id="part"><a href="a.html?x=1#top">ok</a></section>'
    )
    found = check_links(tmp_path)
    assert (found.pages, found.internal, found.anchors) == (3, 6, 4), found
    assert sorted(found.broken) == [
        "book/a.html -> ../../elsewhere.html: outside the site",
        "book/a.html -> ../_images/none.png: no such file",
        "book/a.html -> b.html#gone: no id 'gone' in the page",
    ]
    assert dict(found.outside) == {"https://example.org/x": {"index.html"}}
    allowed = frozenset({"book/a.html -> ../_images/none.png"})
    assert len(check_links(tmp_path, allowed=allowed).broken) == 2


@pytest.mark.book
def test_every_internal_link_and_anchor_of_the_site_resolves(built_book):
    """The English site and its French edition (``fr/``), as ``make book``
    builds them."""
    assert built_book.returncode == 0, built_book.output[-3000:]
    found = check_links(HTML, allowed=KNOWN_MISSING)
    write_outside({"_build/html": found})
    print(
        f"{found.pages} pages, {found.internal} internal links "
        f"({found.anchors} with an anchor), {len(found.outside)} outside "
        f"addresses listed in {OUTSIDE_LIST.relative_to(ROOT)}"
    )
    assert found.pages >= 2 * len(pages(ROOT)) and found.anchors > 100, found
    assert (HTML / "fr" / "index.html").is_file()
    assert not found.broken, "\n".join(found.broken)


@pytest.mark.book
@pytest.mark.slow  # builds the student edition (shared with make release's other tests)
@pytest.mark.release
def test_every_internal_link_of_the_student_edition_resolves(student_site):
    found = check_links(student_site, allowed=KNOWN_MISSING)
    assert found.pages >= 2 * len(pages(ROOT)), found
    assert not found.broken, "\n".join(found.broken)
