"""``python -m bookbuild.tools.english_words [SITE] [--json]`` (``make
english-words``): the English words left on the French site (issue 24), counted
in four places.

Problem: the French edition's prose is translated, but what the code produces
(outputs, tables, figure labels) may stay English, and nothing said how much.

Answer: a count, without a dictionary download. The English words are those of
the book's own English prose (the ``msgid`` of ``locales/fr/**/*.po``) less every
word its French prose uses (their ``msgstr`` and ``bookbuild``'s own catalogue: so
"attention", "position", "cache" or "test" are not English), plus English
function words that never occur in French text (``FUNCTION_WORDS``), with three
short lists read by hand (``ALLOWED``, ``FRENCH_TOO``, ``ENGLISH_TOO``). Roles'
targets, inline code, math, links' addresses, quoted passages and emphasised
glosses ("requête (*query*)") are taken out of both before their words are read.
A word is a run of 2+ letters, compared in lower case; a token with a digit, an
``_`` or an inner dot (an identifier, a number), or with a capital after its
first letter (``PyTorch``, ``GPU``, ``RoPE``: names and acronyms) is no word, nor
are paths, Python's ``True``/``None``, a name called (``tensor(``), WordPiece
pieces (``##it``) and a tokenizer's list of pieces, code between backquotes
and keyword arguments in a message (```query```, ``masks=False``), math in a
figure's text, a
page's label (``attention-by-hand``), package names and an author before "et
al." or a citation.
A word the English prose never uses is not counted (a limit of the method).

Read on each French page of ``_toc.yml`` (``SITE/fr/<page>.html``) but the
references, in its article only (``article.bd-article``: no header, sidebar,
language menu or footer), in four places:

- ``pages``: the page's text (prose, headings, captions, admonitions, the alt
  texts of images), less its emphasised and quoted words (« », “ ”): on a French
  page those are mentions of English (a gloss, a title, an example), not prose;
- ``tables``: the cells of tables in the page's text (the same way);
- ``outputs``: what code cells printed or displayed (``div.cell_output``, its
  text and HTML tables), line by line;
- ``figures``: the text of the SVG figures the page shows (``fr/_images/*.svg``:
  matplotlib's ``svg.fonttype: path`` writes each text as a comment before its
  glyphs) or draws inline.

Not counted: code (cell inputs, inline code, literal blocks), math (MathJax
source, ``div.math``), citations (the bibliography, the "Cite this chapter"
box), scripts, styles, what a page hides until its script runs (a widget's live
part, whose labels the script writes in the page's language), and the book's
English examples (``Examples``): the data a model reads or writes in English.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from html import unescape
from pathlib import Path

from bookbuild.i18n.messages import translations
from bookbuild.toc import pages

PLACES = ("pages", "tables", "outputs", "figures")

#: English words that never occur in French text (added to the vocabulary even
#: if a French message quotes one). Not "an", "as", "on", "or", "but", "per",
#: "plus": French words too.
FUNCTION_WORDS = frozenset(
    """the of and with is are was were be been to which from that this these
    those for by it its at into than then there their they them we you your our
    has have had does do did not no if when where what who how why each every
    all any some other same between about while because after before over under
    only also can could will would should may might must such both either
    neither here just more most less very much many few once again out up""".split()
)

#: Words French courses keep in English, allowed on the French site even where
#: the translators happened not to use them (the catalogues' own, found by the
#: vocabulary, are allowed already).
ALLOWED = frozenset(
    """softmax token tokens one-hot transformer transformers notebook
    notebooks""".split()
)

#: French words spelled like English ones that the catalogues happen not to use
#: (found by reading what the count flagged on the French site).
FRENCH_TOO = frozenset(
    """normal initial local instance distinct constant content excellent
    pipeline chatbot stable visible plausible index hall bug orthogonal
    diagonal""".split()
)

#: English words a French message uses only as an English label it describes
#: ("étiquetés de head 0 à head 3", an alt text of a figure still in English):
#: English all the same.
ENGLISH_TOO = frozenset({"head"})

#: Pages not counted: the bibliography.
NOT_COUNTED = frozenset({"book/references"})

TOKEN = re.compile(r"\w+(?:[.'’\-]\w+)*")
LETTERS = re.compile(r"[^\W\d_]+")
IDENTIFIER = re.compile(r"[\d_]")
ABBREVIATIONS = frozenset({"e.g", "i.e"})
SVG_TEXT = re.compile(r"<!--(.*?)-->", re.S)
QUOTES = "«»“”\"'‘’"
QUOTED = re.compile(r"«[^»]*»|“[^”]*”")  # on a page: a mention, not prose
#: What is not a word although it is made of letters: blanked before counting.
NOT_WORDS = (
    re.compile(r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+"),  # paths: book/masking
    re.compile(r"\b[A-Z]\w*(?=\s*(?:et al\b|\[))"),  # names: He et al., He [HZRS16]
    re.compile(r"\b[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+"),  # an attribute: query.shape
    re.compile(r"\b(?:True|False|None|NaN)\b"),  # Python's values
    re.compile(r"\b\w+(?=[(\[])"),  # calls: tensor([...]), fn(query)
    re.compile(r"##\w+"),  # WordPiece tokens: '##it'
    re.compile(r"\['\[CLS\]'.*?'\[SEP\]'\]", re.S),  # a tokenizer's pieces
    re.compile(r"`[^`\n]+`"),  # code in a message: `query`
    re.compile(r"\b\w+(?==)"),  # a keyword argument: masks=False
    re.compile(r"\$[^$\n]+\$"),  # math in a figure's text: $\times W_o$
    re.compile(r"\b[a-z]+(?:-[a-z]+){2,}\b"),  # a page's label: attention-by-hand
    re.compile(r"\b(?:sphinx|jupyter|myst|scikit)-[\w-]+"),  # packages
)


# -- the vocabulary --------------------------------------------------------------


def _without_markup(text: str) -> str:
    """The prose of a message: roles' shown text kept ({term}`requête <query>`
    -> requête, {term}`softmax` -> softmax), other roles dropped, inline code, math,
    links' addresses, quoted passages and emphasised glosses dropped."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.S)
    text = re.sub(r"\{[\w:.-]+\}`([^`<]*?)\s*<[^`>]*>`", r"\1", text)
    text = re.sub(r"\{term\}`([^`]*)`", r"\1", text)  # shows its own text
    text = re.sub(r"\{[\w:.-]+\}`[^`]*`", " ", text)
    text = re.sub(r"``.*?``|`[^`]*`", " ", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"<[^>]*>", " ", text)
    text = re.sub(r"«[^»]*»|“[^”]*”|\"[^\"]*\"", " ", text)
    text = re.sub(r"(?<![*\w])\*(?!\*)[^*]+\*(?!\*)", " ", text)  # *gloss*
    return text


