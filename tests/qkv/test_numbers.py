"""qkv.page.numbers: what chapters print, in the page's language (issue 37)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qkv
from qkv.language import format_number
from qkv.language import localise as language_localise
from qkv.page.glue import human_bytes
from qkv.page.numbers import byte_units, localise, num, number

S = "\u202f"  # narrow no-break space


@pytest.fixture
def french():
    before = qkv.get_language()
    qkv.set_language("fr")
    yield
    qkv.set_language(before)


@pytest.mark.parametrize(
    ("value", "spec", "en", "fr"),
    [
        (79972, "", "79,972", f"79{S}972"),
        (4096, "", "4,096", f"4{S}096"),  # four digits are grouped, as in the prose
        (999, "", "999", "999"),
        (0, "", "0", "0"),
        (0.0, ".3f", "0.000", "0,000"),
        (0.976, ".3f", "0.976", "0,976"),
        (-0.976, ".2f", "-0.98", "-0,98"),
        (-12345.5, ".1f", "-12,345.5", f"-12{S}345,5"),
        (1234567.891, ".2f", "1,234,567.89", f"1{S}234{S}567,89"),
        (1.0, ".1%", "100.0%", f"100,0{S}%"),
        (0.5, ".0%", "50%", f"50{S}%"),
        (3.4e-9, ".1e", f"3.4{S}×{S}10⁻⁹", f"3,4{S}×{S}10⁻⁹"),
        (-3.4e-9, ".1e", f"-3.4{S}×{S}10⁻⁹", f"-3,4{S}×{S}10⁻⁹"),
        (2.5e10, ".3g", f"2.5{S}×{S}10¹⁰", f"2,5{S}×{S}10¹⁰"),
        (1e-5, "", f"1{S}×{S}10⁻⁵", f"1{S}×{S}10⁻⁵"),
        (12.5, "+.1f", "+12.5", "+12,5"),
        (4096, ">8", "   4,096", f"   4{S}096"),
        (0.25, "<6.2f", "0.25  ", "0,25  "),
        (4096, "_", "4,096", f"4{S}096"),  # one grouping rule per language
    ],
)
def test_number_in_both_languages(value, spec, en, fr):
    assert number(value, spec, language="en") == en
    assert number(value, spec, language="fr") == fr
    assert format(num(value, "en"), spec) == en
    assert format(num(value, "fr"), spec) == fr


def test_localise_writes_what_python_wrote_by_the_same_rule():
    """The one implementation: a number Python (or a glue spec) already wrote
    is written as :func:`number` would have written it."""
    cases = [
        (79972, "", "79972"),
        (79972, ",", "79,972"),
        (0.976, ".3f", "0.976"),
        (1.0, ".1%", "100.0%"),
        (3.4e-9, ".1e", "3.4e-09"),
        (1.2e5, ".1e", "1.2e+05"),
        (2.5e10, ".3g", "2.5e+10"),
        (-12345.5, ".1f", "-12345.5"),
    ]
    for value, spec, python in cases:
        assert python == format(value, spec)
        for language in ("en", "fr"):
            written = number(value, spec, language=language)
            assert localise(python, language) == written, (python, language)
            # the rule's own English writing is read back too (what glue pastes)
            english = number(value, spec, language="en")
            assert localise(english, language) == written, (english, language)


@pytest.mark.parametrize("text", ["2.13.0", "(2, 6)", "5, 3, 2", "cat", "nan", "007"])
def test_localise_leaves_what_is_not_one_number(text):
    assert localise(text, "en") == localise(text, "fr") == text


def test_qkv_language_calls_the_one_rule(french):
    written = format_number(3.4e-9, ".1e")
    assert written == f"3,4{S}×{S}10⁻⁹" == number(3.4e-9, ".1e")
    assert written.english == f"3.4{S}×{S}10⁻⁹"  # what glue pastes
    assert language_localise("4096") == f"4{S}096" == localise("4096")
    qkv.set_language("en")
    assert format_number(4096) == "4,096" == language_localise("4096")
    with pytest.raises(ValueError, match="spec"):
        format_number(0.5, "x.y")


def test_rounding_happens_before_grouping_and_zero_loses_its_sign():
    assert number(9999.5, ".0f", language="en") == "10,000"
    assert number(0.9996, ".3f", language="fr") == "1,000"
    assert number(-0.0001, ".2f", language="en") == "0.00"
    assert number(-0.0, "", language="fr") == "0,0"
    assert number(2.675, ".2f", language="en") == "2.67"  # the binary value, as Python


def test_not_a_number_and_infinities():
    for language in ("en", "fr"):
        assert number(float("nan"), ".3f", language=language) == "NaN"
        assert number(float("inf"), language=language) == "∞"
        assert number(float("-inf"), ".1e", language=language) == "-∞"


def test_numpy_scalars_and_one_number_tensors():
    assert number(np.float32(2.5), ".1f", language="fr") == "2,5"
    assert number(np.int64(12000), language="fr") == f"12{S}000"
    assert number(torch.tensor(0.125), ".3f", language="en") == "0.125"


def test_the_current_language_is_the_default(french):
    assert f"{num(0.976):.3f}" == "0,976"
    assert str(num(79972)) == f"79{S}972"
    assert number(0.25, ".0%") == f"25{S}%"
    qkv.set_language("en")
    assert f"{num(0.976):.3f}" == "0.976"


@pytest.mark.parametrize(
    ("value", "spec", "named"),
    [
        ("0.5", "", "value"),
        (True, "", "value"),
        (torch.zeros(2, 3), "", r"\(2, 3\)"),
        (1.5, "d", "spec"),
        (12, "x", "spec"),
        (1.5, ".2q", "spec"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_argument(value, spec, named):
    with pytest.raises(ValueError, match=named):
        number(value, spec, language="en")


def test_an_unknown_language_is_a_value_error():
    with pytest.raises(ValueError, match="language"):
        number(1, language="de")


def test_byte_units_and_human_bytes(french):
    assert byte_units("en")[1:4] == ("KiB", "MiB", "GiB")
    assert byte_units()[1:4] == ("Kio", "Mio", "Gio")
    assert human_bytes(512) == f"512{S}o".replace(S, " ")
    assert human_bytes(1536) == "1,5 Kio"
    assert human_bytes(64 * 2**30) == "64,0 Gio"
    assert human_bytes(1023.6 * 2**20) == f"1{S}023,6 Mio"
    qkv.set_language("en")
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(512) == "512 B"
