"""The book's canonical inputs, defined once so that every chapter uses the same ones.

The six-word example is explained in the chapter *attention-by-hand*.
"""

from __future__ import annotations

import torch

#: The six tokens of the running example, in order.
SIX_WORDS: tuple[str, ...] = ("Your", "journey", "starts", "with", "one", "step")

#: Three made-up features per token (rows follow :data:`SIX_WORDS`). They are not
#: learned embeddings: they are small, readable numbers to compute with by hand.
_SIX_WORD_VECTORS = (
    (0.43, 0.15, 0.89),  # Your
    (0.55, 0.87, 0.66),  # journey
    (0.57, 0.85, 0.64),  # starts
    (0.22, 0.58, 0.33),  # with
    (0.77, 0.25, 0.10),  # one
    (0.05, 0.80, 0.55),  # step
)


def six_word_embeddings(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The embeddings of "Your journey starts with one step".

    Returns:
        A new tensor of shape (6, 3): one row per word of :data:`SIX_WORDS`.
    """
    return torch.tensor(_SIX_WORD_VECTORS, dtype=dtype)
