"""Serve MathJax from the site itself instead of a CDN.

Problem: Sphinx loads MathJax 3 from a CDN on every page with math, so the book
shows raw LaTeX without a network. The PyPI package ``sphinx-mathjax-offline``
ships MathJax 3.2.2, but copies all 24 MB of it into the site. This extension
copies only what the ``tex-mml-chtml`` component needs at run time (about 7 MB:
the component, its fonts, TeX extensions loaded on demand, the menu and the
accessibility modules) into ``_static/mathjax`` and points ``mathjax_path`` at it.
The tree is kept out of ``html_static_path``, because Jupyter Book would inject
every .js file found there into every page.
"""

from __future__ import annotations

import shutil
from importlib.metadata import distribution
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

COMPONENT = "tex-mml-chtml.js"
#: What the component may load, relative to the MathJax root.
NEEDED = (
    COMPONENT,
    "input/tex/extensions",
    "output/chtml/fonts/woff-v2",
    "ui",
    "a11y",
    "sre",
)


def mathjax_source() -> Path:
    """The MathJax tree inside the installed ``sphinx-mathjax-offline`` package."""
    dist = distribution("sphinx-mathjax-offline")
    root = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    if not (root / COMPONENT).is_file():
        raise FileNotFoundError(f"MathJax not found at {root}")
    return root


def _set_path(app: Sphinx, config: Config) -> None:
    # A relative path is served from _static/ by Sphinx.
    config.mathjax_path = f"mathjax/{COMPONENT}"


def copy_mathjax(app: Sphinx) -> None:
    """The files into ``_static/mathjax``, before the pages are written (the
    pages link the component with its checksum, ``?v=``, in every build:
    :mod:`bookbuild.site.assets`)."""
    if app.builder.format != "html":
        return
    source = mathjax_source()
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in NEEDED:
        src, dst = source / part, target / part
        if dst.exists():
            continue  # copied by an earlier build: keep rebuilds fast
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _set_path)
    app.connect("write-started", lambda app, builder: copy_mathjax(app))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
