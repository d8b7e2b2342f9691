"""The chapters' code in the page's language: its comments and its strings.

Problem: a French page must show what French code produced. Sphinx translates
a page's prose from its catalogue, but a code cell is not prose: its comments
stay English, and so do the labels, headers and sentences its strings give to
figures, tables and printed outputs, which are executed once, in English.

Answer: a chapter's code has **code messages**, in the page's own catalogue
under the context ``code`` (``msgctxt "code"``), beside its prose:

* each comment a reader sees (in a cell the page shows: not ``remove-cell`` or
  ``remove-input``): a block of whole-line comments is one message, its lines
  joined with spaces when they read as prose (re-wrapped in the translation to
  the width of the code column), kept line by line when they are laid out (an
  indented line, a list); an end-of-line comment is one message;
* each string literal that a reader may read, in every cell: a string with two
  words in it, or any string given to a call or keyword that shows text
  (:data:`TEXT_CALLS`, :data:`TEXT_KEYWORDS`: ``set_xlabel``, ``print``,
  ``label=``, ``headers=``...). The message is the text between the quotes as
  the source writes it (escapes and f-string fields kept).

A translation equal to its message keeps the text (a name, a key the code
compares). :func:`translate_code` writes a chapter's source with its code
translated, and ``qkv.set_language("<code>")`` after the imports of its first cell,
so that ``qkv`` draws, prints and checks in that language (its figures, tables
and messages); :func:`translated_source` is that source for a page. The French
build reads it instead of the English (:func:`setup`, on ``source-read``), and
the prefill executes it into the same execution cache beside the English one
(``bookbuild.execute.prefill``): its code differs, so its outputs are its own.

:func:`extract` adds the code messages to the freshly extracted ``.pot`` files
(``translations update`` then merges them into the ``.po``), :func:`problems`
reports what the translations check must fail on: a code message with no
translation, an f-string whose fields differ, French code that does not parse,
a shown line longer than the code column.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bookbuild.i18n.catalogues import po_path
from bookbuild.i18n.languages import is_translation
from bookbuild.i18n.messages import base_language
from bookbuild.toc import book_root, is_notebook, pages
from bookbuild.tools.chapter_code import CODE_CELL, HIDDEN_CODE

#: The catalogue context of a code message.
CONTEXT = "code"
#: Calls whose string arguments a reader reads (a label, a title, a table).
TEXT_CALLS = frozenset(
    {
        "print",
        "set_xlabel",
        "set_ylabel",
        "set_title",
        "suptitle",
        "title",
        "titles",
        "xlabel",
        "ylabel",
        "text",
        "annotate",
        "legend",
        "set_label",
        "markdown_table",
        "shape_table",
        "Markdown",
        "set_xticklabels",
        "set_yticklabels",
        "colorbar",
        "set_text",
    }
)
#: Calls whose strings are pasted into the prose (``glue``): the prose's
#: catalogue translates them (bookbuild.i18n.glue), never the code.
GLUED = frozenset({"glue", "glue_all", "Phrase"})
#: Keywords (and variables, assigned at the top of a statement) whose string
#: values a reader reads.
TEXT_KEYWORDS = frozenset(
    {
        "label",
        "labels",
        "title",
        "xlabel",
        "ylabel",
        "header",
        "headers",
        "columns",
        "caption",
    }
)
#: The widest line of code a page shows (bookbuild.tools.chapter_code).
SHOWN_WIDTH = 77
_WORDS = re.compile(r"[A-Za-z]{2,}[^\n]*\s+[^\n]*[A-Za-z]{2,}")
_LETTERS = re.compile(r"[A-Za-z]{2,}")
#: Quotation marks: a shown text quoting fields ("'{a}' → '{b}'") is translated.
_QUOTED = re.compile("['\"\u2018\u2019\u201c\u201d]")
_STRING = re.compile(r"^(?P<prefix>[rRbBuUfF]*)(?P<quote>'''|\"\"\"|'|\")", re.S)
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")
_LAYOUT = {
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.COMMENT,
}
_FIELD = re.compile(r"\{[^{}]*\}")
_ALIGNMENT = re.compile(r"^[lrc]+$")
_LAID_OUT = re.compile(r"^(?:\s|[-*+] |\d+[.)] |[\w.]+(?:\[[^\]]*\])?: )")


@dataclass(frozen=True)
class Unit:
    """A piece of a code cell a reader reads: a comment (block) or a string."""

    kind: str  # "comment" or "string"
    msgid: str
    line: int  # its first line in the page's file (1-based)
    start: tuple[int, int]  # (row, col) in the cell's code (tokenize's)
    end: tuple[int, int]
    laid_out: bool = False  # a comment block kept line by line


def code_cells(text: str) -> Iterator[tuple[re.Match, int, bool]]:
    """Each code cell of a page: its match, the line of the file where its code
    begins (1-based) and whether the page shows its code."""
    for match in CODE_CELL.finditer(text):
        first = text.count("\n", 0, match.start("code")) + 1
        yield match, first, not HIDDEN_CODE.search(match.group("options"))


def _string_text(token: str) -> tuple[str, str, str]:
    """``(prefix + quote, text, quote)`` of a string literal token."""
    match = _STRING.match(token)
    if not match:
        return "", token, ""
    opening = match.group(0)
    quote = match.group("quote")
    return opening, token[len(opening) : len(token) - len(quote)], quote


def units(code: str, first_line: int = 1, shown: bool = True) -> list[Unit]:
    """The code messages of one cell's ``code``: its comments if the page shows
    them, its strings a reader may read."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []  # IPython syntax (a magic): no messages
    lines = code.splitlines()
    keys = _keys(tokens)
    found: list[Unit] = []
    block: list[tokenize.TokenInfo] = []

    def close_block() -> None:
        if not block:
            return
        texts = [t.string[1:].removeprefix(" ").rstrip() for t in block]
        laid_out = any(_LAID_OUT.match(text) for text in texts[1:])
        msgid = "\n".join(texts) if laid_out else " ".join(t.strip() for t in texts)
        if _LETTERS.search(msgid):
            found.append(
                Unit(
                    "comment",
                    msgid,
                    first_line + block[0].start[0] - 1,
                    block[0].start,
                    block[-1].end,
                    laid_out,
                )
            )
        block.clear()

    stack: list[str | None] = [None]  # what shows the strings at each bracket
    keyword: str | None = None  # the keyword whose value comes next
    previous: list[tokenize.TokenInfo] = []
    for token in tokens:
        if token.type == tokenize.COMMENT:
            whole_line = lines[token.start[0] - 1][: token.start[1]].strip() == ""
            if not shown:
                continue
            if whole_line:
                if block and (
                    token.start[0] != block[-1].start[0] + 1
                    or token.start[1] != block[-1].start[1]
                ):
                    close_block()
                block.append(token)
            else:
                close_block()
                text = token.string[1:].strip()
                if _LETTERS.search(text):
                    found.append(
                        Unit(
                            "comment",
                            text,
                            first_line + token.start[0] - 1,
                            token.start,
                            token.end,
                        )
                    )
            continue
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT):
            continue
        close_block()
        if token.type == tokenize.OP and token.string in "([{":
            name = previous[-1] if previous else None
            if token.string == "(" and name is not None and name.type == tokenize.NAME:
                stack.append(name.string)
            elif keyword is not None:
                stack.append(keyword)
            else:
                stack.append(stack[-1])
            keyword = None
        elif token.type == tokenize.OP and token.string in ")]}":
            if len(stack) > 1:
                stack.pop()
            keyword = None
        elif token.type == tokenize.OP and token.string == "=":
            name = previous[-1] if previous else None
            named = name is not None and name.type == tokenize.NAME
            keyword = name.string if named else None
        elif token.type == tokenize.OP and token.string == ",":
            keyword = None
        elif token.type == tokenize.STRING and token.start not in keys:
            _, text, _ = _string_text(token.string)
            context = keyword or stack[-1]
            readable = context in TEXT_CALLS or context in TEXT_KEYWORDS
            words = _FIELD.sub(" ", text)  # an f-string's fields are code
            if any(call in GLUED for call in stack):
                pass  # glued into the prose: the page's catalogue translates it
            elif _ALIGNMENT.match(text) or not (
                _LETTERS.search(words) or (readable and _QUOTED.search(words))
            ):  # a table's column alignment ("lrr"), a number's format; not
                pass  # a shown "'{a}' → '{b}'", whose quotes French writes « »
            elif readable or (
                _WORDS.search(words) and re.search(r"\s", _FIELD.sub("", text))
            ):  # two words, not a key built of fields ("aoi-{role}-weight")
                found.append(
                    Unit(
                        "string",
                        text,
                        first_line + token.start[0] - 1,
                        token.start,
                        token.end,
                    )
                )
        previous.append(token)
    close_block()
    return found


