"""Lecture decks: every chapter as a reveal.js deck, in each language (``make slides``).

Problem: a lecturer projects the book. A reading page is not a lecture: at
1280x720 the figure they want is somewhere down a long page, between code cells.
A deck written by hand beside the book would repeat its numbers and figures, and
drift from them at the next build.

Answer: the deck of a chapter is assembled from the chapter's *built* page, in
each language (``book/<chapter>.html``, ``fr/book/<chapter>.html``), where every
glued number, every figure and every translation already is: nothing executes
twice, and the French deck is French because its page is. The decks are written
when a build finishes (this module is a Sphinx extension, so ``make book``
writes them and the site's links to them always resolve), into
``slides/<chapter>.html`` beside ``book/`` (same depth: the page's relative
addresses of images and scripts hold unchanged).

What goes on the slides, in order:

* a title slide: the chapter's title, the book's provenance line (title,
  version, commit, build date: the page's footer) and a link back to the page;
* the chapter's "You will learn" box (its first ``tip`` admonition);
* the items the chapter lists in its front matter, in the order given::

      slides:
        - sdp-eq-attention          # an equation's label: the equation, its lead
                                    # sentence and a table right after it
        - fig-sdp-saturation        # a figure's name: the figure full size
        - fig-sdp-explorable        # a glued explorable: live, as on the page
        - scaled-dot-product-ex1    # an exercise's label: the question, then its
                                    # solution on the next slide (full edition)
        - pm-head-view              # a label, (pm-head-view)=, before a code
                                    # cell: its output (a live view), no source;
                                    # before a literal block: its text

  Without that list, every figure of the chapter outside its exercises (the
  default rule: each chapter gets a deck);
* the chapter's "Summary" section.

Each slide's speaker notes (reveal.js's ``S`` key) are the paragraphs around
its item on the page: the one before it and the two after it, which are what
the page says about the figure or the equation. A long list (goals, summary)
is split over several slides. A slide's title is the title of the page's
section that holds its item.

The student edition's decks are made from its own pages, which hold no
solution: neither do its decks (``tests/site/test_student_edition.py``).

reveal.js 5.2.0 comes from the PyPI package ``sphinx-revealjs`` (pinned in
``requirements.txt``), which ships reveal.js's built files: the book still
needs no Node.js, and nothing loads from outside (the files are copied into the
site's ``_slides/``; math is typeset by the site's own MathJax). Only those
files are used, not its Sphinx builder (which would build every page a second
time). Keyboard: reveal.js's (arrows, space, ``Esc`` for the overview, ``S`` for
the notes, ``F`` full screen), and ``M`` for light or dark (the site's choice
is the default).
The speaker view (``S``: reveal.js's notes plugin) and the pause overlay
(``B``) speak the deck's language: the plugin's words are rewritten in each
language's copy of it (:data:`SPEAKER_VIEW`, messages of ``bookbuild``'s
catalogue), its clock is the language's 24-hour one. reveal.js's keyboard help
(``?``) is off: the keys are few and the lecturer's, and it would be one more
English screen.

``python -m bookbuild.site.slides`` writes the decks of every built site again
and prints what it wrote (``make slides``); ``python -m bookbuild.site.slides
print [--edition student]`` prints each deck to a PDF, one slide a page, into
``_build/pdf/slides/`` (``make pdf``).
"""

from __future__ import annotations

import copy
import html as html_escape
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bookbuild.i18n.messages import N_, base_language, gettext

#: Where the decks go, beside ``book/`` in each site.
FOLDER = "slides"
#: Where reveal.js's files go, in each site.
ASSETS = "_slides"
#: The files of reveal.js the decks load (from the package sphinx-revealjs).
REVEAL_FILES = (
    "LICENSE",
    "dist/reset.css",
    "dist/reveal.css",
    "dist/reveal.js",
    "plugin/notes/notes.js",
)
#: The notes plugin: the speaker view (key S), in the deck's language.
NOTES = "plugin/notes/notes.js"
#: A list longer than this (characters of text) is split over several slides.
LIST_CHARACTERS = 520
#: The lead sentence of an equation goes on its slide up to this length.
LEAD_CHARACTERS = 320
STATIC = Path(__file__).parent / "slides_static"


def reveal_folder() -> Path:
    """reveal.js's built files, as the package sphinx-revealjs ships them."""
    import sphinx_revealjs

    return Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"