def words(text: str) -> Iterator[tuple[str, int]]:
    """The words of ``text`` (lower case) and where each starts: runs of 2+
    letters, not from an identifier, a number, a name or an acronym."""
    for token in TOKEN.finditer(text):
        raw = token[0]
        if IDENTIFIER.search(raw):
            continue
        if raw.lower() in ALLOWED:  # one-hot
            continue
        if "." in raw:
            if raw.lower() in ABBREVIATIONS:
                yield raw.lower(), token.start()
            continue
        for part in LETTERS.finditer(raw):
            word = part[0]
            if len(word) < 2 or not word[1:].islower():
                continue
            yield word.lower(), token.start() + part.start()


def _catalogue_words(root: Path) -> tuple[set[str], set[str]]:
    """The words of the catalogues' English (prose and the chapters' code
    messages), and of all their French: a code message's translation counts
    only its words that its English lacks (it keeps keys and examples)."""
    from babel.messages.pofile import read_po

    english: set[str] = set()
    french: set[str] = set()
    for po in sorted((root / "locales").glob("fr/LC_MESSAGES/**/*.po")):
        with open(po, "rb") as handle:
            catalogue = read_po(handle, charset="utf-8")
        for message in catalogue:
            if not message.id or not isinstance(message.id, str):
                continue  # the header
            source = {w for w, _ in words(_without_markup(message.id))}
            string = message.string if isinstance(message.string, str) else ""
            target = {w for w, _ in words(_without_markup(string))}
            if message.context:
                # A code message's translation keeps some words on purpose (a
                # key, a name, the French sentences of a task, quoted as code
                # quotes them, '...'): only the words it changed tell a language.
                kept = {w for w, _ in words(string)}
                english.update(source - kept)
                french.update(target - source)
                continue
            english.update(source)
            french.update(target)
    return english, french


@cache
def vocabulary(root: Path) -> frozenset[str]:
    """The words counted as English: the English prose's, less the French
    prose's and ``ALLOWED``, plus ``FUNCTION_WORDS`` (read once per process)."""
    english, french = _catalogue_words(root)
    for value in translations("fr").values():
        french.update(w for w, _ in words(value))
    french -= ENGLISH_TOO
    return frozenset((english - french - ALLOWED - FRENCH_TOO) | FUNCTION_WORDS)