def page_units(text: str) -> list[Unit]:
    """The code messages of a page's MyST source, in order."""
    found = []
    for match, first, shown in code_cells(text):
        found.extend(units(match.group("code"), first, shown))
    return found


def _comment_lines(unit: Unit, translation: str, indent: str) -> list[str]:
    if unit.laid_out or "\n" in translation:
        return [f"{indent}# {line}".rstrip() for line in translation.split("\n")]
    width = max(SHOWN_WIDTH - len(indent) - 2, 20)
    return [f"{indent}# {line}" for line in textwrap.wrap(translation, width)]


def _keys(tokens: list[tokenize.TokenInfo]) -> set[tuple[int, int]]:
    """Where the string literals that are keys start: a name (``seed``, an
    identifier) as a dict display's key (``{"seed": 0}``) or a subscript
    (``runs["seed"]``). Such keys name things in code (a keyword argument, a
    field): a translation keeps them. A key with spaces (``"causal mask"``)
    is a label kept in a dict, and is translated with its other uses."""
    tokens = [t for t in tokens if t.type not in _LAYOUT]
    brackets: list[str] = []
    found = set()
    for at, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            brackets.append(token.string)
        elif token.type == tokenize.OP and token.string in ")]}" and brackets:
            brackets.pop()
        if token.type != tokenize.STRING:
            continue
        if not _IDENTIFIER.match(_string_text(token.string)[1]):
            continue  # "causal mask": a label kept in a dict, text
        after = tokens[at + 1].string if at + 1 < len(tokens) else ""
        if after == ":" and brackets[-1:] == ["{"]:
            found.add(token.start)  # a dict's key
        elif after == "]" and at > 1 and tokens[at - 1].string == "[":
            ahead = tokens[at - 2]
            if ahead.type == tokenize.NAME or ahead.string in (")", "]"):
                found.add(token.start)  # a subscript
    return found


