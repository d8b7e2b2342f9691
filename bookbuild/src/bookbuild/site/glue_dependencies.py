"""A page that pastes another page's values is rebuilt when that page is.

myst-nb lets a page show a value computed by another one: the FAQ writes
``{glue:text}`cost-of-attention.md::cost-slope-naive``` and shows the slope that
the cost chapter measured. Sphinx does not know about this link: after the cost
chapter is edited and executed again, the FAQ keeps the old number until the FAQ
itself is edited. On each build, this extension finds the pages that paste from
a page Sphinx is about to read again, and has Sphinx read them again too.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

# ``path.md::key`` in a glue role or directive.
PASTED_FROM = re.compile(r"([\w./-]+\.(?:md|ipynb))::")


def pasted_docnames(docname: str, text: str) -> set[str]:
    """The documents whose glued values ``text`` (the source of ``docname``) shows."""
    folder = posixpath.dirname(docname)
    return {
        posixpath.splitext(posixpath.normpath(posixpath.join(folder, path)))[0]
        for path in PASTED_FROM.findall(text)
    }


def pages_to_reread(
    app: Sphinx,
    env: BuildEnvironment,
    added: set[str],
    changed: set[str],
    removed: set[str],
) -> list[str]:
    rereading = set(added) | set(changed) | set(removed)
    if not rereading:
        return []
    outdated = []
    for docname in sorted(env.found_docs - rereading):
        try:
            text = Path(env.doc2path(docname)).read_text(encoding="utf-8")
        except OSError:
            continue
        if pasted_docnames(docname, text) & rereading:
            outdated.append(docname)
    return outdated


def setup(app: Sphinx) -> dict:
    app.connect("env-get-outdated", pages_to_reread)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
