"""The chapters' code cells held to the same style as the package: ruff.

A chapter's code is read on a projected page and in a handed-out notebook, so it
follows the same rules as ``src/`` (line length 88, ruff's checks, ruff's format).
Ruff reads notebooks, not MyST files: :func:`write_notebooks` writes each
chapter's code cells into a notebook (markdown left out), on which ``ruff check``
and ``ruff format --check`` run (``tests/test_chapters.py``). :func:`format_page`
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


def ruff() -> str:
    """The ruff of this environment (beside this Python)."""
    return str(Path(sys.executable).parent / "ruff")


def code_cells(text: str) -> list[str]:
    """The source of each code cell of a MyST page, in order."""
    return [match["code"].rstrip("\n") for match in CODE_CELL.finditer(text)]


def write_notebooks(root: Path, folder: Path) -> list[Path]:
    """A notebook of the code cells of every executable page, in ``folder``."""
    written = []
    for page in pages(root):
        if not is_notebook(root, page):
            continue
        text = (Path(root) / f"{page}.md").read_text(encoding="utf-8")
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
        notebook.metadata["language_info"] = {"name": "python"}
        notebook.cells = [nbformat.v4.new_code_cell(c) for c in code_cells(text)]
        target = Path(folder) / f"{Path(page).name}.ipynb"
        nbformat.write(notebook, target)
        written.append(target)
    return written


def check(root: Path) -> tuple[int, str]:
    """``ruff check`` and ``ruff format --check`` on every chapter's code cells;
    the exit code (0: clean) and what ruff printed."""
    with tempfile.TemporaryDirectory() as folder:
        write_notebooks(root, Path(folder))
        config = ["--config", str(Path(root) / "pyproject.toml")]
        done = [
            subprocess.run(
                [ruff(), *command, *config, folder],
                capture_output=True,
                text=True,
            )
            for command in (["check", "--no-cache"], ["format", "--check", "--diff"])
        ]
    output = "\n".join(d.stdout + d.stderr for d in done)
    return max(d.returncode for d in done), output.replace(folder, "<chapters>")


def format_code(code: str, root: Path) -> str:
    """``code`` as ruff formats it with the book's settings, imports sorted."""
    config = ["--config", str(Path(root) / "pyproject.toml")]
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
        code = format_code(match["code"].rstrip("\n"), root)
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