def _strings(code: str) -> list[Unit]:
    """Every string literal of ``code`` that is not a key, as a unit."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    keys = _keys(tokens)
    return [
        Unit("string", _string_text(t.string)[1], t.start[0], t.start, t.end)
        for t in tokens
        if t.type == tokenize.STRING and t.start not in keys
    ]


def translate_cell(code: str, messages: dict[str, str], shown: bool = True) -> str:
    """One cell's ``code`` with its code messages translated (a message with
    no translation is kept). A string whose text is a message is translated
    wherever it stands, also where it would not be one (a label kept in a list
    before it is drawn), except as a key (``{"seed": 0}``, ``runs["seed"]``):
    keys name things in code, which a translation keeps as they are."""
    found = units(code, 1, shown)
    taken = {unit.start for unit in found}
    found += [
        unit
        for unit in _strings(code)
        if unit.start not in taken and unit.msgid in messages
    ]
    if not found:
        return code
    lines = code.split("\n")
    # From the last to the first: the positions of the earlier ones hold.
    for unit in sorted(found, key=lambda u: u.start, reverse=True):
        translation = messages.get(unit.msgid)
        if translation is None or translation == unit.msgid:
            continue
        (row, col), (end_row, end_col) = unit.start, unit.end
        if unit.kind == "comment" and lines[row - 1][:col].strip() == "":
            indent = lines[row - 1][:col]
            lines[row - 1 : end_row] = _comment_lines(unit, translation, indent)
        elif unit.kind == "comment":
            lines[row - 1] = lines[row - 1][:col] + "# " + translation
        else:
            token = "\n".join(lines[row - 1 : end_row])
            token = token[col : len(token) - (len(lines[end_row - 1]) - end_col)]
            opening, _, quote = _string_text(token)
            if len(quote) == 1:  # a quote inside the text closes it: escape it
                translation = re.sub(
                    rf"(?<!\\){re.escape(quote)}", "\\" + quote, translation
                )
            new = (opening + translation + quote).split("\n")
            head, tail = lines[row - 1][:col], lines[end_row - 1][end_col:]
            new[0] = head + new[0]
            new[-1] = new[-1] + tail
            lines[row - 1 : end_row] = new
    return "\n".join(lines)


def set_language_line(language: str) -> str:
    """The line appended to a translated chapter's first code cell."""
    return f'qkv.set_language("{language}")'


def with_language(code: str, language: str) -> str:
    """A chapter's first cell with ``qkv.set_language(language)`` after its
    imports (and ``import qkv`` if it has none), before anything runs."""
    lines = code.split("\n")
    try:
        body = ast.parse(_without_magics(code)).body
    except SyntaxError:
        body = []
    end = 0
    for statement in body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            break
        end = statement.end_lineno or end
    imports = [] if re.search(r"^import qkv$", code, re.M) else ["import qkv"]
    if end == 0:  # no imports: at the top, a blank line after it
        added = [*imports, set_language_line(language), ""]
    else:
        added = [*imports, "", set_language_line(language)]
    return "\n".join(lines[:end] + added + lines[end:])