#: The words of reveal.js's speaker view (``plugin/notes/notes.js``, key S) a
#: lecturer reads, each as it is written in that file, with its English message
#: (``{}``: where the translation goes). A deck not in English gets a copy of the
#: plugin with these rewritten; each must be found exactly once (a new
#: reveal.js that words them otherwise fails the build, not the lecture).
#: reveal.js's keyboard help (``?``) is switched off (``help: false``).
SPEAKER_VIEW = (
    (
        "<title>reveal.js - Speaker View</title>",
        "<title>{}</title>",
        N_("Speaker view"),
    ),
    (">Loading speaker view...<", ">{}<", N_("Loading the speaker view…")),
    (">Upcoming<", ">{}<", N_("Next slide")),
    (
        '>Time <span class=\\"reset-button\\">',
        '>{} <span class=\\"reset-button\\">',
        N_("Time"),
    ),
    (">Click to Reset<", ">{}<", N_("Click to reset")),
    (
        ">Pacing – Time to finish current slide<",
        ">{}<",
        N_("Pacing: time left on this slide"),
    ),
    (">Notes</h4>", ">{}</h4>", N_("Notes")),
    (
        "'Layout' + ( title ? ( ': ' + title ) : '' )",
        "'{}' + ( title ? ( ' ' + title ) : '' )",
        N_("Layout:"),
    ),
    ("'default': 'Default'", "'default': '{}'", N_("Default")),
    ("'wide': 'Wide'", "'wide': '{}'", N_("Wide")),
    ("'tall': 'Tall'", "'tall': '{}'", N_("Tall")),
    ("'notes-only': 'Notes only'", "'notes-only': '{}'", N_("Notes only")),
    (
        "'Cross origin error.<br>The speaker window can only be opened from the "
        "same origin.'",
        "'{}'",
        N_("The speaker view opens only from the deck's own site."),
    ),
    (
        "'Error connecting to main window.<br>Please try closing and reopening the "
        "speaker view.'",
        "'{}'",
        N_("No connection to the deck: close the speaker view and open it again."),
    ),
    (
        'alert("Speaker view popup failed to open. Please make sure popups are '
        'allowed and reopen the speaker view.")',
        'alert("{}")',
        N_("The speaker view did not open: allow pop-up windows, then press S again."),
    ),
    ('description:"Speaker notes view"', 'description:"{}"', N_("Speaker view")),
)


def speaker_view(text: str, language: str) -> str:
    """reveal.js's notes plugin (``text``) with its speaker view in ``language``:
    its words (:data:`SPEAKER_VIEW`), its ``lang`` and its clock."""
    if base_language(language) == "en":
        return text
    _ = gettext(language)
    for english, pattern, message in SPEAKER_VIEW:
        translated = _(message)
        if set(translated) & set("'\"\\<>\n"):
            raise ValueError(
                f"the speaker view's {message!r}: its translation {translated!r} "
                "must hold no quote, backslash, < or > (it goes into a JS string)"
            )
        if text.count(english) != 1:
            raise ValueError(
                f"reveal.js's notes plugin: {english!r} found {text.count(english)}"
                " times, expected once (a new reveal.js? see SPEAKER_VIEW)"
            )
        text = text.replace(english, pattern.format(translated))
    locale = base_language(language)
    for english, local in (
        ('<html lang=\\"en\\">', f'<html lang=\\"{locale}\\">'),
        (
            "toLocaleTimeString( 'en-US', { hour12: true,",
            f"toLocaleTimeString( '{locale}', {{ hour12: false,",
        ),
        (">0:00 AM<", ">00:00<"),
    ):
        if text.count(english) != 1:
            raise ValueError(f"reveal.js's notes plugin: {english!r} not found once")
        text = text.replace(english, local)
    return text


def copy_assets(site: Path, language: str = "") -> None:
    """reveal.js and the decks' own style and script into ``site/_slides``
    (the speaker view in the site's language)."""
    target = Path(site) / ASSETS
    source = reveal_folder()
    for name in REVEAL_FILES:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        if name == NOTES:
            text = (source / name).read_text(encoding="utf-8")
            (target / name).write_text(speaker_view(text, language), encoding="utf-8")
        else:
            shutil.copyfile(source / name, target / name)
    for name in ("slides.css", "slides.js"):
        shutil.copyfile(STATIC / name, target / name)


def front_matter(source: Path) -> dict:
    """The YAML front matter of a chapter's source (empty if none)."""
    import yaml

    text = Path(source).read_text(encoding="utf-8")
    match = re.match(r"\A---\n(.*?)^---[ \t]*$", text, re.M | re.S)
    return (yaml.safe_load(match[1]) or {}) if match else {}


