"""The extrapolation experiment of the chapter *positions*: one small model per
position encoding, trained on short sequences and tested on sequences twice as long.

The encodings themselves (:func:`qkv.positions.rope`, :func:`qkv.positions.alibi_bias`,
:class:`qkv.positions.PositionalAttention`) are in :mod:`qkv.positions`; shape legend
as there (B, H, T, D, E, C).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.language import N_, gettext, pgettext
from qkv.positions import ENCODINGS, PositionalAttention
from qkv.transformer import TransformerBlock, sinusoidal_positions
from qkv.validate import check_generator, check_int

__all__ = [
    "ENCODINGS",
    "TASKS",
    "EncodingResult",
    "ExtrapolationResult",
    "PositionModel",
    "extrapolation",
    "label",
    "make_batch",
]

#: What a reader sees for each encoding of :data:`ENCODINGS`, per language.
LABELS = {
    "none": "none",  # pgettext("positional encoding", "none") in label()
    "learned": N_("learned table"),
    "sinusoidal": N_("sinusoidal codes"),
    "rope": N_("RoPE"),
    "alibi": N_("ALiBi"),
}


def label(encoding: str) -> str:
    """The name a reader sees for ``encoding``, one of :data:`ENCODINGS`, in the
    language of :func:`qkv.set_language` (explained in the chapter *positions*).

    Raises:
        ValueError: if ``encoding`` is not one of :data:`ENCODINGS`.
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if encoding == "none":
        return pgettext("positional encoding", "none")
    return gettext(LABELS[encoding])


class PositionModel(nn.Module):
    """A token classifier made of causal Transformer blocks and one position
    encoding: the model :func:`extrapolation` trains.

    Explained in the chapter *positions*. Tokens are embedded; "learned" adds a
    row of ``nn.Embedding(max_len, D)``, "sinusoidal" adds
    :func:`qkv.transformer.sinusoidal_positions`; then come ``num_layers`` blocks
    of :class:`qkv.transformer.TransformerBlock` whose attention is a
    :class:`PositionalAttention` (where "rope" and "alibi" act), all causal, and a
    linear classifier at every position.

    Args:
        vocab_size: V, the number of token ids.
        num_classes: C, the classes predicted at each position.
        encoding: one of :data:`ENCODINGS`.
        embed_dim: D.
        num_heads: H.
        num_layers: the number of blocks.
        max_len: rows of the learned table ("learned" only): the longest input.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        encoding: str,
        embed_dim: int = 32,
        num_heads: int = 4,
        num_layers: int = 1,
        max_len: int = 64,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_classes", num_classes),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_int(name, value, 1)
        self.encoding = encoding
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.position_embedding = (
            nn.Embedding(max_len, embed_dim) if encoding == "learned" else None
        )
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            block = TransformerBlock(embed_dim, num_heads, 4 * embed_dim)
            block.attention = PositionalAttention(embed_dim, num_heads, encoding)
            self.blocks.append(block)
        self.classifier = nn.Linear(embed_dim, num_classes)

    def forward(self, tokens: Tensor) -> Tensor:
        """tokens: (B, T) integer ids -> logits (B, T, C)."""
        length = tokens.shape[-1]
        x = self.token_embedding(tokens)  # (B, T, D)
        if self.position_embedding is not None:
            rows = self.position_embedding.num_embeddings
            if length > rows:
                raise ValueError(
                    f"tokens of length {length} are longer than the learned table "
                    f"(max_len={rows}): got tokens {tuple(tokens.shape)}"
                )
            x = x + self.position_embedding(torch.arange(length, device=x.device))
        elif self.encoding == "sinusoidal":
            x = x + sinusoidal_positions(length, x.shape[-1]).to(x.device)
        for block in self.blocks:
            x = block(x, is_causal=True)  # (B, T, D)
        return self.classifier(x)  # (B, T, C)


# --- The extrapolation experiment -------------------------------------------------

#: Tokens of the "latest" task: letters 0..7, fillers 8..15.
N_LETTERS = 8
N_FILLERS = 8
#: Probability that a token of the "latest" task is a letter.
LETTER_RATE = 0.3
#: How far back the "copy" task looks.
COPY_OFFSET = 3
#: Target of a position that is not scored.
IGNORE = -100

#: The tasks :func:`make_batch` draws: what the target at position i is.
TASKS = {
    "latest": "the latest letter among tokens 0..i (a class of its own if none yet)",
    "copy": f"the token {COPY_OFFSET} places back (positions < {COPY_OFFSET} unscored)",
}


def make_batch(
    task: str, batch_size: int, length: int, generator: torch.Generator
) -> tuple[Tensor, Tensor]:
    """Random sequences of a task and their targets.

    Explained in the chapter *positions*. "latest": each token is one of
    ``N_LETTERS`` letters (with probability ``LETTER_RATE``) or one of
    ``N_FILLERS`` fillers; the target at position i is the most recent letter so
    far, or the class ``N_LETTERS`` if no letter came yet. What matters is which
    letter is *nearest* behind, wherever it stands. "copy": uniform tokens; the
    target at position i is the token at i - 3.

    Args:
        task: a key of :data:`TASKS`.
        batch_size: B.
        length: T.
        generator: the source of randomness.

    Returns:
        ``(tokens, targets)``, both (B, T) integers; unscored targets are
        ``IGNORE``.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {tuple(TASKS)}, got {task!r}")
    check_int("batch_size", batch_size, 1)
    check_int("length", length, 1)
    check_generator("generator", generator)
    vocab = N_LETTERS + N_FILLERS
    shape = (batch_size, length)
    if task == "copy":
        tokens = torch.randint(vocab, shape, generator=generator)  # (B, T)
        targets = torch.full(shape, IGNORE)
        targets[:, COPY_OFFSET:] = tokens[:, :-COPY_OFFSET]
        return tokens, targets
    is_letter = torch.rand(shape, generator=generator) < LETTER_RATE  # (B, T)
    letters = torch.randint(N_LETTERS, shape, generator=generator)
    fillers = torch.randint(N_LETTERS, vocab, shape, generator=generator)
    tokens = torch.where(is_letter, letters, fillers)  # (B, T)
    # Index of the latest letter at or before each position (-1: none yet).
    index = torch.where(is_letter, torch.arange(length), -1).cummax(dim=-1).values
    latest = tokens.gather(-1, index.clamp(min=0))  # (B, T)
    targets = torch.where(index >= 0, latest, N_LETTERS)
    return tokens, targets