def translate_code(text: str, messages: dict[str, str], language: str) -> str:
    """A page's MyST source with the code of its cells translated, and
    ``qkv.set_language(language)`` in its first code cell (:func:`with_language`)."""
    key = (text, tuple(sorted(messages.items())), language)
    if key not in _TRANSLATED:  # a build asks several times for each page
        if len(_TRANSLATED) > 64:
            _TRANSLATED.clear()
        _TRANSLATED[key] = _translate_code(text, messages, language)
    return _TRANSLATED[key]


_TRANSLATED: dict[tuple, str] = {}


def _translate_code(text: str, messages: dict[str, str], language: str) -> str:
    pieces, at, first = [], 0, True
    for match, _, shown in code_cells(text):
        code = translate_cell(match.group("code"), messages, shown)
        if first:
            code = with_language(code, language)
            first = False
        pieces += [text[at : match.start("code")], code]
        at = match.end("code")
    pieces.append(text[at:])
    return "".join(pieces)


def line_map(english: str, translated: str) -> list[int]:
    """For each line of ``translated`` (0-based), the line of ``english`` it
    comes from: its own where the two agree, else the first of the English
    lines it replaces (a comment wrapped on more lines, the line added by
    :func:`with_language` after the imports): a warning of the translated
    build is reported at the English source's line."""
    from difflib import SequenceMatcher

    old, new = english.split("\n"), translated.split("\n")
    found = [0] * len(new)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, _, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            found[j] = i1 + (j - j1) if tag == "equal" else min(i1, len(old) - 1)
    return found


# -- catalogues -------------------------------------------------------------------


def code_messages(path: Path) -> dict[str, tuple[str, bool]]:
    """The code messages of a ``.po`` (or ``.pot``): ``{msgid: (msgstr, fuzzy)}``."""
    from babel.messages.pofile import read_po

    if not Path(path).is_file():
        return {}
    with open(path, "rb") as handle:
        catalogue = read_po(handle, charset="utf-8")
    return {
        m.id: (m.string or "", m.fuzzy)
        for m in catalogue
        if m.context == CONTEXT and isinstance(m.id, str) and m.id
    }


