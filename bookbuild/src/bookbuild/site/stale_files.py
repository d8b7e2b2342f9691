"""Images that no page uses any more, removed after each build.

Problem: Sphinx copies a page's images into ``_images/`` when it writes the page,
and never deletes one. A figure drawn again with other numbers (a chapter run
again after an edit to ``src/qkv``) gets a new file name, so after a few
incremental builds ``_images/`` held four times the images the pages show
(measured: from 31 to 120), all published. myst-nb's own folder of outputs,
``_build/jupyter_execute``, grows the same way.

Answer: when a build has finished, every file of ``_images/`` that no page of the
site refers to, and that Sphinx's environment does not list, is deleted; so is
every image of myst-nb's output folder that the environment does not list. The
notebooks of chapters that left the book are deleted by
:mod:`bookbuild.site.notebooks`, execution reports by :mod:`bookbuild.execute.reports`.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from sphinx.application import Sphinx
from sphinx.util import logging

IMAGES = "_images"
#: A reference to a file of ``_images/`` in a page (src, href, srcset, url()).
IMAGE_REFERENCE = re.compile(r"_images/([^\"'\s)#?<>]+)")
IMAGE_SUFFIXES = {".svg", ".png", ".jpg", ".jpeg", ".gif", ".pdf"}


def referenced_images(site: Path) -> set[str]:
    """The names of the files of ``_images/`` that the site's pages refer to."""
    names: set[str] = set()
    for page in Path(site).rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8", errors="replace")
        names.update(unquote(name) for name in IMAGE_REFERENCE.findall(text))
    return names


def remove_unused(folder: Path, keep: set[str], suffixes: set[str] | None = None):
    """Delete the files of ``folder`` (not its subfolders) whose name is not in
    ``keep`` (only those with one of ``suffixes``, if given); return them."""
    removed = []
    if not Path(folder).is_dir():
        return removed
    for path in sorted(Path(folder).iterdir()):
        if not path.is_file() or path.name in keep:
            continue
        if suffixes is not None and path.suffix.lower() not in suffixes:
            continue
        path.unlink()
        removed.append(path)
    return removed


def _remove_stale(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    env, site = app.env, Path(app.outdir)
    listed = {Path(source) for source in env.images}
    copied = {name for _, name in env.images.values()}
    removed = remove_unused(site / IMAGES, copied | referenced_images(site))
    outputs = getattr(getattr(env, "mystnb_config", None), "output_folder", None)
    if outputs:
        srcdir = Path(app.srcdir)
        keep = {(srcdir / source).resolve().name for source in listed}
        removed += remove_unused(Path(outputs), keep, IMAGE_SUFFIXES)
    if removed:
        logging.getLogger(__name__).info(
            "removed %d image(s) that no page uses", len(removed)
        )


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", _remove_stale)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
