"""A synthetic agreement task and a tiny attention model trained on it.

Explained in the chapter *how-attention-learns*; the heads of the trained model are
compared in the chapter *multi-head*.

The task imitates French past-participle agreement: in

    hier souris qui dormait sur chat devant canapé sous chien a été [?]

the word at ``[?]`` is "ramassée" because the subject, "souris", is feminine; with
"chat" as the subject it would be "ramassé". Sentences have no articles: "le" and
"la" would give each noun's gender away a second time, right beside it.

A sentence is 0 to 3 filler words, the subject (an animal), "qui", a verb, noun
phrases (a preposition and a noun) in a random order, "a été" and the slot. The
noun phrases hold two other animals and 0 to 2 places. The subject's gender is
shared by one or two of the three animals, with equal probability, so it is the
minority or the majority of them and counting genders says nothing. A few
sentences (:data:`SUBJECT_ALONE`) have no other animal. So:

- "agree with the animal" does not work: there are three. The model must find
  *which* animal is the subject, by its position: the first one, before "qui".
- the subject is the 1st to 4th word, and 5 to 13 positions before the slot
  (9 to 13 when it has other animals): neither its position nor its distance
  from the slot is fixed.

The model is token embeddings, position embeddings, one layer of
:class:`qkv.attention.MultiHeadAttention` and a linear classifier that reads the
slot. :func:`baselines` measures what simpler rules and models reach on the
held-out sentences; :func:`slot_attention` and :func:`head_ablation` measure what
each head does. Everything is deterministic for a given seed: the data come from
``random.Random(seed)`` and the weights from ``torch.manual_seed(seed)``.

Shapes: B batch (sentences), H heads, S sentence length (padded), D model dim.

The module also holds the lookup task of the chapter *scaled-dot-product*
(:func:`train_lookup`): one attention layer learns to return the number attached
to the key that matches its query, with and without the division by sqrt(d_k).
"""

from __future__ import annotations

import copy
import functools
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention, scaled_dot_product_attention
from qkv.language import N_
from qkv.language import gettext as _

#: Animals, by gender: the subject and the other animals of a sentence.
ANIMALS_F = ("souris", "chatte", "poule", "vache", "chèvre", "jument")
ANIMALS_M = ("chat", "chien", "lapin", "cheval", "mouton", "canard")
#: The subject is an animal (names kept from the first version of the task).
SUBJECTS_F = ANIMALS_F
SUBJECTS_M = ANIMALS_M
#: Places, by gender: nouns of the relative clause that are not animals.
PLACES_F = ("table", "chaise", "maison", "fenêtre", "cour", "route")
PLACES_M = ("canapé", "lit", "jardin", "toit", "mur", "pont")
FILLERS = ("hier", "soudain", "enfin", "alors", "ensuite", "puis")
VERBS = ("dormait", "était", "restait", "attendait")
PREPOSITIONS = ("sur", "sous", "derrière", "devant", "contre", "près")
ENDING = ("a", "été")
SLOT = "[?]"
PAD = "[pad]"
#: What the model predicts at the slot, by class index.
LABELS = ("ramassé", "ramassée")

VOCAB: tuple[str, ...] = (
    PAD,
    SLOT,
    *ANIMALS_F,
    *ANIMALS_M,
    *PLACES_F,
    *PLACES_M,
    *FILLERS,
    "qui",
    *VERBS,
    *PREPOSITIONS,
    *ENDING,
)
TOKEN_ID = {word: i for i, word in enumerate(VOCAB)}
ANIMALS = frozenset(ANIMALS_F + ANIMALS_M)
NOUNS = frozenset(ANIMALS_F + ANIMALS_M + PLACES_F + PLACES_M)
FEMININE = frozenset(ANIMALS_F + PLACES_F)
MAX_FILLERS = 3
#: Animals in the relative clause, besides the subject.
OTHER_ANIMALS = 2
MAX_PLACES = 2
#: Nouns between the subject and the slot: the other animals and the places.
MAX_DISTRACTORS = OTHER_ANIMALS + MAX_PLACES
#: Probability that the subject is the only animal of its sentence. These simple
#: sentences show which way agreement goes. Without them (``subject_alone=0`` in
#: :func:`train`), a one-head model often learns instead to answer the gender
#: *opposite* to the other animals', which is right about three times in four,
#: and never looks at the subject.
SUBJECT_ALONE = 0.05
#: Probability that an other animal has the gender opposite to the subject's: all
#: of them when the subject's gender is the minority, one in two otherwise.
DISTRACTOR_OTHER_GENDER = (OTHER_ANIMALS + 1) / (2 * OTHER_ANIMALS)
#: The longest sentence: fillers, subject, "qui", verb, noun phrases, ending, slot.
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

    @property
    def other_animals(self) -> list[int]:
        """Indices in ``words`` of the animals that are not the subject."""
        return [
            i for i, w in enumerate(self.words) if w in ANIMALS and i != self.antecedent
        ]

    @property
    def nearest_noun(self) -> int:
        """Index in ``words`` of the last noun before the slot."""
        return max(i for i, w in enumerate(self.words) if w in NOUNS)


