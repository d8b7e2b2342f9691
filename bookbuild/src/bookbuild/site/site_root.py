"""The site's front door: ``index.html`` as a real page that redirects.

sphinx-external-toc writes a one-line ``<meta http-equiv="Refresh">`` file when
the root document is not ``index``. A page with no ``<link rel="icon">`` makes
the browser ask for ``/favicon.ico``, which does not exist: a 404 in the console
of every visitor who opens the site at its root. This extension writes
``index.html`` first (sphinx-external-toc leaves an existing file alone): a
small HTML page with a title, the book's icon, the same redirect, and a link
for readers whose browser does not follow it. The icon is inlined as a data URI:
a request for it would race the redirect and be cut off by it.
"""

from __future__ import annotations

import base64
import html
import os

from sphinx.application import Sphinx

PAGE = """<!DOCTYPE html>
<html lang="{language}">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="icon" href="{icon}">
<meta http-equiv="Refresh" content="0; url={target}">
</head>
<body>
<p><a href="{target}">{title}</a></p>
</body>
</html>
"""


MIME_TYPES = {".svg": "image/svg+xml", ".png": "image/png", ".ico": "image/x-icon"}


def inline_icon(app: Sphinx) -> str:
    """The book's favicon as a data URI (``data:,``, an empty icon, if none)."""
    icon = app.config.html_favicon
    path = os.path.join(app.confdir, icon) if icon else ""
    mime_type = MIME_TYPES.get(os.path.splitext(path)[1].lower())
    if not mime_type or not os.path.isfile(path):
        return "data:,"
    with open(path, "rb") as file:
        data = base64.b64encode(file.read()).decode("ascii")
    return f"data:{mime_type};base64,{data}"


def write_index(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if app.config.root_doc == "index":
        return
    page = PAGE.format(
        language=html.escape(app.config.language or "en"),
        title=html.escape(app.config.html_title or app.config.project),
        icon=html.escape(inline_icon(app)),
        target=html.escape(app.builder.get_target_uri(app.config.root_doc)),
    )
    with open(os.path.join(app.outdir, "index.html"), "w", encoding="utf-8") as out:
        out.write(page)


def setup(app: Sphinx) -> dict:
    # Before sphinx-external-toc's own handler (priority 500), which then sees
    # the file and does nothing.
    app.connect("build-finished", write_index, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
