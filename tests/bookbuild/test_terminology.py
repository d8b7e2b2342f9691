"""The French terminology list (locales/fr/terminology.toml) and its check
(bookbuild.i18n.terminology): the catalogues hold no forbidden variant; a
variant in prose or in a code message is found, one in code, math or an
italic English gloss is not."""

from __future__ import annotations

from pathlib import Path

from bookbuild.i18n import terminology

ROOT = Path(__file__).resolve().parents[2]

CORE = {"requête", "clé", "valeur", "tête", "token", "plongement"}
CORE |= {"pré-normalisation", "la softmax"}


def test_the_list_holds_the_core_terms_each_with_variants():
    terms = terminology.terms(ROOT, "fr")
    assert {term.fr for term in terms} == CORE
    assert all(term.forbidden for term in terms)


def test_the_french_catalogues_use_one_term_each():
    assert terminology.problems(ROOT, "fr") == []


def _catalogue(tmp_path: Path, msgstr: str, context: str = "") -> Path:
    (tmp_path / "locales/fr/LC_MESSAGES/book").mkdir(parents=True)
    (tmp_path / "locales/fr/terminology.toml").write_text(
        (ROOT / "locales/fr/terminology.toml").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    ctx = f'msgctxt "{context}"\n' if context else ""
    (tmp_path / "locales/fr/LC_MESSAGES/book/page.po").write_text(
        f'#: ../../book/page.md:3\n{ctx}msgid "x"\nmsgstr "{msgstr}"\n',
        encoding="utf-8",
    )
    return tmp_path


def test_a_variant_in_prose_or_code_messages_is_found(tmp_path):
    root = _catalogue(tmp_path / "a", "Prenez Le softmax des scores.")
    (found,) = terminology.problems(root, "fr")
    assert found[0] == "book/page" and "« Le softmax »" in found[1]
    assert "« la softmax »" in found[1] and "page.md:3" in found[1]
    root = _catalogue(tmp_path / "b", "un bloc à normalisation en entrée", "code")
    assert len(terminology.problems(root, "fr")) == 1
    root = _catalogue(tmp_path / "c", "deux jetons, puis un plongement")
    assert len(terminology.problems(root, "fr")) == 1


def test_code_math_and_english_glosses_are_not_prose(tmp_path):
    text = "la pré-normalisation (*pre-norm*), `le softmax`, $\\text{clef}$"
    root = _catalogue(tmp_path, text)
    assert terminology.problems(root, "fr") == []
    assert terminology.prose("la **pre-norm**").strip() == "la **pre-norm**"
