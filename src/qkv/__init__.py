"""qkv: the attention code of the executable textbook *Attention, Computed*.

Each chapter of the book imports from this package instead of copying code, and
shows the source of what it uses. Start with :mod:`qkv.attention`;
:mod:`qkv.page.explorables` makes its numbers interactive in the page.

The package has three floors. At the top, the code a reader studies beside the
chapters: :mod:`qkv.attention`, :mod:`qkv.transformer`, :mod:`qkv.positions`,
:mod:`qkv.cost`, :mod:`qkv.check`, :mod:`qkv.pretrained`, :mod:`qkv.examples`,
:mod:`qkv.validate`, the argument checks every module shares, and
:mod:`qkv.language`, the language of what it writes (``qkv.set_language``).
:mod:`qkv.experiments` holds the small models the chapters train;
:mod:`qkv.page` what puts numbers, figures and widgets on a page. ``import qkv``
loads the top floor only.
"""

from qkv.attention import (
    MultiHeadAttention,
    SelfAttention,
    attention_dropout,
    causal_mask,
    concat_heads,
    padding_mask,
    scaled_dot_product_attention,
    sliding_window_mask,
    split_heads,
    tiled_attention,
)
from qkv.language import get_language, set_language

__version__ = "0.1.0"

__all__ = [
    "MultiHeadAttention",
    "SelfAttention",
    "__version__",
    "attention_dropout",
    "causal_mask",
    "concat_heads",
    "get_language",
    "padding_mask",
    "scaled_dot_product_attention",
    "set_language",
    "sliding_window_mask",
    "split_heads",
    "tiled_attention",
]