def _literals(path: Path) -> dict[str, object]:
    """The module-level constants of a Python file, read without importing it
    (``qkv`` imports torch: seconds)."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    found[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass  # not a literal
    return found


@dataclass(frozen=True)
class Examples:
    """The English a model reads or writes in the book: example data, not prose.

    ``sentences``: the running sentence ("Your journey starts with one step") and
    the pretrained model's (``qkv.examples``), each not counted where it stands
    whole. ``words``: theirs and those of the French-to-English task's English
    side (``qkv.experiments.translate``: "the black mouse chases the white fox")
    and the animals and sounds of the dictionary *queries-keys-values* looks up,
    not counted where a piece of text has no other English word (a label, a
    cell, a line of output listing tokens or a translation), nor quoted."""

    sentences: tuple[str, ...]
    words: frozenset[str]


def examples(root: Path) -> Examples:
    """The book's English examples, from ``src/qkv``."""
    qkv = root / "src" / "qkv"
    found = _literals(qkv / "examples.py")
    sentences = (
        " ".join(found["SIX_WORDS"]),
        str(found["CAT_SENTENCE_EN"]),
        str(found["TROPHY_SENTENCE_EN"]),
    )
    task = _literals(qkv / "experiments" / "translate.py")
    english = ["the"]
    english += [w for noun in task["NOUNS"] for w in noun[3:5]]
    english += [adjective[4] for adjective in task["ADJECTIVES"]]
    english += [w for verb in task["VERBS"] for w in verb[2:4]]
    # The dictionary that a query looks up by key (queries-keys-values): its
    # animals and their sounds, kept in English by the French prose too.
    chapter = (root / "book" / "queries-keys-values.md").read_text("utf-8")
    sounds = re.search(r"^sounds = (\{.*\})$", chapter, re.M)
    if sounds:
        english += [w for pair in ast.literal_eval(sounds[1]).items() for w in pair]
    vocabulary = {w for s in (*sentences, *english) for w, _ in words(s)}
    return Examples(sentences, frozenset(vocabulary))


# -- counting ----------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    word: str
    place: str
    page: str
    context: str


def _spaces(match: re.Match) -> str:
    return " " * len(match[0])


@dataclass
class EnglishCounter:
    """Counts the English words of pieces of text, and keeps each with its
    context (``hits``)."""

    vocabulary: frozenset[str]
    examples: Examples
    hits: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        sentences = [
            r"\W+".join(map(re.escape, re.findall(r"\w+", sentence)))
            for sentence in self.examples.sentences
        ]
        self._sentences = re.compile("|".join(sentences), re.I)
        alone = "|".join(sorted(map(re.escape, self.examples.words)))
        self._quoted = re.compile(rf"[{QUOTES}]\s*(?:{alone})\s*[{QUOTES}]", re.I)

    def count(self, text: str, place: str, page: str) -> int:
        """Count the English words of one piece of text (a paragraph, a cell, a
        figure's label; an output line by line) and keep them with their
        context."""
        if place == "outputs":
            return sum(self._count(line, place, page) for line in text.splitlines())
        return self._count(text, place, page)

    def _count(self, text: str, place: str, page: str) -> int:
        text = " ".join(text.split())
        blank = self._quoted.sub(_spaces, text)
        if place in {"pages", "tables"}:
            blank = QUOTED.sub(_spaces, blank)
        for pattern in NOT_WORDS:
            blank = pattern.sub(_spaces, blank)
        blank = self._sentences.sub(_spaces, blank)
        found = [(w, i) for w, i in words(blank) if w in self.vocabulary]
        if all(w in self.examples.words for w, _ in found):
            return 0  # only examples' words: a label, a cell, a list of tokens
        for word, start in found:
            context = text[max(0, start - 30) : start + len(word) + 30]
            self.hits.append(Hit(word, place, page, context))
        return len(found)


def _classes(tag) -> set[str]:
    return set(tag.get("class") or ())


SKIPPED_TAGS = {"script", "style", "code", "math"}
SKIPPED_CLASSES = {
    "cell_input",  # code cells' source
    "math",  # MathJax source, inline and display
    "highlight",  # literal blocks (code, BibTeX)
    "qkv-cite",  # the "Cite this chapter" box
    "citation",  # bibliography entries
    "headerlink",  # the ¶ of headings
    "pre",  # inline code's inner span
}
MENTIONS = {"em", "cite"}
BLOCKS = {
    "p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption",
    "summary", "caption", "pre", "div", "section", "blockquote", "td", "th",
    "tr", "table", "details", "figure", "ul", "ol", "dl", "option", "label",
}  # fmt: skip


