"""Claims that fail on a reader's machine (bookbuild.execute.claims): the book
builds, and stays true.

* In the prefill's kernels, a cell's ``assert`` records its check instead of
  raising, and evaluates exactly what it did before.
* A chapter whose claims failed is cached with them; the build goes on. By
  default the page is left out of the site, the build fails, and a message
  lists every failed claim, where it is, the sentence it guards and the
  command that builds the page anyway; with ``QKV_CLAIMS=note`` the page is
  built with a notice after each such sentence.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from bookbuild.execute import claims
from bookbuild.tools.testing import MYST_NOTEBOOK, build_book, write_small_book

# -- the recorder, in an IPython shell ---------------------------------------------

CELL = """\
calls = []
def f(x):
    calls.append(x)
    return x
assert f(3) >= f(2), "never said"
assert f(7) >= f(8), f"said after {len(calls)} calls"
assert f(1) > f(5) > f(99)
assert f(1) is None and f(2) < 0
for i in range(3):
    assert 0.5 < f(i + 1) <= 2
try:
    assert False
except AssertionError:
    calls.append("caught")
"""
INSIDE = """
def inside():
    assert False, "a function's assert raises"
"""
SHELL = f"""
import json
from IPython.core.interactiveshell import InteractiveShell
from bookbuild.execute import claims
shell = InteractiveShell.instance()
seen = {{}}
claims.start()
shell.run_cell({CELL!r}, store_history=True)
seen["calls"] = shell.user_ns["calls"]
seen["first"] = json.loads(claims.records())
claims.start()  # the next run: nothing of the first
seen["started"] = json.loads(claims.records())
shell.reset(new_session=True)  # between a chapter's languages
shell.run_cell("x = 1\\nassert x > 2", store_history=True)
seen["after reset"] = json.loads(claims.records())
shell.run_cell({INSIDE!r}, store_history=True)
seen["raised"] = repr(shell.run_cell("inside()").error_in_exec)
claims.plain(True)  # a cell tagged raises-exception
seen["plain"] = repr(shell.run_cell("assert 1 > 2, 'shown'").error_in_exec)
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def shell_run(tmp_path_factory) -> dict:
    """What :data:`SHELL` saw, in an IPython shell of its own process."""
    done = subprocess.run(
        [sys.executable, "-c", SHELL],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path_factory.mktemp("shell"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cells_asserts_are_recorded_and_evaluate_what_they_did(shell_run):
    seen = shell_run
    # The cell went on after its failed checks: each operand once, in order,
    # the chain and the `and` short-circuited (f(99) and f(2) never called),
    # the message only when its check failed, a `try`'s assert still raising.
    assert seen["calls"] == [3, 2, 7, 8, 1, 5, 1, 1, 2, 3, "caught"]
    by_line = {int(key.split(":")[1]): r for key, r in seen["first"].items()}
    assert set(by_line) == {5, 6, 7, 8, 10}
    held = by_line[5]  # a passing check records its margin
    assert (held["runs"], held["failures"], held["failed"]) == (1, 0, None)
    assert held["worst"]["margin"] == pytest.approx(1 / 3)
    assert held["check"] == "assert f(3) >= f(2), 'never said'"
    assert "message" not in held  # never evaluated
    failed = by_line[6]
    assert failed["failures"] == 1
    assert failed["message"] == "said after 4 calls"  # after both operands
    assert failed["failed"] == {"left": "7", "op": ">=", "right": "8"}
    assert failed["worst"]["margin"] == pytest.approx(-1 / 8)
    assert by_line[7]["failed"] == {"left": "1", "op": ">", "right": "5"}
    assert by_line[8]["failed"] == {"left": "1", "op": "is", "right": "None"}
    assert by_line[8]["worst"] is None  # no order comparison
    loop = by_line[10]  # 0.5 < 1 <= 2, 0.5 < 2 <= 2, then 0.5 < 3 <= 2 fails
    assert (loop["runs"], loop["failures"]) == (3, 1)
    assert loop["failed"] == {"left": "3", "op": "<=", "right": "2"}
    assert loop["worst"]["margin"] == pytest.approx(-1 / 3)


def test_the_recorder_survives_a_reset_and_leaves_some_asserts_raising(shell_run):
    seen = shell_run
    assert seen["started"] == {}
    ((key, record),) = seen["after reset"].items()
    assert key == "1:2" and record["failed"] == {"left": "1", "op": ">", "right": "2"}
    # an assert in a function the cell defines, and in a raises-exception cell
    assert seen["raised"] == 'AssertionError("a function\'s assert raises")'
    assert seen["plain"] == "AssertionError('shown')"


# -- without a kernel: the French notice, the message --------------------------------


def test_the_notice_has_its_french():
    from bookbuild.i18n.messages import NNBSP, gettext
    from bookbuild.site.claim_notices import NOTICE, NOTICE_UNMEASURED, notice

    for english in (NOTICE, NOTICE_UNMEASURED):
        assert "{check}" in gettext("fr")(english)
    claim = {"check": "assert a >= b", "measured": "7 >= 8"}
    text = notice(claim, "fr").astext()
    assert f"tenu{NNBSP}: assert a >= b (mesuré{NNBSP}: 7 >= 8 est faux)" in text
    assert "\n" not in text
    assert "(measured: 7 >= 8 is false)" in notice(claim, "en").astext()


def test_a_failure_names_its_line_and_the_sentence_it_guards(tmp_path):
    """The prose after a hidden cell, before a shown one (a solution's);
    headings, targets, directives and maths are not prose."""
    from myst_nb.core.read import read_myst_markdown_notebook

    text = (
        MYST_NOTEBOOK + "\n# Title\n\nBefore the shown cell,\non two lines.\n\n"
        "```{code-cell} ipython3\nx = 1\nassert x > 2\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\n\nassert x < 0.5\n```\n\n"
        "(a-label)=\n## A heading\n\n```{figure} x.png\n:name: fig\n\nA caption.\n"
        "```\n\n$$\na = b\n$$\n\nThe guarded\nsentence.\n"
    )
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    notebook = read_myst_markdown_notebook(text, add_source_map=True)
    run = SimpleNamespace(uri=str(path), nb=notebook)
    failed = {"left": "1", "op": ">", "right": "2"}
    recorded = [
        {"cell": 1, "cell_line": 2, "check": "assert x > 2", "runs": 1,
         "failures": 1, "failed": failed, "worst": {"margin": -0.5}},
        {"cell": 2, "cell_line": 1, "check": "assert x < 0.5", "runs": 1,
         "failures": 1, "failed": {}, "worst": None},
        {"cell": 2, "cell_line": 1, "check": "assert held", "runs": 2,
         "failures": 0, "failed": None, "worst": None},
    ]  # fmt: skip
    shown, hidden = claims.failures(run, recorded, tmp_path)
    assert (shown["file"], shown["line"]) == ("page.md", line_of(text, "assert x > 2"))
    assert shown["guards"] == "Before the shown cell, on two lines."
    assert shown["guards_line"] == line_of(text, "Before the shown")
    assert shown["measured"] == "1 > 2" and shown["margin"] == pytest.approx(-0.5)
    assert hidden["line"] == line_of(text, "assert x < 0.5")
    assert hidden["guards"] == "The guarded sentence."
    assert hidden["guards_line"] == line_of(text, "The guarded")
    said = claims.message([shown, hidden, shown])  # once each
    assert said.count("page.md:") == 2
    assert f"page.md:{shown['line']}: assert x > 2: 1 > 2 is false" in said
    assert f"page.md:{hidden['line']}: assert x < 0.5\n" in said
    assert said.endswith("make book CLAIMS=note")
    assert claims.message([]) == ""


# -- a small book: one page whose claims fail, one healthy page ---------------------

HEALTHY = (
    MYST_NOTEBOOK
    + """
# Home

```{code-cell} ipython3
:tags: [remove-cell]

n = 3
assert n >= 2
```

Three is enough.

```{code-cell} ipython3
:tags: [raises-exception]

assert n > 5, "an error shown on purpose"
```
"""
)
FAILING = (
    MYST_NOTEBOOK
    + """
# Claims

```{code-cell} ipython3
:tags: [remove-cell]

looping, loops = 7, 10
assert looping >= loops - 2  # "most of them"
```

Most of the greedy texts fall into a loop.

Some other prose.

```{code-cell} ipython3
:tags: [remove-cell]

loss = 0.25
assert loss < 0.1, "the loss should be small"
print("the cell went on")
```

(claims-loss)=
The loss ends below a tenth.
"""
)
TOC = "format: jb-book\nroot: index\nchapters:\n  - file: claims\n"


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.fixture(scope="module")
def claims_book(tmp_path_factory):
    """The book built as ``make book`` builds it (the prefill, then the
    builds), strictly, then with ``QKV_CLAIMS=note``: each build's result and
    what it left in the site."""
    root = write_small_book(
        tmp_path_factory.mktemp("claims"),
        {"index": HEALTHY, "claims": FAILING},
        toc=TOC,
        extensions=[
            "bookbuild.execute.cache",
            "bookbuild.execute.reports",
            "bookbuild.site.claim_notices",
        ],
    )
    html = root / "_build" / "html"
    strict = build_book(root, prefill=True)
    strict_pages = {p: (html / p).is_file() for p in ("index.html", "claims.html")}
    noted = build_book(root, env={claims.MODE: claims.NOTE}, prefill=True)
    return strict, strict_pages, noted, html


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.build
@pytest.mark.xdist_group("small-books")  # the module's book, built once
def test_a_page_whose_claims_failed_is_left_out_and_every_failure_is_listed(
    claims_book,
):
    strict, pages, _, _ = claims_book
    out = plain(strict.output)
    assert strict.returncode != 0, out[-3000:]
    assert pages == {"index.html": True, "claims.html": False}, out[-3000:]
    first = line_of(FAILING, "assert looping")
    second = line_of(FAILING, "assert loss")
    message = (
        "prefill: 2 sentences did not hold on this machine (their checks failed):\n"
        f"  claims.md:{first}: assert looping >= loops - 2: 7 >= 8 is false\n"
        '    guards: "Most of the greedy texts fall into a loop."\n'
        f"  claims.md:{second}: assert loss < 0.1, 'the loss should be small': "
        "0.25 < 0.1 is false\n"
        '    guards: "The loss ends below a tenth."\n'
    )
    assert out.count(message) == 2, out[-4000:]  # by the prefill, and at the end
    end = out.rindex(message)
    assert end > out.index("site: the build of the root language failed"), out
    assert "make book CLAIMS=note" in out[end:]
    assert "the build stops here" not in out  # the chapter was cached
    # One warning per claim, at the assert's line: what deleted the page.
    assert f"claims.md:{first}: WARNING: a sentence did not hold" in out
    assert f"claims.md:{second}: WARNING: a sentence did not hold" in out


@pytest.mark.build
@pytest.mark.xdist_group("small-books")  # the module's book, built once
def test_with_claims_note_the_page_is_built_with_a_notice_after_each_sentence(
    claims_book,
):
    from bs4 import BeautifulSoup

    _, _, noted, html = claims_book
    out = plain(noted.output)
    assert noted.returncode == 0, out[-3000:]
    assert "a notice after each such sentence (CLAIMS=note)" in out
    page = BeautifulSoup((html / "claims.html").read_text("utf-8"), "html.parser")
    notices = page.select("div.admonition.warning")
    assert len(notices) == 2, notices
    for sentence, measured in (
        ("Most of the greedy texts fall into a loop.", "7 >= 8"),
        ("The loss ends below a tenth.", "0.25 < 0.1"),
    ):
        paragraph = page.find("p", string=sentence)
        box = paragraph.find_next_sibling()
        assert "warning" in box["class"], box
        text = " ".join(box.get_text().split())
        assert "did not hold" in text and f"(measured: {measured} is false)" in text
    assert "the cell went on" not in page.get_text()  # hidden cell, ran on
    home = (html / "index.html").read_text("utf-8")
    assert "an error shown on purpose" in home  # raises-exception: plain assert
    assert "did not hold" not in home