def chosen_items(source: Path) -> list[str] | None:
    """The labels a chapter's front matter puts on its slides (None: the default)."""
    items = front_matter(source).get("slides")
    if items is None:
        return None
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"{source}: `slides:` must be a list of labels, got {items!r}")
    return items


class DeckError(ValueError):
    """A chapter's ``slides:`` names something its page does not have."""


@dataclass
class Slide:
    title: str  # HTML
    body: str  # HTML
    notes: str = ""  # HTML
    kind: str = "item"


def _text(node) -> str:
    return " ".join(node.get_text(" ").split())


def _inner(node) -> str:
    return "".join(str(child) for child in node.contents)


def _clean(node):
    """A copy of ``node`` without the page's anchors (the ``#`` after titles)."""
    node = copy.copy(node)
    for anchor in node.select("a.headerlink"):
        anchor.decompose()
    for section in node.find_all("section"):
        section.name = "div"  # a <section> in a slide would be a slide of its own
    return node


def _heading(node) -> str:
    """The title (HTML) of the section that holds ``node``."""
    for section in node.find_parents("section"):
        heading = section.find(["h1", "h2", "h3", "h4"], recursive=False)
        if heading is not None and section.get("id") not in (
            "exercise-content",
            "solution-content",
        ):
            return _inner(_clean(heading)).strip()
    return ""


def _paragraphs(node, direction: str, count: int) -> list:
    """Up to ``count`` paragraphs before or after ``node`` (code cells skipped,
    stopping at anything else)."""
    found = []
    sibling = getattr(node, f"find_{direction}_sibling")()
    while sibling is not None and len(found) < count:
        classes = sibling.get("classes") or sibling.get("class") or []
        if sibling.name == "p":
            found.append(sibling)
        elif not (sibling.name == "div" and "cell" in classes):
            break
        sibling = getattr(sibling, f"find_{direction}_sibling")()
    return found[::-1] if direction == "previous" else found


def _notes(node, before: int = 1, after: int = 2) -> str:
    parts = _paragraphs(node, "previous", before) + _paragraphs(node, "next", after)
    return "".join(str(_clean(part)) for part in parts)


def _chunks(items: list, limit: int = LIST_CHARACTERS) -> list[list]:
    """List items in groups of at most ``limit`` characters of text (one item
    alone may be longer)."""
    groups: list[list] = [[]]
    size = 0
    for item in items:
        length = len(_text(item))
        if groups[-1] and size + length > limit:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += length
    return [group for group in groups if group]


def _list_slides(title: str, box, kind: str, _) -> list[Slide]:
    """The slides of a box whose content is one list (goals, summary)."""
    listing = box.find(["ul", "ol"])
    if listing is None:
        return [Slide(title, _inner(_clean(box)), kind=kind)]
    items = listing.find_all("li", recursive=False)
    groups = _chunks(items)
    slides = []
    for index, group in enumerate(groups):
        heading = title if index == 0 else _("{title} (continued)").format(title=title)
        body = f"<{listing.name}>" + "".join(str(_clean(i)) for i in group)
        slides.append(Slide(heading, body + f"</{listing.name}>", kind=kind))
    return slides


def _find(article, label: str):
    return article.find(id=label) or article.find(id=f"equation-{label}")


def _solution(article, label: str):
    for solution in article.select("div.solution"):
        title = solution.select_one(".admonition-title")
        if title is not None and title.find("a", href=f"#{label}") is not None:
            return solution
    return None


def _in_exercise(node) -> bool:
    return any(
        {"exercise", "solution", "dropdown"} & set(parent.get("class") or [])
        or parent.name == "details"
        for parent in node.find_parents(["div", "details"])
    )


