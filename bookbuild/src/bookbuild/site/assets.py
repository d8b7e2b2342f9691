"""Every file a page links from ``_static`` is there before the pages are written.

Sphinx 7.4 adds ``?v=<checksum>`` to a stylesheet or script a page links only
when the file is already in the output folder as it writes the page. Three of
the book's assets were written after the pages (``build-finished``): myst-nb's
``mystnb.<hash>.css``, sphinx-exercise's ``exercise.css`` and MathJax's
component (:mod:`bookbuild.site.mathjax`). So a clean build linked them bare
and the next, incremental build linked them with ``?v=``: two builds of the
same source wrote different HTML, and ``make same-site``, which compares two
clean builds, could not see it. Here they are written when the writing starts
(``write-started``: here for myst-nb's and sphinx-exercise's, in
:mod:`bookbuild.site.mathjax` for MathJax), and any other file a page links
from ``_static`` that is still missing then is a warning (an error in the
strict build) naming it, so that a new one cannot bring the difference back.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _before_pages(app: Sphinx, builder) -> None:
    """What myst-nb and sphinx-exercise write when the build ends, written now."""
    if builder.format != "html":
        return
    if "myst_nb" in app.extensions:
        from myst_nb.sphinx_ext import add_global_html_resources

        add_global_html_resources(app, None)
    if "sphinx_exercise" in app.extensions:
        from sphinx_exercise import copy_asset_files

        copy_asset_files(app, None)


def _check_first_page(app: Sphinx, pagename: str, templatename, context, doctree):
    """On the first page written (Sphinx has copied its own assets by then),
    a warning for every file linked from ``_static`` that is not there."""
    builder = app.builder
    if getattr(builder, "_bookbuild_assets_checked", False):
        return
    builder._bookbuild_assets_checked = True
    outdir = Path(app.outdir)
    for asset in [*context.get("css_files", []), *context.get("script_files", [])]:
        name = str(getattr(asset, "filename", asset) or "")
        if name.startswith("_static/") and not (outdir / name).is_file():
            logger.warning(
                "%s is linked from the pages but written after them: a clean "
                "build links it without ?v= and the next build with it",
                name,
            )


def setup(app: Sphinx) -> dict:
    app.connect("write-started", _before_pages)
    app.connect("html-page-context", _check_first_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
