"""The book in several languages: one source, one site per language.

Problem: Sphinx translates a book from ``.po`` catalogues (``locales/<lang>/``)
when it is built with another ``language``, but a second language needs more
than the catalogues: its own title and search text, a way for a reader to go
from a page to the same page in the other language, and, on this stack, six
fixes (glue, exercise titles, solution titles, footnotes, part captions, the
alt texts of glued figures) and glued numbers written the reader's way.

Answer, this Sphinx extension, configured in ``_config.yml`` (``sphinx.config``):

* ``book_languages``: ``{code: name}``, the first one the root language, built
  into ``_build/html``; every other one into ``_build/html/<code>`` with the same
  page paths (``python -m bookbuild.build build``), from the same
  execution cache;
* ``book_i18n_overrides``: per language, config values to replace
  (``html_title``, ``nb_code_prompt_show``; a dotted key such as
  ``html_theme_options.search_bar_text`` sets one entry of a dict);
* ``book_translated``: per language, the pages whose translation is complete
  (``all`` for every page), for ``python -m bookbuild.i18n.translations check``.

On every page of every language: a language menu in the header (relative links
to the same page and section in each language: works from a folder opened from
disk and under any host prefix, no fetch) and ``<link rel="alternate"
hreflang=...>``. In a language other than the root one: the executed notebooks
of myst-nb go to ``_build/jupyter_execute_<code>`` (not inside the root site),
the glossary is sorted by its translated terms, and display math or a paragraph
with nothing but math, code and glued values is left out of the catalogues.
The six fixes are their own extensions, loaded from here:
:mod:`~bookbuild.i18n.glue`, :mod:`~bookbuild.i18n.exercise_titles`,
:mod:`~bookbuild.i18n.solution_titles`, :mod:`~bookbuild.i18n.footnotes`,
:mod:`~bookbuild.i18n.toc_captions`, :mod:`~bookbuild.i18n.alt_texts`; and
:mod:`~bookbuild.i18n.numbers` writes glued numbers the way of the page's
language (``3\u202f168``, ``0,174`` in French). :mod:`~bookbuild.i18n.parse_speed`
parses translated messages without rebuilding a parser for each;
:mod:`~bookbuild.i18n.citations` joins the authors of a citation in the text
with the page's words ("Hochreiter et Schmidhuber").
"""

from __future__ import annotations

import html
import re
import unicodedata
from os import path
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.util.i18n import docname_to_domain

from bookbuild.i18n.messages import base_language, gettext

FIXES = (
    "bookbuild.i18n.glue",
    "bookbuild.i18n.exercise_titles",
    "bookbuild.i18n.solution_titles",
    # The three that replace a parser's method (glue, parse_speed, footnotes)
    # have them applied by bookbuild.patches, in its registry's order.
    "bookbuild.i18n.parse_speed",
    "bookbuild.i18n.footnotes",
    "bookbuild.i18n.toc_captions",
    "bookbuild.i18n.alt_texts",
    "bookbuild.i18n.numbers",
    "bookbuild.i18n.citations",
    "bookbuild.i18n.code",
    "bookbuild.i18n.frame",
)


def root_language(config) -> str:
    """The language of the site root (the first of ``book_languages``)."""
    return next(iter(config.book_languages or {"en": ""}))


def is_translation(config) -> bool:
    """True when this build is a language other than the root one."""
    return base_language(config.language) != base_language(root_language(config))


def page_href(pagename: str, current: str, target: str, root: str) -> str:
    """The relative link from ``pagename`` in language ``current`` to the same
    page in ``target`` (the root language's site holds the others' folders)."""
    up = "../" * pagename.count("/")
    if current != root:
        up += "../"  # out of the language's folder, to the root site
    folder = "" if target == root else f"{target}/"
    return f"{up}{folder}{pagename}.html"


# -- configuration ---------------------------------------------------------------


def _apply_overrides(app: Sphinx, config: Config) -> None:
    config.book_root_baseurl = config.html_baseurl or ""
    language = base_language(config.language)
    for key, value in (config.book_i18n_overrides or {}).get(language, {}).items():
        name, _, entry = key.partition(".")
        if entry:
            setattr(config, name, {**(getattr(config, name) or {}), entry: value})
        else:
            setattr(config, name, value)
    if is_translation(config) and config.html_baseurl:
        # The canonical address of a page (and the BibTeX URLs): its own language.
        config.html_baseurl = f"{config.html_baseurl.rstrip('/')}/{language}/"


def _own_output_folder(app: Sphinx) -> None:
    """myst-nb writes executed notebooks to ``<outdir>/../jupyter_execute``: for
    ``_build/html/fr`` that is inside the root site. Use a folder beside it; and
    read the root language's execution cache (``_build/.jupyter_cache``) unless
    one is configured, so that nothing is executed twice."""
    outdir = Path(app.outdir)
    language = base_language(app.config.language)
    if not is_translation(app.config) or outdir.name != language:
        return
    folder = outdir.parent.parent / f"jupyter_execute_{language}"
    settings = {"output_folder": str(folder)}
    if not app.config.nb_execution_cache_path:
        settings["execution_cache_path"] = str(outdir.parent.parent / ".jupyter_cache")
    app.env.mystnb_config = app.env.mystnb_config.copy(**settings)