def make_example(rng: random.Random, subject_alone: float = SUBJECT_ALONE) -> Example:
    """Draw one sentence: fillers, subject, "qui", verb, noun phrases, ending.

    The number of animals with the subject's gender (the subject included) is
    drawn uniformly from 1 to :data:`OTHER_ANIMALS`, so the animals of the other
    gender are equally many: the multiset of words of a sentence says nothing
    about the answer, except when the subject is alone, which happens with
    probability ``subject_alone``. Places have either gender, whatever the
    subject's.
    """
    words = rng.sample(FILLERS, rng.randint(0, MAX_FILLERS))
    label = rng.randint(0, 1)
    same, other = (ANIMALS_F, ANIMALS_M) if label else (ANIMALS_M, ANIMALS_F)
    if rng.random() < subject_alone:
        subject, nouns = rng.choice(same), []
    else:
        n_same = rng.randint(1, OTHER_ANIMALS)
        subject, *nouns = rng.sample(same, n_same)
        nouns += rng.sample(other, OTHER_ANIMALS + 1 - n_same)
    nouns += rng.sample(PLACES_F + PLACES_M, rng.randint(0, MAX_PLACES))
    rng.shuffle(nouns)
    antecedent = len(words)
    words += [subject, "qui", rng.choice(VERBS)]
    for noun in nouns:
        words += [rng.choice(PREPOSITIONS), noun]
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
    if not examples:
        raise ValueError("examples must hold at least one sentence, got 0")
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


@functools.lru_cache(maxsize=5)
def training_batches(
    seed: int, steps: int, batch_size: int, subject_alone: float = SUBJECT_ALONE
) -> tuple[Batch, ...]:
    """The ``steps`` batches of ``batch_size`` sentences that ``train(seed)``
    reads, in order, drawn with ``random.Random(seed)``.

    They depend on these arguments only, not on the model: the chapter
    *how-attention-learns* trains three models per seed (its model and the two
    of :data:`MODEL_BASELINES`) on the same sentences, drawn and encoded once
    (the batches of the last five seeds are kept).
    """
    rng = random.Random(seed)
    return tuple(
        encode([make_example(rng, subject_alone) for _ in range(batch_size)])
        for _ in range(steps)
    )


POOLINGS = ("attention", "mean")


