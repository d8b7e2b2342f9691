"""Footnote references inside translated text (the fourth gap of the French edition).

Problem: Sphinx translates a paragraph by parsing its ``msgstr`` alone. MyST-Parser
3 (which Jupyter Book 1 pins) only reads ``[^note]`` as a footnote reference
when the definition ``[^note]: ...`` is in the same parse; in a translated
paragraph it is not, so the reference is printed literally, with the warning
"inconsistent footnote references in translated message" (fixed in
MyST-Parser 4, out of reach here).

Answer: before a translated message is parsed, a placeholder definition is
added for each footnote it refers to. The parser then makes real footnote
references; Sphinx keeps only the message's first node (the paragraph) and
gives its references the ids of the original ones, so they link to the page's
footnotes as in the root language. Installed only in a build whose language
is not the root one, by :mod:`bookbuild.patches`.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx

REFERENCE = re.compile(r"\[\^([^\]\s]+)\](?!:)")


def with_definitions(text: str) -> str:
    """``text`` followed by a placeholder definition for each footnote it refers
    to without defining it."""
    labels = dict.fromkeys(REFERENCE.findall(text))
    defined = set(re.findall(r"^\[\^([^\]\s]+)\]:", text, re.M))
    missing = [label for label in labels if label not in defined]
    return text + "".join(f"\n\n[^{label}]: -\n" for label in missing)


def defining(parse):
    """Wrap MyST-Parser's ``MystParser.parse`` for translated messages (applied
    by :mod:`bookbuild.patches` after the wrapper of
    :mod:`~bookbuild.i18n.parse_speed`: this one is the outer one)."""

    def parse_with_definitions(self, inputstring, document):
        if document.current_source.endswith("<translated>"):
            inputstring = with_definitions(inputstring)
        return parse(self, inputstring, document)

    return parse_with_definitions


def setup(app: Sphinx) -> dict:
    app.setup_extension("bookbuild.patches")  # applies defining, translations only
    return {"parallel_read_safe": True, "parallel_write_safe": True}
