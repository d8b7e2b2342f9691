"""qkv: the attention code of the executable textbook *Attention, Computed*.

Each chapter of the book imports from this package instead of copying code, and
shows the source of what it uses. Start with :mod:`qkv.attention`;
:mod:`qkv.explorables` makes its numbers interactive in the page.
"""

from qkv import explorables
from qkv.attention import (
    MultiHeadAttention,
    SelfAttention,
    causal_mask,
    concat_heads,
    padding_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
    split_heads,
    tiled_attention,
)

__version__ = "0.1.0"

__all__ = [
    "MultiHeadAttention",
    "SelfAttention",
    "__version__",
    "causal_mask",
    "concat_heads",
    "explorables",
    "padding_mask",
    "scaled_dot_product_attention",
    "sliding_window_mask",
    "split_heads",
    "tiled_attention",
]
