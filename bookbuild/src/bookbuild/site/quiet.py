"""A build log a reader can follow: progress, warnings, errors, and no dumps.

Problem: each build printed, among its progress lines, the whole configuration
objects of myst-parser and myst-nb (``myst-nb v1.4.0: NbParserConfig(...)``, two
lines of about 1,500 characters) and notes of extensions that say nothing a user
can act on ("Changing master_doc", "Loaded", "targets for 0 po files").

Answer: a logging filter on the handlers of Sphinx's logger drops these
informational lines, matched by :data:`NOISE`, and nothing else: warnings and
errors always pass, whatever their text.
"""

from __future__ import annotations

import logging
import re

from sphinx.application import Sphinx

#: Informational lines that are dropped (matched at the start, colours removed).
NOISE = re.compile(
    r"myst(-nb)? v[\d.]+: \w+ParserConfig\("  # the parsers' whole configuration
    r"|\[etoc\] Changing master_doc"
    r"|\[etoc\] missing index\.html written as redirect"
    r"|sphinx-multitoc-numbering v[\d.]+: Loaded"
    r"|building \[mo\]: targets for 0 po files"
)
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


class QuietFilter(logging.Filter):
    """Drops the informational records whose text matches :data:`NOISE`."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        try:
            text = record.getMessage()
        except (TypeError, ValueError):  # a malformed record: let Sphinx show it
            return True
        return not NOISE.match(_COLOURS.sub("", text))


def install(logger: logging.Logger | None = None) -> QuietFilter:
    """Add the filter to every handler of ``logger`` (Sphinx's, by default)."""
    quiet = QuietFilter()
    for handler in (logger or logging.getLogger("sphinx")).handlers:
        if not any(isinstance(f, QuietFilter) for f in handler.filters):
            handler.addFilter(quiet)
    return quiet


def setup(app: Sphinx) -> dict:
    # Sphinx sets up its handlers before it loads extensions: filter them now,
    # before the other extensions' config-inited and builder-inited notes.
    install()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