def catalogue(env, config, docname: str) -> dict[str, str]:
    """The translations Sphinx uses for ``docname`` (compiled, non-fuzzy)."""
    domain = docname_to_domain(docname, config.gettext_compact)
    dirs = [path.join(env.srcdir, folder) for folder in config.locale_dirs]
    translations, found = init_locale(dirs, config.language, domain)
    if not found:
        return {}
    merged: dict[str, str] = {}
    while translations is not None:
        merged = {**getattr(translations, "_catalog", {}), **merged}
        translations = getattr(translations, "_fallback", None)
    return {k: v for k, v in merged.items() if isinstance(k, str) and k}


# -- what a translator need not translate ------------------------------------------

_NOT_WORDS = re.compile(
    r"\{[\w:.-]+\}`[^`]*`"  # a role (glue, ref, eq...)
    r"|\$\$.+?\$\$|\$[^$]+\$"  # math
    r"|`[^`]*`"  # inline code
    r"|<[^>]+>",  # an HTML tag
    re.S,
)
_LETTER = re.compile(r"[^\W\d_]")


def has_words(source: str) -> bool:
    """True if a message has text to translate besides math, code and roles."""
    return bool(_LETTER.search(_NOT_WORDS.sub(" ", source)))


class LeaveOutUntranslatable(SphinxTransform):
    """Display math, paragraphs or cells of nothing but math, code and roles, and
    everything a code cell printed, are not messages: they would only be copied
    unchanged into the catalogues (or change with each measurement)."""

    default_priority = 5  # before Locale (20); the gettext builder extracts later

    def apply(self) -> None:
        for output in self.document.findall(nodes.container):
            if "cell_output" in output.get("classes", []):
                # What the code printed (a table of measurements, say) stays as
                # printed: as a message it would change with every measurement.
                for node in output.findall(nodes.TextElement):
                    node["translatable"] = False
        for node in self.document.findall(nodes.TextElement):
            if isinstance(node, nodes.math_block):
                node["translatable"] = False
            elif isinstance(node, nodes.paragraph | nodes.title | nodes.caption):
                raw = getattr(node, "rawsource", "")
                if raw and not has_words(raw):
                    node["translatable"] = False


def sort_key(term: str) -> str:
    """Alphabetical order, accents ignored (``é`` with ``e``), case ignored."""
    decomposed = unicodedata.normalize("NFD", term.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


class SortTranslatedGlossary(SphinxTransform):
    """A glossary in alphabetical order in English is not in French: sort it again
    by its translated terms."""

    default_priority = 30  # after Locale (20)

    def apply(self) -> None:
        if not is_translation(self.config):
            return
        for glossary in self.document.findall(addnodes.glossary):
            for items in glossary.findall(nodes.definition_list):
                entries = list(items.children)
                entries.sort(key=lambda item: sort_key(item[0].astext()))
                items.children = entries


# -- the language menu --------------------------------------------------------------


def _language_menu(app: Sphinx, pagename: str, templatename, context, doctree):
    languages = app.config.book_languages or {}
    if len(languages) < 2:
        return
    root = root_language(app.config)
    current = base_language(app.config.language)
    _ = gettext(current)
    buttons, links = [], []
    for code, name in languages.items():
        href = page_href(pagename, current, code, root)
        buttons.append(
            {
                "type": "javascript",
                # Keep the reader's place: section ids are the same in every
                # language, and so is a query (search.html?q=..., ?highlight=).
                "javascript": (
                    f"window.location.href='{href}'"
                    "+window.location.search+window.location.hash"
                ),
                "text": f"{name} ✓" if code == current else name,
                "label": f"language-{code}",
            }
        )
        links.append((code, href))
    if "header_buttons" in context:  # the theme's list (pages, search, index)
        context["header_buttons"].insert(
            0,
            {
                "type": "group",
                "tooltip": _("Language"),
                "icon": "fas fa-language",
                "buttons": buttons,
                "label": "language-buttons",
            },
        )
    site = (app.config.book_root_baseurl or "").rstrip("/")
    tags = []
    for code, href in [*links, ("x-default", links[0][1])]:
        if site:
            folder = "" if code in (root, "x-default") else f"{code}/"
            href = f"{site}/{folder}{pagename}.html"
        tags.append(
            f'<link rel="alternate" hreflang="{code}" href="{html.escape(href)}">'
        )
    context["metatags"] = context.get("metatags", "") + "\n".join(tags) + "\n"


def _one_document(app: Sphinx, doctree: nodes.document) -> None:
    """Every node of a translated page belongs to the page's own document.

    Sphinx parses each translated message as a small document of its own and
    moves its nodes into the page; some (strong, emphasis, links) keep a
    reference to that small document, whose settings hold the whole build
    environment. Pickled with the page, each French doctree weighed 2 to 4 MB
    instead of about 0.2, and reading them back for cross-references took half
    of the French build. The nodes are pointed back at the page.
    """
    for node in doctree.findall():
        if getattr(node, "_document", None) not in (None, doctree):
            node.document = doctree


def setup(app: Sphinx) -> dict:
    app.add_config_value("book_languages", {"en": "English"}, "html", [dict])
    app.add_config_value("book_translated", {}, "", [dict])
    app.add_config_value("book_i18n_overrides", {}, "html", [dict])
    app.add_config_value("book_root_baseurl", "", "", [str])
    app.connect("config-inited", _apply_overrides, priority=300)
    # After myst-nb's own builder-inited handler, which sets the output folder.
    app.connect("builder-inited", _own_output_folder, priority=600)
    app.add_transform(LeaveOutUntranslatable)
    app.add_transform(SortTranslatedGlossary)
    app.connect("doctree-read", _one_document)
    # After the theme has made its list of header buttons (priority 500-501).
    app.connect("html-page-context", _language_menu, priority=502)
    for fix in FIXES:
        app.setup_extension(fix)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
