"""The page frame's labels in French (bookbuild.i18n.frame): the theme's
sidebar tooltips and togglebutton's label, which neither package translates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bookbuild.i18n import frame

ROOT = Path(__file__).resolve().parents[2]
FR = ROOT / "_build" / "html" / "fr"

THEME = """<button class="sidebar-toggle primary-toggle btn btn-sm"
 title="Toggle primary sidebar" data-bs-toggle="tooltip"></button>
<button title="Toggle secondary sidebar"></button>"""


def test_the_sidebar_tooltips_are_french_and_english_stays_english():
    french = frame.translate_frame(THEME, "fr")
    assert "Toggle" not in french
    assert 'title="Afficher ou masquer la barre latérale principale"' in french
    assert frame.translate_frame(THEME, "en") == THEME


def test_every_label_has_its_french_with_french_typography():
    for english, found in frame.LABELS.items():
        assert found.get("fr") and found["fr"] != english, english
        assert not re.search(r" [:;!?]", found["fr"]), found["fr"]


def test_the_script_relabels_with_the_page_s_labels():
    script = frame.SCRIPT.format(labels=json.dumps(frame.translations("fr")))
    assert "button.toggle-button" in script and '"load"' in script
    assert json.dumps(frame.translations("fr")) in script


@pytest.mark.book
def test_the_built_french_pages_have_no_english_frame_label(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    pages = sorted(FR.glob("book/*.html"))
    assert pages, "no French build"
    for page in pages:
        html = page.read_text(encoding="utf-8")
        for english in frame.LABELS:
            for attribute in frame.ATTRIBUTES:
                assert f'{attribute}="{english}"' not in html, (page.name, english)
