"""Remove execution reports left by earlier builds; leave no page of a failed
build that looks current.

Problem: myst-nb writes the traceback of a failing notebook to
``_build/html/reports/<page>.err.log`` but never deletes it, so after the cell is
fixed the site still ships the old report and a check for reports fails. A failed
notebook is never cached, so it runs again (and writes its report again) in every
build until it is fixed: deleting the folder when a build starts loses nothing.

And Sphinx reads again only the pages whose source changed: after a build that
failed on a warning (a broken reference, a glue key no cell glued), the same
build run again reads nothing, warns of nothing and succeeds, with the broken
page in the site. So each page that raised a warning is deleted at the end of
a strict build (``-W``: a warning fails it), its HTML and its doctree: the
next build reads it again and warns again until it is fixed (a warning that
names no page: every page is read again).

A reference inside a paragraph carries the paragraph's first line (MyST gives
inline markup no line of its own), so a broken one was reported lines away
from it: each reference of a page is given the line of the file where its text
is (:func:`_reference_lines`).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections import Counter
from pathlib import Path

from sphinx.application import Sphinx

from bookbuild.i18n.code import translated_code

#: Where the pages that warned are gathered, on the application.
FAULTS = "bookbuild_pages_that_warned"


class _PagesThatWarned(logging.Filter):
    """Last of the filters of Sphinx's warnings: notes the page of each one."""

    def __init__(self, app: Sphinx) -> None:
        super().__init__()
        self.app = app
        self.pages: set[str] = set()
        self.unplaced = 0

    def filter(self, record: logging.LogRecord) -> bool:
        docname = getattr(record, "bookbuild_docname", None)  # a translated message
        location = str(getattr(record, "location", "") or "")
        if docname is None and location:
            path = location.split(":<translated>")[0].rsplit(":", 1)[0]
            path = path if Path(path).is_file() else location.split(":")[0]
            docname = self.app.env.path2doc(path) if Path(path).is_file() else None
        if docname:
            self.pages.add(docname)
        else:
            self.unplaced += 1
        return True


#: The text of a reference as the page writes it: a role's `target`, a link's (target).
_ROLE_TEXT = re.compile(r"`([^`\n]+)`")


def _reference_lines(app: Sphinx, doctree) -> None:
    """Each reference of the page read (not of a translated message) at the
    line of the file that holds its text: the n-th reference with the same
    text and paragraph at the n-th place it appears from the paragraph on."""
    from sphinx import addnodes

    path = Path(app.env.doc2path(app.env.docname))
    if not path.is_file():
        return

    # As this build read it: in a translation, its code translated.
    text = translated_code(app, app.env.docname, path.read_text(encoding="utf-8"))
    lines = text.splitlines()
    seen: Counter = Counter()
    for node in doctree.findall(addnodes.pending_xref):
        if not node.line or not node.source or Path(node.source) != path:
            continue
        role = _ROLE_TEXT.search(node.rawsource or "")
        text = f"`{role.group(1)}`" if role else f"({node.get('reftarget', '')})"
        if text in ("``", "()"):
            continue
        nth = seen[node.line, text]
        seen[node.line, text] += 1
        for number in range(node.line - 1, len(lines)):
            nth -= lines[number].count(text)
            if nth < 0:
                node.line = number + 1
                break


def _remove_reports(app: Sphinx) -> None:
    shutil.rmtree(Path(app.outdir) / "reports", ignore_errors=True)


def _watch_warnings(app: Sphinx) -> None:
    from sphinx.util.logging import NAMESPACE, WarningStreamHandler

    watch = _PagesThatWarned(app)
    setattr(app, FAULTS, watch)
    for handler in logging.getLogger(NAMESPACE).handlers:
        if isinstance(handler, WarningStreamHandler):
            handler.addFilter(watch)


def _forget_pages_that_warned(app: Sphinx, exception: Exception | None) -> None:
    watch = getattr(app, FAULTS, None)
    strict = app.warningiserror or app.keep_going  # -W: a warning fails the build
    if watch is None or not strict:
        return
    doctrees = Path(app.doctreedir)
    if watch.unplaced or exception is not None:
        (doctrees / "environment.pickle").unlink(missing_ok=True)  # read all again
    for docname in sorted(watch.pages):
        (doctrees / f"{docname}.doctree").unlink(missing_ok=True)
        if app.builder.format == "html":
            Path(app.builder.get_outfilename(docname)).unlink(missing_ok=True)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _remove_reports)
    app.connect("builder-inited", _watch_warnings)
    app.connect("build-finished", _forget_pages_that_warned)
    app.connect("doctree-read", _reference_lines)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
