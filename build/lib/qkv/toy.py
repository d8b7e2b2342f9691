"""A synthetic agreement task and a tiny attention model trained on it.

Explained in the chapter *how-attention-learns*.

The task imitates French past-participle agreement: in

    hier souris qui dormait sur canapé devant jardin a été [?]

the word at ``[?]`` is "ramassée" if the subject ("souris") is feminine and
"ramassé" if it is masculine. The subject, an animal, stands at a varying distance
from ``[?]``, after 0 to 3 filler words, and 0 to 4 distractor nouns (places,
usually of the other gender) stand between them: the nearest noun is the wrong
one to agree with. Nothing but attention can bring the subject's gender to the
``[?]`` position: the model is embeddings, positions, one multi-head attention layer
from :mod:`qkv.attention` and a linear classifier.

Everything is deterministic for a given seed: the data come from
``random.Random(seed)`` and the weights from ``torch.manual_seed(seed)``.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention

#: Subjects: animals, by gender.
SUBJECTS_F = ("souris", "chatte", "poule", "vache", "chèvre", "jument")
SUBJECTS_M = ("chat", "chien", "lapin", "cheval", "mouton", "canard")
#: Distractors: places, by gender.
PLACES_F = ("table", "chaise", "maison", "fenêtre", "cour", "route")
PLACES_M = ("canapé", "lit", "jardin", "toit", "mur", "pont")
FILLERS = ("hier", "soudain", "enfin", "alors", "ensuite", "puis")
VERBS = ("dormait", "était", "restait", "attendait")
PREPOSITIONS = ("sur", "sous", "dans", "derrière", "devant", "près")
ENDING = ("a", "été")
SLOT = "[?]"
PAD = "[pad]"
#: What the model predicts at the slot, by class index.
LABELS = ("ramassé", "ramassée")

VOCAB: tuple[str, ...] = (
    PAD,
    SLOT,
    *SUBJECTS_F,
    *SUBJECTS_M,
    *PLACES_F,
    *PLACES_M,
    *FILLERS,
    "qui",
    *VERBS,
    *PREPOSITIONS,
    *ENDING,
)
TOKEN_ID = {word: i for i, word in enumerate(VOCAB)}
MAX_FILLERS = 3
MAX_DISTRACTORS = 4
#: Probability that a distractor has the gender opposite to the subject's.
DISTRACTOR_OTHER_GENDER = 0.8
#: The longest sentence: fillers, subject, "qui", verb, distractor phrases, ending.
MAX_LEN = MAX_FILLERS + 3 + 2 * MAX_DISTRACTORS + len(ENDING) + 1


@dataclass
class Example:
    """One sentence of the task.

    Attributes:
        words: the sentence, ending with the slot ``[?]``.
        label: 1 if the subject is feminine ("ramassée"), else 0.
        antecedent: index in ``words`` of the subject noun.
    """

    words: list[str]
    label: int
    antecedent: int

    @property
    def distance(self) -> int:
        """How many words separate the slot from the subject."""
        return len(self.words) - 1 - self.antecedent


def make_example(rng: random.Random) -> Example:
    """Draw one sentence: fillers, subject, relative clause, distractors, ending."""
    words = rng.sample(FILLERS, rng.randint(0, MAX_FILLERS))
    label = rng.randint(0, 1)
    antecedent = len(words)
    words.append(rng.choice(SUBJECTS_F if label else SUBJECTS_M))
    words += ["qui", rng.choice(VERBS)]
    for _ in range(rng.randint(0, MAX_DISTRACTORS)):
        # A distractor usually has the other gender: a model that looks at the
        # nearest noun, or at all nouns alike, gets the agreement wrong.
        other = rng.random() < DISTRACTOR_OTHER_GENDER
        nouns = PLACES_F if label != other else PLACES_M
        words += [rng.choice(PREPOSITIONS), rng.choice(nouns)]
    words += [*ENDING, SLOT]
    return Example(words, label, antecedent)


def make_examples(n: int, seed: int) -> list[Example]:
    """``n`` sentences drawn with ``random.Random(seed)``."""
    rng = random.Random(seed)
    return [make_example(rng) for _ in range(n)]


def heldout_examples(seed: int = 0, n: int = 1000) -> list[Example]:
    """The held-out sentences that ``train(seed)`` measures its model on.

    They are drawn from their own random stream, never used for training.
    """
    return make_examples(n, seed=seed + 10_000)


@dataclass
class Batch:
    """Sentences encoded for the model, left-padded so that the slot is last.

    Attributes:
        token_ids: (B, S) token ids, ``[pad]`` first.
        positions: (B, S) position of each word in its own sentence (pads: 0).
        keep: (B, S) True for real words.
        labels: (B,) class of each sentence.
        antecedent: (B,) column of the subject in ``token_ids``.
    """

    token_ids: Tensor
    positions: Tensor
    keep: Tensor
    labels: Tensor
    antecedent: Tensor


def encode(examples: list[Example]) -> Batch:
    """Encode sentences into a left-padded :class:`Batch`."""
    width = max(len(e.words) for e in examples)
    pad, id_rows, position_rows = TOKEN_ID[PAD], [], []
    for example in examples:
        n_pads = width - len(example.words)
        id_rows.append([pad] * n_pads + [TOKEN_ID[w] for w in example.words])
        position_rows.append([0] * n_pads + list(range(len(example.words))))
    ids = torch.tensor(id_rows, dtype=torch.long)  # (B, S)
    positions = torch.tensor(position_rows, dtype=torch.long)  # (B, S)
    keep = ids != pad
    labels = torch.tensor([e.label for e in examples])
    antecedent = torch.tensor([width - len(e.words) + e.antecedent for e in examples])
    return Batch(ids, positions, keep, labels, antecedent)


class AgreementModel(nn.Module):
    """Token and position embeddings, one attention layer, a classifier.

    The prediction is read at the last position (the slot): its own vector plus
    what attention brought to it, mapped to two classes by a linear layer.

    Args:
        embed_dim: D, the width of every vector.
        num_heads: H, the number of attention heads.
    """

    def __init__(self, embed_dim: int = 64, num_heads: int = 2) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(len(VOCAB), embed_dim)
        self.position_embedding = nn.Embedding(MAX_LEN, embed_dim)
        self.attention = MultiHeadAttention(embed_dim, num_heads)
        self.classifier = nn.Linear(embed_dim, len(LABELS))

    def forward(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """Return ``(logits, weights)``: logits (B, 2), weights (B, H, S, S)."""
        x = self.token_embedding(batch.token_ids)  # (B, S, D)
        x = x + self.position_embedding(batch.positions)
        key_mask = batch.keep[:, None, None, :]  # (B, 1, 1, S): pads hidden
        context, weights = self.attention(x, attn_mask=key_mask)  # (B, S, D)
        slot = x[:, -1] + context[:, -1]  # (B, D): the slot + what it gathered
        return self.classifier(slot), weights


def antecedent_attention(model: AgreementModel, batch: Batch) -> Tensor:
    """Mean weight, per head, from the slot to the subject: shape (H,)."""
    with torch.no_grad():
        _, weights = model(batch)  # (B, H, S, S)
    rows = torch.arange(len(batch.labels))
    from_slot = weights[:, :, -1, :]  # (B, H, S)
    return from_slot[rows, :, batch.antecedent].mean(dim=0)  # (H,)


def accuracy(model: AgreementModel, batch: Batch) -> float:
    """Share of sentences whose class the model predicts correctly."""
    with torch.no_grad():
        logits, _ = model(batch)
    return float((logits.argmax(dim=-1) == batch.labels).float().mean())


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        model: the trained model.
        initial_model: a copy of the model before training (same seed).
        history: training loss at each step.
        grad_norms: gradient norm of W_q, W_k, W_v (and W_o) at each step.
        accuracy: accuracy on held-out sentences.
        head: the designated head: the one that attends most to the subject
            after training.
        attention_before: held-out mean weight from the slot to the subject, for
            ``head``, before training.
        attention_after: the same after training.
        uniform: the mean weight a uniform head would give the subject.
        heldout: the held-out sentences.
        seconds: training time.
    """

    model: AgreementModel
    initial_model: AgreementModel
    history: list[float]
    grad_norms: dict[str, list[float]]
    accuracy: float
    head: int
    attention_before: float
    attention_after: float
    uniform: float
    heldout: list[Example] = field(repr=False)
    seconds: float = 0.0


