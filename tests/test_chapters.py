"""The house style of a lesson, checked on the chapter sources (no build needed).

Every chapter of a numbered part must be a full lesson: a MyST notebook with a
label equal to its file name, a "You will learn" box, a summary, at least three
exercises whose solutions run code that asserts, figures with a name, alt text
and a reference by number, and no result typed by hand in the prose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bookbuild.toc import lessons, pages
from bookbuild.tools import chapter_code  # its ruff check of the code cells: make check

ROOT = Path(__file__).resolve().parents[1]

LESSONS = lessons(ROOT)
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def source(page: str) -> str:
    return (ROOT / f"{page}.md").read_text(encoding="utf-8")


CODE_FENCE = re.compile(r"(`{3,}|~{3,})(\{code-cell\}.*|\w*)\s*$")
DIRECTIVE_FENCE = re.compile(r"(`{3,}|~{3,})\{[^}]+\}")


def prose_lines(text: str):
    """(line number, line) of the prose: outside code cells and code blocks.

    The body of a directive (a figure caption, an exercise) counts as prose.
    """
    closing: list[tuple[str, bool]] = []  # open fences: (fence, is code)
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if closing and stripped == closing[-1][0]:
            closing.pop()
            continue
        if closing and closing[-1][1]:
            continue  # inside code
        code = CODE_FENCE.match(stripped)
        directive = DIRECTIVE_FENCE.match(stripped)
        if code and (code.group(2).startswith("{code-cell}") or not directive):
            closing.append((code.group(1), True))
        elif directive:
            closing.append((directive.group(1), False))
        else:
            yield number, line


def test_there_are_lessons():
    assert LESSONS, "no numbered part in _toc.yml"


@pytest.mark.parametrize("page", LESSONS)
def test_lesson_is_a_myst_notebook_with_its_label(page):
    text = source(page)
    front = text.split("\n---\n", 1)[0]
    assert text.startswith("---\n") and "format_name: myst" in front, page
    assert "kernelspec:" in front, f"{page} names no kernel: it would not execute"
    stem = Path(page).name
    body = text.split("\n---\n", 1)[1].lstrip()
    assert body.startswith(f"({stem})=\n# "), f"{page} must open with ({stem})= and H1"


@pytest.mark.parametrize("page", LESSONS)
def test_lesson_has_its_parts(page):
    text = source(page)
    assert "You will learn" in text, f"{page}: no 'You will learn' box"
    assert "\n## Summary\n" in text, f"{page}: no summary"
    assert "\n## Exercises\n" in text, f"{page}: no exercises"
    assert "{cite" in text, f"{page}: cites no source"


@pytest.mark.parametrize("page", LESSONS)
def test_exercises_have_solutions_that_assert(page):
    text = source(page)
    stem = Path(page).name
    labels = re.findall(r"```\{exercise\}\n:label: (\S+)", text)
    assert len(labels) >= 3, f"{page}: {len(labels)} exercises, at least 3 wanted"
    for label in labels:
        assert re.fullmatch(rf"{stem}-ex\d+", label), f"{page}: label {label}"
        match = re.search(
            rf"\{{solution-start\}} {label}\n(.*?)\{{solution-end\}}", text, re.S
        )
        assert match, f"{page}: exercise {label} has no gated solution"
        code = "\n".join(CODE_CELL.findall(match.group(1)))
        assert code, f"{page}: the solution of {label} runs no code"
        assert re.search(r"\bassert\b|assert_close", code), (
            f"{page}: the solution of {label} asserts nothing"
        )


@pytest.mark.parametrize("page", LESSONS)
def test_figures_are_named_described_and_referenced(page):
    text = source(page)
    figures = re.findall(r"```\{glue:figure\} \S+\n((?::\S+:.*\n)+)", text)
    assert figures, f"{page}: no figure"
    for options in figures:
        name = re.search(r":name: (\S+)", options)
        assert name, f"{page}: a figure has no :name:"
        assert re.search(r":alt: \S", options), f"{page}: {name.group(1)} has no alt"
        assert f"`{name.group(1)}`" in text, f"{page}: {name.group(1)} not referred to"


TYPED_NUMBER = re.compile(r"(?<![\w.])\d+\.\d{3,}\b")


@pytest.mark.parametrize("page", [*LESSONS, "book/intro"])
def test_no_result_typed_by_hand(page):
    typed = []
    for number, line in prose_lines(source(page)):
        bare = re.sub(r"\{glue[^}]*\}`[^`]*`", "", line)
        typed.extend(f"line {number}: {m}" for m in TYPED_NUMBER.findall(bare))
    assert not typed, f"{page}: numbers typed in prose, glue them instead: {typed}"


PYTHON_BLOCK = re.compile(r"(`{3,}|~{3,})(?:python|py|ipython3?)\s*$")


def shown_code_lines(text: str):
    """(line number, line) of the code a page shows: its code cells but those
    tagged ``remove-cell`` or ``remove-input`` (a ``hide-input`` cell is shown
    when opened), and its ```python blocks (the exercises' skeletons)."""
    for match in chapter_code.CODE_CELL.finditer(text):
        if chapter_code.is_shown(match["options"]):
            first = text.count("\n", 0, match.start("code")) + 1
            for offset, line in enumerate(match["code"].rstrip("\n").split("\n")):
                yield first + offset, line
    closing = None
    for number, line in enumerate(text.splitlines(), 1):
        if closing is None:
            opening = PYTHON_BLOCK.match(line.strip())
            closing = opening.group(1) if opening else None
        elif line.strip() == closing:
            closing = None
        else:
            yield number, line


def test_shown_code_fits_the_column():
    """No line of code that a page shows is longer than the code column (77
    characters in a window 1280 px wide, a projector's): a longer one is cut off
    at the right. ruff holds the code cells to it too (line length
    ``chapter_code.SHOWN_LINE_LENGTH``); this lists the lines, page by page."""
    limit = chapter_code.SHOWN_LINE_LENGTH
    too_long = [
        f"{page}.md:{number}: {len(line)} characters"
        for page in pages(ROOT)
        if (ROOT / f"{page}.md").exists()
        for number, line in shown_code_lines(source(page))
        if len(line) > limit
    ]
    assert not too_long, (
        f"{len(too_long)} line(s) of shown code longer than {limit} characters "
        "(split them; `python -m bookbuild.tools.chapter_code format "
        "book/<page>.md` does what ruff can):\n" + "\n".join(too_long)
    )


