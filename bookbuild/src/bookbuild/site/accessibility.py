"""What assistive technology needs from the pages beyond the theme's defaults.

Problem: axe-core, run on every page by the browser tests, found the references
list broken for screen readers (a critical violation): docutils writes it as a
``role="list"`` whose entries have the role ``doc-biblioentry``, a role that
ARIA deprecated and that is not a list item; so the list announces no items.
It also found links in the tinted exercise boxes below the contrast WCAG asks
for (4.29 to 1 instead of 4.5): that one is fixed in ``static/bookbuild.css``.

Answer: the entries of a citation list become list items (``role="listitem"``)
when a page is written; the book's CSS (:mod:`bookbuild.site.style`, loaded here)
darkens the links of the exercise boxes in the light theme and lightens them
in the dark one.
"""

from __future__ import annotations

from sphinx.application import Sphinx

#: docutils' role of an entry of a citation list, and the role it becomes.
CITATION_ROLE = ('role="doc-biblioentry"', 'role="listitem"')


def list_item_roles(body: str) -> str:
    """The page body with each citation entry a list item of its list."""
    before, after = CITATION_ROLE
    return body.replace(before, after)


def _fix_roles(app: Sphinx, pagename: str, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = list_item_roles(context["body"])


def setup(app: Sphinx) -> dict:
    app.setup_extension("bookbuild.site.style")
    app.connect("html-page-context", _fix_roles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