def _num_classes(task: str) -> int:
    return N_LETTERS + 1 if task == "latest" else N_LETTERS + N_FILLERS


@dataclass
class EncodingResult:
    """One row of the extrapolation table.

    Attributes:
        encoding: one of :data:`ENCODINGS`.
        train_accuracy: held-out accuracy on sequences of the training length T.
        long_accuracy: held-out accuracy on sequences of length 2 T, all positions.
        unseen_accuracy: the same, on positions T..2T-1 only (never seen in
            training).
        history: training loss at each step.
        seconds: wall time of training and testing.
        cpu_seconds: CPU time of training and testing (``time.process_time``).
        model: the trained model.
    """

    encoding: str
    train_accuracy: float
    long_accuracy: float
    unseen_accuracy: float
    history: list[float] = field(repr=False)
    seconds: float
    cpu_seconds: float
    model: PositionModel = field(repr=False)


@dataclass
class ExtrapolationResult:
    """What :func:`extrapolation` returns.

    Attributes:
        task: the task (a key of :data:`TASKS`).
        train_len: T, the length of every training sequence.
        test_len: 2 T.
        results: one :class:`EncodingResult` per encoding, in table order.
        seconds: total wall time.
        cpu_seconds: total CPU time.
    """

    task: str
    train_len: int
    test_len: int
    results: dict[str, EncodingResult]
    seconds: float
    cpu_seconds: float

    def rows(self) -> list[dict[str, float | str]]:
        """The table as one dict per encoding (e.g. for ``pandas.DataFrame``)."""
        return [
            {
                "encoding": r.encoding,
                f"accuracy at {self.train_len}": r.train_accuracy,
                f"accuracy at {self.test_len}": r.long_accuracy,
                f"positions {self.train_len}-{self.test_len - 1}": r.unseen_accuracy,
                "seconds": r.seconds,
            }
            for r in self.results.values()
        ]


def _accuracy(logits: Tensor, targets: Tensor, keep: Tensor) -> float:
    keep = keep & (targets != IGNORE)
    return float((logits.argmax(dim=-1) == targets)[keep].float().mean())


