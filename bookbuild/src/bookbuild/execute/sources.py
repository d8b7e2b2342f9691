"""Where a run of the prefill comes from: the chapter's own file, also for a
translation's execution of it (its code translated into
:data:`TRANSLATED_SOURCES`), and the line where a cell's code begins in it.
Shared by the prefill (:mod:`bookbuild.execute.prefill`: failure reports) and
the claims (:mod:`bookbuild.execute.claims`: where a sentence's check is), so
neither imports the other for it.
"""

from __future__ import annotations

from pathlib import Path

#: Where the prefill writes each chapter as a translation executes it (its code
#: translated: bookbuild.i18n.code), ``<folder>/<language>/<page>.md``; what a
#: failure report points at.
TRANSLATED_SOURCES = Path("_build") / "translated-code"


def translation(uri: str) -> tuple[str, Path] | None:
    """``(language, page path)`` of a translation's chapter (a file under
    :data:`TRANSLATED_SOURCES`), else None."""
    parts = Path(uri).parts
    for at in range(len(parts) - 3):
        if parts[at : at + 2] == TRANSLATED_SOURCES.parts:
            return parts[at + 2], Path(*parts[:at], *parts[at + 3 :])
    return None


def source_path(uri: str) -> Path:
    """The chapter's own file, also for a translation's execution of it."""
    found = translation(uri)
    return found[1] if found else Path(uri)


def cell_start(path: Path, notebook, index: int, source: list[str]) -> int | None:
    """The line of the file where the cell's code begins (1-based), found from
    the reader's source map (the cell's fence) and the code itself."""
    starts = notebook.metadata.get("source_map") or []
    if index >= len(starts) or not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    fence = max(starts[index] - 1, 0)
    for number in range(fence, len(lines)):
        if lines[number : number + len(source)] == source:
            return number + 1
        if number > fence and lines[number].lstrip().startswith(("```", "~~~")):
            break  # the cell's end: the code was not found as it is
    return fence + 1