VISIBLE_BOOKKEEPING = re.compile(
    r"^\s*(?:glue\w*\(|from myst_nb\b|import myst_nb\b)", re.M
)


@pytest.mark.parametrize("page", LESSONS)
def test_bookkeeping_is_out_of_sight(page):
    """glue calls and the myst_nb import live in cells tagged ``remove-cell``."""
    text = source(page)
    for match in chapter_code.CODE_CELL.finditer(text):
        if "remove-cell" in match["options"]:
            continue
        found = VISIBLE_BOOKKEEPING.search(match["code"])
        assert not found, f"{page}: a visible cell holds {found.group(0).strip()!r}"


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _names(code: str, context: type) -> set[str]:
    """The names ``code`` stores (assignments, definitions, imports, arguments)
    or loads, by ``context`` (``ast.Store`` or ``ast.Load``)."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, context):
            found.add(node.id)
        if context is ast.Store:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return found


@pytest.mark.parametrize("page", LESSONS)
def test_no_visible_cell_needs_a_name_only_a_hidden_cell_defines(page):
    """A downloaded notebook leaves out the hidden (remove-cell) cells: a visible
    cell that uses a name only a hidden cell defined fails there, not in the build."""
    import ast

    defined_visibly: set[str] = set()
    hidden_only: set[str] = set()
    problems = []
    for match in CODE_CELL.finditer(source(page)):
        body = match.group(1)
        tags = re.search(r"^:tags:\s*\[([^\]]*)\]", body, re.M)
        hidden = bool(tags) and "remove-cell" in tags.group(1)
        code = "\n".join(
            line for line in body.splitlines() if not re.match(r"^:\w+:", line)
        )
        stored = _names(code, ast.Store)
        if hidden:
            hidden_only |= stored - defined_visibly
            continue
        needed = (_names(code, ast.Load) - stored) & hidden_only
        problems += [f"{name} (in {code.splitlines()[0]!r})" for name in needed]
        defined_visibly |= stored
        hidden_only -= stored
    assert not problems, f"{page}: visible cells use hidden names: {problems}"


# The notation page: one table of every symbol, one meaning each (issue 21).
MATH_TOKENS = {"math_inline", "math_block", "math_block_label", "amsmath"}
SYMBOL = re.compile(  # bold and calligraphic letters, Greek letters
    r"\\(?:mathbf|boldsymbol|mathcal)\{\\?[A-Za-z0-9]+\}"
    r"|\\(?:alpha|beta|gamma|epsilon|theta|lambda|mu|pi|sigma|omega|ell|Pr)\b"
)
NOT_SYMBOLS = re.compile(  # words, environments, subscripts, other commands
    r"_\\text\{[^}]*\}|\\(?:text|mathrm|operatorname|begin|end)\{[^}]*\}"
    r"|_\{[^{}]*\}|_\\?[A-Za-z0-9]+|\\[A-Za-z]+"
)
# indices of tokens, coordinates, pairs and patches (of heads, $h$, are kept:
# $\mathbf{z}_h$ is the output of one head, a symbol of its own)
INDEX = re.compile(r"\^\{\([^h)]*\)\}|\^\{[^(}]*\}|\^\S|_\{?[ijcpf']+\}?(?![A-Za-z])")


def math_spans(page: str) -> list[str]:
    """The math of a page's prose, as MyST reads it (dollar math, amsmath)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    parser = MarkdownIt("commonmark").use(dollarmath_plugin).use(amsmath_plugin)
    text = "\n".join(line for _, line in prose_lines(source(page)))
    spans = []
    for token in parser.parse(text):
        for child in [token, *(token.children or [])]:
            if child.type in MATH_TOKENS:
                spans.append(child.content)
    return spans