class AgreementModel(nn.Module):
    """Token and position embeddings, one attention layer, a classifier.

    The prediction is read at the last position (the slot): its own word vector
    plus what attention brought to it, mapped to two classes by a linear layer.

    Positions enter the queries and keys, not the values: they decide *where* the
    slot looks, and what it brings back is words only. With positions in the
    values too (``value_positions=True``), many seeds learn a lopsided rule: the
    slot looks at the subject when it is, say, feminine, and elsewhere when it is
    masculine. The answers are still right, but the slot gives the subject only
    about half of its weight on average. Position embeddings start at zero, so
    the untrained model ignores word order: its attention depends on the words
    alone.

    Args:
        embed_dim: D, the width of every vector.
        num_heads: H, the number of attention heads.
        positions: if False, no position embedding: the model sees a bag of words.
        pooling: ``"attention"``, or ``"mean"`` to replace the attention weights
            of the slot by a plain average over the words (a baseline).
        value_positions: if True, positions enter the values and the slot's own
            vector too, as in a standard Transformer input.
    """

    def __init__(
        self,
        embed_dim: int = 64,
        num_heads: int = 2,
        positions: bool = True,
        pooling: str = "attention",
        value_positions: bool = False,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        self.positions = positions
        self.pooling = pooling
        self.value_positions = value_positions
        self.token_embedding = nn.Embedding(len(VOCAB), embed_dim)
        self.position_embedding = nn.Embedding(MAX_LEN, embed_dim)
        nn.init.zeros_(self.position_embedding.weight)
        self.attention = MultiHeadAttention(embed_dim, num_heads)
        self.classifier = nn.Linear(embed_dim, len(LABELS))

    def forward(self, batch: Batch) -> tuple[Tensor, Tensor]:
        """Return ``(logits, weights)``: logits (B, 2), weights (B, H, S, S).

        With ``pooling="mean"`` the weights are the uniform weights of the
        average, (B, 1, S, S).
        """
        words = self.token_embedding(batch.token_ids)  # (B, S, D)
        where = words
        if self.positions:
            where = words + self.position_embedding(batch.positions)  # (B, S, D)
        if self.value_positions:
            words = where
        key_mask = batch.keep[:, None, None, :]  # (B, 1, 1, S): pads hidden
        if self.pooling == "attention":
            # Queries and keys from words and positions, values from words.
            context, weights = self.attention(where, where, words, attn_mask=key_mask)
            gathered = context[:, -1]  # (B, D)
        else:
            row = batch.keep.float() / batch.keep.sum(dim=-1, keepdim=True)  # (B, S)
            weights = row[:, None, None, :].expand(-1, 1, row.shape[1], -1)
            average = (row[..., None] * self.attention.W_v(words)).sum(dim=1)
            gathered = self.attention.W_o(average)  # (B, D)
        slot = words[:, -1] + gathered  # (B, D): the slot + what it gathered
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


#: The roles of the words of a sentence; each word has exactly one.
ROLES = (
    "subject",
    "other animal",
    "place",
    "filler",
    "qui",
    "verb",
    "preposition",
    "ending",
    "slot",
)
_ROLE_OF_WORD = {
    **{w: "other animal" for w in ANIMALS},
    **{w: "place" for w in PLACES_F + PLACES_M},
    **{w: "filler" for w in FILLERS},
    "qui": "qui",
    **{w: "verb" for w in VERBS},
    **{w: "preposition" for w in PREPOSITIONS},
    **{w: "ending" for w in ENDING},
    SLOT: "slot",
}


def roles(example: Example) -> list[str]:
    """The role of each word of ``example``, one of :data:`ROLES`."""
    out = [_ROLE_OF_WORD[w] for w in example.words]
    out[example.antecedent] = "subject"
    return out


def slot_attention(
    model: AgreementModel, examples: list[Example]
) -> dict[str, list[float]]:
    """Mean weight, per head, that the slot gives to each role of word.

    Explained in the chapters *how-attention-learns* and *multi-head*.

    Args:
        model: a trained (or untrained) :class:`AgreementModel`.
        examples: the sentences to average over.

    Returns:
        A dict from each role of :data:`ROLES` to a list of H floats: the weight
        from the slot to all the words of that role, summed within a sentence and
        averaged over sentences. For each head, these add up to 1. One more key,
        ``"nearest noun"``, gives the weight on the last noun before the slot,
        which is also counted under its own role (usually ``"other animal"`` or
        ``"place"``; ``"subject"`` when the subject is the only noun).
    """
    batch = encode(examples)
    with torch.no_grad():
        _, weights = model(batch)  # (B, H, S, S)
    from_slot = weights[:, :, -1, :]  # (B, H, S)
    width = batch.token_ids.shape[1]
    masks = {name: torch.zeros(len(examples), width) for name in ROLES}
    masks["nearest noun"] = torch.zeros(len(examples), width)
    for b, example in enumerate(examples):
        offset = width - len(example.words)
        for i, role in enumerate(roles(example)):
            masks[role][b, offset + i] = 1.0
        masks["nearest noun"][b, offset + example.nearest_noun] = 1.0
    return {
        name: [float(v) for v in (from_slot * mask[:, None, :]).sum(-1).mean(0)]
        for name, mask in masks.items()
    }


def accuracy_without_heads(
    model: AgreementModel, batch: Batch, heads: Iterable[int]
) -> float:
    """Accuracy when the output of some heads is set to zero before W_o.

    Explained in the chapter *multi-head*. The heads still attend, but what they
    bring back is replaced by zeros, so W_o only mixes the others.

    Args:
        model: an :class:`AgreementModel` with attention pooling.
        batch: the sentences to measure on.
        heads: indices of the heads to switch off, each in 0..H-1.
    """
    heads = sorted(set(heads))
    attention = model.attention
    if model.pooling != "attention":
        raise ValueError(f"model.pooling must be 'attention', got {model.pooling!r}")
    if any(not 0 <= h < attention.num_heads for h in heads):
        raise ValueError(f"heads must be in 0..{attention.num_heads - 1}, got {heads}")
    size = attention.head_dim

    def zero_heads(module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor]:
        z = args[0].clone()  # (B, S, D): the heads side by side, before W_o
        for h in heads:
            z[..., h * size : (h + 1) * size] = 0.0
        return (z,)

    handle = attention.W_o.register_forward_pre_hook(zero_heads)
    try:
        return accuracy(model, batch)
    finally:
        handle.remove()


def head_ablation(model: AgreementModel, batch: Batch) -> list[float]:
    """Accuracy with each head switched off in turn: a list of H floats.

    Explained in the chapter *multi-head*; see :func:`accuracy_without_heads`.
    """
    return [
        accuracy_without_heads(model, batch, [h])
        for h in range(model.attention.num_heads)
    ]


def _gender(word: str) -> int:
    return int(word in FEMININE)  # 1 feminine, 0 masculine, as the labels


def _animals(example: Example) -> list[str]:
    return [w for w in example.words if w in ANIMALS]


def _majority_gender_of_nouns(example: Example) -> int:
    genders = [_gender(w) for w in example.words if w in NOUNS]
    return int(2 * sum(genders) > len(genders))  # a tie counts as masculine


def _best_bag_of_words(example: Example) -> int:
    animals = _animals(example)
    return _gender(animals[0]) if len(animals) == 1 else 0


#: Rules that guess the answer without a model (see :func:`rule_baselines`).
RULES: dict[str, Callable[[Example], int]] = {
    "nearest noun": lambda e: _gender(e.words[e.nearest_noun]),
    "nearest animal": lambda e: _gender(_animals(e)[-1]),
    "opposite of the nearest animal": lambda e: 1 - _gender(_animals(e)[-1]),
    "majority gender of the nouns": _majority_gender_of_nouns,
    "best bag of words": _best_bag_of_words,
    "first animal": lambda e: _gender(_animals(e)[0]),
}


def rule_baselines(examples: list[Example]) -> dict[str, float]:
    """Accuracy of simple rules on ``examples``: a dict from name to accuracy.

    Explained in the chapter *how-attention-learns*. The rules, and what each one
    tests:

    - ``"majority class"``: always the more frequent answer of ``examples``. The
      two answers are equally likely: this is chance.
    - ``"nearest noun"``: agree with the last noun before the slot, an animal or a
      place: does the word closest to the slot decide?
    - ``"nearest animal"``: agree with the last animal before the slot, usually an
      other animal, which more often than not has the other gender.
      ``"opposite of the nearest animal"`` turns that bias into a rule: how far can
      a rule go by looking at one other animal and never at the subject?
    - ``"majority gender of the nouns"``: count feminine and masculine nouns (a
      tie counts as masculine): does counting help?
    - ``"best bag of words"``: the best use of the multiset of words, with no
      order: agree with the animal when there is only one, answer masculine
      otherwise. It bounds what a model that ignores word order can reach.
    - ``"first animal"``: agree with the first animal. That is the subject by
      construction, so this is 1.0: the task is well posed. A model that reaches
      it has learned *which* animal to agree with, by its position, not only
      *that* the answer comes from an animal.
    """
    if not examples:
        raise ValueError("examples must hold at least one sentence, got 0")
    labels = [e.label for e in examples]
    majority = max(labels.count(0), labels.count(1)) / len(labels)
    out = {"majority class": majority}
    for name, rule in RULES.items():
        out[name] = sum(rule(e) == e.label for e in examples) / len(examples)
    return out


#: What the chapter expects of a trained model: held-out accuracy, the
#: designated head's weight on the subject after training, the largest gap
#: between that weight before training and a uniform head's, and training time
#: in CPU seconds on one thread.
TARGETS = {
    "accuracy": 0.95,
    "attention_after": 0.8,
    "before_vs_uniform": 0.05,
    "cpu_seconds": 20.0,
}


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        model: the trained model.
        initial_model: a copy of the model before training (same seed).
        history: training loss at each step.
        grad_norms: gradient norm of W_q, W_k, W_v and W_o at each step (only the
            projections that the model uses).
        accuracy: accuracy on held-out sentences.
        head: the designated head: the one that attends most to the subject
            after training.
        attention_before: held-out mean weight from the slot to the subject, for
            ``head``, before training.
        attention_after: the same after training.
        uniform: the mean weight a uniform head would give the subject.
        heldout: the held-out sentences.
        seconds: training time (wall clock).
        cpu_seconds: training time (CPU time of the process, all threads).
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
    cpu_seconds: float = 0.0

    def missed_targets(self) -> list[str]:
        """The names of the :data:`TARGETS` that this run misses (empty if none)."""
        measured = {
            "accuracy": self.accuracy >= TARGETS["accuracy"],
            "attention_after": self.attention_after >= TARGETS["attention_after"],
            "before_vs_uniform": abs(self.attention_before - self.uniform)
            <= TARGETS["before_vs_uniform"],
            "cpu_seconds": self.cpu_seconds <= TARGETS["cpu_seconds"],
        }
        return [name for name, ok in measured.items() if not ok]


def train(
    seed: int = 0,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 3e-3,
    embed_dim: int = 64,
    num_heads: int = 2,
    n_heldout: int = 1000,
    positions: bool = True,
    pooling: str = "attention",
    subject_alone: float = SUBJECT_ALONE,
    value_positions: bool = False,
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
        positions, pooling, value_positions: see :class:`AgreementModel` (the
            baselines of :func:`baselines` switch the first two).
        subject_alone: share of training sentences whose only animal is the
            subject (see :data:`SUBJECT_ALONE`); the held-out sentences keep the
            default.

    Returns:
        A :class:`TrainResult`.
    """
    if steps < 1 or batch_size < 1 or n_heldout < 1:
        raise ValueError(
            f"steps, batch_size and n_heldout must be >= 1, got {steps}, "
            f"{batch_size} and {n_heldout}"
        )
    if not 0.0 <= subject_alone <= 1.0:
        raise ValueError(f"subject_alone must be in [0, 1], got {subject_alone}")
    torch.manual_seed(seed)
    model = AgreementModel(
        embed_dim,
        num_heads,
        positions=positions,
        pooling=pooling,
        value_positions=value_positions,
    )
    initial_model = copy.deepcopy(model)
    heldout = heldout_examples(seed, n_heldout)
    heldout_batch = encode(heldout)
    # foreach: every tensor in one call, the same numbers, less Python per step
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    loss_fn = nn.CrossEntropyLoss()
    history: list[float] = []
    grad_norms: dict[str, list[float]] = {"W_q": [], "W_k": [], "W_v": [], "W_o": []}
    start, cpu_start = time.perf_counter(), time.process_time()
    batches = training_batches(seed, steps, batch_size, subject_alone)
    with torch.enable_grad():  # even if the caller switched gradients off
        for batch in batches:
            logits, _ = model(batch)
            loss = loss_fn(logits, batch.labels)
            optimizer.zero_grad()
            loss.backward()
            for name, norms in grad_norms.items():
                grad = getattr(model.attention, name).weight.grad
                if grad is not None:  # W_q and W_k are unused by mean pooling
                    norms.append(float(grad.norm()))
            optimizer.step()
            history.append(float(loss.detach()))
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    after = antecedent_attention(model, heldout_batch)  # (H,)
    before = antecedent_attention(initial_model, heldout_batch)  # (H,)
    head = int(after.argmax())
    uniform = float((1.0 / heldout_batch.keep.sum(dim=-1).float()).mean())
    return TrainResult(
        model=model,
        initial_model=initial_model,
        history=history,
        grad_norms={name: norms for name, norms in grad_norms.items() if norms},
        accuracy=accuracy(model, heldout_batch),
        head=head,
        attention_before=float(before[head]),
        attention_after=float(after[head]),
        uniform=uniform,
        heldout=heldout,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
    )


#: Models trained like the chapter's, with one ingredient removed.
MODEL_BASELINES = {
    "no positions (bag of words)": {"positions": False},
    "mean instead of attention": {"pooling": "mean"},
}


#: The names a reader sees for the rules, baselines and roles (:func:`label`),
#: in English; :func:`label` translates them.
DISPLAY_NAMES = (
    N_("majority class"),
    N_("nearest noun"),
    N_("nearest animal"),
    N_("opposite of the nearest animal"),
    N_("majority gender of the nouns"),
    N_("best bag of words"),
    N_("first animal"),
    N_("no positions (bag of words)"),
    N_("mean instead of attention"),
    N_("subject"),
    N_("other animal"),
    N_("place"),
    N_("filler"),
    N_("qui"),
    N_("verb"),
    N_("preposition"),
    N_("ending"),
    N_("slot"),
)


def label(name: str) -> str:
    """The label a reader sees for ``name``, a rule of :func:`rule_baselines`,
    a model of :data:`MODEL_BASELINES` or a role of :func:`slot_attention`, in
    the language of :func:`qkv.set_language` (English: ``name`` itself).

    Raises:
        ValueError: if ``name`` is none of them.
    """
    if name not in DISPLAY_NAMES:
        raise ValueError(
            f"name must be a rule, a model baseline or a role, got {name!r}"
        )
    return _(name)


def baselines(seed: int = 0, **train_kwargs) -> dict[str, float]:
    """Held-out accuracy of the rules of :func:`rule_baselines` and of two models.

    Explained in the chapter *how-attention-learns*. The two models are trained by
    :func:`train` with the same seed and settings as the chapter's model, with one
    ingredient removed:

    - ``"no positions (bag of words)"``: attention without position embeddings.
      Attention can still choose words, but not by their place: it treats the
      sentence as a set.
    - ``"mean instead of attention"``: the slot averages the words with equal
      weights instead of choosing some; positions, which only enter the attention
      weights, then play no part.

    Both see a sentence as a bag of words, so neither can do better than the rule
    ``"best bag of words"`` except by luck on the held-out sentences.

    Args:
        seed: the seed of :func:`train` and of its held-out sentences.
        **train_kwargs: more arguments for :func:`train` (e.g. ``steps``).

    Returns:
        A dict from the name of each baseline to its held-out accuracy.
    """
    n_heldout = train_kwargs.get("n_heldout", 1000)
    out = rule_baselines(heldout_examples(seed, n_heldout))
    for name, change in MODEL_BASELINES.items():
        out[name] = train(seed, **train_kwargs, **change).accuracy
    return out


# A lookup task, for the chapter *scaled-dot-product*: does the division of the
# scores by sqrt(d_k) change how fast a layer learns?


def lookup_batch(
    generator: torch.Generator, batch: int, n_keys: int = 8, d_model: int = 32
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Random keys with a number each; the query is one of the keys.

    Returns ``(query, keys, numbers, answer)`` of shapes (B, 1, D), (B, S, D),
    (B, S, 1) and (B, 1): the answer is the number of the query's key.
    """
    keys = torch.randn(batch, n_keys, d_model, generator=generator)
    numbers = torch.randn(batch, n_keys, 1, generator=generator)
    which = torch.randint(n_keys, (batch,), generator=generator)  # (B,)
    rows = torch.arange(batch)
    return keys[rows, which][:, None], keys, numbers, numbers[rows, which]


def train_lookup(
    scaled: bool,
    seed: int = 0,
    steps: int = 300,
    lr: float = 1e-3,
    d_model: int = 32,
    d_k: int = 512,
) -> list[float]:
    """Train W_q and W_k on the lookup task; held-out loss every 10 steps.

    With ``scaled``, the scores are divided by sqrt(d_k); without, not. The
    same seed gives both the same start, batches and held-out examples.
    """
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    generator = torch.Generator().manual_seed(seed)
    W_q = torch.randn(d_model, d_k, generator=generator) / math.sqrt(d_model)
    W_k = torch.randn(d_model, d_k, generator=generator) / math.sqrt(d_model)
    W_q.requires_grad_()
    W_k.requires_grad_()
    optimiser = torch.optim.Adam([W_q, W_k], lr=lr)
    held_out = lookup_batch(torch.Generator().manual_seed(1000 + seed), 1000)

    def loss_on(query, keys, numbers, answer):
        found, _ = scaled_dot_product_attention(
            query @ W_q, keys @ W_k, numbers, scale=scale
        )  # (B, 1, 1): the weighted average of the numbers
        return ((found[:, 0] - answer) ** 2).mean()

    curve = []
    with torch.enable_grad():  # even if the caller switched gradients off
        for step in range(steps + 1):
            if step % 10 == 0:
                with torch.no_grad():
                    curve.append(float(loss_on(*held_out)))
            if step < steps:
                loss = loss_on(*lookup_batch(generator, batch=32))
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
    return curve


def steps_to(curve: list[float], threshold: float = 0.1) -> int | None:
    """The first step of a :func:`train_lookup` curve (one point every 10 steps)
    at which the held-out loss is below ``threshold``; None if it never is."""
    return next((10 * i for i, loss in enumerate(curve) if loss < threshold), None)
