"""Claims that fail on a reader's machine: the asserts of the book's kernels, recorded.

Problem: a chapter backs its sentences with ``assert``s in hidden cells, and
some of them check models trained while the book is built. Training ends a
little differently on another CPU (PyTorch does not promise the same results
across platforms), so on a reader's machine such an assert can fail. A failing
cell stops the prefill, which reported the chapter's first failing assert
only, and the reader got no site at all.

Answer: in the prefill's kernels only, the asserts of a cell do not raise: an
IPython AST transformer (:class:`Recorder`) rewrites ``assert test, message``
into a call that records the check and lets the cell go on, without changing
what is evaluated (each operand once, in order, ``and`` and chained
comparisons short-circuit as before, the message only when the check fails).
For each assert, keyed by the cell (the kernel's execution count, which the
prefill maps to its code cell) and its line in the cell: how many times it ran,
how many times it failed, its text, and for a comparison the operands of the
first failure; for an order comparison (``<``, ``<=``, ``>``, ``>=``) of
numbers, the worst case and its relative margin ``|a-b|/max(|a|,|b|)``,
negative when it failed. Left as they are: the asserts inside a function or a
class a cell defines (they run later, maybe for a checker that expects them to
raise), in the body of a ``try`` (a handler may catch them), in a ``with``
that names ``AssertionError``, and every assert of a cell tagged
``raises-exception`` (:func:`plain`).

In the kernel, called silently by the prefill (:mod:`bookbuild.execute.prefill`):
:func:`start` before each run (it installs the transformer once; IPython's
``reset`` between a chapter's languages keeps it) and :func:`records` after it.
In the prefill: :func:`failures`, the records of a run that failed as the
reader reads them (the file and its line, the check, what was measured, the
sentence it guards: the first paragraph of prose after its hidden cell, or
before a cell the page shows), kept with the chapter in the execution cache
(:data:`FAILED_CLAIMS` in its record's data); :func:`message`, what the
prefill and ``make book`` print about them. The site then drops each page with
a failed claim, or marks the sentence with a notice (``QKV_CLAIMS=note``:
:mod:`bookbuild.site.claim_notices`).

A cell that raises anything else (an assert inside a function, an error) fails
the chapter as before. Kernels that Sphinx starts itself (a build without
``make``) have plain asserts.
"""

from __future__ import annotations

import ast
import copy
import json
import math
import numbers
import operator
import re
import sys
from pathlib import Path

from bookbuild import patches
from bookbuild.execute.sources import cell_start, source_path
from bookbuild.i18n.code import line_map

#: The environment variable that chooses what the site does with a page whose
#: claims failed: unset (strict), the page is left out and the build fails;
#: ``note``, the page is built with a notice after each such sentence.
MODE = "QKV_CLAIMS"
NOTE = "note"
#: The key of a chapter's failed claims in its execution cache record's data.
FAILED_CLAIMS = "failed_claims"
#: The key of every order comparison its claims made, failed or not, with the
#: worst margin (what ``make portability`` compares across CPUs).
CLAIM_MARGINS = "claim_margins"
#: How many characters of the guarded sentence the messages show.
GUARD_WIDTH = 100

# -- in the kernel ----------------------------------------------------------------

#: This module as the rewritten code reaches it (no name in the user's namespace).
_MODULE = "__import__('bookbuild.execute.claims', fromlist=['held'])"
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_OPERATORS = {
    **_ORDER,
    "==": operator.eq,
    "!=": operator.ne,
    "is": operator.is_,
    "is not": operator.is_not,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}
_SYMBOLS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}

#: What this kernel's run recorded: ``"<count>:<line>"`` to its record.
_records: dict[str, dict] = {}
#: The comparisons of the check being evaluated: ``(line, left, op, right)``.
_pending: list[tuple] = []
#: The operand a chained comparison compares next (``b`` of ``a < b < c``).
_previous: list = [None]
#: True while the cells run have plain asserts (``raises-exception``).
_plain = [False]


def _call(name: str, *args: ast.expr) -> ast.Call:
    module = ast.parse(_MODULE, mode="eval").body
    function = ast.Attribute(value=module, attr=name, ctx=ast.Load())
    return ast.Call(func=function, args=list(args), keywords=[])


def _mentions_assertion_error(node: ast.With | ast.AsyncWith) -> bool:
    return any(
        isinstance(name, ast.Name) and name.id == "AssertionError"
        for item in node.items
        for name in ast.walk(item.context_expr)
    )


