"""Exercise titles in the catalogues (the second gap of the French edition).

Problem: ``{exercise} Softmax rows`` gives an exercise a title, but
sphinx-exercise parses the argument into a subtitle node that records no
source text, and Sphinx only extracts (and translates) nodes that do: the title
never reaches the ``.po`` files and stays English in every language.

Answer: the ``exercise`` and ``exercise-start`` directives of sphinx-exercise,
subclassed to give the title node its source (the argument as written, MyST
markup included), file and line. Sphinx's Locale transform then replaces it by
its translation before sphinx-exercise builds the displayed title ("Exercice
5.1 (titre)"). The gettext builder extracts messages after the post-transforms,
when sphinx-exercise has already merged the title node into the heading: in
that build, a copy of each title is kept for it at the end of the page.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise.directive import ExerciseDirective, ExerciseStartDirective
from sphinx_exercise.nodes import exercise_subtitle


def _with_source(directive, result: list) -> list:
    if not directive.arguments:
        return result
    source, line = directive.get_source_info()
    for node in result:
        for subtitle in node.findall(exercise_subtitle):
            subtitle.rawsource = directive.arguments[0]
            subtitle.source, subtitle.line = source, line
    return result


class TranslatableExercise(ExerciseDirective):
    def run(self):
        return _with_source(self, super().run())


class TranslatableExerciseStart(ExerciseStartDirective):
    def run(self):
        return _with_source(self, super().run())


class KeepTitlesForGettext(SphinxPostTransform):
    """In the gettext build: each exercise title as a message of its page."""

    default_priority = 19  # before sphinx-exercise's ResolveTitlesInExercises (20)
    builders = ("gettext",)

    def run(self) -> None:
        for subtitle in list(self.document.findall(exercise_subtitle)):
            if not subtitle.rawsource:
                continue
            copy = nodes.paragraph(subtitle.rawsource, subtitle.rawsource)
            copy.source, copy.line = subtitle.source, subtitle.line
            copy.uid = ""  # the gettext builder skips nodes without one
            self.document += copy


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")
    app.add_directive("exercise", TranslatableExercise, override=True)
    app.add_directive("exercise-start", TranslatableExerciseStart, override=True)
    app.add_post_transform(KeepTitlesForGettext)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
