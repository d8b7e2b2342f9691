"""Tests of the figure and LaTeX helpers of the chapters (qkv.page.plot, .display)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # tests draw off screen

import io  # noqa: E402
import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from qkv.examples import SIX_WORDS, six_word_embeddings  # noqa: E402
from qkv.page.display import Latex, LatexMatrix  # noqa: E402
from qkv.page.plot import head_grid, heatmap  # noqa: E402


def test_heatmap_draws_every_value_with_labels():
    weights = torch.softmax(torch.randn(3, 4), dim=-1)
    fig = heatmap(weights, ["a", "b", "c"], ["w", "x", "y", "z"], decimals=3)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == 12
    assert f"{float(weights[2, 3]):.3f}" in texts
    assert [t.get_text() for t in ax.get_xticklabels()] == ["w", "x", "y", "z"]
    np.testing.assert_allclose(ax.images[0].get_array(), weights.numpy())
    plt.close(fig)


def test_heatmap_rejects_wrong_shapes_and_labels():
    with pytest.raises(ValueError, match=r"2-D .* \(2, 3, 4\)"):
        heatmap(torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="2 row labels"):
        heatmap(torch.zeros(3, 3), ["a", "b"])


def test_head_grid_one_panel_per_head_on_a_shared_scale():
    weights = torch.softmax(torch.randn(6, 5, 5), dim=-1)
    fig = head_grid(weights, ncols=4)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 6
    assert {ax.images[0].norm.vmax for ax in panels} == {float(weights.max())}
    plt.close(fig)
    with pytest.raises(ValueError, match=r"3-D .* \(5, 5\)"):
        head_grid(torch.zeros(5, 5))


def test_head_grid_of_a_given_width_labels_the_outer_panels_only():
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(3, 13, 13), dim=-1)
    tokens = [f"token{i}" for i in range(13)]
    fig = head_grid(weights, tokens, ncols=2, width=6.8)
    assert fig.get_size_inches()[0] == pytest.approx(6.8)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 3

    def labelled(ax, axis):
        ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
        return any(t.get_visible() and t.get_text() for t in ticks)

    fig.canvas.draw()
    # left column: query labels; right column: none
    assert [labelled(ax, "y") for ax in panels] == [True, False, True]
    # bottom of each column: key labels (panel 1 has no panel below it)
    assert [labelled(ax, "x") for ax in panels] == [False, True, True]
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    shown_in = float(re.search(r'width="([\d.]+)pt"', buffer.getvalue())[1]) / 72
    assert shown_in <= 7.0  # the page shows it at its natural size: 12 pt text
    plt.close(fig)
    with pytest.raises(ValueError, match="width"):
        head_grid(weights, width=0)


def test_latex_matrix_shows_every_entry():
    latex = LatexMatrix(
        torch.tensor([[1.0, 2.5], [3.25, -4.0]]), name="A", decimals=2
    ).latex()
    assert latex == (r"A = \begin{bmatrix} 1.00 & 2.50 \\ 3.25 & -4.00 \end{bmatrix}")
    row = LatexMatrix(torch.tensor([0.5, 0.25]), decimals=1)
    assert row._repr_latex_() == r"$$ \begin{bmatrix} 0.5 & 0.2 \end{bmatrix} $$"
    assert Latex("x^2")._repr_latex_() == "$$ x^2 $$"
    with pytest.raises(ValueError, match=r"\(2, 2, 2\)"):
        LatexMatrix(torch.zeros(2, 2, 2))


def test_six_word_example_is_fresh_and_labelled():
    x = six_word_embeddings()
    assert x.shape == (len(SIX_WORDS), 3)
    x[0, 0] = 99.0  # a chapter that edits its copy must not change the next one's
    assert six_word_embeddings()[0, 0] == pytest.approx(0.43)
    assert six_word_embeddings(torch.float64).dtype == torch.float64
