"""The chapters' code cells held to the same style as the package: ruff.

A chapter's code is read on a projected page and in a handed-out notebook, so it
follows the same rules as ``src/`` (ruff's checks, ruff's format), with shorter
lines where the page shows the code: at most :data:`SHOWN_LINE_LENGTH` (80)
characters, what the code column shows without scrolling in a window 1280 pixels
wide (a projector's). The cells the page does not show (tagged ``remove-cell`` or
``remove-input``: the book's bookkeeping, left out of the handed-out notebooks too)
keep the package's 88.

Ruff reads notebooks, not MyST files: :func:`write_notebooks` writes each
chapter's code cells into a notebook (markdown left out), on which ``ruff check``
and ``ruff format --check`` run (``python -m bookbuild.tools.chapter_code check``,
a step of ``make check`` and ``make test``). :func:`format_page`
formats a chapter's code cells in place, cell by cell, keeping their options.

Usage, from the book's folder::

    python -m bookbuild.tools.chapter_code format book/masking.md   # format in place
    python -m bookbuild.tools.chapter_code check                    # every page, as CI
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from bookbuild.toc import is_notebook, pages

# A code cell: the fence, its options (":tags: [...]" lines), the code, the fence.
CODE_CELL = re.compile(
    r"^(?P<fence>`{3,})\{code-cell\}[^\n]*\n"
    r"(?P<options>(?::[^\n]*\n)*(?:\n(?=\S))?)"
    r"(?P<code>.*?)"
    r"^(?P=fence)[ \t]*$",
    re.M | re.S,
)


# The longest line of a code cell that the page shows: a longer one is cut off at
# the right of the code column in a window 1280 px wide (measured in Chromium).
SHOWN_LINE_LENGTH = 77
# Tags of a cell whose code the page does not show.
HIDDEN_CODE = re.compile(r"\bremove-(?:cell|input)\b")


def ruff() -> str:
    """The ruff of this environment (beside this Python)."""
    return str(Path(sys.executable).parent / "ruff")


def is_shown(options: str) -> bool:
    """Whether the page shows the code of a cell with these options (a cell tagged
    ``hide-input`` is shown when the reader opens it)."""
    return not HIDDEN_CODE.search(options)


def code_cells(text: str, shown: bool | None = None) -> list[str]:
    """The source of each code cell of a MyST page, in order: every cell, or only
    those whose code the page shows (``shown=True``) or does not (``False``)."""
    return [
        match["code"].rstrip("\n")
        for match in CODE_CELL.finditer(text)
        if shown is None or is_shown(match["options"]) == shown
    ]


def write_notebooks(root: Path, folder: Path, shown: bool | None = None) -> list[Path]:
    """A notebook of the code cells of every executable page, in ``folder``
    (every cell, or only the shown or the hidden ones: see :func:`code_cells`)."""
    written = []
    for page in pages(root):
        if not is_notebook(root, page):
            continue
        text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
        notebook.metadata["language_info"] = {"name": "python"}
        cells = code_cells(text, shown)
        notebook.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        Path(folder).mkdir(parents=True, exist_ok=True)
        target = Path(folder) / f"{Path(page).name}.ipynb"
        nbformat.write(notebook, target)
        written.append(target)
    return written


def ruff_config(root: Path, shown: bool = False) -> list[str]:
    """ruff's options: the book's pyproject.toml (line length 88), and lines of
    :data:`SHOWN_LINE_LENGTH` characters for the code the page shows."""
    config = ["--config", str(Path(root) / "pyproject.toml")]
    return [*config, "--line-length", str(SHOWN_LINE_LENGTH)] if shown else config


def check(root: Path) -> tuple[int, str]:
    """``ruff check`` and ``ruff format --check`` on every chapter's code cells;
    the exit code (0: clean) and what ruff printed.

    ``ruff check`` reads all of a page's cells in one notebook (a name defined in a
    hidden cell is used in a shown one); the shown cells are then checked again for
    their line length alone, and each kind is format-checked at its own length.
    """
    with tempfile.TemporaryDirectory() as folder:
        every, shown, hidden = (Path(folder) / n for n in ("every", "shown", "hidden"))
        write_notebooks(root, every)
        write_notebooks(root, shown, shown=True)
        write_notebooks(root, hidden, shown=False)
        package_style, shown_style = ruff_config(root), ruff_config(root, shown=True)
        commands = [
            ["check", "--no-cache", *package_style, every],
            ["check", "--no-cache", *shown_style, "--select", "E501", shown],
            ["format", "--check", "--diff", *shown_style, shown],
            ["format", "--check", "--diff", *package_style, hidden],
        ]
        done = [
            subprocess.run([ruff(), *command], capture_output=True, text=True)
            for command in commands
        ]
    output = "\n".join(d.stdout + d.stderr for d in done)
    return max(d.returncode for d in done), output.replace(folder, "<chapters>")


def format_code(code: str, root: Path, shown: bool = False) -> str:
    """``code`` as ruff formats it with the book's settings, imports sorted (at
    the shorter line length of the code a page shows if ``shown``)."""
    config = ruff_config(root, shown)
    for command in (["check", "--select", "I", "--fix", "--quiet"], ["format"]):
        done = subprocess.run(
            [ruff(), *command, *config, "-"],
            input=code + "\n",
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise ValueError(f"ruff could not format this cell:\n{code}\n{done.stderr}")
        code = done.stdout.rstrip("\n")
    return code


def format_page(path: Path, root: Path = Path(".")) -> bool:
    """Format the code cells of one MyST page in place; True if it changed."""
    text = Path(path).read_text(encoding="utf-8")

    def formatted(match: re.Match) -> str:
        shown = is_shown(match["options"])
        code = format_code(match["code"].rstrip("\n"), root, shown)
        fence = match["fence"]
        head = match.group(0).split("\n", 1)[0]
        return f"{head}\n{match['options']}{code}\n{fence}"

    new = CODE_CELL.sub(formatted, text)
    if new != text:
        Path(path).write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str]) -> int:
    if argv[:1] == ["format"]:
        for name in argv[1:] or [f"{p}.md" for p in pages(Path("."))]:
            if format_page(Path(name)):
                print(f"formatted {name}")
        return 0
    if argv[:1] == ["check"]:
        code, output = check(Path("."))
        print(output.strip())
        return code
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
