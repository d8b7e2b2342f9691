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


#: French: "An apple that had been on the tree in the garden for weeks had finally
#: been picked up." The last word, "ramassée", is feminine because "pomme" is.
#: Split into words, with the elided article "l'" as a word of its own.
APPLE_SENTENCE_FR: tuple[str, ...] = (
    "Une", "pomme", "qui", "était", "sur", "l'", "arbre", "du", "jardin",
    "depuis", "des", "semaines", "avait", "finalement", "été", "ramassée",
)  # fmt: skip

#: French: "The cat that was sleeping on the sofa jumped." The verb "a sauté" has
#: "chat" as its subject, with "canapé" in between as a distractor.
CAT_SENTENCE_FR: tuple[str, ...] = (
    "Le", "chat", "qui", "dormait", "sur", "le", "canapé", "a", "sauté",
)  # fmt: skip

#: The pronoun example of the chapter on a pretrained model.
CAT_SENTENCE_EN = "The cat sleeps on the sofa because it is tired."
#: Its second English sentence, where "it" is the trophy (a Winograd schema).
TROPHY_SENTENCE_EN = "The trophy does not fit in the suitcase because it is too big."
