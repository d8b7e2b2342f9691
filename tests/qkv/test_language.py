"""qkv speaks the page's language: what it draws, prints and says in French.

Every test here leaves the language English (the autouse fixture), so that no
other test sees French.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import sys
import types
from pathlib import Path

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

import qkv  # noqa: E402
from bookbuild.i18n.domains import messages_of  # noqa: E402
from qkv import language  # noqa: E402
from qkv.language import NNBSP, format_number, gettext, pgettext  # noqa: E402
from qkv.page import diagrams, glue, plot  # noqa: E402
from qkv.page.numbers import num  # noqa: E402


@pytest.fixture(autouse=True)
def english_afterwards():
    qkv.set_language("en")
    yield
    qkv.set_language("en")


def svg(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata=plot.SVG_METADATA)
    plt.close(fig)
    return buffer.getvalue()


def texts(fig) -> list[str]:
    """The texts of a figure, from the comment matplotlib writes before each
    text's glyphs in an SVG with ``svg.fonttype: path``."""
    with plt.rc_context({"svg.fonttype": "path"}):
        data = svg(fig).decode()
    return [t.replace("&amp;", "&") for t in re.findall(r"<!-- (.*?) -->", data, re.S)]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the language itself ------------------------------------------------------


def test_set_and_get_the_language():
    assert qkv.get_language() == "en"
    qkv.set_language("fr")
    assert qkv.get_language() == "fr"
    assert {"set_language", "get_language"} <= set(qkv.__all__)
    assert language.LANGUAGES == ("en", "fr")


@pytest.mark.parametrize("code", ["de", "FR", "", None, 1])
def test_an_unknown_language_is_refused_naming_the_argument(code):
    with pytest.raises(ValueError, match=r"code must be one of .*got") as error:
        qkv.set_language(code)
    assert repr(code) in str(error.value)
    assert qkv.get_language() == "en"


def test_the_first_language_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("QKV_LANGUAGE", raising=False)
    assert language.language_from_environment() == "en"
    monkeypatch.setenv("QKV_LANGUAGE", "fr")
    assert language.language_from_environment() == "fr"
    monkeypatch.setenv("QKV_LANGUAGE", "klingon")
    with pytest.raises(ValueError, match="QKV_LANGUAGE must be one of .*'klingon'"):
        language.language_from_environment()