class Recorder(ast.NodeTransformer):
    """Rewrites each ``assert`` of a cell that may be recorded (see the module)."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        if _plain[0]:
            return node
        try:  # on a copy: a failure leaves the cell as it was
            rewritten = self.generic_visit(copy.deepcopy(node))
        except Exception:  # never break a cell: IPython would drop the transformer
            return node
        return ast.fix_missing_locations(rewritten)

    def _left_as_is(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _left_as_is

    def visit_Try(self, node: ast.Try) -> ast.Try:
        # The body's asserts may be caught by a handler: left as they are.
        for field in ("handlers", "orelse", "finalbody"):
            setattr(node, field, [self.visit(child) for child in getattr(node, field)])
        return node

    visit_TryStar = visit_Try

    def visit_With(self, node: ast.With) -> ast.With:
        return node if _mentions_assertion_error(node) else self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        line = ast.Constant(node.lineno)
        text = ast.Constant(ast.unparse(node))
        check = _call("held", line, text, self._recorded(node.test, node.lineno))
        if node.msg is None:
            new: ast.stmt = ast.Expr(check)
        else:  # the message evaluated only when the check fails, as assert does
            failed = ast.UnaryOp(op=ast.Not(), operand=check)
            said = ast.Expr(_call("said", line, node.msg))
            new = ast.If(test=failed, body=[said], orelse=[])
        return ast.copy_location(new, node)

    def _recorded(self, test: ast.expr, line: int) -> ast.expr:
        """``test`` with each comparison at its top (alone, or in an ``and``)
        through :func:`compare`; a chain ``a < b < c`` becomes ``compare(a, <,
        b) and compare(previous(), <, c)``: ``b`` evaluated once, ``c`` only if
        the first holds."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            values = [self._recorded(value, line) for value in test.values]
            return ast.copy_location(ast.BoolOp(op=ast.And(), values=values), test)
        if not isinstance(test, ast.Compare):
            return test
        pieces, left = [], test.left
        for op, right in zip(test.ops, test.comparators, strict=True):
            symbol = ast.Constant(_SYMBOLS[type(op)])
            pieces.append(_call("compare", ast.Constant(line), left, symbol, right))
            left = _call("previous")
        found = pieces[0] if len(pieces) == 1 else ast.BoolOp(ast.And(), pieces)
        return ast.copy_location(found, test)


def start() -> None:
    """Before a run: install the transformer (once per kernel) and forget what
    an earlier run recorded."""
    from IPython import get_ipython

    shell = get_ipython()
    if not any(isinstance(t, Recorder) for t in shell.ast_transformers):
        shell.ast_transformers.append(Recorder())
    _records.clear()
    _pending.clear()
    _previous[0] = None
    _plain[0] = False


def plain(on: bool) -> None:
    """Whether the next cells keep plain, raising asserts (a cell tagged
    ``raises-exception`` shows its error)."""
    _plain[0] = bool(on)


def records() -> str:
    """What this run recorded, as JSON: ``{"<count>:<line>": record}``."""
    return json.dumps(_records, sort_keys=True)


def compare(line: int, left, op: str, right):
    """``left op right``, as the cell would compute it; noted for the check."""
    result = _OPERATORS[op](left, right)
    _pending.append((line, left, op, right))
    _previous[0] = right
    return result


def previous():
    """The right operand of the last comparison (the next one's left)."""
    return _previous[0]


def held(line: int, text: str, value) -> bool:
    """Whether the check at ``line`` of the calling cell held (``value`` made
    true once, as ``assert`` does); recorded either way."""
    parts = [p[1:] for p in _pending if p[0] == line]
    _pending.clear()
    _previous[0] = None
    ok = not not value  # the one truth test assert makes
    try:  # recording never breaks a cell
        _record(_key(line), text, parts, ok)
    except Exception:
        pass
    return ok


def _record(key: str, text: str, parts: list[tuple], ok: bool) -> None:
    record = _records.setdefault(
        key, {"check": text, "runs": 0, "failures": 0, "worst": None, "failed": None}
    )
    record["runs"] += 1
    for left, op, right in parts:
        margin = _margin(left, op, right)
        worst = record["worst"]
        if margin is not None and (worst is None or margin < worst["margin"]):
            record["worst"] = {**_shown(left, op, right), "margin": margin}
    if not ok:
        record["failures"] += 1
        if record["failed"] is None:
            record["failed"] = _shown(*parts[-1]) if parts else {}


def said(line: int, message) -> None:
    """The message of the failed check at ``line`` (the first one kept)."""
    record = _records.get(_key(line), {})
    if record and record.get("message") is None:
        record["message"] = _short(str(message), 200)


