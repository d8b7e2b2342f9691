"""What the tests share: the book's strict build, the browser they need, and a
check that a block of HTML (a widget of ``qkv``) loads nothing from outside.

``tests/conftest.py`` builds the book once per test session with
:func:`build_book`; the tests of the cache, the addresses, the translations and
the same site build small books of their own the same way, written by
:func:`write_small_book` (the fixture ``small_book`` of ``tests/conftest.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from bookbuild.build import TRANSLATIONS_LOG
from bookbuild.tools.browser import CHROMIUM


@dataclass
class BuildResult:
    """A finished build: its exit code, everything it printed, its site (and
    what the build of its translations printed, also part of ``output``)."""

    returncode: int
    output: str
    html: Path
    translations_output: str = ""
    #: True when the build started from nothing but, at most, trained results
    #: (``_build`` holds no site and no executed chapter): a clean build, such as
    #: CI's on a fresh clone, where the seed tests have already kept what they
    #: trained in ``_build/results`` (keyed on the code, as the build keeps it).
    clean: bool = False


#: The front matter that makes a MyST file a notebook (no braces: format-safe).
MYST_NOTEBOOK = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def write_small_book(
    root: Path,
    pages: dict[str, str],
    *,
    title: str = "small book",
    toc: str,
    extensions: list[str] | tuple[str, ...] = (),
    sphinx_config: str = "",
    extra_config: str = "",
    files: dict[str, str] | None = None,
) -> Path:
    """Write a small book into ``root`` (created if missing) and return it.

    ``pages``: name (no ``.md``) to text; ``toc``: the ``_toc.yml``; its
    ``_config.yml`` builds only the listed pages, executes through the cache,
    loads ``extensions`` and gets ``sphinx_config`` (lines indented under
    ``sphinx: config:``) and ``extra_config`` (top-level lines); ``files``: any
    other file, by path relative to ``root``. Pages not given are left as they
    are: a test rewrites one page and builds again."""
    root.mkdir(parents=True, exist_ok=True)
    config = [
        f"title: {title}",
        "only_build_toc_files: true",
        "execute:",
        "  execute_notebooks: cache",
        *extra_config.splitlines(),
    ]
    if extensions or sphinx_config:
        config.append("sphinx:")
    if extensions:
        config += ["  extra_extensions:", *(f"    - {e}" for e in extensions)]
    if sphinx_config:
        config += ["  config:", *(f"    {line}" for line in sphinx_config.splitlines())]
    (root / "_config.yml").write_text("\n".join(config) + "\n", encoding="utf-8")
    (root / "_toc.yml").write_text(toc, encoding="utf-8")
    for name, text in {
        **{f"{p}.md": t for p, t in pages.items()},
        **(files or {}),
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def build_book(
    source: Path, env: dict[str, str] | None = None, prefill: bool = False
) -> BuildResult:
    """Run the book's strict build on ``source`` and its translations' side by
    side (``python -m bookbuild.build site``); with ``prefill``, execute
    the chapters in parallel first (``--with-prefill``): as ``make
    book`` does."""
    built = Path(source) / "_build"
    clean = not built.exists() or {p.name for p in built.iterdir()} <= {"results"}
    env = {**os.environ, **(env or {})}
    env.pop("MPLBACKEND", None)  # a headless backend would hide every figure
    result = subprocess.run(
        [sys.executable, "-m", "bookbuild.build", "site"]
        + ["--with-prefill"] * prefill,
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    # `site` prints the translations' log (their stdout and stderr) after this line.
    translations = result.stdout.partition(TRANSLATIONS_LOG)[2]
    return BuildResult(
        result.returncode,
        result.stdout + result.stderr,
        Path(source) / "_build" / "html",
        translations,
        clean,
    )


def require_chromium() -> None:
    """Skip the calling test without Chromium; under ``CI=true``, fail it."""
    import pytest

    if shutil.which(CHROMIUM) or os.path.exists(CHROMIUM):
        return
    reason = f"Chromium not found at {CHROMIUM}: apt-get install -y chromium"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def wheel_files(project: Path, files: list[str], package: str, into: Path) -> set[str]:
    """The paths inside the wheel of the package ``package`` built from a copy
    of ``project`` (its ``files`` and ``src/<package>``, caches left out) in
    ``into``: what a non-editable install gets (the build leaves nothing in
    the repository)."""
    import zipfile

    for name in files:
        shutil.copy(project / name, into / name)
    shutil.copytree(
        project / "src" / package,
        into / "src" / package,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps"]
        + ["--no-build-isolation", "-q", "-w", str(into / "dist")],
        cwd=into,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (into / "dist").glob(f"{package}-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def make_variable(root: Path, name: str) -> str:
    """The value of a variable of the book's Makefile (``make print-NAME``)."""
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", f"print-{name}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


# A URL that the browser would fetch from outside the page: a scheme with "//"
# (https://, ftp://, ...) or a protocol-relative "//host".
OUTSIDE = re.compile(r"(?:\b[a-z][a-z0-9+.-]*:)?//[^/\s\"'()<>]", re.I)
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]*)|@import\s+['\"]([^'\"]*)", re.I)
# The only "URL" a widget's script may hold: the SVG namespace, a name that is
# never fetched (document.createElementNS needs it).
NAMES_NOT_FETCHED = {"http://www.w3.org/2000/svg"}


class OutsideReferences(HTMLParser):
    """Collect every reference of an HTML fragment to a resource outside it: in
    any attribute (src, href, srcset, data, action, poster, ...), in CSS url()
    and @import (style attributes and <style> elements), and in the text of
    scripts that run (a JSON data block is not run)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.scripts: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            urls = [value]
            if name == "srcset":
                urls = [part.split()[0] for part in value.split(",") if part.split()]
            if name == "style":
                urls += [a or b for a, b in CSS_URL.findall(value)]
            self.found += [f"{tag} {name}={u!r}" for u in urls if OUTSIDE.match(u)]
        kind = dict(attrs).get("type", "text/javascript")
        if tag == "script" and "json" not in kind:
            self._inside = "script"
        elif tag == "style":
            self._inside = "style"

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._inside = None

    def handle_data(self, data):
        if self._inside == "style":
            urls = [a or b for a, b in CSS_URL.findall(data)]
            self.found += [f"style url {u!r}" for u in urls if OUTSIDE.match(u)]
        elif self._inside == "script":
            self.scripts.append(data)
            for match in OUTSIDE.finditer(data):
                end = data.find('"', match.end())
                literal = data[match.start() : end if end > 0 else match.end()]
                if literal not in NAMES_NOT_FETCHED:
                    self.found.append(f"script text {literal!r}")
            for call in ("fetch(", "XMLHttpRequest", "import(", "require", "WebSocket"):
                if call in data:
                    self.found.append(f"script calls {call}")


def outside_references(page: str) -> list[str]:
    """What ``page``, a block of HTML with a script, would load from outside."""
    parser = OutsideReferences()
    parser.feed(page)
    parser.close()
    if not parser.scripts:
        raise ValueError("no script found: this is not a widget")
    return parser.found