def test_a_fresh_process_starts_in_the_language_of_the_environment():
    code = "import qkv; print(qkv.get_language())"
    env = {"QKV_LANGUAGE": "fr", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "fr", out.stderr


def test_a_missing_french_message_raises_never_falls_back_to_english():
    assert gettext("no such message") == "no such message"  # English: itself
    qkv.set_language("fr")
    assert gettext("query") == "requête"
    assert pgettext("decode scheme", "recompute") == "recalculer"
    with pytest.raises(LookupError, match=r"'fr'.*'no such message'.*qkv\.po"):
        gettext("no such message")
    with pytest.raises(LookupError, match=r"'fr'.*'none'.*'no such context'"):
        pgettext("no such context", "none")
    assert gettext("key", language="en") == "key"  # another language, asked


def test_qkv_and_bookbuild_load_their_catalogues_the_same_way(tmp_path):
    """One loader for every gettext domain (qkv's, bookbuild's, any other):
    a message the catalogue lacks, with or without a context, in the singular
    or the plural, raises ``LookupError`` naming the ``.po`` to complete."""
    from babel.messages.catalog import Catalog
    from babel.messages.mofile import write_mo

    from bookbuild.i18n import messages

    folder = tmp_path / "fr" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    catalog = Catalog(locale="fr")
    catalog.add("key", "clé")
    with open(folder / "demo.mo", "wb") as compiled:
        write_mo(compiled, catalog)
    demo = language.load_catalogue("demo", tmp_path, "fr")
    assert demo.gettext("key") == "clé"
    po = re.escape(str(folder / "demo.po"))
    with pytest.raises(LookupError, match=rf"'fr'.*'value'.*{po}"):
        demo.gettext("value")
    with pytest.raises(LookupError, match=r"'value' \(context 'tensor'\)"):
        demo.pgettext("tensor", "value")
    with pytest.raises(LookupError, match=r"'one value'"):
        demo.ngettext("one value", "{n} values", 2)
    with pytest.raises(FileNotFoundError):
        language.load_catalogue("none", tmp_path, "fr")
    # bookbuild's French catalogue: the same loader, naming bookbuild.po
    with pytest.raises(LookupError, match=r"'fr'.*'no such message'.*bookbuild\.po"):
        messages.gettext("fr")("no such message")
    assert messages.gettext("en")("no such message") == "no such message"


def test_qkv_speaks_french_with_nothing_but_its_package_files():
    """The compiled catalogue ships in the package (package data), read
    through the package's own folder: a fresh process, French, no book."""
    code = (
        "import qkv; from qkv.cost import scheme_label; "
        "print(scheme_label('recompute'))"
    )
    env = {"QKV_LANGUAGE": "fr", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "recalculer", out.stderr


def test_numbers_the_language_s_way():
    cases = [
        (0.25, ".2f", "0.25", "0,25"),
        (4096, ",", "4,096", f"4{NNBSP}096"),
        (1234567.5, ",.1f", "1,234,567.5", f"1{NNBSP}234{NNBSP}567,5"),
        (-0.5, ".1f", "-0.5", "-0,5"),
        (1.5e-6, ".1e", f"1.5{NNBSP}×{NNBSP}10⁻⁶", f"1,5{NNBSP}×{NNBSP}10⁻⁶"),
        (0.125, ".1%", "12.5%", f"12,5{NNBSP}%"),
        (7, "d", "7", "7"),
    ]
    for value, spec, english, french in cases:
        assert format_number(value, spec) == english
        qkv.set_language("fr")
        number = format_number(value, spec)
        assert number == french
        assert number.english == english  # what glue pastes
        qkv.set_language("en")
    with pytest.raises(ValueError, match=r"spec must be a format spec .*'x\.y'"):
        format_number(0.5, "x.y")


# --- tables and sizes -----------------------------------------------------------


def test_tables_and_sizes_in_french_and_english_unchanged():
    rows = [("4096", "0.25", 3, 0.5, "`(2, 6)`", "1.2e+05", "12.5%", "cat")]
    header = list("abcdefgh")
    # English keeps its conventions, but the one rule groups thousands and
    # writes powers of ten in both languages (issue 37)
    english = (
        "| a | b | c | d | e | f | g | h |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
        f"| 4,096 | 0.25 | 3 | 0.5 | `(2, 6)` | 1.2{NNBSP}×{NNBSP}10⁵ | 12.5% | cat |"
    )
    assert glue.markdown_table(rows, header).data == english
    sizes = [512, 1536, 1.25 * 2**30, 64 * 2**30]
    assert [glue.human_bytes(n) for n in sizes] == [
        "512 B",
        "1.5 KiB",
        "1.3 GiB",
        "64.0 GiB",
    ]
    shapes = glue.shape_table({"q": torch.zeros(2, 3)}, {"q": "(L, E)"}).data
    assert shapes.startswith("| tensor | shape | meaning |")

    qkv.set_language("fr")
    # in French a number with a comma is French already (qkv.page.numbers.num
    # wrote it): "0,976" is a decimal; an English grouping comes through num
    rows = [(f"{num(4096):,}", "0.25", 3, 0.5, "`(2, 6)`", "1.2e+05", "12.5%", "cat")]
    french = glue.markdown_table(rows, header).data.splitlines()[-1]
    assert french == (
        f"| 4{NNBSP}096 | 0,25 | 3 | 0,5 | `(2, 6)` | 1,2{NNBSP}×{NNBSP}10⁵ "
        f"| 12,5{NNBSP}% | cat |"
    )
    # a number already written in French is not converted a second time
    cell = glue.markdown_table([(format_number(0.125, ".3f"),)], ["x"]).data
    assert cell.endswith("| 0,125 |")
    assert glue.markdown_table([(f"{num(0.976):.3f}",)], ["x"]).data.endswith(
        "| 0,976 |"
    )
    cells = [(f"**{num(3152384):,}**", "0.330 s", "2.13.0", "$0.5$")]
    assert glue.markdown_table(cells, list("abcd")).data.endswith(
        f"| **3{NNBSP}152{NNBSP}384** | 0,330 s | 2.13.0 | $0.5$ |"
    )
    assert [glue.human_bytes(n) for n in sizes] == [
        "512 o",
        "1,5 Kio",
        "1,3 Gio",
        "64,0 Gio",
    ]
    shapes = glue.shape_table({"q": torch.zeros(2, 3)}, {"q": "(L, E)"}).data
    assert shapes.startswith("| tenseur | forme | sens |")
    assert "| `(2, 3)` |" in shapes


def test_glue_pastes_a_french_number_as_python_writes_it(monkeypatch):
    """The French build localises glued numbers itself: "0,125" glued would
    come out as "0 125" (thousands). glue pastes "0.125", localised once."""
    pasted = {}
    fake = types.ModuleType("myst_nb")
    fake.glue = lambda name, value, display: pasted.update({name: value})
    monkeypatch.setitem(sys.modules, "myst_nb", fake)
    qkv.set_language("fr")
    glue.glue("x", format_number(0.125, ".3f"))
    glue.glue("n", 0.5)
    assert pasted["x"].data == "0.125"
    assert pasted["n"] == 0.5


# --- figures --------------------------------------------------------------------

#: SVG of the figures below in English, drawn before qkv knew languages.
ENGLISH_SVG = {
    "heatmap": "1a049a4eaf12f2ff366fd05eb12bab24fa5f61f51bb6b365fe9a75556a0c0156",
    "qkv_projections": (
        "09cd54d095a92344b15374074a9e364308458e8259aa6b8b76e4e388ccdd0f47"
    ),
    "multi_head": "b92c3752945d10baaa8e1a7268e67fdd1428d899df507382f48c9067136bfa14",
    "transformer_block": (
        "3ca730890e6ed04ab500ad2bc38751732d438aa51249adcf4b4002f7b2e42fd6"
    ),
    "pipeline": "85cb0cdb2c1b9235297ef8750b10a101209b5f8b5a57563beafc24bce3475679",
    "encoder_decoder": (
        "09d1511b2cf94b528541bf5185351c586e6ef15f83d88d51cb395a27a994732d"
    ),
    "axes": "70eb874862302e1986eeea7e741ff34af11b5f045a7b80bf4f94955cd05c48ae",
}
#: The messages the diagrams write (read from their source, as the catalogue's
#: extraction does).
DIAGRAM_MESSAGES = sorted(
    {m for _, _, m in messages_of(Path(diagrams.__file__), frozenset({"_", "_t"}))}
)
DIAGRAMS = [
    "qkv_projections",
    "multi_head",
    "transformer_block",
    "pipeline",
    "encoder_decoder",
]


def small_heatmap():
    generator = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(3, 4, generator=generator), -1)
    return plot.heatmap(weights, ["a", "b", "c"], ["w", "x", "y", "z"], title="t")


def three_axes():
    """A linear axis, a log axis and a colour bar."""
    fig, axes = plt.subplots(1, 2)
    axes[0].plot([0, 0.5, 1.5], [1000, 2500, 4000])
    axes[1].semilogy([1, 2, 3], [0.01, 0.5, 20])
    image = axes[0].imshow([[0.1, 0.2], [0.3, 0.45]])
    fig.colorbar(image, ax=axes[0])
    return fig


@pytest.fixture
def book_style():
    with plt.rc_context():
        plot.use_book_style()
        yield


@pytest.mark.parametrize("name", DIAGRAMS)
def test_each_diagram_in_french_and_in_english_unchanged(name, book_style):
    draw = getattr(diagrams, name)
    assert sha(svg(draw())) == ENGLISH_SVG[name]
    qkv.set_language("fr")
    drawn = "\n".join(texts(draw()))
    pairs = [
        (en, gettext(en, language="fr"))
        for en in DIAGRAM_MESSAGES
        if gettext(en, language="fr") != en
    ]
    used = [(en, fr) for en, fr in pairs if fr.split("\n")[0] in drawn]
    assert used, f"no French label in {name}: {drawn!r}"
    for en, _ in pairs:
        assert en.format(h=0) not in drawn, en
    qkv.set_language("en")
    assert sha(svg(draw())) == ENGLISH_SVG[name]  # French left nothing behind


def test_heatmap_labels_and_cells_in_french(book_style):
    assert sha(svg(small_heatmap())) == ENGLISH_SVG["heatmap"]
    qkv.set_language("fr")
    weights = torch.tensor([[0.25, 0.75], [0.5, 0.5]])
    drawn = texts(plot.heatmap(weights, ["a", "b"]))
    assert "clé (regardée)" in drawn and "requête (qui regarde)" in drawn
    assert {"0,25", "0,75", "0,50"} <= set(drawn)
    assert not [t for t in drawn if re.search(r"\d\.\d|key|query", t)]
    grid = texts(plot.head_grid(torch.full((2, 2, 2), 0.5)))
    assert {"tête 0", "tête 1", "clé", "requête"} <= set(grid)


def test_tick_labels_with_decimal_commas_on_linear_log_and_colour_bar_axes(
    book_style,
):
    qkv.set_language("fr")
    fig = three_axes()
    fig.axes[1].yaxis.set_major_formatter(ticker.ScalarFormatter())  # 0.01, 0.1
    drawn = texts(fig)
    assert {"0,5", "1,5"} <= set(drawn)  # linear x axis
    assert {"0,01", "0,10", "10,00"} <= set(drawn)  # log axis
    assert {"0,10", "0,45"} <= set(drawn)  # colour bar
    assert not [t for t in drawn if re.search(r"\d\.\d", t)]
    # mathtext (a log axis's labels) and an offset of a scalar axis
    assert plot.french_label(r"$\mathdefault{0.5}$") == r"$\mathdefault{0{,}5}$"
    assert plot.french_label("4,096") == f"4{NNBSP}096"
    fig, ax = plt.subplots()
    ax.loglog([0.5, 2], [0.5, 2])  # the default log labels: mathtext, no decimals
    assert not [t for t in texts(fig) if re.search(r"\d\.\d", t)]
    qkv.set_language("en")
    assert ticker.Formatter.format_ticks.__name__ == "format_ticks"
    assert sha(svg(three_axes())) == ENGLISH_SVG["axes"]


def test_static_figures_of_the_widgets_follow_the_language(monkeypatch):
    from qkv.page.explorables import _base, attention_by_hand

    drawn = []
    monkeypatch.setattr(_base, "figure_png", lambda fig: drawn.append(texts(fig)))
    x = torch.randn(3, 2, generator=torch.Generator().manual_seed(0))
    widget = attention_by_hand(x, ["le", "chat", "dort"])
    widget.static_png()
    qkv.set_language("fr")
    widget.static_png()
    english, french = drawn
    assert english != french
    assert "poids" in french and "weight" in english
    assert not [t for t in french if re.search(r"\d\.\d", t)]


# --- messages -------------------------------------------------------------------


def no_scaling(query, key, value, attn_mask=None):
    weights = torch.softmax(query @ key.transpose(-2, -1), -1)
    return weights @ value, weights


def test_a_checker_fails_in_french_with_a_french_hint():
    from qkv.check import check_scaled_dot_product_attention

    with pytest.raises(AssertionError) as english:
        check_scaled_dot_product_attention(no_scaling, masks=False)
    qkv.set_language("fr")
    with pytest.raises(AssertionError) as french:
        check_scaled_dot_product_attention(no_scaling, masks=False)
    english, french = (re.sub(r"\n +", " ", str(e.value)) for e in (english, french))
    assert "case 1 of 6 failed" in english and "Hint: Your result" in english
    assert "le cas 1 sur 6 a échoué" in french
    assert "Indice\u202f: Votre résultat correspond à l'attention SANS" in french
    assert "sqrt(d_k)" in french  # code stays code
    for word in ("failed", "Hint", "Called", "Your result", "largest difference"):
        assert word not in french
    assert re.search(r"\d,\d{4}", french) and not re.search(r"\d\.\d{4}", french)


def test_every_checker_text_has_its_french():
    from qkv import check

    said = [v for v in vars(check).values() if isinstance(v, check._Say)]
    said += list(check._BATCH_DIMS.values())
    assert len(said) > 30
    for text_ in said:
        assert gettext(text_.english, language="fr") != text_.english, text_.english


def test_argument_errors_in_french():
    qkv.set_language("fr")
    with pytest.raises(ValueError, match="`num_heads` doit être un `int` >= 1, reçu 0"):
        qkv.split_heads(torch.zeros(2, 4), 0)
    with pytest.raises(ValueError, match=r"`query` doit avoir au moins 2 dimensions"):
        qkv.scaled_dot_product_attention(torch.zeros(3), torch.zeros(3), 1)
    with pytest.raises(ValueError, match=r"`embed_dim=6` doit être divisible par"):
        qkv.MultiHeadAttention(6, 4)
    with pytest.raises(ValueError, match=r"`attn_mask` doit être un tenseur booléen"):
        x = torch.zeros(2, 4)
        qkv.scaled_dot_product_attention(x, x, x, attn_mask=torch.ones(2, 2))
    qkv.set_language("en")
    with pytest.raises(ValueError, match="num_heads must be an int >= 1, got 0"):
        qkv.split_heads(torch.zeros(2, 4), 0)


@pytest.mark.slow
def test_the_wheel_of_qkv_holds_its_compiled_catalogue(tmp_path):
    """``pip install qkv`` gets the .mo it reads in French (package data), from
    a copy of the sources (the build leaves nothing in the repository)."""
    from bookbuild.tools.testing import wheel_files

    root = Path(__file__).resolve().parents[2]
    files = ["pyproject.toml", "README.md", "LICENSE"]
    names = wheel_files(root, files, "qkv", tmp_path)
    assert "qkv/locale/fr/LC_MESSAGES/qkv.mo" in names, names
