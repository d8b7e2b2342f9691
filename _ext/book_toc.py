"""The pages of the book, read from ``_toc.yml`` in one place.

Used by the build helpers (``prefill_cache.py``, ``notebooks.py``), the handout
printer and the tests, so that they all agree on what a page and a lesson are.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def _toc(root: Path) -> dict:
    return yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))


def pages(root: Path) -> list[str]:
    """Every page, as a path without suffix (``book/masking``), in reading order."""
    toc = _toc(root)
    found = [toc["root"]]
    for part in toc.get("parts", []):
        found += [chapter["file"] for chapter in part["chapters"]]
    found += [chapter["file"] for chapter in toc.get("chapters", [])]
    return found


def lessons(root: Path) -> list[str]:
    """The chapters of the numbered parts: the lessons, in reading order."""
    return [
        chapter["file"]
        for part in _toc(root).get("parts", [])
        if part.get("numbered")
        for chapter in part["chapters"]
    ]


def is_notebook(root: Path, page: str) -> bool:
    """True if the page is a MyST notebook (front matter naming a kernel)."""
    text = (root / f"{page}.md").read_text(encoding="utf-8")
    return text.startswith("---") and "kernelspec:" in text.split("\n---\n", 1)[0]