def _item_slides(article, label: str, edition: str) -> list[Slide]:
    node = _find(article, label)
    if node is None:
        raise DeckError(f"`slides:` names {label!r}, which the page does not have")
    classes = node.get("class") or []
    if node.name == "figure":
        return [
            Slide(
                _heading(node),
                f'<div class="qkv-deck-figure">{_clean(node)}</div>',
                _notes(node),
                "figure",
            )
        ]
    if "math" in classes:
        lead = _paragraphs(node, "previous", 1)
        body = ""
        if lead and len(_text(lead[0])) <= LEAD_CHARACTERS:
            body += f'<div class="qkv-deck-lead">{_clean(lead[0])}</div>'
            lead = []
        body += f'<div class="qkv-deck-equation">{_clean(node)}</div>'
        following = node.find_next_sibling()
        if following is not None and following.find("table") is not None:
            body += f'<div class="qkv-deck-table">{_clean(following)}</div>'
            node = following
        notes = "".join(str(_clean(p)) for p in lead) + "".join(
            str(_clean(p)) for p in _paragraphs(node, "next", 2)
        )
        return [Slide(_heading(node), body, notes, "equation")]
    if "exercise" in classes:
        slides = [_box_slide(node, "exercise")]
        solution = _solution(article, label)
        if solution is not None and edition != "student":
            slides.append(_box_slide(solution, "solution"))
        return slides
    if "cell" in classes:
        # A code cell's output (a live view with no figure around it), without
        # its source: a lecture shows what the code draws.
        output = node.select_one("div.cell_output")
        if output is None:
            raise DeckError(f"`slides:` names {label!r}: a code cell with no output")
        return [
            Slide(
                _heading(node),
                f'<div class="qkv-deck-figure qkv-deck-live">{_clean(output)}</div>',
                _notes(node),
                "live",
            )
        ]
    if node.name == "div" and any(c.startswith("highlight-") for c in classes):
        # A literal block (text the page shows as it is, e.g. a model's samples).
        return [
            Slide(
                _heading(node),
                f'<div class="qkv-deck-scroll qkv-deck-text">{_clean(node)}</div>',
                _notes(node),
                "text",
            )
        ]
    raise DeckError(
        f"`slides:` names {label!r}: not a figure, equation, exercise, code cell"
        " or literal block"
    )


def _box_slide(box, kind: str) -> Slide:
    box = _clean(box)
    title = box.select_one(".admonition-title")
    heading = _inner(title).strip() if title is not None else ""
    if title is not None:
        title.decompose()
    for hidden in box.select("details.hide.above-input"):
        hidden.decompose()  # the source of a hidden cell (its output stays)
    box["class"] = [c for c in box.get("class") or [] if c != "dropdown"]
    return Slide(heading, f'<div class="qkv-deck-scroll">{_inner(box)}</div>', "", kind)


LINK = re.compile(r"^(?![a-z][a-z0-9+.-]*:|/|\.\./|#)", re.I)


