"""Part captions of ``_toc.yml`` in the reader's language (the fifth gap).

Problem: the captions of the parts ("Part I: The idea") are extracted into the
catalogue of the root page, but sphinx-external-toc inserts the toctrees that
carry them (transform priority 100) after Sphinx has translated the page
(Locale, priority 20): they stay English in the sidebar and on the root page.

Answer: a transform after sphinx-external-toc's applies the page's catalogue
to the captions, as Locale does for a toctree written in the page.
"""

from __future__ import annotations

from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform

from bookbuild.i18n.languages import catalogue


class TranslateTocCaptions(SphinxTransform):
    default_priority = 110  # after sphinx-external-toc's InsertToctrees (100)

    def apply(self) -> None:
        toctrees = list(self.document.findall(addnodes.toctree))
        if not toctrees or not self.config.language:
            return
        messages = catalogue(self.env, self.config, self.env.docname)
        for toctree in toctrees:
            caption = toctree.get("rawcaption") or toctree.get("caption")
            if caption and messages.get(caption):
                toctree.apply_translated_message(caption, messages[caption])


def setup(app: Sphinx) -> dict:
    app.add_transform(TranslateTocCaptions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
