"""The student edition: the same book without the solutions.

Problem: sphinx-exercise's ``hide_solutions`` crashes the build when solutions use
the gated form (``solution-start`` / ``solution-end``), which the book needs for
solutions that execute code. And the site serves each page's source (``_sources/``,
through the theme's ".md" download button), solutions and all.

Answer: with ``QKV_EDITION=student`` in the environment, a transform that runs
after sphinx-exercise has merged each gated solution into one node removes every
solution node, and the answer dropdowns of the "Question" boxes. The code of the
solutions still executes (from the shared cache), so the student edition shows
the same numbers. ``make book EDITION=student`` builds it into
``_build/student/_build/html``. Its pages' sources are not copied into the site
(``html_copy_source = False``) and the theme's button that would serve them is
left out; the ".pdf" button (the browser's print) and the chapter's notebook
(without solutions, :mod:`bookbuild.site.notebooks`) stay.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node


def edition() -> str:
    return os.environ.get("QKV_EDITION", "full")


class RemoveSolutions(SphinxTransform):
    """Drop solutions and answer dropdowns from the doctree (student edition)."""

    default_priority = 50  # after sphinx-exercise's MergeGatedSolutions (10)

    def apply(self) -> None:
        if self.config.qkv_edition != "student":
            return
        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)
        for box in list(self.document.findall(nodes.Element)):
            if "question" not in box.get("classes", []):
                continue
            for dropdown in list(box.findall(nodes.container)):
                if dropdown.get("design_component") == "dropdown" and dropdown.parent:
                    dropdown.parent.remove(dropdown)


def keep_sources_out(app: Sphinx, config) -> None:
    """Student edition: no page source in the site (they hold the solutions)."""
    if config.qkv_edition == "student":
        config.html_copy_source = False


def remove_old_sources(app: Sphinx, exception) -> None:
    """Student edition: remove a ``_sources`` folder an earlier build of the
    site left in the output folder (Sphinx removes nothing it no longer writes)."""
    if app.config.qkv_edition == "student" and exception is None:
        shutil.rmtree(Path(app.outdir) / "_sources", ignore_errors=True)


def drop_source_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """Student edition: leave the "download the source" button out of the
    theme's download menu (it would link the sources no longer copied)."""
    if app.config.qkv_edition != "student":
        return
    for group in context.get("header_buttons") or []:
        if "buttons" in group:
            group["buttons"] = [
                button
                for button in group["buttons"]
                if button.get("label") != "download-source-button"
            ]


def setup(app: Sphinx) -> dict:
    app.add_config_value("qkv_edition", edition(), "env", [str])
    app.add_transform(RemoveSolutions)
    app.connect("config-inited", keep_sources_out)
    app.connect("build-finished", remove_old_sources)
    # After the theme's add_header_buttons (priority 501), before the page is written.
    app.connect("html-page-context", drop_source_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
