"""Tests of the helpers of qkv.page.glue that a reader sees (tables, sizes)."""

from __future__ import annotations

import numpy as np
import pytest

from qkv.page.glue import human_bytes, round_down, round_up


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1,023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (1024**2 - 1, "1.0 MiB"),  # never "1,024.0 KiB"
        (64 * 2**20, "64.0 MiB"),
        (64 * 2**30, "64.0 GiB"),
        (64 * 2**40, "64.0 TiB"),
        (3 * 2**60, "3,072.0 PiB"),
        (np.int64(2**20), "1.0 MiB"),
        (2.5 * 2**10, "2.5 KiB"),
        # halves round up, not to even: Llama 2 70B's cache of 4,096 tokens
        (1.25 * 2**30, "1.3 GiB"),
        (1.75 * 2**30, "1.8 GiB"),
        (0.05 * 2**30 + 2**30, "1.1 GiB"),
        (2.5, "3 B"),
        (1023.5, "1.0 KiB"),
    ],
)
def test_human_bytes(n_bytes, text):
    assert human_bytes(n_bytes) == text


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "12", True, None])
def test_human_bytes_rejects_what_is_not_a_size(bad):
    with pytest.raises(ValueError, match="n_bytes"):
        human_bytes(bad)


@pytest.mark.parametrize(
    ("value", "digits", "down", "up"),
    [
        (3.04, 1, 3.0, 3.1),
        (0.3, 1, 0.3, 0.3),  # the decimal text of the float: no 0.2999...
        (2.999, 2, 2.99, 3.0),
        (0.121, 2, 0.12, 0.13),
        (-1.05, 1, -1.1, -1.0),
        (7, 0, 7.0, 7.0),
    ],
)
def test_bounds_round_the_safe_way(value, digits, down, up):
    """A lower bound in prose rounds down, an upper bound up (CONTRIBUTING)."""
    assert round_down(value, digits) == pytest.approx(down)
    assert round_up(value, digits) == pytest.approx(up)
    assert round_down(value, digits) <= value <= round_up(value, digits)


@pytest.mark.parametrize(
    ("value", "figures", "down", "up"),
    [
        (2.05e-07, 1, 2e-07, 3e-07),
        (1.19e-07, 1, 1e-07, 2e-07),
        (9.6e-07, 1, 9e-07, 1e-06),
        (3.41e-09, 2, 3.4e-09, 3.5e-09),
        (1e-05, 1, 1e-05, 1e-05),
        (0.0, 1, 0.0, 0.0),
    ],
)
def test_bounds_round_the_safe_way_in_significant_figures(value, figures, down, up):
    """Bounds printed as 2e-07 (``:.0e``) round on their significant figures."""
    assert round_down(value, figures, significant=True) == pytest.approx(down)
    assert round_up(value, figures, significant=True) == pytest.approx(up)
    assert (
        round_down(value, figures, significant=True)
        <= value
        <= round_up(value, figures, significant=True)
    )


def test_human_bytes_writes_any_finite_size():
    """Past 1e28 bytes Decimal's default 28 digits are not enough (issue 39)."""
    assert human_bytes(10**29).endswith(" PiB")
    assert human_bytes(1.7e308).endswith(" PiB")