def _key(line: int) -> str:
    """``"<count>:<line>"``: the cell that called :func:`held` or :func:`said`
    (its kernel execution count, from the file name IPython compiled it under)
    and the line in it."""
    from IPython import get_ipython

    filename = sys._getframe(2).f_code.co_filename  # the cell's frame
    names = patches.instance_attribute(
        "IPython.core.compilerop:CachingCompiler._filename_map"
    )
    count = getattr(get_ipython().compile, names).get(filename, 0)
    return f"{count}:{line}"


def number(value) -> float | None:
    """``value`` as a float when it is one real number (a Python or NumPy
    number, a one-element tensor or array), else None; calls no ``float()``
    that could warn."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    size = getattr(value, "numel", None)  # torch
    size = size() if callable(size) else getattr(value, "size", None)  # numpy
    item = getattr(value, "item", None)
    if size == 1 and callable(item):
        inside = item()
        if isinstance(inside, numbers.Real) and not isinstance(inside, bool):
            return float(inside)
    return None


def _margin(left, op: str, right) -> float | None:
    if op not in _ORDER:
        return None
    a, b = number(left), number(right)
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    scale = max(abs(a), abs(b))
    margin = abs(a - b) / scale if scale else 0.0
    return margin if _ORDER[op](a, b) else -margin


def _shown(left, op: str, right) -> dict:
    return {"left": _value(left), "op": op, "right": _value(right)}


def _value(value) -> str:
    """A compared value as the messages show it: a number with 6 significant
    digits (an integer whole), anything else by its short ``repr``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    found = number(value)
    return _short(repr(value), 60) if found is None else f"{found:.6g}"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


# -- in the prefill ----------------------------------------------------------------


def by_cell(recorded: str, cells: dict[int, int]) -> list[dict]:
    """The records of a run (:func:`records`), each with its ``cell`` (the
    notebook's cell index, from ``cells``: execution count to cell index) and
    its ``cell_line``."""
    found = []
    for key, record in json.loads(recorded or "{}").items():
        count, line = (int(part) for part in key.split(":"))
        if count in cells:
            found.append({**record, "cell": cells[count], "cell_line": line})
    return sorted(found, key=lambda r: (r["cell"], r["cell_line"]))


def measured(claim: dict) -> str:
    """What was measured when the claim failed, ``7 >= 8``; empty if it was
    not a comparison."""
    failed = claim.get("failed") or {}
    if not {"left", "op", "right"} <= failed.keys():
        return ""
    return f"{failed['left']} {failed['op']} {failed['right']}"


def failures(
    project_nb, recorded: list[dict], root: Path | None = None, *, margins: bool = False
) -> list[dict]:
    """The claims of a run (:func:`by_cell`) that failed (with ``margins``:
    those that failed and every order comparison, with its worst case), as the
    reader reads them: ``file`` and ``line`` (the chapter's own source, also for a
    translation's run), ``source_line`` and ``guards_line`` (lines of the
    source this run executed: what its Sphinx build reads), the code cell's
    number, the check and what was measured, the sentence it guards."""

    path = Path(project_nb.uri)
    own = source_path(project_nb.uri)
    shown = own.relative_to(root) if root and own.is_relative_to(root) else own
    lines = _english_lines(path, own)
    cells = project_nb.nb.cells
    found = []
    for claim in recorded:
        wanted = claim["failures"] or (margins and claim.get("worst"))
        if not wanted or claim["cell"] >= len(cells):
            continue
        index = claim["cell"]
        source = cells[index].source.splitlines() or [""]
        first = cell_start(path, project_nb.nb, index, source) or 1
        at = first + claim["cell_line"] - 1
        guards, guards_line = guarded_sentence(project_nb.nb, index, path)
        found.append(
            {
                "file": shown.as_posix(),
                "line": lines(at),
                "source_line": at,
                "code_cell": sum(c.cell_type == "code" for c in cells[: index + 1]),
                "cell_line": claim["cell_line"],
                "check": claim["check"],
                "measured": measured(claim),
                "margin": (claim.get("worst") or {}).get("margin"),
                "worst": measured({"failed": claim.get("worst")}),
                "runs": claim["runs"],
                "failures": claim["failures"],
                "message": claim.get("message"),
                "guards": guards,
                "guards_line": guards_line,
            }
        )
    return found


def _english_lines(path: Path, own: Path):
    """Line of the run's source to line of the chapter's own source (the two
    differ in a translation's run: its code translated)."""
    if path == own or not (path.is_file() and own.is_file()):
        return lambda line: line

    found = line_map(own.read_text(encoding="utf-8"), path.read_text(encoding="utf-8"))
    return lambda line: found[line - 1] + 1 if 0 < line <= len(found) else line


