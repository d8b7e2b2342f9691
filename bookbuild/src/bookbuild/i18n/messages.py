"""The strings our own extensions put on a page, in the page's language.

Problem: Sphinx and the theme translate their own words ("Next", "Search") from
their catalogues, and the chapters are translated by the ``.po`` files of
``locales/``; but the words our extensions write ("Cite this chapter", the
notebook links, the first cell of a notebook, the footer) are in none of them.

Answer: one dict per language, English text as the key, chosen by the build's
``language`` (``app.config.language``). ``_ = gettext(language)`` then
``_("Cite this chapter")``; a message missing from a language stays English.
``tests/test_i18n.py`` checks that every ``_("...")`` of ``bookbuild`` has its
French entry. French typography: a narrow no-break space (U+202F) before ``:``,
``;``, ``?`` and ``!``, and « guillemets » with no-break spaces (U+00A0) inside.
"""

from __future__ import annotations

from collections.abc import Callable

NNBSP = "\u202f"  # before ; ? ! and :
NBSP = "\u00a0"  # inside « »

FRENCH: dict[str, str] = {
    # bookbuild.site.citation
    "Cite this chapter": "Citer ce chapitre",
    " and ": " et ",
    # bookbuild.i18n.citations: before the last of three or more authors
    ", and ": " et ",
    "Chapter": "Chapitre",
    "“{title}”": f"«{NBSP}{{title}}{NBSP}»",
    "In": "Dans",
    "version": "version",
    "Chapter label: {label}": f"Étiquette du chapitre{NNBSP}: {{label}}",
    "This language's edition": "Édition française",
    # ... and within the one-line reference: "In <title>, <edition>, version"
    "this language's edition": "édition française",
    "Version {version}": "Version {version}",
    "Version {version}, commit {commit}": "Version {version}, commit {commit}",
    "The book": "Le livre",
    "Each chapter": "Chaque chapitre",
    "Stable labels": "Étiquettes stables",
    "chapter": "chapitre",
    "figures": "figures",
    "equations": "équations",
    "exercises": "exercices",
    # bookbuild.site.notebooks: the link on each page, the notebook's own words
    "Download this chapter as a notebook": "Télécharger ce chapitre en notebook",
    "Open it on {service}": "L’ouvrir sur {service}",
    "# Installs what this notebook needs and is missing (in the book's own\n"
    "# environment, nothing): on Linux, the CPU build of PyTorch unless a torch\n"
    "# is there (Colab keeps its own); then the book's package qkv with what its\n"
    "# chapters use, from QKV_SOURCE if set (a folder or a pip address), else\n"
    "# from the book's repository.\n": (
        "# Installe ce dont ce notebook a besoin et qui manque (rien dans\n"
        "# l'environnement du livre) : sous Linux, la version CPU de PyTorch,\n"
        "# sauf si un torch est déjà là (Colab garde le sien) ; puis le paquet du\n"
        "# livre, qkv, avec ce qu'utilisent ses chapitres, depuis QKV_SOURCE si\n"
        "# elle est définie (un dossier ou une adresse pip), sinon depuis le\n"
        "# dépôt du livre.\n"
    )
    .replace(" :", f"{NNBSP}:")
    .replace(" ;", f"{NNBSP};"),
    "qkv is not installed: set SOURCE in this cell (or the\n"
    "environment variable QKV_SOURCE) to a copy of the book's\n"
    "repository, a folder or its git+https:// address, and run\n"
    "the cell again.": (
        f"qkv n'est pas installé{NNBSP}: donnez à SOURCE dans cette\n"
        "cellule (ou à la variable d'environnement QKV_SOURCE) une\n"
        "copie du dépôt du livre, un dossier ou son adresse\n"
        "git+https://, et relancez la cellule."
    ),
    # bookbuild.tools.handouts: the link to a chapter's PDF, once printed
    "Download this chapter as a PDF": "Télécharger ce chapitre en PDF",
    "Exercise": "Exercice",
    "Solution": "Solution",
    "Note": "Remarque",
    "Tip": "Astuce",
    "Important": "Important",
    "Warning": "Attention",
    # bookbuild.site.edition: the logo's alt text (the theme's is "<title> - Home")
    "{title} - Home": "{title} – Accueil",
    # bookbuild.site.build_info: every footer
    "built {date}": "construit le {date}",
    # bookbuild.site.build_info: the headers of the execution-time table
    "Document": "Document",
    "Modified": "Modifié le",
    "Method": "Méthode",
    "Run Time (s)": "Durée (s)",
    "Status": "État",
    # bookbuild.i18n.languages: the language switcher
    "Language": "Langue",
    # bookbuild.site.claim_notices: after a sentence whose check failed
    "On the machine that built this page, the check behind the sentence above\n"
    "did not hold: {check} (measured: {measured} is false). The sentence is about\n"
    "a model trained while the book was built; on this CPU the training ended\n"
    "differently.": (
        "Sur la machine qui a construit cette page, la vérification qui appuie la\n"
        f"phrase ci-dessus n’a pas tenu{NNBSP}: {{check}}\n"
        f"(mesuré{NNBSP}: {{measured}} est faux). La phrase porte sur un modèle\n"
        f"entraîné pendant la construction du livre{NNBSP}; sur ce processeur,\n"
        "l’entraînement a fini autrement."
    ),
    "On the machine that built this page, the check behind the sentence above\n"
    "did not hold: {check}. The sentence is about a model trained while the\n"
    "book was built; on this CPU the training ended differently.": (
        "Sur la machine qui a construit cette page, la vérification qui appuie la\n"
        f"phrase ci-dessus n’a pas tenu{NNBSP}: {{check}}. La phrase porte sur un\n"
        f"modèle entraîné pendant la construction du livre{NNBSP}; sur ce processeur,\n"
        "l’entraînement a fini autrement."
    ),
    # bookbuild.site.slides: the lecture decks and the link to them
    "Present this chapter": "Présenter ce chapitre",
    "Back to the chapter": "Retour au chapitre",
    "{title} (slides)": "{title} (diapositives)",
    "{title} (continued)": "{title} (suite)",
    "Light or dark": "Clair ou sombre",
    "previous slide": "diapositive précédente",
    "next slide": "diapositive suivante",
    # bookbuild.i18n.solution_titles: the heading of a solution
    "Solution to ": "Solution de l’",
    "exercise {number}": "exercice {number}",
}

CATALOGUES: dict[str, dict[str, str]] = {"fr": FRENCH}


def base_language(language: str | None) -> str:
    """``fr`` for ``fr``, ``fr_CA`` or ``fr-BE``; ``en`` for none."""
    return (language or "en").replace("-", "_").split("_")[0].lower()


def gettext(language: str | None) -> Callable[[str], str]:
    """The translating function ``_`` of a language (English text in, out)."""
    catalogue = CATALOGUES.get(base_language(language), {})

    def translate(message: str) -> str:
        return catalogue.get(message, message)

    return translate
