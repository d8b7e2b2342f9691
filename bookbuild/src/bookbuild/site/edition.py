"""The editions of the book: the student edition (without the solutions), and
what makes a translated edition's pages its own (its sources and its brand).

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

Problem: in a translated edition (``_build/html/fr``), the theme's "download the
source" button (« Télécharger le fichier source ») serves ``_sources/<page>.md``,
which Sphinx copies from the English source: a French reader gets the English
chapter.

Answer: when a translated build finishes, each page's copy in ``_sources`` is
its Markdown with the prose translated from the page's catalogue (the messages
Sphinx itself used, :func:`bookbuild.i18n.languages.catalogue`), block by
block with :func:`bookbuild.i18n.translations.translate_markdown`, as the
chapter's notebook is (:mod:`bookbuild.site.notebooks`): headings,
paragraphs, list items, captions, alt texts and titles; glue roles, math and
links are kept as the translator kept them. The front matter and the code cells
are left as they are (the code is the same in both editions). A copy already
translated by an earlier build is left alone: Sphinx copies the English source
again only for a page it writes again (its source or its catalogue changed).
Cost: about 1.2 s of CPU for the whole book in a cold French build (compiling
each message's pattern), nothing for a page left as it was.

And its brand: a translated edition's title and logo are its own
(``html_title`` and ``html_logo`` of ``book_i18n_overrides`` in ``_config.yml``:
``img/logo-fr.svg`` reads « L’attention, calculée »); under the logo, the name
of the edition (« Édition française », :mod:`bookbuild.i18n.messages`), and the
logo's alt text in the page's language (the theme's own is "<title> - Home").
Its citations say the same (:mod:`bookbuild.site.citation`).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node

from bookbuild.i18n.catalogues import translate_markdown
from bookbuild.i18n.code import translated_code
from bookbuild.i18n.languages import catalogue, is_translation
from bookbuild.i18n.messages import gettext


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


def brand(app: Sphinx, config) -> None:
    """A translated edition: the edition's name under the logo, and the logo's
    alt text in its language (after ``book_i18n_overrides``, which set its title
    and logo)."""

    if "book_languages" not in config or not is_translation(config):
        return
    _ = gettext(config.language)
    options = dict(config.html_theme_options or {})
    logo = dict(options.get("logo") or {})
    logo.setdefault("text", _("This language's edition"))
    logo.setdefault("alt_text", _("{title} - Home").format(title=config.html_title))
    config.html_theme_options = {**options, "logo": logo}


#: What of a chapter's Markdown the prose's catalogue never translates: the
#: front matter, and the code cells (their comments and strings are translated
#: by bookbuild.i18n.code).
UNTRANSLATED = re.compile(
    r"\A---\n.*?^---[ \t]*$"  # the front matter
    r"|^(?P<fence>`{3,}|~{3,})\{code-cell\}.*?^(?P=fence)[ \t]*$",  # a code cell
    re.M | re.S,
)


def translate_source(text: str, messages: dict[str, str]) -> str:
    """A page's MyST Markdown with its prose translated by ``messages`` (the
    page's catalogue, English -> translation); front matter and code as they are."""

    if not messages:
        return text
    kept: list[str] = []

    def keep(match: re.Match) -> str:
        kept.append(match[0])
        return f"\x02{len(kept) - 1}\x02"

    # One call for the whole page (each call compiles its messages' patterns).
    translated = translate_markdown(UNTRANSLATED.sub(keep, text), messages)
    return re.sub("\x02(\\d+)\x02", lambda match: kept[int(match[1])], translated)


def translate_sources(app: Sphinx, exception) -> None:
    """A translated edition: each page's copy in ``_sources`` (what the theme's
    "download the source" button serves) translated, unless done already."""

    if exception is not None or app.builder.format != "html":
        return
    if "book_languages" not in app.config or not is_translation(app.config):
        return
    if not app.config.html_copy_source:
        return
    folder = Path(app.outdir) / "_sources"
    link_suffix = app.config.html_sourcelink_suffix  # "" in Jupyter Book
    for docname in sorted(app.env.found_docs):
        source = Path(app.env.doc2path(docname))
        # Where Sphinx copied it (StandaloneHTMLBuilder.get_doc_context).
        name = docname + source.suffix
        copy = folder / (name if source.suffix == link_suffix else name + link_suffix)
        if not copy.is_file() or not source.is_file():
            continue
        english = source.read_text(encoding="utf-8")
        if copy.read_text(encoding="utf-8") != english:
            continue  # translated by an earlier build, and not copied again since

        code = translated_code(app, docname, english)  # comments and strings
        translated = translate_source(code, catalogue(app.env, app.config, docname))
        if translated != english:
            copy.write_text(translated, encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.add_config_value("qkv_edition", edition(), "env", [str])
    app.add_transform(RemoveSolutions)
    app.connect("config-inited", keep_sources_out)
    # After bookbuild.i18n.languages' overrides (priority 300): the edition's title.
    app.connect("config-inited", brand, priority=400)
    app.connect("build-finished", remove_old_sources)
    app.connect("build-finished", translate_sources)
    # After the theme's add_header_buttons (priority 501), before the page is written.
    app.connect("html-page-context", drop_source_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
