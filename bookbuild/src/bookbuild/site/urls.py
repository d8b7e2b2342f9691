"""The book's public addresses: its repository and its site, when it has them.

``_config.yml`` carries both, empty in the source (``repository.url`` and
``html.baseurl``): a lecturer's local build has none, and builds as before. The
publishing workflow fills them from the GitHub repository it runs in, with
``python -m bookbuild.site.urls --repository URL --site URL``. When they are set:

* the pages get the theme's repository button (this Sphinx extension);
* each chapter page links its notebook on Colab and on Binder: plain links,
  nothing loaded until clicked (:func:`launch_links`, used by
  :mod:`bookbuild.site.notebooks`); the workflow pushes the notebooks to the
  repository's ``notebooks`` branch, where those services find them;
* every BibTeX entry gets the chapter's address (:mod:`bookbuild.site.citation`);
* every notebook's first cell installs the book's package from the repository;
* ``pyproject.toml`` gets the package's ``[project.urls]`` (:func:`set_project_urls`),
  so that the package built from the published sources names its home;
* ``CITATION.cff`` gets the site (``url``), the repository (``repository-code``)
  and the commit published (``commit``) (:func:`set_citation`), which GitHub's
  "Cite this repository" and Zenodo read.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: The branch the publishing workflow pushes the notebooks to.
NOTEBOOKS_BRANCH = "notebooks"
_GITHUB = re.compile(r"^https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")


def repository_url(config) -> str:
    """The repository's address (``repository.url``), or ""."""
    return ((config.html_theme_options or {}).get("repository_url") or "").rstrip("/")


def github_slug(url: str) -> str | None:
    """``owner/name`` of a GitHub repository URL, else None."""
    found = _GITHUB.match(url or "")
    return f"{found.group(1)}/{found.group(2)}" if found else None


def launch_links(url: str, notebook: str) -> dict[str, str]:
    """Where a notebook of the ``notebooks`` branch opens (``notebook`` is its
    path in that branch, such as ``full/masking.ipynb``); empty without GitHub."""
    slug = github_slug(url)
    if slug is None:
        return {}
    return {
        "Colab": f"https://colab.research.google.com/github/{slug}/blob/"
        f"{NOTEBOOKS_BRANCH}/{notebook}",
        "Binder": f"https://mybinder.org/v2/gh/{slug}/{NOTEBOOKS_BRANCH}"
        f"?labpath={notebook}",
    }


def _repository_button(app, config) -> None:
    if repository_url(config):
        options = dict(config.html_theme_options or {})
        options["use_repository_button"] = True
        config.html_theme_options = options


def setup(app) -> dict:
    app.connect("config-inited", _repository_button)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def set_addresses(config_text: str, repository: str, site: str) -> str:
    """``_config.yml``'s text with the repository and site addresses filled in."""
    for key, value in (("url", repository), ("baseurl", site)):
        pattern = re.compile(rf'^(  {key}: )""(.*)$', re.M)
        if not pattern.search(config_text):
            raise ValueError(f'_config.yml has no line `  {key}: ""` to fill')
        config_text = pattern.sub(rf'\g<1>"{value}"\g<2>', config_text, count=1)
    return config_text


PROJECT_URLS = "[project.urls]"


def set_project_urls(pyproject_text: str, repository: str, site: str) -> str:
    """``pyproject.toml``'s text with the lines of its ``[project.urls]`` table
    (empty in the source) filled in: the site, its source, its issues."""
    lines = pyproject_text.split("\n")
    if PROJECT_URLS not in lines:
        raise ValueError(f"pyproject.toml has no {PROJECT_URLS} table to fill")
    at = lines.index(PROJECT_URLS) + 1
    while at < len(lines) and lines[at].startswith("#"):
        at += 1  # after the table's comment
    urls = {"Homepage": site, "Source": repository}
    if github_slug(repository):
        urls["Issues"] = f"{repository.rstrip('/')}/issues"
    filled = [f'{key} = "{value}"' for key, value in urls.items()]
    return "\n".join(lines[:at] + filled + lines[at:])


def set_citation(citation_text: str, repository: str, site: str, commit: str) -> str:
    """``CITATION.cff``'s text with its top-level ``url``, ``repository-code``
    and ``commit`` set (replaced when present, else added after ``version``);
    comments and the rest kept. An empty value is left out."""
    lines = citation_text.split("\n")
    at = next(
        (n + 1 for n, line in enumerate(lines) if line.startswith("version:")), None
    )
    if at is None:
        raise ValueError("CITATION.cff has no top-level `version:` line")
    for key, value in (
        ("url", site),
        ("repository-code", repository),
        ("commit", commit),
    ):
        if not value:
            continue
        line = f'{key}: "{value}"'
        present = [n for n, old in enumerate(lines) if old.startswith(f"{key}:")]
        if present:
            lines[present[0]] = line
        else:
            lines.insert(at, line)
            at += 1
    return "\n".join(lines)


def head_commit(root: Path) -> str:
    """The full commit of ``root``'s checkout, "" outside git."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repository", required=True, help="https://github.com/o/n")
    parser.add_argument("--site", required=True, help="the published site's address")
    parser.add_argument("--config", default="_config.yml", type=Path)
    parser.add_argument("--pyproject", default="pyproject.toml", type=Path)
    parser.add_argument("--citation", default="CITATION.cff", type=Path)
    args = parser.parse_args(argv)
    text = args.config.read_text(encoding="utf-8")
    args.config.write_text(set_addresses(text, args.repository, args.site), "utf-8")
    print(f"{args.config}: repository {args.repository}, site {args.site}")
    text = args.pyproject.read_text(encoding="utf-8")
    text = set_project_urls(text, args.repository, args.site)
    args.pyproject.write_text(text, encoding="utf-8")
    print(f"{args.pyproject}: [project.urls] filled")
    commit = head_commit(args.citation.resolve().parent)
    text = args.citation.read_text(encoding="utf-8")
    text = set_citation(text, args.repository, args.site, commit)
    args.citation.write_text(text, encoding="utf-8")
    print(f"{args.citation}: url, repository-code and commit {commit or '(none)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