def _relink(body: str, chapter: str) -> str:
    """The page's links, from the deck's folder: ``#x`` to the page's ``#x``,
    ``other.html`` to ``../book/other.html`` (``../`` addresses hold as they are)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser")
    for anchor in soup.find_all("a", href=True):
        href = anchor["href"]
        if href.startswith("#"):
            anchor["href"] = f"../book/{chapter}.html{href}"
        elif LINK.match(href):
            anchor["href"] = f"../book/{href}"
    return str(soup)


def deck_slides(
    page_html: str, items: list[str] | None, edition: str, _
) -> list[Slide]:
    """The slides of a chapter, from its built page (see the module's docstring)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page_html, "html.parser")
    article = soup.select_one("article.bd-article") or soup
    h1 = article.find("h1")
    slides = [Slide(_inner(_clean(h1)).strip(), "", "", "title")]
    goals = article.select_one("div.tip.admonition")
    if goals is not None:
        title = goals.select_one(".admonition-title")
        heading = _text(title) if title is not None else ""
        slides += _list_slides(html_escape.escape(heading), goals, "goals", _)
    if items is None:
        for figure in article.find_all("figure"):
            if figure.get("id") and not _in_exercise(figure):
                slides += _item_slides(article, figure["id"], edition)
    else:
        for label in items:
            slides += _item_slides(article, label, edition)
    summary = article.find("section", id="summary")
    if summary is not None:
        heading = summary.find("h2")
        title = _inner(_clean(heading)).strip() if heading is not None else ""
        body = copy.copy(summary)
        if body.find("h2") is not None:
            body.find("h2").decompose()
        slides += _list_slides(title, body, "summary", _)
    return slides


def _head_scripts(page_html: str) -> tuple[str, str]:
    """The page's MathJax configuration and the address of its MathJax."""
    config = re.search(r"<script>\s*window\.MathJax = .*?</script>", page_html, re.S)
    source = re.search(r'<script[^>]*src="([^"]*mathjax[^"]*\.js[^"]*)"', page_html)
    return (config[0] if config else ""), (source[1] if source else "")


def _provenance(page_html: str) -> str:
    found = re.search(r'<p class="qkv-provenance">(.*?)</p>', page_html, re.S)
    return found[1].strip() if found else ""


def _page_title(page_html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", page_html, re.S)
    return found[1].strip() if found else ""


def render(page_html: str, chapter: str, language: str, slides: list[Slide]) -> str:
    """The deck's HTML."""
    _ = gettext(language)
    config, mathjax = _head_scripts(page_html)
    back = _("Back to the chapter")
    page = f"../book/{chapter}.html"
    sections = []
    for index, slide in enumerate(slides):
        if slide.kind == "title":
            body = (
                f'<p class="qkv-deck-provenance">{_provenance(page_html)}</p>'
                f'<p><a class="qkv-deck-read" href="{page}">{back}</a></p>'
            )
            inner = f"<h1>{slide.title}</h1>{body}"
        else:
            inner = f"<h2>{slide.title}</h2>{slide.body}"
        notes = f'<aside class="notes">{slide.notes}</aside>' if slide.notes else ""
        sections.append(
            f'<section data-qkv-kind="{slide.kind}" id="slide-{index + 1}">'
            f'<div class="qkv-slide qkv-slide-{slide.kind}">{inner}</div>'
            f"{notes}</section>"
        )
    slides_html = _relink("\n".join(sections), chapter)
    title = _("{title} (slides)").format(title=_page_title(page_html))
    labels = {
        "mode": _("Light or dark"),
        "previous": _("previous slide"),
        "next": _("next slide"),
        "up": _("slide above"),
        "down": _("slide below"),
        "resume": _("Resume the presentation"),
    }
    data = " ".join(
        f'data-label-{key}="{html_escape.escape(value)}"'
        for key, value in labels.items()
    )
    return f"""<!DOCTYPE html>
<html lang="{language or "en"}" data-mode="auto">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<script>
(() => {{
  const root = document.documentElement;
  const dark = window.matchMedia("(prefers-color-scheme: dark)");
  try {{
    root.dataset.mode = localStorage.getItem("mode") || "auto";
  }} catch {{
    root.dataset.mode = "auto";
  }}
  const resolve = () => {{
    const mode = root.dataset.mode;
    root.dataset.theme = mode === "auto" ? (dark.matches ? "dark" : "light") : mode;
  }};
  resolve();
  dark.addEventListener("change", resolve);
}})();
</script>
<link rel="icon" href="../_static/favicon.svg">
<link rel="stylesheet" href="../{ASSETS}/dist/reset.css">
<link rel="stylesheet" href="../{ASSETS}/dist/reveal.css">
<link rel="stylesheet" href="../{ASSETS}/slides.css">
{config}
<script defer src="{mathjax}"></script>
</head>
<body>
<div class="reveal tex2jax_ignore mathjax_ignore"><div class="slides">
{slides_html}
</div></div>
<a class="qkv-deck-back" href="{page}">{back}</a>
<script src="../{ASSETS}/dist/reveal.js"></script>
<script src="../{ASSETS}/plugin/notes/notes.js"></script>
<script src="../{ASSETS}/slides.js" {data}></script>
</body>
</html>
"""


@dataclass
class Written:
    chapter: str
    slides: int


def write_decks(
    site: Path,
    root: Path,
    language: str = "",
    edition: str = "full",
) -> list[Written]:
    """Every chapter's deck of the built ``site`` (one language), from its pages."""
    from bookbuild.toc import lessons

    site = Path(site)
    copy_assets(site, language)
    written = []
    for docname in lessons(root):
        page = site / f"{docname}.html"
        if not page.is_file():
            continue
        chapter = Path(docname).name
        page_html = page.read_text(encoding="utf-8")
        items = chosen_items(Path(root) / f"{docname}.md")
        try:
            slides = deck_slides(page_html, items, edition, gettext(language))
        except DeckError as error:
            raise DeckError(f"{docname}.md: {error}") from None
        target = site / FOLDER / f"{chapter}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            render(page_html, chapter, language, slides), encoding="utf-8"
        )
        written.append(Written(chapter, len(slides)))
    return written


# --- the Sphinx extension: the decks after each build, the "present" link -------


def _language_folder(app) -> str:
    from bookbuild.site.notebooks import _translations_folder

    return _translations_folder(app)


def _present_link(app, pagename, templatename, context, doctree) -> None:
    from bookbuild.toc import is_one_page_build, lessons

    if is_one_page_build(app.srcdir) or pagename not in lessons(Path(app.srcdir)):
        return
    _ = gettext(app.config.language)
    href = "../" * pagename.count("/") + f"{FOLDER}/{Path(pagename).name}.html"
    link = f'<a class="qkv-present-link" href="{href}">{_("Present this chapter")}</a>'
    body = context.get("body", "")
    marker = '<p class="qkv-notebook-link">'
    if body.startswith(marker):
        end = body.index("</p>")
        context["body"] = body[:end] + " · " + link + body[end:]
    else:
        context["body"] = f'<p class="qkv-notebook-link">{link}</p>' + body


def _build_decks(app, exception) -> None:
    from sphinx.util import logging

    from bookbuild.toc import book_root, is_one_page_build

    if exception is not None or app.builder.format != "html":
        return
    if is_one_page_build(app.srcdir):
        return
    started = time.process_time()
    try:
        written = write_decks(
            Path(app.outdir),
            book_root(Path(app.srcdir)),
            _language_folder(app),
            getattr(app.config, "qkv_edition", "full"),
        )
    except DeckError as error:
        logging.getLogger(__name__).warning(f"slides: {error}")
        return
    seconds = time.process_time() - started
    logging.getLogger(__name__).info(
        f"slides: {len(written)} decks, {sum(w.slides for w in written)} slides "
        f"({seconds:.1f} s of CPU)"
    )


def setup(app) -> dict:
    # After bookbuild.site.notebooks' link (same priority, registered before).
    app.connect("html-page-context", _present_link, priority=501)
    app.connect("build-finished", _build_decks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# --- make slides, make pdf -------------------------------------------------------


def sites(root: Path, edition: str = "full") -> list[tuple[str, Path]]:
    """(language, site folder) of every built site of ``edition``."""
    from bookbuild.i18n.translations import translated_languages
    from bookbuild.tools.handouts import site

    return [
        (language, site(root, language, edition))
        for language in ["", *translated_languages(root)]
        if (site(root, language, edition) / "index.html").exists()
    ]


def build_all(root: Path = Path("."), edition: str = "full") -> int:
    found = sites(root, edition)
    if not found:
        sys.exit("slides: no built site: run `make book` first")
    for language, folder in found:
        started = time.process_time()
        written = write_decks(folder, root, language, edition)
        seconds = time.process_time() - started
        counts = ", ".join(f"{w.chapter} {w.slides}" for w in written)
        print(
            f"slides: {len(written)} decks in {folder / FOLDER} "
            f"({seconds:.1f} s of CPU): {counts}"
        )
    return 0


#: A deck printed: reveal.js's own print layout, one slide a page of 1280x720.
PRINT_QUERY = "?print-pdf"


def print_decks(
    root: Path = Path("."), edition: str = "full", chapters: list[str] | None = None
) -> list[Path]:
    """Each deck of each built site (those of ``chapters`` if given) to
    ``_build/pdf[/student][/<language>]/slides``, one slide a page of 1280x720
    (reveal.js's print layout); the title slide names the version and commit."""
    from playwright.sync_api import sync_playwright

    from bookbuild.tools.browser import launch, serve, wait_for_math
    from bookbuild.tools.handouts import pdf_folder

    printed = []
    for language, folder in sites(root, edition):
        decks = sorted((folder / FOLDER).glob("*.html"))
        if chapters:
            decks = [deck for deck in decks if deck.stem in chapters]
        out = pdf_folder(root, language, edition) / FOLDER
        out.mkdir(parents=True, exist_ok=True)
        with serve(folder) as base, sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            for deck in decks:
                page.goto(
                    f"{base}/{FOLDER}/{deck.name}{PRINT_QUERY}", wait_until="load"
                )
                page.wait_for_function("() => window.Reveal && Reveal.isReady()")
                wait_for_math(page)
                target = out / f"{deck.stem}.pdf"
                page.pdf(
                    path=str(target),
                    width="1280px",
                    height="720px",
                    print_background=True,
                    margin={"top": "0", "bottom": "0", "left": "0", "right": "0"},
                )
                printed.append(target)
                print(f"pdf: {target}")
            browser.close()
    return printed


def main(argv: list[str], root: Path = Path(".")) -> int:
    edition = "full"
    if "--edition" in argv:
        at = argv.index("--edition")
        edition, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    if argv[:1] == ["print"]:
        print_decks(root, edition, argv[1:] or None)
        return 0
    return build_all(root, edition)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