def symbols(math: str) -> set[str]:
    r"""The symbols of a formula: bold, calligraphic and Greek letters, and plain
    letters. Named operators ($\mathrm{softmax}$) are words, not symbols. A plain
    letter seen only with a subscript, as $q_c$, is a coordinate of the vector
    $\mathbf{q}$: the vector is the symbol."""
    found = set(SYMBOL.findall(math))
    rest = SYMBOL.sub(" ", math)
    alone = set(re.findall(r"[A-Za-z]", NOT_SYMBOLS.sub(" ", rest)))
    # a coordinate's subscript is an index ($q_c$, $z_0$), not a label ($n_\omega$)
    with_index = set(re.findall(r"(?<![\\A-Za-z])([a-z])'?_(?:\w|\{[^\\}]*\})", rest))
    for letter in alone:
        coordinate = letter in with_index and not re.search(
            rf"(?<![\\A-Za-z]){letter}(?![_A-Za-z])", rest
        )
        found.add(rf"\mathbf{{{letter}}}" if coordinate else letter)
    return found


def notation_rows() -> list[str]:
    """The first cell (the symbols) of each row of the notation page's table."""
    table = source("book/notation").split("## Symbols", 1)[1].split("\n## ", 1)[0]
    rows = [row for row in table.splitlines() if row.startswith("| $")]
    return [row.split(" | ")[0][2:] for row in rows]


def test_notation_lists_every_symbol_the_chapters_use():
    listed = set().union(*(symbols(cell) for cell in notation_rows()))
    missing: dict[str, set[str]] = {}
    for page in pages(ROOT):
        if page == "book/notation":
            continue
        for math in math_spans(page):
            for symbol in symbols(math) - listed:
                missing.setdefault(symbol, set()).add(page)
    assert not missing, f"symbols missing from book/notation.md: {missing}"


def test_notation_gives_each_symbol_one_row():
    """A symbol, without its indices ($m_{ij}$ is $m$), heads one row only: the
    clashes of issue 21 ($m$ the mask and $m$ a patch) fail here."""
    rows: dict[str, set[str]] = {}
    for cell in notation_rows():
        for item in re.findall(r"\$([^$]+)\$", cell):
            head = INDEX.sub("", item.split("=")[0]).strip()
            rows.setdefault(head, set()).add(cell)
    clashes = {head: cells for head, cells in rows.items() if len(cells) > 1}
    assert not clashes, f"a symbol heads several rows: {clashes}"


INLINE_CODE = re.compile(r"(?<![}`\w])`([^`\s]+)`(?!`)")
TOP_DIRECTORIES = {
    entry.name
    for entry in ROOT.iterdir()
    if entry.is_dir()
    and not entry.name.startswith((".", "_"))
    and entry.name != "node_modules"
}


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line number, path) of every repository path the prose names in backticks:
    ``tests/qkv/test_attention.py``, ``src/qkv/``. A role's target
    (``{download}`...` ``) and a pattern (``book/<label>.md``, ``*.po``) are
    not paths."""
    named = []
    for number, line in prose_lines(text):
        for token in INLINE_CODE.findall(line):
            first = token.split("/", 1)[0]
            if (
                "/" in token
                and first in TOP_DIRECTORIES
                and not set(token) & set("<>*{}")
            ):
                named.append((number, token))
    return named


def test_named_paths_finds_paths_in_prose_only():
    text = "See `tests/a.py` and {download}`src/b.py`, `x/y`, `book/<label>.md`.\n"
    text += "```{code-cell} ipython3\n# `src/c.py`\n```\n"
    assert named_paths(text) == [(1, "tests/a.py")]


@pytest.mark.parametrize("page", sorted(p.stem for p in (ROOT / "book").glob("*.md")))
def test_paths_named_in_prose_exist(page):
    """A path the prose names in backticks is a file or folder of the repository
    (issue 35: `tests/test_attention.py` was `tests/qkv/test_attention.py`)."""
    missing = [
        f"line {number}: {path}"
        for number, path in named_paths(source(f"book/{page}"))
        if not (ROOT / path.rstrip("/")).exists()
    ]
    assert not missing, f"book/{page}.md names paths that do not exist: {missing}"


def test_test_files_named_in_the_packages_exist():
    """A test file a docstring or comment of ``qkv`` or ``bookbuild`` names,
    in double backticks, exists (``tests/test_attention.py`` had moved to
    ``tests/qkv/test_attention.py``)."""
    named = re.compile(r"``(tests/[A-Za-z0-9_./-]+\.py)``")
    missing = [
        f"{path.relative_to(ROOT)}: {found}"
        for folder in ("src/qkv", "bookbuild/src/bookbuild")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for found in named.findall(path.read_text(encoding="utf-8"))
        if not (ROOT / found).is_file()
    ]
    assert not missing, f"test files named that do not exist: {missing}"
