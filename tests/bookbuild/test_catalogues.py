"""A French page is never built from a missing or broken catalogue (issue 39):
``python -m bookbuild.build build`` refuses before Sphinx, which would build the page in
English, or keep its last French page, without a warning."""

from __future__ import annotations

import shutil
from pathlib import Path

from bookbuild import build as book_build
from bookbuild.i18n import checks

ROOT = Path(__file__).resolve().parents[2]


def a_copy_of_the_catalogues(tmp_path: Path) -> Path:
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "locales", tmp_path / "locales")
    return tmp_path


def test_the_books_catalogues_are_all_there_and_readable():
    assert checks.catalogue_problems(ROOT, "fr") == []


def test_a_missing_or_broken_catalogue_stops_the_french_build(tmp_path, capsys):
    root = a_copy_of_the_catalogues(tmp_path)
    folder = root / "locales" / "fr" / "LC_MESSAGES" / "book"
    (folder / "faq.po").unlink()
    (folder / "faq.mo").unlink(missing_ok=True)  # compiled by a build, not in git
    (folder / "intro.po").write_text("msgid ok\n", encoding="utf-8")
    (folder / "notation.po").write_text("", encoding="utf-8")
    found = checks.catalogue_problems(root, "fr")
    assert sorted(line.split(": ")[0] for line in found) == [
        "locales/fr/LC_MESSAGES/book/faq.po",
        "locales/fr/LC_MESSAGES/book/intro.po",
        "locales/fr/LC_MESSAGES/book/notation.po",
    ], found
    assert "faq.po: missing" in found[-1]
    assert "intro.po: unreadable (" in found[0] and "notation.po: empty" in found[1]
    assert book_build.build(root) == 1  # before any Sphinx starts
    assert "missing or broken" in capsys.readouterr().out