def translations(path: Path) -> dict[str, str]:
    """The translated code messages of a ``.po``: ``{msgid: msgstr}``."""
    path = Path(path)
    if not path.is_file():
        return {}
    return dict(_translations(path, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=64)
def _translations(path: Path, mtime: int) -> tuple[tuple[str, str], ...]:
    return tuple(
        (msgid, text)
        for msgid, (text, fuzzy) in code_messages(path).items()
        if text and not fuzzy
    )


def translated_source(root: Path, page: str, language: str) -> str:
    """The MyST source of ``page`` (``book/masking``) as the ``language``
    edition executes it: its code translated from the page's catalogue."""

    text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
    messages = translations(po_path(root, language, page))
    return translate_code(text, messages, language)


def _pages_with_units(root: Path) -> Iterator[tuple[str, list[Unit]]]:
    """Each notebook page of the book that has code messages, with them."""

    for page in pages(root):
        if is_notebook(root, page):
            source = Path(root) / f"{page}.md"
            found = page_units(source.read_text(encoding="utf-8"))
            if found:
                yield page, found


def extract(root: Path, gettext: Path) -> int:
    """Add every notebook page's code messages to its ``.pot`` in ``gettext``
    (after Sphinx's extraction); the number of messages added."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    added = 0
    for page, found in _pages_with_units(root):
        pot = Path(gettext) / f"{page}.pot"
        if pot.is_file():
            with open(pot, "rb") as handle:
                catalogue = read_po(handle, charset="utf-8")
        else:
            pot.parent.mkdir(parents=True, exist_ok=True)
            catalogue = Catalog(charset="utf-8")
        for unit in found:
            location = (f"../../{page}.md", unit.line)
            known = catalogue.get(unit.msgid, context=CONTEXT)
            if known is not None:
                known.locations.append(location)
                continue
            catalogue.add(unit.msgid, locations=[location], context=CONTEXT)
            added += 1
        with open(pot, "wb") as handle:
            write_po(handle, catalogue, width=79)
    return added


def _fields(text: str) -> list[str]:
    return sorted(re.findall(r"(?<!\{)\{[^{}]*\}(?!\})", text))


def problems(root: Path, language: str) -> list[tuple[str, str, str]]:
    """What the translations check fails on, as ``(where, problem, message)``:
    a code message not translated (or fuzzy), a string whose f-string fields
    or escapes differ, a cell whose translated code does not parse, a shown
    line of translated code wider than the code column."""

    found = []
    for page, units_here in _pages_with_units(root):
        po = po_path(root, language, page)
        known = code_messages(po)
        for unit in units_here:
            where = f"{page}.md:{unit.line}"
            text, fuzzy = known.get(unit.msgid, ("", False))
            if not text or fuzzy:
                found.append((where, "code message not translated", unit.msgid))
            elif unit.kind == "string" and _fields(text) != _fields(unit.msgid):
                found.append((where, "f-string fields differ", unit.msgid))
        translated = translated_source(root, page, language)
        for match, first, shown in code_cells(translated):
            code = match.group("code")
            try:
                ast.parse(_without_magics(code))
            except SyntaxError as error:
                line = first + (error.lineno or 1) - 1
                where = f"{page}.md:{line} ({language})"
                found.append((where, "code does not parse", str(error)))
                continue
            if shown:
                for number, line in enumerate(code.split("\n")):
                    if len(line) > SHOWN_WIDTH:
                        found.append(
                            (
                                f"{page}.md:{first + number} ({language})",
                                f"line of {len(line)} characters (at most "
                                f"{SHOWN_WIDTH})",
                                line.strip(),
                            )
                        )
    return found


def _without_magics(code: str) -> str:
    lines = code.split("\n")
    return "\n".join("" if s.lstrip()[:1] in ("%", "!") else s for s in lines)


# -- Sphinx: the translated build reads the translated code -------------------------


def translated_code(app, docname: str, text: str) -> str:
    """``text``, the source of ``docname``, with its code as this build runs
    it: translated in a translation (with ``qkv.set_language``), else as it is."""

    if "book_languages" not in app.config or not is_translation(app.config):
        return text
    if not CODE_CELL.search(text):
        return text

    root = book_root(app.srcdir)
    page = Path(app.env.doc2path(docname)).resolve().relative_to(root)

    language = base_language(app.config.language)
    messages = translations(po_path(root, language, page.with_suffix("").as_posix()))
    return translate_code(text, messages, language)


def _read_translated(app, docname: str, source: list[str]) -> None:
    english = source[0]
    source[0] = translated_code(app, docname, english)
    lines = getattr(app.env, "bookbuild_code_lines", {})
    lines.pop(docname, None)
    if source[0] != english:
        lines[docname] = line_map(english, source[0])
    app.env.bookbuild_code_lines = lines


def english_line(env, docname: str, line: int) -> int:
    """The line (1-based) of ``docname``'s English source that ``line`` of
    the source a translated build read (its code translated) comes from."""
    found = getattr(env, "bookbuild_code_lines", {}).get(docname)
    if not found or not 0 < line <= len(found):
        return line
    return found[line - 1] + 1


def _merge(app, env, docnames, other) -> None:
    lines = getattr(env, "bookbuild_code_lines", {})
    for docname in docnames:
        if docname in getattr(other, "bookbuild_code_lines", {}):
            lines[docname] = other.bookbuild_code_lines[docname]
    env.bookbuild_code_lines = lines


def _purge(app, env, docname) -> None:
    getattr(env, "bookbuild_code_lines", {}).pop(docname, None)


def setup(app) -> dict:
    app.connect("source-read", _read_translated)
    app.connect("env-merge-info", _merge)
    app.connect("env-purge-doc", _purge)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str]) -> int:
    """``python -m bookbuild.i18n.code diff|check PAGE... [--language fr]``:
    the page's code as the translation runs it (a diff with the English), or
    the problems of its code messages."""
    import argparse
    import difflib

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("command", choices=["diff", "check"])
    parser.add_argument("pages", nargs="*", help="book/masking ...; all by default")
    parser.add_argument("--language", default="fr")
    args = parser.parse_args(argv)
    root = Path(".").resolve()
    if args.command == "diff":
        for page in args.pages:
            english = (root / f"{page}.md").read_text(encoding="utf-8")
            translated = translated_source(root, page, args.language)
            sys.stdout.writelines(
                difflib.unified_diff(
                    english.splitlines(True),
                    translated.splitlines(True),
                    f"{page}.md",
                    f"{page}.md ({args.language})",
                )
            )
        return 0
    found = [
        p
        for p in problems(root, args.language)
        if not args.pages or p[0].split(".md:")[0] in args.pages
    ]
    for where, what, msgid in found:
        print(f"{where}: {what}: {msgid[:70]!r}")
    print(f"{len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
