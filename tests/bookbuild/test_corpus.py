"""The corpus of the model that writes (bookbuild.tools.corpus): prose out of
the catalogues, markup stripped, the same paragraphs in both languages, and the
snapshot shipped with qkv up to date with its rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookbuild.tools.corpus import TARGET, paragraphs, prose

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("the {term}`softmax` of $x$ scores", "the softmax of scores"),
        ("un {term}`vocabulaire <vocabulary>` ;", "un vocabulaire ;"),
        ("see {ref}`masking`, then `qkv.rope` (the **key**)", "see, then (the key)"),
        ("a [link](https://example.org) and *emphasis*", "a link and emphasis"),
        ("{glue:text}`n` words ( {glue:text}`m` )", "words"),
        ("two\nlines", "two lines"),
    ],
)
def test_prose_keeps_what_a_reader_reads(message, text):
    assert prose(message) == text


def test_the_shipped_snapshot_holds_the_same_paragraphs_in_both_languages():
    """The corpus is a snapshot: after a catalogue changes it may lag behind,
    but its paragraphs are the tool's, in both languages, line for line."""
    shipped = {
        language: (ROOT / TARGET / f"{language}.txt").read_text(encoding="utf-8")
        for language in ("en", "fr")
    }
    lines = {language: text.splitlines() for language, text in shipped.items()}
    assert len(lines["en"]) == len(lines["fr"]) > 500
    for language in ("en", "fr"):
        assert "`" not in shipped[language] and "{" not in shipped[language][:1000]
    found = paragraphs(ROOT)
    assert len(found["en"]) == len(found["fr"])
