"""The student edition: the same book without the solutions.

Problem: sphinx-exercise's ``hide_solutions`` crashes the build when solutions use
the gated form (``solution-start`` / ``solution-end``), which the book needs for
solutions that execute code.

Answer: with ``QKV_EDITION=student`` in the environment, a transform that runs
after sphinx-exercise has merged each gated solution into one node removes every
solution node, and the answer dropdowns of the "Question" boxes. The code of the
solutions still executes (from the shared cache), so the student edition shows
the same numbers. ``make book EDITION=student`` builds it into
``_build/student/_build/html``.
"""

from __future__ import annotations

import os

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


def setup(app: Sphinx) -> dict:
    app.add_config_value("qkv_edition", edition(), "env", [str])
    app.add_transform(RemoveSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