def train(
    seed: int = 0,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 3e-3,
    embed_dim: int = 64,
    num_heads: int = 2,
    n_heldout: int = 1000,
) -> TrainResult:
    """Train an :class:`AgreementModel` on fresh sentences, deterministically.

    Explained in the chapter *how-attention-learns*.

    Args:
        seed: seeds both the data and the weights.
        steps: optimisation steps, each on a new batch of sentences.
        batch_size: sentences per step.
        lr: learning rate of Adam.
        embed_dim, num_heads: the model's size.
        n_heldout: held-out sentences for accuracy and attention.

    Returns:
        A :class:`TrainResult`.
    """
    if steps < 1 or batch_size < 1 or n_heldout < 1:
        raise ValueError(
            f"steps, batch_size and n_heldout must be >= 1, got {steps}, "
            f"{batch_size} and {n_heldout}"
        )
    torch.manual_seed(seed)
    model = AgreementModel(embed_dim, num_heads)
    initial_model = copy.deepcopy(model)
    rng = random.Random(seed)
    heldout = heldout_examples(seed, n_heldout)
    heldout_batch = encode(heldout)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    history: list[float] = []
    grad_norms: dict[str, list[float]] = {"W_q": [], "W_k": [], "W_v": [], "W_o": []}
    start = time.perf_counter()
    with torch.enable_grad():  # even if the caller switched gradients off
        for _ in range(steps):
            batch = encode([make_example(rng) for _ in range(batch_size)])
            logits, _ = model(batch)
            loss = loss_fn(logits, batch.labels)
            optimizer.zero_grad()
            loss.backward()
            for name in grad_norms:
                weight = getattr(model.attention, name).weight
                grad_norms[name].append(float(weight.grad.norm()))
            optimizer.step()
            history.append(float(loss.detach()))
    seconds = time.perf_counter() - start
    after = antecedent_attention(model, heldout_batch)  # (H,)
    before = antecedent_attention(initial_model, heldout_batch)  # (H,)
    head = int(after.argmax())
    uniform = float((1.0 / heldout_batch.keep.sum(dim=-1).float()).mean())
    return TrainResult(
        model=model,
        initial_model=initial_model,
        history=history,
        grad_norms=grad_norms,
        accuracy=accuracy(model, heldout_batch),
        head=head,
        attention_before=float(before[head]),
        attention_after=float(after[head]),
        uniform=uniform,
        heldout=heldout,
        seconds=seconds,
    )
