"""Exercise titles in the catalogues (the second gap of the French edition).

Problem: ``{exercise} Softmax rows`` gives an exercise a title, but
sphinx-exercise parses the argument into a subtitle node that records no
source text, and Sphinx only extracts (and translates) nodes that do: the title
never reaches the ``.po`` files and stays English in every language.

Answer: the ``exercise`` and ``exercise-start`` directives of sphinx-exercise,
subclassed to give the title node its source (the argument as written, MyST
markup included), file and line. The gettext builder then extracts it like any
heading, and Sphinx's Locale transform replaces it by its translation before
sphinx-exercise builds the displayed title ("Exercice 5.1 (titre)").
"""

from __future__ import annotations

from sphinx.application import Sphinx
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


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")
    app.add_directive("exercise", TranslatableExercise, override=True)
    app.add_directive("exercise-start", TranslatableExerciseStart, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
