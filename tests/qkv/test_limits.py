"""No input takes the laptop down (issue 23): every figure, widget and
explorable is bounded in tokens, word length and pixels, with a ValueError that
says the limit and why; at their largest they render within a memory budget."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from qkv.page import headview, plot
from qkv.page.explorables import mask_editor
from qkv.page.explorables._base import MAX_WORD_CHARS
from qkv.pretrained import AttentionMaps

#: What one render at the largest size may add to the process (resident set).
MEMORY_BUDGET_MB = 300


def uniform_maps(tokens: int, layers: int = 12, heads: int = 12) -> AttentionMaps:
    """Maps of a model of BERT-base's shape (12 x 12) on ``tokens`` tokens."""
    weights = torch.full((layers, heads, tokens, tokens), 1.0 / tokens)
    return AttentionMaps([f"w{i}" for i in range(tokens)], weights)


def test_a_head_view_of_512_tokens_is_refused_and_says_why():
    with pytest.raises(ValueError, match=r"512 tokens; a head view shows at most 96"):
        headview.head_view(uniform_maps(512, layers=1, heads=1))


def test_a_head_view_of_too_many_heads_asks_for_one_layer():
    maps = uniform_maps(90, layers=24, heads=16)
    with pytest.raises(ValueError, match=r"choose one layer \(layer=\.\.\.\)"):
        headview.head_view(maps)
    assert "qkv-headview" in headview.head_view(maps, layer=3).to_html()


def test_a_heatmap_of_many_long_tokens_stays_a_figure_of_the_page():
    import matplotlib.pyplot as plt

    words = ["x" * 3000] + [f"token{i}" for i in range(499)]
    figure = plot.heatmap(torch.full((500, 500), 0.002), words, annotate=True)
    try:
        width, height = figure.get_size_inches()
        assert width <= plot.MAX_WIDTH_IN and height <= plot.MAX_WIDTH_IN
        labels = [tick.get_text() for tick in figure.axes[0].get_xticklabels()]
        assert len(labels) <= plot.LABELLED_MAX
        assert max(map(len, labels)) <= plot.LABEL_CHARS
        assert not figure.axes[0].texts  # no value written in 250,000 cells
    finally:
        plt.close(figure)


def test_an_explorable_refuses_a_word_longer_than_its_cell():
    with pytest.raises(ValueError, match=rf"at most {MAX_WORD_CHARS} characters"):
        mask_editor(torch.zeros(3, 4), ["a", "b" * 3000, "c"])


# The largest case of each, rendered one after the other in a fresh Python,
# which reports how much its resident set grew (the memory a lecturer's laptop
# must have spare): a peak, so it bounds each of them.
LARGEST = {
    "head view: 96 tokens, 12 layers of 12 heads": """
        from qkv.page.headview import head_view
        from qkv.pretrained import AttentionMaps
        T = 96
        maps = AttentionMaps([f"w{i}" for i in range(T)],
                             torch.full((12, 12, T, T), 1.0 / T))
        render(head_view(maps))
    """,
    "mask editor: 10 words of 24 characters, 64 dimensions": """
        from qkv.page.explorables import mask_editor
        x = torch.randn(10, 64, generator=torch.Generator().manual_seed(0))
        render(mask_editor(x, [chr(97 + i) * 24 for i in range(10)]))
    """,
    "attention by hand: 12 words, 6 dimensions": """
        from qkv.page.explorables import attention_by_hand
        x = torch.randn(12, 6, generator=torch.Generator().manual_seed(0))
        render(attention_by_hand(x, [chr(97 + i) * 24 for i in range(12)]))
    """,
    "RoPE offsets: 8 keys, 16 dimensions, 4,096 positions": """
        from qkv.page.explorables import rope_offsets
        g = torch.Generator().manual_seed(0)
        render(rope_offsets(torch.randn(1, 16, generator=g),
                            torch.randn(8, 16, generator=g),
                            [chr(97 + i) * 24 for i in range(8)],
                            max_position=4096))
    """,
    "scaled scores: 16 queries, 32 keys, d_k up to 4,096": """
        from qkv.page.explorables import scaled_scores
        render(scaled_scores(4096, n_queries=16, n_keys=32, max_d_k=4096))
    """,
}

RENDER = """
import json, resource
import matplotlib
matplotlib.use("Agg")
import torch

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def render(widget):
    html = widget.to_html()
    png = widget.static_png()
    print(json.dumps({"grown_mb": peak_mb() - before, "html": len(html),
                      "png": len(png)}))

import qkv.page.widgets, qkv.page.plot  # loaded before the baseline
before = peak_mb()
"""


@pytest.mark.slow  # about 20 s: a fresh Python draws every widget at its largest
@pytest.mark.skipif(sys.platform == "win32", reason="resource is POSIX")
def test_the_largest_of_each_widget_renders_within_the_memory_budget():
    program = RENDER + "".join(textwrap.dedent(case) for case in LARGEST.values())
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard, not a timing claim
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()[-len(LARGEST) :]
    for name, line in zip(LARGEST, lines, strict=True):
        measured = json.loads(line)
        assert measured["grown_mb"] < MEMORY_BUDGET_MB, (name, measured)
        assert measured["png"] < 2_000_000, (name, measured)
        assert measured["html"] < 12_000_000, (name, measured)


def test_the_limits_are_the_ones_the_messages_name():
    assert headview.MAX_TOKENS == 96
    # a model of BERT-base's shape (12 layers of 12 heads) fits at MAX_TOKENS
    assert 12 * 12 * headview.MAX_TOKENS**2 <= headview.MAX_WEIGHTS
