"""The site's front door: ``index.html`` as a real page that redirects.

sphinx-external-toc writes a one-line ``<meta http-equiv="Refresh">`` file when
the root document is not ``index``. A page with no ``<link rel="icon">`` makes
the browser ask for ``/favicon.ico``, which does not exist: a 404 in the console
of every visitor who opens the site at its root. This extension writes
``index.html`` first (sphinx-external-toc leaves an existing file alone): a
small HTML page with a title, the book's icon, the same redirect, and a link
for readers whose browser does not follow it.
"""

from __future__ import annotations

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


def write_index(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if app.config.root_doc == "index":
        return
    icon = app.config.html_favicon
    icon_href = f"_static/{os.path.basename(icon)}" if icon else "data:,"
    page = PAGE.format(
        language=html.escape(app.config.language or "en"),
        title=html.escape(app.config.html_title or app.config.project),
        icon=html.escape(icon_href),
        target=html.escape(app.builder.get_target_uri(app.config.root_doc)),
    )
    path = os.path.join(app.outdir, "index.html")
    try:
        with open(path, encoding="utf-8") as current:
            if current.read() == page:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as out:
        out.write(page)


def setup(app: Sphinx) -> dict:
    # Before sphinx-external-toc's own handler (priority 500), which then sees
    # the file and does nothing.
    app.connect("build-finished", write_index, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
