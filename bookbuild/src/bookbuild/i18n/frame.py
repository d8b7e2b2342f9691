"""The page frame in the page's language: the labels the theme and
sphinx-togglebutton write in English whatever the language.

Problem: on French pages, three labels of the frame stayed English (97 places
on the 23 pages, french-edition-2 review): the tooltips of the buttons that
open and close the sidebars, « Toggle primary sidebar » and « Toggle secondary
sidebar », which sphinx-book-theme 1.1 writes in its templates without marking
them for translation (its issue #998: absent from its catalogues), and the
screen readers' label of each folded box's button, « Toggle hidden content »,
which myst-nb writes on its folded cells and sphinx-togglebutton's script on
its buttons, in English only; and the names of the theme's two menus, « Main »
and « Page » (44 more, for screen readers).

Answer: :data:`LABELS` gives each its translation. In a translated build, the
written page's sidebar tooltips are replaced (``html-page-context``: the theme
renders them into the page after this hook, so the pages are rewritten when the
build finishes), and a short script, run once togglebutton's has made its
buttons (``load``), gives them the page's label.
"""

from __future__ import annotations

import json
from pathlib import Path

from sphinx.application import Sphinx

#: Each English label of the frame, in each translated language.
LABELS: dict[str, dict[str, str]] = {
    "Toggle primary sidebar": {
        "fr": "Afficher ou masquer la barre latérale principale",
    },
    "Toggle secondary sidebar": {
        "fr": "Afficher ou masquer la table des matières de la page",
    },
    "Toggle hidden content": {
        "fr": "Afficher ou masquer le contenu replié",
    },
    # the names screen readers give the theme's two menus (pydata-sphinx-theme)
    "Main": {"fr": "Navigation principale"},
    "Page": {"fr": "Sommaire de la page"},
}
#: The labels written into a page's HTML (the theme's tooltips), as attributes.
ATTRIBUTES = ("title", "aria-label")
#: What relabels togglebutton's buttons (``{labels}``: English -> translation).
SCRIPT = (
    'window.addEventListener("load", function () {{'
    " var labels = {labels};"
    ' document.querySelectorAll("button.toggle-button[aria-label]")'
    ".forEach(function (button) {{"
    ' var label = labels[button.getAttribute("aria-label")];'
    ' if (label) {{ button.setAttribute("aria-label", label); }}'
    " }}); }});"
)


def translations(language: str) -> dict[str, str]:
    """English label -> its ``language`` translation (those it has)."""
    return {
        english: found[language]
        for english, found in LABELS.items()
        if language in found
    }


def translate_frame(html: str, language: str) -> str:
    """``html`` with the frame's labels in ``language`` (title and aria-label)."""
    for english, translated in translations(language).items():
        for attribute in ATTRIBUTES:
            before, after = f'{attribute}="{english}"', f'{attribute}="{translated}"'
            html = html.replace(before, after)
    return html


def _language(app: Sphinx) -> str:
    return (app.config.language or "en").split("_")[0]


def _script(app: Sphinx) -> None:
    found = translations(_language(app))
    if found:
        app.add_js_file(None, body=SCRIPT.format(labels=json.dumps(found)))


def _rewrite(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    language = _language(app)
    if not translations(language):
        return
    for path in Path(app.outdir).rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        translated = translate_frame(html, language)
        if translated != html:
            path.write_text(translated, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _script)
    app.connect("build-finished", _rewrite)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