def _events(node, place: str, images: list[str]) -> Iterator[tuple[str, str]]:
    """The text under ``node`` as (place, text) events, ``("", "")`` at each
    block boundary; the images' sources appended to ``images``."""
    from bs4 import Comment, NavigableString, Tag

    for child in node.children:
        if isinstance(child, Comment):
            continue
        if isinstance(child, NavigableString):
            yield place, str(child)
            continue
        if not isinstance(child, Tag):
            continue
        classes = _classes(child)
        if child.has_attr("hidden"):
            continue  # a widget's live part: its script writes the labels
        if child.name == "svg":  # a figure drawn in the page (icons have no text)
            for text in svg_texts(str(child)):
                yield "", ""
                yield "figures", text
            yield "", ""
            continue
        if child.name in SKIPPED_TAGS or classes & SKIPPED_CLASSES:
            if place == "outputs" and (child.name == "pre" or "highlight" in classes):
                yield "", ""  # a printed output: text, not code
                yield place, child.get_text()
                yield "", ""
            else:
                yield place, " "
            continue
        if child.name == "img":
            images.append(child.get("src", ""))
            if child.get("alt"):
                yield "", ""
                yield place, child["alt"]
                yield "", ""
            continue
        if child.name in MENTIONS and place in {"pages", "tables"}:
            yield place, " "  # emphasised English: a gloss, a title, an example
            continue
        inner = place
        if "cell_output" in classes:
            inner = "outputs"
        elif child.name in {"td", "th"} and place == "pages":
            inner = "tables"
        block = child.name in BLOCKS or inner != place
        if block:
            yield "", ""
        yield from _events(child, inner, images)
        if block:
            yield "", ""


def page_pieces(html: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The pieces of text of a page's article, each with its place, and the
    sources of the images it shows."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    article = soup.select_one("article.bd-article") or soup.body or soup
    out: list[tuple[str, str]] = []
    images: list[str] = []
    buffer: list[str] = []
    current = "pages"
    for place, text in [*_events(article, "pages", images), ("", "")]:
        if place != current or not place:
            piece = "".join(buffer).strip()
            if piece:
                out.append((current, piece))
            buffer.clear()
            current = place or current
        if place:
            buffer.append(text)
    return out, images


def svg_texts(svg: str) -> list[str]:
    """The texts of a matplotlib SVG figure: its comments (``svg.fonttype:
    path``), and any ``<text>`` element."""
    texts = [unescape(t).strip() for t in SVG_TEXT.findall(svg)]
    texts += [
        unescape(re.sub(r"<[^>]+>", "", t))
        for t in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)
    ]
    return [t for t in texts if t]


@dataclass
class Report:
    counts: dict[str, int]
    pages: dict[str, dict[str, int]]
    hits: list[Hit]
    figures: int

    def top_words(self, n: int = 30, place: str = "") -> list[tuple[str, int, str]]:
        """The ``n`` most frequent words (of one ``place``, or of all): (word,
        count, one context)."""
        hits = [hit for hit in self.hits if not place or hit.place == place]
        first: dict[str, Hit] = {}
        for hit in hits:
            first.setdefault(hit.word, hit)
        return [
            (
                word,
                k,
                f"{first[word].page} ({first[word].place}): {first[word].context}",
            )
            for word, k in Counter(hit.word for hit in hits).most_common(n)
        ]

    def top_pages(self, n: int = 10) -> list[tuple[str, int]]:
        return [(page, total) for page, total, _ in ranked_pages(self.pages, n)]

    def as_json(self, top: int = 30) -> dict:
        return {
            "counts": self.counts,
            "pages": self.pages,
            "figures": self.figures,
            "top_words": self._json_words(top),
            "top_words_by_place": {p: self._json_words(top, p) for p in PLACES},
        }

    def _json_words(self, top: int, place: str = "") -> list[dict]:
        return [
            {"word": w, "count": k, "example": c}
            for w, k, c in self.top_words(top, place)
        ]


def pages_of(root: Path) -> list[str]:

    return [page for page in pages(root) if page not in NOT_COUNTED]


@dataclass
class SitePage:
    """A page of a built site as the counters read it: its name (``book/x``),
    its file, and :func:`page_pieces` of it (none if it was not built)."""

    name: str
    path: Path
    pieces: list[tuple[str, str]]
    images: list[str]


def site_folder(site: Path, language: str) -> Path:
    """The folder of the ``language`` edition of ``site`` (``""`` or ``"en"``:
    the English one, the site's root)."""
    return site / language if language not in {"", "en"} else site


