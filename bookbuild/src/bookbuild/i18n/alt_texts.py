"""The alt texts of glued figures in the catalogues (a gap of the French edition).

Problem: a figure of the book is pasted by myst-nb's ``{glue:figure}``
directive, whose ``:alt:`` goes to the image node myst-nb makes from the glued
output. Sphinx translates an image's ``alt`` like any message (its Locale
transform finds the image while the page is read: a French page would use a
translation), but the alt texts never reach the catalogues: myst-nb keeps every
format of a glued output (``image/svg+xml``, ``image/png``, ``text/plain``) in
a "mime bundle" until its post-transform ``SelectMimeType`` keeps the one the
builder prefers, and the gettext builder's list prefers ``text/plain``
(``<Figure size 640x480 with 1 Axes>``, a literal block: no message). The
image, and its alt text, are gone when the gettext builder extracts the
messages, after the post-transforms. On French pages screen readers read the
English alt text.

Answer: in the gettext build, just before ``SelectMimeType``, a copy of each
alt text of an image in a mime bundle is kept at the end of the page as a
message with the source and line of the figure. The French build needs
nothing more: its Locale transform replaces ``image['alt']`` by the
translation. The ``{figure}`` and ``{image}`` directives of MyST need no help
(their image stays in the page).

The static figure of an interactive widget of ``qkv.page.widgets`` (what shows
where scripts do not run) is HTML, not an image node: the widget writes its
alt text in each language (``alt`` in English, ``data-alt-fr``...), and in a
translated build :class:`LocaliseWidgetAltTexts` puts the page's language in
``alt``.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import base_language


def _is_mime_bundle(node: nodes.Node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == (
        "mime_bundle"
    )


class KeepAltTextsForGettext(SphinxPostTransform):
    """In the gettext build: the alt text of each image of a glued output (a
    figure) as a message of its page."""

    default_priority = 3  # before myst-nb's SelectMimeType (4) drops the images
    builders = ("gettext",)

    def run(self) -> None:
        kept: set[str] = set()
        for bundle in list(self.document.findall(_is_mime_bundle)):
            for image in bundle.findall(nodes.image):
                alt = image.get("alt", "")
                if not alt.strip() or alt in kept:
                    continue
                kept.add(alt)
                copy = nodes.paragraph(alt, alt)
                figure = bundle.parent if bundle.parent is not None else bundle
                copy.source = figure.source or bundle.source
                copy.line = figure.line or bundle.line
                copy.uid = ""  # the gettext builder skips nodes without one
                self.document += copy


def localise_widget_alts(html: str, language: str) -> str:
    """``html`` with the ``alt`` of each image that has a ``data-alt-<language>``
    replaced by it."""
    pattern = re.compile(
        r'(<img\b[^>]*?\balt=")[^"]*("[^>]*?\bdata-alt-'
        + re.escape(language)
        + r'="([^"]*)")'
    )
    return pattern.sub(lambda m: m.group(1) + m.group(3) + m.group(2), html)


class LocaliseWidgetAltTexts(SphinxPostTransform):
    """In a translated HTML build: the static figures of widgets get the alt
    text of the page's language."""

    default_priority = 900  # after myst-nb's SelectMimeType keeps the HTML
    formats = ("html",)

    def run(self) -> None:

        if not is_translation(self.config):
            return
        language = base_language(self.config.language)
        for raw in list(self.document.findall(nodes.raw)):
            text = raw.astext()
            if f"data-alt-{language}=" not in text:
                continue
            localised = localise_widget_alts(text, language)
            raw.replace_self(nodes.raw(localised, localised, **raw.attributes))


def setup(app: Sphinx) -> dict:
    app.add_post_transform(KeepAltTextsForGettext)
    app.add_post_transform(LocaliseWidgetAltTexts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