#: A line that opens or closes a fenced block (code, directive, ``$$`` math).
_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,}|\$\$)")
#: A line that is not prose: a heading, a target, a comment, a raw HTML block.
_NOT_PROSE = re.compile(r"^\s*(#|\(.*\)=\s*$|%|<|\+\+\+)")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """The paragraphs of prose of Markdown ``text``, outside fenced blocks and
    headings: ``(line index in text, the paragraph on one line)``."""
    found: list[tuple[int, str]] = []
    fence, start, lines = "", None, []
    for number, line in enumerate([*text.splitlines(), ""]):
        marker = _FENCE.match(line)
        if fence:  # closed by the same character, at least as many times
            mark = marker.group(1) if marker else ""
            if mark[:1] == fence[:1] and len(mark) >= len(fence):
                fence = ""
            continue
        one_line_math = line.strip().startswith("$$") and line.strip().endswith("$$")
        if marker and not (one_line_math and len(line.strip()) > 2):
            fence = marker.group(1)
        if marker or not line.strip() or _NOT_PROSE.match(line):
            if lines:
                found.append((start, " ".join(part.strip() for part in lines)))
            start, lines = None, []
            continue
        start = number if start is None else start
        lines.append(line)
    return found


def guarded_sentence(notebook, index: int, path: Path) -> tuple[str, int | None]:
    """The sentence the claims of code cell ``index`` back: the first
    paragraph of prose after it when the page hides the cell (the book's
    convention: the hidden cell that glues and asserts comes right before the
    prose it backs), else the last one before it; its first
    :data:`GUARD_WIDTH` characters and its line in ``path``."""
    cells = notebook.cells
    tags = cells[index].get("metadata", {}).get("tags", [])
    hidden = "remove-cell" in tags
    order = range(index + 1, len(cells)) if hidden else range(index - 1, -1, -1)
    for at in order:
        if cells[at].cell_type != "markdown":
            continue
        found = paragraphs(cells[at].source)
        if not found:
            continue
        first, text = found[0] if hidden else found[-1]
        return _short(text, GUARD_WIDTH), _line_of(notebook, at, path, first)
    return "", None


def _line_of(notebook, index: int, path: Path, line_in_cell: int) -> int | None:
    """The line of ``path`` (1-based) of line ``line_in_cell`` of markdown cell
    ``index``, found from the reader's source map and the text itself."""
    starts = notebook.metadata.get("source_map") or []
    if index >= len(starts) or not path.is_file():
        return None
    wanted = notebook.cells[index].source.splitlines()[line_in_cell]
    lines = path.read_text(encoding="utf-8").splitlines()
    for number in range(max(starts[index] - 1, 0), len(lines)):
        if lines[number] == wanted:
            return number + 1
    return None


def message(found: list[dict], note: bool = False, issues: str = "") -> str:
    """What the prefill prints (and ``make book`` again at its end) about the
    failed claims of ``found``: every one, where it is, what it guards, why it
    may fail, where to report it (``issues``, an address, when known), and
    what the site does; empty when there is none. A claim that failed in
    several languages' runs is listed once."""
    seen: dict[tuple, dict] = {}
    for claim in found:
        seen.setdefault((claim["file"], claim["line"], claim["check"]), claim)
    if not seen:
        return ""
    one = len(seen) == 1
    lines = [
        f"prefill: {len(seen)} sentence{'' if one else 's'} did not hold on this "
        f"machine ({'its check' if one else 'their checks'} failed):"
    ]
    for (file, line, check), claim in sorted(seen.items()):
        what = f": {claim['measured']} is false" if claim["measured"] else ""
        lines.append(f"  {file}:{line}: {check}{what}")
        if claim["guards"]:
            lines.append(f'    guards: "{claim["guards"]}"')
    where = f" at {issues}" if issues else ""
    these = (
        "This sentence describes a model" if one else "These sentences describe models"
    )
    pages, them = ("that page", "it") if one else ("those pages", "them")
    lines.append(
        f"  {these} trained while the book is built; training can end "
        "differently on another CPU (PyTorch does not promise the same results "
        f"across platforms), so please report it{where}, with these lines and "
        "your CPU's name."
    )
    if note:
        lines.append(
            f"  The site is built with {pages}, a notice after each such sentence "
            "(CLAIMS=note)."
        )
    else:
        lines.append(
            f"  The site is built without {pages}. To include {them}, with a notice "
            "after each such sentence: make book CLAIMS=note"
        )
    return "\n".join(lines)


def note_mode() -> bool:
    """True when the build marks failed claims with a notice (``QKV_CLAIMS=note``)."""
    import os

    return os.environ.get(MODE, "").strip().lower() == NOTE