def read_site(
    site: Path,
    root: Path,
    language: str = "fr",
    pages: Iterable[str] | None = None,
    html: Callable[[str], str] | None = None,
) -> Iterator[SitePage]:
    """Each page of the book (``pages``, by default :func:`pages_of`) on the
    ``language`` edition of ``site``, read into its pieces once, its HTML first
    passed through ``html`` if given: the one page reader of this module and
    of :mod:`bookbuild.tools.english_numbers`."""
    folder = site_folder(site, language)
    for name in pages if pages is not None else pages_of(root):
        path = folder / f"{name}.html"
        if not path.is_file():
            yield SitePage(name, path, [], [])
            continue
        text = path.read_text("utf-8")
        pieces, images = page_pieces(html(text) if html else text)
        yield SitePage(name, path, pieces, images)


def site_arguments(tool: str, description: str) -> argparse.ArgumentParser:
    """The command line of a counter of a built site (``python -m
    bookbuild.tools.<tool>``): the site, ``--root``, ``--language`` (``fr``;
    ``''`` or ``en`` for the English site) and ``--json``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m bookbuild.tools.{tool}", description=description
    )
    parser.add_argument("site", nargs="?", default="_build/html", type=Path)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the book")
    parser.add_argument(
        "--language", default="fr", help="the site's folder; '' or 'en' for English"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def built_folder(tool: str, site: Path, language: str) -> Path | None:
    """The folder of the ``language`` edition of ``site``, or ``None`` after
    saying that it is not built."""
    folder = site_folder(site, language)
    if folder.is_dir():
        return folder
    print(f"{tool.replace('_', '-')}: no site in {folder}: `make book`")
    return None


def ranked_pages(
    per_page: dict[str, dict[str, int]], n: int | None = None
) -> list[tuple[str, int, str]]:
    """The pages with most hits, most first (ties by name): (page, total,
    ``"kind k, ..."``), pages without any left out."""
    totals = {page: sum(c.values()) for page, c in per_page.items()}
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    return [
        (page, total, ", ".join(f"{k} {v}" for k, v in per_page[page].items() if v))
        for page, total in ranked
        if total
    ][:n]


def count_site(
    site: Path, root: Path, language: str = "fr", pages: Iterable[str] | None = None
) -> Report:
    """Count the English words of the pages of ``site/<language>/`` (``""``: the
    English site itself, the sanity check)."""
    counter = EnglishCounter(vocabulary(root), examples(root))
    per_page: dict[str, dict[str, int]] = {}
    shown: set[Path] = set()
    for page in read_site(site, root, language, pages):
        counts = dict.fromkeys(PLACES, 0)
        per_page[page.name] = counts
        for place, text in page.pieces:
            counts[place] += counter.count(text, place, page.name)
        for src in dict.fromkeys(page.images):
            if not src.endswith(".svg") or "_static/" in src:
                continue  # a PNG (a widget's static figure) or the logo
            svg = (page.path.parent / src).resolve()
            if not svg.is_file():
                continue
            shown.add(svg)
            for text in svg_texts(svg.read_text("utf-8")):
                counts["figures"] += counter.count(text, "figures", page.name)
    totals = {place: sum(c[place] for c in per_page.values()) for place in PLACES}
    return Report(totals, per_page, counter.hits, len(shown))


def main(argv: list[str] | None = None) -> int:
    parser = site_arguments(
        "english_words",
        "The English words left on the French site: page text, tables, outputs "
        "and figures.",
    )
    parser.add_argument("--top", type=int, default=30, help="how many words to list")
    parser.add_argument(
        "--page", action="append", default=[], help="every hit of this page (book/x)"
    )
    args = parser.parse_args(argv)
    folder = built_folder("english_words", args.site, args.language)
    if folder is None:
        return 2
    report = count_site(args.site, args.root, args.language)
    if args.json:
        print(json.dumps(report.as_json(args.top), ensure_ascii=False, indent=1))
        return 0
    if args.page:
        for hit in report.hits:
            if hit.page in args.page:
                print(f"{hit.page} ({hit.place}) {hit.word}: {hit.context}")
        return 0
    total = sum(report.counts.values())
    print(
        f"english-words: {total} English words on {folder} "
        f"({len(report.pages)} pages, {report.figures} figures): "
        + ", ".join(f"{place} {report.counts[place]}" for place in PLACES)
    )
    print("pages with most:")
    for page, n, detail in ranked_pages(report.pages, 10):
        print(f"  {n:5d}  {page}  ({detail})")
    print(f"the {args.top} most frequent:")
    for word, k, context in report.top_words(args.top):
        print(f"  {k:5d}  {word:14s} {context}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
