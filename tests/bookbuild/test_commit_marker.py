"""One commit marker (bookbuild.site.build_info.commit): the footer (which the
PDF handouts print), the build-info page and every BibTeX entry name the same
commit, with ``+changes`` when the tree's text is not that commit's; the
addresses ``make addresses`` fills in before publishing are not a change."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bookbuild.site import build_info, citation
from bookbuild.site.urls import set_addresses, set_citation, set_project_urls

ROOT = Path(__file__).resolve().parents[2]
FILES = ("_config.yml", "pyproject.toml", "CITATION.cff", "_toc.yml")


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout holding the book's top-level files and one page."""
    for name in FILES:
        shutil.copy2(ROOT / name, tmp_path / name)
    (tmp_path / "page.md").write_text("# A page\n\nText.\n", encoding="utf-8")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def _fill_addresses(folder: Path) -> None:
    """What `make addresses` does (bookbuild.site.urls.main)."""
    repository = "https://github.com/example-org/attention-book"
    site = "https://example-org.github.io/attention-book/"
    sha = _git(folder, "rev-parse", "HEAD")
    for name, fill in (
        ("_config.yml", lambda t: set_addresses(t, repository, site)),
        ("pyproject.toml", lambda t: set_project_urls(t, repository, site)),
        ("CITATION.cff", lambda t: set_citation(t, repository, site, sha)),
    ):
        path = folder / name
        path.write_text(fill(path.read_text(encoding="utf-8")), encoding="utf-8")


def test_a_clean_tree_and_a_published_one_name_the_commit(checkout):
    sha = _git(checkout, "rev-parse", "--short", "HEAD")
    assert build_info.commit(checkout) == sha
    _fill_addresses(checkout)
    assert _git(checkout, "status", "--porcelain", "-uno")  # git sees changes
    assert build_info.commit(checkout) == sha  # not of the book's text


@pytest.mark.parametrize(
    "name, edit",
    [
        ("page.md", lambda t: t.replace("Text.", "Other text.")),
        ("CITATION.cff", lambda t: t.replace("version: 0.1.0", "version: 9.9.9")),
        ("_config.yml", lambda t: t + "\n# a comment\n"),
    ],
)
def test_any_other_change_is_marked(checkout, name, edit):
    sha = _git(checkout, "rev-parse", "--short", "HEAD")
    _fill_addresses(checkout)
    path = checkout / name
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert build_info.commit(checkout) == f"{sha}+changes"
    _git(checkout, "add", name)  # staged or not
    assert build_info.commit(checkout) == f"{sha}+changes"


def test_a_deleted_file_is_marked(checkout):
    sha = _git(checkout, "rev-parse", "--short", "HEAD")
    (checkout / "page.md").unlink()
    assert build_info.commit(checkout) == f"{sha}+changes"


def test_outside_git_the_commit_is_unknown(tmp_path):
    shutil.copy2(ROOT / "_toc.yml", tmp_path / "_toc.yml")
    assert build_info.commit(tmp_path) == "unknown"


class _Config:
    """What the extensions read of Sphinx's configuration (the root language)."""

    language = "en"
    html_title = "Attention, Computed"
    html_theme_options: dict = {}
    html_baseurl = ""
    book_i18n_overrides: dict = {}

    def __contains__(self, name: str) -> bool:
        return False


class _App:
    def __init__(self, srcdir: Path):
        self.srcdir = srcdir
        self.config = _Config()


def test_footer_build_info_and_bibtex_name_one_commit(checkout):
    """A dirty tree: the same ``<sha>+changes`` in the footer (and so in the
    PDFs, which print it), on the build-info page and in the BibTeX, computed
    once even if the tree changes during the build."""
    sha = _git(checkout, "rev-parse", "--short", "HEAD")
    (checkout / "page.md").write_text("# A page\n\nEdited.\n", encoding="utf-8")
    app = _App(checkout)
    build_info._footer(app, app.config)
    marker = f"{sha}+changes"
    assert f"· commit {marker} ·" in app.config.html_theme_options["extra_footer"]
    _git(checkout, "commit", "-qam", "second")  # during the build: still one
    stamped = build_info._stamped(app, "- **Commit:** `%%BUILD_COMMIT%%`")
    assert stamped == f"- **Commit:** `{marker}`"
    book = citation._book(app)
    assert book.commit == marker
    assert f"commit {marker}}}," in citation.book_entry(book)
    entry = citation.chapter_entry(book, "book/masking", "3", "Masking")
    assert f"commit {marker}}}," in entry
