"""Pages whose claims did not hold on this machine: left out, or marked.

Problem: the prefill lets a chapter whose asserts failed on this machine go on
and caches it with its failed claims (:mod:`bookbuild.execute.claims`), so
that one sentence about a model trained differently on another CPU does not
cost a reader the whole site. But the page must not then show that sentence as
if it had been checked.

Answer: as each page is read, its failed claims are looked up in the
execution cache (the record of the notebook this build reads: in a
translation, its code translated; :data:`~bookbuild.execute.claims.FAILED_CLAIMS`
in the record's data). By default (strict), each one is a Sphinx warning at
the assert's line: the strict build fails, writes every other page, and
:mod:`bookbuild.execute.reports` deletes the page that warned, in each
language. With ``QKV_CLAIMS=note`` (``make book CLAIMS=note``), there is no
warning; instead a notice (an admonition of class ``warning``, in the page's
language: :mod:`bookbuild.i18n.messages`) follows the paragraph the claim
guards, saying which check did not hold and what was measured. The mode is a
configuration value that Sphinx tracks (``claims_mode``): switching it reads
every page again.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from bookbuild.execute.claims import FAILED_CLAIMS, NOTE, note_mode
from bookbuild.i18n.code import translated_code
from bookbuild.i18n.messages import N_, gettext
from bookbuild.toc import is_notebook

logger = logging.getLogger(__name__)

#: The notice after a sentence whose check failed (English, the key of its
#: translation in ``bookbuild``'s catalogue; a line break is a space).
NOTICE = N_(
    "On the machine that built this page, the check behind the sentence above\n"
    "did not hold: {check} (measured: {measured} is false). The sentence is about\n"
    "a model trained while the book was built; on this CPU the training ended\n"
    "differently."
)
#: The same, for a check that is not a comparison (nothing measured to show).
NOTICE_UNMEASURED = N_(
    "On the machine that built this page, the check behind the sentence above\n"
    "did not hold: {check}. The sentence is about a model trained while the\n"
    "book was built; on this CPU the training ended differently."
)


def failed_claims(app: Sphinx, docname: str) -> list[dict]:
    """The failed claims kept in the execution cache with ``docname`` as this
    build reads it (none for a page that is not a notebook, or not cached)."""

    path = Path(app.env.doc2path(docname))
    folder = Path(app.config.nb_execution_cache_path or "")
    if path.suffix != ".md" or not path.is_file() or not folder.is_dir():
        return []
    if not is_notebook(path.parent, path.stem):
        return []
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    text = translated_code(app, docname, path.read_text(encoding="utf-8"))
    try:
        record = get_cache(folder).match_cache_notebook(
            read_myst_markdown_notebook(text)
        )
    except KeyError:
        return []
    return list((record.data or {}).get(FAILED_CLAIMS, []))


def notice(claim: dict, language: str | None) -> nodes.warning:
    """The admonition that follows the sentence of a failed ``claim``."""

    _ = gettext(language)
    template = _(NOTICE) if claim.get("measured") else _(NOTICE_UNMEASURED)
    paragraph = nodes.paragraph()
    for piece in re.split(r"(\{check\}|\{measured\})", template.replace("\n", " ")):
        if piece in ("{check}", "{measured}"):
            code = claim["check"] if piece == "{check}" else claim["measured"]
            paragraph += nodes.literal(code, code)
        elif piece:
            paragraph += nodes.Text(piece)
    return nodes.warning("", paragraph, classes=["claim-notice"])


def _guarded(doctree: nodes.document, claim: dict) -> nodes.Element | None:
    """The paragraph ``claim`` guards, by its line in the source read; else
    the first paragraph after the assert (its hidden cell is not in the page)."""
    found = list(doctree.findall(nodes.paragraph))
    line = claim.get("guards_line")
    exact = [p for p in found if line and p.line == line]
    if exact:
        return exact[0]
    after = [p for p in found if p.line and p.line > claim["source_line"]]
    return after[0] if after else None


def _mark_or_warn(app: Sphinx, doctree: nodes.document) -> None:
    if app.builder.format != "html":  # the messages' extraction: not a site
        return
    docname = app.env.docname
    claims = failed_claims(app, docname)
    if not claims:
        return
    if app.config.claims_mode != NOTE:
        for claim in claims:
            measured = f": {claim['measured']} is false" if claim["measured"] else ""
            logger.warning(
                "a sentence did not hold on this machine, its check failed: "
                '%s%s (guards: "%s"); the page is left out of the site; to build '
                "it with a notice after the sentence: make book CLAIMS=note",
                claim["check"],
                measured,
                claim["guards"],
                location=(docname, claim["source_line"]),
                type="bookbuild",
                subtype="claims",
            )
        return
    for claim in claims:
        box = notice(claim, app.config.language)
        paragraph = _guarded(doctree, claim)
        if paragraph is None:
            doctree += box
            continue
        parent = paragraph.parent
        at = parent.index(paragraph) + 1
        while at < len(parent) and "claim-notice" in parent[at].get("classes", []):
            at += 1  # after the notices already there, in the claims' order
        parent.insert(at, box)


def _mode_from_environment(app: Sphinx, config) -> None:
    config.claims_mode = NOTE if note_mode() else "strict"


def setup(app: Sphinx) -> dict:
    app.add_config_value("claims_mode", "strict", "env", [str])
    app.connect("config-inited", _mode_from_environment)
    app.connect("doctree-read", _mark_or_warn)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
