"""The book's public addresses (bookbuild.site.urls): none locally, links when set."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bookbuild.site.urls import (
    github_slug,
    launch_links,
    set_addresses,
    set_citation,
    set_project_urls,
)
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "https://github.com/example-org/attention-book"
SITE = "https://example-org.github.io/attention-book/"


def test_the_source_has_no_address():
    """A local build has none: the workflow fills them (make addresses)."""
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert re.search(r'^  url: ""', config, re.M)
    assert re.search(r'^  baseurl: ""', config, re.M)


def test_addresses_are_written_into_the_config():
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    filled = set_addresses(config, REPOSITORY, SITE)
    assert f'  url: "{REPOSITORY}"' in filled and f'  baseurl: "{SITE}"' in filled
    assert filled.count("\n") == config.count("\n")  # comments kept
    with pytest.raises(ValueError, match="baseurl"):
        set_addresses('repository:\n  url: ""\n', REPOSITORY, SITE)


def test_project_urls_are_written_into_pyproject():
    """The package names its home once the book has one; the source has none."""
    import tomllib

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert tomllib.loads(text)["project"]["urls"] == {}
    filled = tomllib.loads(set_project_urls(text, REPOSITORY, SITE))
    assert filled["project"]["urls"] == {
        "Homepage": SITE,
        "Source": REPOSITORY,
        "Issues": f"{REPOSITORY}/issues",
    }
    with pytest.raises(ValueError, match="project.urls"):
        set_project_urls("[project]\nname = 'x'\n", REPOSITORY, SITE)


def test_citation_gets_the_site_the_repository_and_the_commit():
    """make addresses fills CITATION.cff too (GitHub's "Cite this repository",
    Zenodo); the source has none of the three; filling twice changes nothing."""
    import yaml

    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    source = yaml.safe_load(text)
    assert not {"url", "repository-code", "commit"} & set(source)
    commit = "0123456789abcdef0123456789abcdef01234567"
    filled = set_citation(text, REPOSITORY, SITE, commit)
    assert set_citation(filled, REPOSITORY, SITE, commit) == filled
    cff = yaml.safe_load(filled)
    assert (cff["url"], cff["repository-code"], cff["commit"]) == (
        SITE,
        REPOSITORY,
        commit,
    )
    assert cff["version"] == source["version"]
    assert cff["references"] == source["references"]  # their own url kept
    assert filled.count("\n#") == text.count("\n#")  # comments kept
    assert "commit" not in yaml.safe_load(set_citation(text, REPOSITORY, SITE, ""))
    with pytest.raises(ValueError, match="version"):
        set_citation("title: x\n", REPOSITORY, SITE, commit)


def test_launch_links_need_a_github_repository():
    assert github_slug(REPOSITORY + ".git") == "example-org/attention-book"
    assert launch_links("https://gitlab.com/a/b", "full/x.ipynb") == {}
    links = launch_links(REPOSITORY, "full/masking.ipynb")
    assert links["Colab"] == (
        "https://colab.research.google.com/github/example-org/attention-book/"
        "blob/notebooks/full/masking.ipynb"
    )
    assert links["Binder"].startswith("https://mybinder.org/v2/gh/example-org/")


CHAPTER = (
    MYST_NOTEBOOK
    + """

(lesson)=
# A lesson

```{code-cell} ipython3
print(6 * 7)
```
"""
)

EXTENSIONS = [
    "bookbuild.site.urls",
    "bookbuild.site.citation",
    "bookbuild.site.notebooks",
]
TOC = """\
format: jb-book
root: intro
parts:
- caption: Lessons
  numbered: true
  chapters:
  - file: lesson
"""


def addresses(repository: str, site: str) -> str:
    return f'repository:\n  url: "{repository}"\nhtml:\n  baseurl: "{site}"'


@pytest.mark.slow
@pytest.mark.build
def test_with_addresses_the_pages_link_out_and_without_they_do_not(small_book):
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    for name, repository, site in [("local", "", ""), ("public", REPOSITORY, SITE)]:
        book = small_book(
            {"intro": "# Intro\n\nThe start.\n", "lesson": CHAPTER},
            folder=name,
            title="urls test",
            toc=TOC,
            extensions=EXTENSIONS,
            extra_config=addresses(repository, site),
            files={"CITATION.cff": citation},
        )
        build = build_book(book)
        assert build.returncode == 0, build.output[-3000:]
        page = (build.html / "lesson.html").read_text(encoding="utf-8")
        notebook = json.loads((build.html / "_notebooks" / "lesson.ipynb").read_text())
        first_cell = "".join(notebook["cells"][0]["source"])
        cite = re.sub(r"<[^>]+>", "", page.split("qkv-cite", 1)[1])
        if repository:
            assert f'href="{REPOSITORY}"' in page, "no repository button"
            assert (
                "colab.research.google.com/github/example-org/attention-book/" in page
            )
            assert "mybinder.org/v2/gh/example-org/attention-book/notebooks" in page
            assert f"git+{REPOSITORY}" in first_cell
            assert f"url = {{{SITE}lesson.html}}" in cite
            version = re.search(r"^version: (\S+)", citation, re.M).group(1)
            assert f"Version {version}" in cite
        else:
            for outside in ("colab", "mybinder", "github.com"):
                assert outside not in page.lower(), outside
            assert 'REPOSITORY = ""' in first_cell and "QKV_SOURCE" in first_cell
            assert "url =" not in cite
        assert "chapter = {1}" in cite and "attention-computed-lesson" in cite
