"""The French edition's machinery, without a build: our own strings, the markup
check of the catalogues, the translation of a chapter's Markdown for the
notebooks, glued phrases as messages, the language menu's links."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from bookbuild import build as book_build
from bookbuild.i18n import catalogues, checks, domains, translations
from bookbuild.i18n.catalogues import translate_markdown
from bookbuild.i18n.checks import markup_problems
from bookbuild.i18n.footnotes import with_definitions
from bookbuild.i18n.glue import GLUED_SUFFIX, fill, is_prose, template, translate_glued
from bookbuild.i18n.languages import has_words, page_href, sort_key
from bookbuild.i18n.messages import NBSP, NNBSP, gettext
from bookbuild.i18n.messages import translations as catalogue_of
from bookbuild.i18n.numbers import localise_number, localise_value
from qkv.page.numbers import localise as number_rule

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "bookbuild" / "src" / "bookbuild").rglob("*.py"))


# -- our own strings ---------------------------------------------------------------


def test_every_string_our_extensions_translate_has_its_french():
    called = set()
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        called |= set(re.findall(r"\b(?:_|say)\(\s*\"([^\"]+)\"\s*\)", text))
        called |= set(re.findall(r"\b(?:_|say)\(\s*'([^']+)'\s*\)", text))
    called.discard("...")  # the example in the docstring of bookbuild.i18n.messages
    assert len(called) >= 15, called
    missing = sorted(called - set(catalogue_of("fr")))
    assert not missing, f"no French for {missing}"


def test_the_packages_catalogues_are_complete_used_and_compiled():
    """qkv's and bookbuild's own catalogues: every message their code writes
    is translated, every translation is used, each .mo is its .po compiled
    (bookbuild.i18n.domains: the French check runs the same)."""
    assert domains.problems(ROOT) == []


def test_the_domain_check_finds_a_missing_a_stale_and_an_unsynced_message(
    tmp_path,
):
    for domain in domains.DOMAINS:
        (tmp_path / domain.source).mkdir(parents=True)
        po = domain.po(ROOT, "fr")
        target = domain.po(tmp_path, "fr")
        target.parent.mkdir(parents=True)
        shutil.copy(po, target)
        shutil.copy(po.with_suffix(".mo"), target.with_suffix(".mo"))
        (tmp_path / domain.source / "module.py").write_text(
            'from x import _\n_("A new message")\n', encoding="utf-8"
        )
    found = domains.problems(tmp_path)
    assert any("no translation of 'A new message'" in p for p in found), found
    assert any("'Cite this chapter' is used by no code" in p for p in found), found
    qkv_po = domains.DOMAINS[0].po(tmp_path, "fr")
    qkv_po.write_text(
        qkv_po.read_text(encoding="utf-8").replace('msgstr "requête"', 'msgstr "req"'),
        encoding="utf-8",
    )
    found = domains.problems(tmp_path)
    assert any("qkv.mo is not the compiled qkv.po" in p for p in found), found


def test_french_typography_of_our_strings():
    _ = gettext("fr")
    assert _("Cite this chapter") == "Citer ce chapitre"
    assert _("“{title}”").format(title="T") == f"«{NBSP}T{NBSP}»"
    assert f"{NNBSP}:" in _("Chapter label: {label}")
    for text in catalogue_of("fr").values():
        assert not re.search(r" [:;?!]", text), f"a plain space before: {text!r}"
    assert gettext("en")("Cite this chapter") == "Cite this chapter"
    assert gettext("fr_CA")("Language") == "Langue"


# -- the markup a translation must keep ---------------------------------------------

SOURCE = (
    "A layer of width 32 has {glue:text}`sa-params-32:,` parameters; see "
    "{ref}`masking` and equation {eq}`sa-eq-layer`, $3(D^2 + D)$, `nn.Linear`,"
    " the {term}`positional encoding`[^note] and [a link](https://example.org)."
)
GOOD = (
    "Une couche de largeur 32 a {glue:text}`sa-params-32:,` paramètres ; voir "
    "{ref}`le masquage <masking>` et l'équation {eq}`sa-eq-layer`, $3(D^2 + D)$,"
    " `nn.Linear`, l'{term}`encodage positionnel <positional encoding>`[^note] et"
    " [un lien](https://example.org)."
)


def test_a_faithful_translation_keeps_all_markup():
    assert markup_problems(SOURCE, GOOD) == []


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        (GOOD.replace("{glue:text}`sa-params-32:,`", "3168"), "{glue:text}"),
        (
            GOOD.replace("{glue:text}`sa-params-32:,`", "{glue:text}`sa-params-32`"),
            ":,",
        ),
        (GOOD.replace("{ref}`le masquage <masking>`", "le masquage"), "{ref}`masking`"),
        (GOOD.replace("$3(D^2 + D)$", "$3D^2$"), "$3(D^2 + D)$"),
        (GOOD.replace("[^note]", ""), "[^note]"),
        (GOOD.replace("`nn.Linear`", "nn.Linear"), "`nn.Linear`"),
        (GOOD.replace("largeur 32", "largeur trente-deux"), "lost 32"),
        (GOOD.replace("https://example.org", "https://example.com"), "example"),
        (GOOD.replace("{eq}`sa-eq-layer`", "{numref}`sa-eq-layer`"), "{eq}"),
    ],
)
def test_the_markup_check_catches_what_a_translation_lost(broken, problem):
    found = markup_problems(SOURCE, broken)
    assert found and any(problem in p for p in found), found


@pytest.mark.parametrize(
    ("source", "translation", "sound"),
    [
        ("1 KiB is 1,024 bytes", "1 Kio vaut 1\u202f024 octets", True),
        ("1 KiB is 1,024 bytes", "1 Kio vaut 1\u00a0024 octets", True),
        ("1 KiB is 1,024 bytes", "1 Kio vaut 1,024 octets", False),  # 1.024
        ("1 KiB is 1,024 bytes", "1 Kio vaut 1024 octets", True),
        ("a weight of 0.5", "un poids de 0,5", True),
        ("a weight of 0.5", "un poids de 0.5", True),
        ("a weight of 0.5", "un poids de 0,6", False),
        ("131,072 tokens", "131\u202f072 tokens", True),
        ("torch 2.13.0 and Sphinx 7.4", "torch 2.13.0 et Sphinx 7.4", True),
        ("torch 2.13.0", "torch 2.13.1", False),
    ],
)
def test_numbers_are_compared_by_value_in_each_language(source, translation, sound):
    assert (markup_problems(source, translation) == []) is sound


def test_glued_phrase_placeholders_are_markup():
    assert markup_problems("gets {0} of {1}", "reçoit {0} de {1}") == []
    assert markup_problems("gets {0} of {1}", "reçoit {0}") == ["lost {1}"]


# -- the check, on a small book of catalogues -------------------------------------


def _catalogue(path: Path, messages: dict[str, tuple[str, bool]]) -> None:
    catalogue = Catalog(locale="fr")
    for msgid, (msgstr, fuzzy) in messages.items():
        catalogue.add(msgid, msgstr, flags=["fuzzy"] if fuzzy else [])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        write_po(handle, catalogue)


def _book(root: Path, translated: str) -> None:
    (root / "_toc.yml").write_text("format: jb-book\nroot: a\nchapters:\n- file: b\n")
    for page in ("a", "b"):
        (root / f"{page}.md").write_text(f"# {page}\n")
    (root / "_config.yml").write_text(
        "sphinx:\n  config:\n    book_languages: {en: English, fr: Français}\n"
        f"    book_translated: {{fr: {translated}}}\n"
    )
    pot = root / "_build" / "gettext"
    _catalogue(pot / "a.pot", {"One.": ("", False), "Two {0}.": ("", False)})
    _catalogue(pot / "b.pot", {"Three $x$.": ("", False), "Four.": ("", False)})
    po = root / "locales" / "fr" / "LC_MESSAGES"
    _catalogue(po / "a.po", {"One.": ("Un.", False), "Two {0}.": ("Deux {0}.", False)})
    _catalogue(po / "b.po", {"Three $x$.": ("Trois $y$.", True), "Four.": ("", False)})


def test_check_is_strict_only_for_the_pages_listed_as_translated(tmp_path):
    _book(tmp_path, "[a]")
    assert checks.problems(tmp_path) == []  # b: fuzzy and missing, not listed
    _book(tmp_path, "[a, b]")
    found = checks.problems(tmp_path)
    assert any("b: fuzzy" in p and "Three" in p for p in found), found
    assert any("b: untranslated" in p and "Four" in p for p in found), found
    _book(tmp_path, "all")
    assert len(checks.problems(tmp_path)) == 2
    _book(tmp_path, "[a, c]")
    found = checks.problems(tmp_path)
    assert any("c is listed as translated, not a page" in p for p in found), found


def test_a_failed_check_names_the_pages_the_counts_and_the_command(tmp_path, capsys):
    """A newcomer whose prose edit fails the check reads what to run and where."""
    _book(tmp_path, "all")
    assert translations.check(tmp_path, extract_first=False) == 1
    out = capsys.readouterr().out
    summary = out[out.index("translations: 2 problem(s) in 1 catalogue(s):") :]
    assert "locales/fr/LC_MESSAGES/b.po: 1 fuzzy, 1 untranslated" in summary
    assert "run `make translations`, then translate the messages marked" in summary
    assert "fuzzy or left empty in locales/fr/LC_MESSAGES/b.po" in summary
    assert "a.po" not in summary  # complete: not named
    assert "only phrases glued by the code" not in summary
    # The same problems, in phrases glued by the code (a branch measured here).
    listing = tmp_path / "_build" / "gettext" / f"b{GLUED_SUFFIX}"
    listing.write_text('["Three $x$.", "Four."]', encoding="utf-8")
    assert translations.check(tmp_path, extract_first=False) == 1
    out = capsys.readouterr().out
    assert "In locales/fr/LC_MESSAGES/b.po only phrases glued by the code" in out
    assert "`git checkout -- locales/fr/LC_MESSAGES/b.po`" in out
    _book(tmp_path, "[a]")
    assert translations.check(tmp_path, extract_first=False) == 0
    assert "translations: 0 problem(s)" in capsys.readouterr().out


def test_check_applies_the_markup_check_to_every_translated_message(tmp_path):
    _book(tmp_path, "[a]")
    po = tmp_path / "locales" / "fr" / "LC_MESSAGES" / "a.po"
    _catalogue(po, {"One.": ("Un.", False), "Two {0}.": ("Deux.", False)})
    _catalogue(
        tmp_path / "locales/fr/LC_MESSAGES/b.po",
        {"Three $x$.": ("Trois $y$.", False), "Four.": ("", False)},
    )
    found = checks.problems(tmp_path)
    assert any("a: lost {0}" in p for p in found), found
    assert any("b: lost $x$" in p for p in found), found  # b is not listed


def test_a_glued_phrase_no_catalogue_has_seen_is_a_notice(tmp_path):
    """A measurement that takes another branch on another machine glues a phrase
    the translators have not seen: noted (the translated build fails on it), not
    a failure of the catalogues; a
    glued phrase that is in the catalogue but untranslated still fails."""
    _book(tmp_path, "[a]")
    pot = tmp_path / "_build" / "gettext"
    _catalogue(
        pot / "a.pot",
        {"One.": ("", False), "Two {0}.": ("", False), "New {0} branch.": ("", False)},
    )
    (pot / f"a{GLUED_SUFFIX}").write_text('["New {0} branch."]', encoding="utf-8")
    notices: list[str] = []
    assert checks.problems(tmp_path, notices) == []
    assert len(notices) == 1 and "New {0} branch." in notices[0], notices
    po = tmp_path / "locales" / "fr" / "LC_MESSAGES" / "a.po"
    _catalogue(
        po,
        {
            "One.": ("Un.", False),
            "Two {0}.": ("Deux {0}.", False),
            "New {0} branch.": ("", False),
        },
    )
    found = checks.problems(tmp_path)
    assert any("a: untranslated" in p and "New" in p for p in found), found


def test_every_declared_phrase_is_extracted_and_required(tmp_path):
    """A glued phrase that declares every phrase its code can choose (qkv's
    verdicts: a timing picks one) puts all of them in the page's messages, none
    listed as a glued phrase: the check then fails on any branch without a
    translation, whichever branch this machine took."""
    import json
    from types import SimpleNamespace

    from docutils import nodes
    from docutils.utils import new_document

    from bookbuild.i18n.glue import PHRASES_MIME, _extract_glued_prose

    declared = ["{0} times faster than", "about as fast as", "{0} times slower than"]
    source = tmp_path / "a.md"
    source.write_text(
        "It was {glue:md}`speed` the other; {glue:md}`old`{glue:md}`none`."
    )
    executed = tmp_path / "executed"
    executed.mkdir()
    glue = {
        "speed": {
            "data": {
                "text/markdown": "2.5 times faster than",
                PHRASES_MIME: {"phrases": declared},
            }
        },
        "old": {"data": {"text/markdown": "an undeclared phrase"}},
        # this machine chose the empty phrase: the others are messages still
        "none": {
            "data": {
                "text/markdown": "",
                PHRASES_MIME: {"phrases": ["", "a {0} phrase"]},
            }
        },
    }
    (executed / "a.glue.json").write_text(json.dumps(glue))
    app = SimpleNamespace(
        builder=SimpleNamespace(name="gettext"),
        env=SimpleNamespace(
            doc2path=lambda docname: str(source),
            mystnb_config=SimpleNamespace(output_folder=str(executed)),
        ),
        outdir=str(tmp_path / "gettext"),
    )
    doctree = new_document("a")
    _extract_glued_prose(app, doctree, "a")
    messages = [p.astext() for p in doctree.findall(nodes.paragraph)]
    expected = [*declared, "an undeclared phrase", "a {0} phrase"]
    assert sorted(messages) == sorted(expected)
    listing = tmp_path / "gettext" / f"a{GLUED_SUFFIX}"
    assert json.loads(listing.read_text()) == ["an undeclared phrase"]


def test_counts_per_page(tmp_path):
    _book(tmp_path, "[a]")
    counts = {c.page: c for c in translations.count(tmp_path, "fr")}
    assert (counts["a"].translated, counts["a"].fuzzy, counts["a"].missing) == (2, 0, 0)
    assert (counts["b"].translated, counts["b"].fuzzy, counts["b"].missing) == (0, 1, 1)


# -- a chapter's Markdown in French (the notebooks) ---------------------------------

MARKDOWN = textwrap.dedent(
    """\
    (self-attention)=
    # Self-attention as a layer

    :::{admonition} You will learn
    :class: tip

    - how the formula becomes a module,
      with trainable weights;
    - the difference.
    :::

    The chapters so far computed attention on tensors
    we built by hand. The difference.

    | parameters | without bias |
    | --- | --- |
    | 12 | 9 |
    """
)
MESSAGES = {
    "Self-attention as a layer": "L'auto-attention comme couche",
    "You will learn": "Vous allez apprendre",
    "how the formula becomes a module, with trainable weights;": "comment la formule…",
    "the difference.": "la différence.",
    "The chapters so far computed attention on tensors we built by hand. The "
    "difference.": "Jusqu'ici, les chapitres ont calculé l'attention. La différence.",
    "parameters": "paramètres",
    "without bias": "sans biais",
    "The difference.": "never used: only part of a paragraph",
}


def test_markdown_is_translated_block_by_block():
    french = translate_markdown(MARKDOWN, MESSAGES)
    assert "# L'auto-attention comme couche" in french
    assert ":::{admonition} Vous allez apprendre" in french
    assert "- comment la formule…\n" in french and "- la différence." in french
    assert "Jusqu'ici, les chapitres ont calculé l'attention. La différence." in french
    assert "| paramètres | sans biais |" in french
    assert "(self-attention)=" in french and "| 12 | 9 |" in french
    assert "never used" not in french, "a message is replaced only whole"


def test_a_translation_is_not_translated_again():
    text = translate_markdown("Apple\n\nPomme\n", {"Apple": "Pomme", "Pomme": "X"})
    assert text == "Pomme\n\nX\n"


def test_a_longer_message_wins_over_a_shorter_one_inside_it():
    # "b c" starts a line, but inside the place of the longer "A b c".
    messages = {"A b c": "X", "b c": "Y", "d": "Z"}
    assert translate_markdown("A\nb c\n\nb  c\n- d |", messages) == "X\n\nY\n- Z |"


# -- glued phrases -------------------------------------------------------------------


def test_a_glued_phrase_becomes_a_template_and_back():
    phrase = 'Here they differ: "one" has the largest weight, 0.174 of 1,600.'
    message, values = template(phrase)
    assert message == "Here they differ: {0} has the largest weight, {1} of {2}."
    assert values == ['"one"', "0.174", "1,600"]
    assert fill(message, values) == phrase
    french = {message: "Ici : {0} a le plus grand poids, {1} sur {2}."}
    assert (
        translate_glued(phrase, french)
        == 'Ici : "one" a le plus grand poids, 0.174 sur 1,600.'
    )
    assert translate_glued(phrase, {}) == phrase
    assert translate_glued(phrase, {message: "{3}"}) == phrase  # a bad placeholder


@pytest.mark.parametrize(
    ("english", "french"),
    [
        ("3,168", f"3{NNBSP}168"),
        ("1,234,567.5", f"1{NNBSP}234{NNBSP}567,5"),
        ("0.174", "0,174"),
        ("-0.5", "-0,5"),
        ("1.0e-06", f"1,0{NNBSP}×{NNBSP}10⁻⁶"),
        ("2.50E+03", f"2,50{NNBSP}×{NNBSP}10³"),
        (f"3.4{NNBSP}×{NNBSP}10⁻⁹", f"3,4{NNBSP}×{NNBSP}10⁻⁹"),  # qkv's English
        ("12.5%", f"12,5{NNBSP}%"),
        ("7%", f"7{NNBSP}%"),
        ("1024", f"1{NNBSP}024"),  # grouped from four digits, as num() does
        ("42", "42"),
        # Not a number: left as it is.
        ("2.13.0", "2.13.0"),
        ("5, 3, 2", "5, 3, 2"),
        ("(2, 6)", "(2, 6)"),
        ("1,2", "1,2"),
        ("cat", "cat"),
        ("nan", "nan"),
        ("3,168 tokens", "3,168 tokens"),
    ],
)
def test_glued_numbers_in_french(english, french):
    assert localise_number(english, "fr") == french
    assert localise_number(english, "fr_CA") == french
    assert localise_number(english, "de") == english  # a language without a rule


@pytest.mark.parametrize(
    ("written", "english"),
    [
        ("3,168", "3,168"),
        ("3168", "3,168"),  # one grouping rule: from four digits
        ("0.174", "0.174"),
        ("12.5%", "12.5%"),
        ("1.2e+05", f"1.2{NNBSP}×{NNBSP}10⁵"),  # a value glued with :.1e
        ("-1.0e-06", f"-1.0{NNBSP}×{NNBSP}10⁻⁶"),
        ("2.13.0", "2.13.0"),
        ("(2, 6)", "(2, 6)"),
        ("cat", "cat"),
    ],
)
def test_glued_numbers_in_english_by_the_same_rule(written, english):
    """English pages keep their conventions, but by the one rule of
    :mod:`qkv.page.numbers`: thousands grouped, powers of ten written as such."""
    assert localise_number(written, "en") == english
    assert localise_number(written, None) == english
    assert localise_number(written, "en") == number_rule(written, "en")


@pytest.mark.parametrize(
    "english", ["3,168", "1,234,567.5", "0.174", "1.0e-06", "12.5%", "1024", "42"]
)
def test_the_check_reads_a_french_glued_number_as_its_english_value(english):
    """A number a translator types the way a French page shows glued numbers is
    the same number for ``translations check``."""
    french = localise_number(english, "fr")
    assert markup_problems(f"a value of {english} here", f"valeur {french} ici") == []
    assert markup_problems(f"a value of {english} here", "valeur 7,5 ici") != []


def test_values_of_a_glued_phrase_in_french():
    assert localise_value('"cat"', "fr") == f"«{NBSP}cat{NBSP}»"
    assert localise_value("“cat”", "fr") == f"«{NBSP}cat{NBSP}»"
    assert localise_value('"cat"', "en") == '"cat"'
    assert localise_value("0.75", "fr") == "0,75"
    message, values = template('"one" gets 0.174 of 1,600 (`w = 0.5`, $0.25$)')
    assert message == "{0} gets {1} of {2} (`w = {3}`, ${4}$)"
    french = "{0} reçoit {1} sur {2} (`w = {3}`, ${4}$)"
    assert fill(french, values, "fr") == (
        f"«{NBSP}one{NBSP}» reçoit 0,174 sur 1{NNBSP}600 (`w = 0.5`, $0.25$)"
    )
    assert fill(french, values) == '"one" reçoit 0.174 sur 1,600 (`w = 0.5`, $0.25$)'


def test_a_glued_phrase_of_no_words_has_french_numbers():
    sum_ = "0.05 + 0.24 = 0.29 (`x = 0.5`)"
    assert translate_glued(sum_, {}, "fr") == "0,05 + 0,24 = 0,29 (`x = 0.5`)"
    assert translate_glued(sum_, {}, "en") == sum_
    assert translate_glued('"journey"', {}, "fr") == f"«{NBSP}journey{NBSP}»"
    assert translate_glued("2.13.0", {}, "fr") == "2.13.0"
    # A phrase not translated yet stays English, numbers included.
    phrase = "the weights differ by 0.5"
    assert translate_glued(phrase, {}, "fr") == phrase


def test_glued_numbers_of_a_french_notebook():
    from types import SimpleNamespace

    from bookbuild.site.notebooks import _roles

    values = {"n": {"text/plain": "3168"}, "w": {"text/plain": "0.17412"}}
    text = "{glue:text}`n:,` and {glue:text}`w:.3f`"
    french = SimpleNamespace(language="fr")
    assert _roles(text, values, french) == f"3{NNBSP}168 and 0,174"
    assert _roles(text, values, SimpleNamespace(language="en")) == "3,168 and 0.174"


def test_only_phrases_are_messages():
    assert is_prose("the same output vectors as the original, up to 1.2e-07")
    for value in ('"journey"', "(6, 6)", '"step starts Your one journey with"', "0.5"):
        assert not is_prose(value), value


# -- the rest -------------------------------------------------------------------------


def test_language_menu_links_the_same_page():
    assert page_href("book/masking", "en", "fr", "en") == "../fr/book/masking.html"
    assert page_href("book/masking", "fr", "en", "en") == "../../book/masking.html"
    assert page_href("book/masking", "fr", "fr", "en") == "../../fr/book/masking.html"
    assert page_href("search", "en", "fr", "en") == "fr/search.html"
    assert page_href("search", "fr", "en", "en") == "../search.html"


def test_what_is_worth_translating():
    assert has_words("the {ref}`masking` chapter")
    for text in ("$x$", "{glue:md}`key`", "`(B, T, D)`", "$3D^2$, 12", "<br>"):
        assert not has_words(text), text


def test_french_alphabetical_order_ignores_accents_and_case():
    terms = ["tête (*head*)", "entropie", "Transformer", "équivariance", "clé"]
    assert sorted(terms, key=sort_key) == [
        "clé",
        "entropie",
        "équivariance",
        "tête (*head*)",
        "Transformer",
    ]


def test_footnotes_of_a_translated_message_get_placeholder_definitions():
    text = with_definitions("Une note.[^a] Deux[^b].")
    assert "\n[^a]: -" in text and "\n[^b]: -" in text
    assert with_definitions("[^a]: La note.") == "[^a]: La note."


class FakeProcess:
    """A build that prints a line, started by ``subprocess.Popen``."""

    started: list[str] = []
    root_code = 0

    def __init__(self, command, cwd, stdout=None, stderr=None, **options):
        if stdout is None:  # the root language's build: its log shows as it comes
            assert FakeProcess.started == ["build"], "translations not started first"
            print("the English site")
            self.code = FakeProcess.root_code
            return
        FakeProcess.started.append(command[-1])
        stdout.write("le site en français\n")
        self.code = 0 if "ok" in str(cwd) else 1

    def wait(self):
        return self.code

    def poll(self):
        return self.code


@pytest.mark.parametrize(
    ("folder", "root_code", "expected", "failed"),
    [
        ("ok", 0, 0, None),
        ("ok", 2, 2, "the root language"),
        ("bad", 0, 1, "the translations"),
    ],
)
def test_site_builds_both_languages_side_by_side(
    tmp_path, monkeypatch, capsys, folder, root_code, expected, failed
):
    """The translations start before the root language's build, their log is
    printed after it, and the site fails when either build fails."""
    FakeProcess.started = []
    FakeProcess.root_code = root_code
    monkeypatch.setattr(book_build.subprocess, "Popen", FakeProcess)
    assert book_build.site(tmp_path / folder) == expected
    out = capsys.readouterr().out
    english, _, french = out.partition(book_build.TRANSLATIONS_LOG)
    assert "the English site" in english and "le site en français" in french
    if failed:
        assert f"site: the build of {failed} failed" in out
    else:
        assert "failed" not in out


LOG = """\
Running Sphinx v7.4.7
reading sources... [100%] book/masking
writing output... [ 50%] book/intro
writing output... [100%] book/masking
/book/masking.md:552: WARNING: undefined label: 'no-such-label'
copying images... [100%] _build/jupyter_execute/a.svg
build finished with problems, 1 warning.
"""


def test_the_build_summary_is_short_and_a_failure_shows_what_failed(tmp_path):
    """`make book` prints one line per language; for a failed build, its
    warnings, the end of its log without Sphinx's progress lines, the log's path."""
    log = tmp_path / "build-en.log"
    log.write_text(LOG, encoding="utf-8")
    (line,) = book_build.summary("English", log, 0, 61.6)
    assert line.startswith("site: English built in 62 s: 2 page(s) written")
    assert "1 warning(s)" in line and str(log) in line
    failed = "\n".join(book_build.summary("English", log, 1, 61.6))
    assert "site: English FAILED (exit code 1)" in failed
    assert "    /book/masking.md:552: WARNING: undefined label" in failed
    assert "build finished with problems" in failed
    assert "copying images" not in failed and "writing output" not in failed
    assert failed.count(str(log)) >= 2


def test_a_page_that_left_the_book_is_not_checked(tmp_path):
    """Its .pot, left in _build/gettext by an earlier extraction, is no page."""
    _book(tmp_path, "all")
    (tmp_path / "_build" / "gettext" / "a.pot").rename(
        tmp_path / "_build" / "gettext" / "gone.pot"
    )
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: b\n")
    assert set(catalogues.message_files(tmp_path, "fr")) == {"b"}


def test_words_in_math_are_translated_the_rest_of_the_math_kept():
    from bookbuild.i18n.checks import markup_problems

    english = r"the key $\mathbf{k}_{\text{nose}} = [0.1, 0.3]$"
    french = r"la clé $\mathbf{k}_{\text{nez}} = [0.1, 0.3]$"
    assert markup_problems(english, french) == []
    assert markup_problems(english, r"la clé $\mathbf{k}_{\text{nez}} = [0.2, 0.3]$")
    assert markup_problems(english, r"la clé $\mathbf{q}_{\text{nez}} = [0.1, 0.3]$")
