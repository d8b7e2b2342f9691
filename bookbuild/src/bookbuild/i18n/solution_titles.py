"""Solution headings in the reader's language (the third gap of the French edition).

Problem: sphinx-exercise titles a solution "Solution to Exercise 5.1 (title)"
from a copy of the exercise it keeps in its registry, made when the page was
parsed: before Sphinx translated it, so the exercise's title stays English.
And its French catalogue composes "Solution de Exercice 5.1", which is not
French.

Answer, in a build whose language is not the root one:

* once Sphinx has translated a page (after its Locale transform), the registry's
  copy of each of its exercises is taken again from the translated page;
* a post-transform, run right after sphinx-exercise has titled the solutions,
  words each title with :mod:`bookbuild.i18n.messages`: "Solution de l'exercice 5.1
  (titre)", the exercise's number and title still a link to the exercise.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.nodes import (
    exercise_enumerable_node,
    exercise_node,
    exercise_subtitle,
    solution_node,
)
from sphinx_exercise.post_transforms import resolve_solution_title
from sphinx_exercise.utils import get_node_number

from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import gettext


class RecopyTranslatedExercises(SphinxTransform):
    """The registry's copy of each exercise, taken from the translated page."""

    default_priority = 25  # after Locale (20) and the merge of gated exercises (10)

    def apply(self) -> None:
        registry = getattr(self.env, "sphinx_exercise_registry", None)
        if not registry or not is_translation(self.config):
            return
        for node in self.document.findall(
            lambda n: isinstance(n, exercise_node | exercise_enumerable_node)
        ):
            entry = registry.get(node.get("label"))
            if entry and entry.get("docname") == self.env.docname:
                entry["node"] = node.deepcopy()


def solution_title(app, exercise, reference: nodes.reference) -> nodes.title:
    """ "Solution de l'exercice 5.1 (titre)", from :mod:`bookbuild.i18n.messages`."""
    _ = gettext(app.config.language)
    number = ""
    if isinstance(exercise, exercise_enumerable_node):
        number = get_node_number(app, exercise, "exercise")
    link = nodes.reference("", "", **reference.attributes)
    link += nodes.Text(_("exercise {number}").format(number=number).strip())
    for subtitle in exercise.children[0].findall(exercise_subtitle):
        link += nodes.Text(" (")
        link.extend(child.deepcopy() for child in subtitle.children)
        link += nodes.Text(")")
    return nodes.title("", "", nodes.Text(_("Solution to ")), link)


class WordSolutionTitles(SphinxPostTransform):
    """Each solution's heading in the reader's language."""

    # sphinx-exercise titles solutions at 21 and copies them into links at 22;
    # registered after it, this runs between the two.
    default_priority = 21

    def run(self) -> None:
        registry = getattr(self.env, "sphinx_exercise_registry", None)
        if not registry or not is_translation(self.config):
            return
        for node in self.document.findall(solution_node):
            exercise = registry.get(node.get("target_label"), {}).get("node")
            if exercise is None:
                continue  # sphinx-exercise has warned
            if not node.resolved_title:
                resolve_solution_title(self.app, node, exercise)
            old = node.children[0]
            reference = next(iter(old.findall(nodes.reference)), None)
            if reference is None:
                continue  # "solution_follow_exercise" style: a plain "Solution"
            title = solution_title(self.app, exercise, reference)
            node.children[0] = title
            title.parent = node
            node["title"] = title.astext()


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")
    app.add_transform(RecopyTranslatedExercises)
    app.add_post_transform(WordSolutionTitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