def extrapolation(
    seed: int = 0,
    task: str = "latest",
    encodings: tuple[str, ...] = ENCODINGS,
    train_len: int = 16,
    steps: int = 120,
    batch_size: int = 64,
    lr: float = 5e-3,
    embed_dim: int = 32,
    num_heads: int = 4,
    n_test: int = 500,
) -> ExtrapolationResult:
    """Train one model per position encoding on length T, test it on length 2 T.

    Explained in the chapter *positions*. Every model is a :class:`PositionModel`
    (one causal block) trained with Adam on the same batches of ``task``, every
    sequence exactly ``train_len`` long, then tested on held-out sequences of
    ``train_len`` and ``2 * train_len`` tokens. The learned table has
    ``2 * train_len`` rows, so the long test runs, but rows T..2T-1 never receive
    a gradient: Adam without weight decay leaves them at their random initial
    values, which is what a learned code "knows" about a position it never saw.

    Everything is deterministic for a seed: the weights of every model come from
    ``torch.manual_seed(seed)``, the batches (the same for every encoding) from a
    generator seeded with ``seed``, the test sequences from one seeded with
    ``seed + 10_000``.

    Args:
        seed: seeds data and weights.
        task: a key of :data:`TASKS`.
        encodings: which rows to compute, a subset of :data:`ENCODINGS`.
        train_len: T.
        steps: optimisation steps, each on a new batch.
        batch_size: sequences per step.
        lr: learning rate of Adam.
        embed_dim, num_heads: the size of each model.
        n_test: held-out sequences per length.

    Returns:
        An :class:`ExtrapolationResult`.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {tuple(TASKS)}, got {task!r}")
    unknown = [e for e in encodings if e not in ENCODINGS]
    if unknown or not encodings:
        raise ValueError(f"encodings must be among {ENCODINGS}, got {encodings!r}")
    for name, value in (
        ("train_len", train_len),
        ("steps", steps),
        ("batch_size", batch_size),
        ("n_test", n_test),
    ):
        check_int(name, value, 1)
    test_len = 2 * train_len
    tests = {}
    test_generator = torch.Generator().manual_seed(seed + 10_000)
    for length in (train_len, test_len):
        tests[length] = make_batch(task, n_test, length, test_generator)
    unseen = torch.arange(test_len) >= train_len  # (2T,)
    results = {}
    start, cpu_start = time.perf_counter(), time.process_time()
    # The training batches, drawn once: every encoding trains on the same ones.
    generator = torch.Generator().manual_seed(seed)
    batches = [
        make_batch(task, batch_size, train_len, generator) for _ in range(steps)
    ]  # steps x ((B, T), (B, T))
    for encoding in encodings:
        begin, cpu_begin = time.perf_counter(), time.process_time()
        torch.manual_seed(seed)
        model = PositionModel(
            N_LETTERS + N_FILLERS,
            _num_classes(task),
            encoding,
            embed_dim=embed_dim,
            num_heads=num_heads,
            max_len=test_len,
        )
        # foreach: every tensor in one call, the same numbers, less Python per step
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
        history = []
        with torch.enable_grad():
            for tokens, targets in batches:
                logits = model(tokens)  # (B, T, C)
                loss = nn.functional.cross_entropy(
                    logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                history.append(float(loss.detach()))
        model.eval()
        with torch.no_grad():
            short = model(tests[train_len][0])  # (N, T, C)
            long = model(tests[test_len][0])  # (N, 2T, C)
        everywhere = torch.ones_like(unseen)
        short_targets, long_targets = tests[train_len][1], tests[test_len][1]
        results[encoding] = EncodingResult(
            encoding=encoding,
            train_accuracy=_accuracy(short, short_targets, everywhere[:train_len]),
            long_accuracy=_accuracy(long, long_targets, everywhere),
            unseen_accuracy=_accuracy(long, long_targets, unseen),
            history=history,
            seconds=time.perf_counter() - begin,
            cpu_seconds=time.process_time() - cpu_begin,
            model=model,
        )
    return ExtrapolationResult(
        task=task,
        train_len=train_len,
        test_len=test_len,
        results=results,
        seconds=time.perf_counter() - start,
        cpu_seconds=time.process_time() - cpu_start,
    )
