"""Induction heads: a two-layer attention-only Transformer learns to copy.

Explained in the chapter *decoders*, after Olsson et al. (2022), "In-context
Learning and Induction Heads". The model reads random tokens in which a segment
is repeated:

    ... 41 7 [12 30 5 58 ...] 9 22 [12 30 5 58 ...] ...
            first occurrence         repeat

and predicts every next token. The tokens of the first occurrence are random: no
model can predict them. Once the repeat has begun, each next token can be read
from the first occurrence: find the earlier copy of the current token, and
predict the token that came after it. Two heads in two layers do it together:

* a **previous-token head** in layer 1 writes into each position the token just
  before it;
* an **induction head** in layer 2 lets the current token (its query) find the
  position whose *previous* token matches it (its key), and copies the token
  found there (its value).

The model is token embeddings, two layers of :class:`qkv.MultiHeadAttention`
(causal, each added to the residual stream, no MLP, no layer norm) and an
unembedding; learned positions enter the queries and keys only (Shortformer's
position-infused attention, Press et al. 2021). Attention sinks (Xiao et al.
2024), the share of attention a head parks on the first token, are measured too.

Everything is deterministic for a seed: the weights come from
``torch.manual_seed(seed)``, the training sequences from a generator seeded with
``seed``, the held-out ones from a generator seeded with ``seed + 10_000``, and the
sequences the fixed-offset baseline is chosen on from one seeded with ``20_000``.

Shape legend (as in :mod:`qkv.attention`): B sequences, N layers, H heads per
layer, T positions, D model dimension, V vocabulary size.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention
from qkv.validate import check_generator, check_int, check_positive, check_token_ids

__all__ = [
    "Batch",
    "FREE_RUNNING",
    "POSITIONS",
    "InductionModel",
    "Measurement",
    "TrainResult",
    "best_fixed_offset",
    "free_running",
    "heldout_batch",
    "make_batch",
    "measure",
    "offset_batch",
    "train",
    "without_head",
]

#: Token ids 0..V-1, drawn uniformly (with replacement: chance repeats happen).
VOCAB_SIZE = 64
#: T, the length of every sequence.
SEQ_LEN = 24
#: The length of the repeated segment.
SEGMENT_LEN = 6
#: How many held-out sequences the training curve is measured on.
PROBE_SIZE = 200


@dataclass
class Batch:
    """Sequences with one repeated segment each.

    Attributes:
        tokens: (B, T) token ids.
        first: (B,) where the segment starts the first time.
        repeat: (B,) where it starts again; ``repeat >= first + segment_len``.
        segment_len: the segment's length.
    """

    tokens: Tensor
    first: Tensor
    repeat: Tensor
    segment_len: int


def make_batch(
    batch_size: int,
    generator: torch.Generator,
    seq_len: int = SEQ_LEN,
    segment_len: int = SEGMENT_LEN,
    vocab_size: int = VOCAB_SIZE,
) -> Batch:
    """Random sequences, each repeating a random segment at a random offset.

    Explained in the chapter *decoders*. Each sequence is ``seq_len -
    segment_len`` uniform random tokens; a segment of them starting at ``first``
    is inserted again at ``repeat``. The gap ``repeat - first`` is uniform over
    ``segment_len .. T - segment_len``, then ``first`` is uniform over the
    starts that leave room for the repeat.

    Args:
        batch_size: B.
        generator: the source of randomness.
        seq_len: T.
        segment_len: the repeated segment's length, at most T / 2.
        vocab_size: V.

    Returns:
        A :class:`Batch`.
    """
    check_int("batch_size", batch_size, 1)
    check_generator("generator", generator)
    check_int("segment_len", segment_len, 2)
    check_int("vocab_size", vocab_size, 2)
    check_int("seq_len", seq_len, 2 * segment_len)
    base = torch.randint(
        vocab_size, (batch_size, seq_len - segment_len), generator=generator
    )  # (B, T - segment_len)
    # The gap between the two starts first, uniform over every value it may
    # take, so that no fixed offset points at the earlier copy (see
    # best_fixed_offset); then the first start, uniform given the gap.
    gaps = seq_len - 2 * segment_len + 1  # the gap takes L .. T - L
    gap = segment_len + torch.randint(gaps, (batch_size,), generator=generator)
    room = seq_len - segment_len - gap + 1  # choices for the first start, (B,)
    draw = torch.rand(batch_size, generator=generator)
    first = (draw * room).long()  # (B,)
    repeat = first + gap  # (B,)
    # Position t of a sequence reads base[index[t]]: before the repeat, base
    # itself; in the repeat, the segment again; after it, the rest of base.
    t = torch.arange(seq_len)[None, :]  # (1, T)
    offset = t - repeat[:, None]  # (B, T): position relative to the repeat
    in_repeat = (offset >= 0) & (offset < segment_len)
    index = torch.where(offset < 0, t, t - segment_len)
    index = torch.where(in_repeat, first[:, None] + offset, index)  # (B, T)
    return Batch(base.gather(1, index), first, repeat, segment_len)


def heldout_batch(seed: int = 0, n: int = 1000) -> Batch:
    """The held-out sequences :func:`train` measures on: generator ``seed + 10_000``."""
    return make_batch(n, torch.Generator().manual_seed(seed + 10_000))


def offset_batch(n: int = 1000) -> Batch:
    """The sequences :func:`best_fixed_offset` chooses its offset on: generator
    ``20_000``, a draw of its own (neither training nor held-out sequences)."""
    return make_batch(n, torch.Generator().manual_seed(20_000))


def best_fixed_offset(choose_on: Batch, score_on: Batch) -> tuple[int, float]:
    """The best rule "the next token is the one ``d`` positions back".

    Explained in the chapter *decoders*: a baseline that needs no induction.
    Scored like :func:`measure`'s repeat accuracy (tokens 2..L of the repeat),
    for every offset ``d`` in 1 .. T - 1. The offset is chosen on one batch and
    scored on another, so that the choice does not fit the sequences it is
    scored on.

    Args:
        choose_on: the sequences the best offset is chosen on
            (:func:`offset_batch`).
        score_on: the sequences it is then scored on (:func:`heldout_batch`).

    Returns:
        ``(d, accuracy)``: the offset with the highest accuracy on
        ``choose_on``, and its accuracy on ``score_on``.
    """
    if choose_on.tokens.shape[1] != score_on.tokens.shape[1]:
        raise ValueError(
            "choose_on and score_on must have sequences of the same length, "
            f"got {tuple(choose_on.tokens.shape)} and {tuple(score_on.tokens.shape)}"
        )
    best = (0, -1.0)
    for offset in range(1, choose_on.tokens.shape[1]):
        accuracy = _offset_accuracy(choose_on, offset)
        if accuracy > best[1]:
            best = (offset, accuracy)
    return best[0], _offset_accuracy(score_on, best[0])


def _offset_accuracy(batch: Batch, offset: int) -> float:
    """The share of tokens 2..L of the repeat equal to the token ``offset`` back."""
    rows = torch.arange(len(batch.tokens))[:, None]  # (B, 1)
    targets = batch.repeat[:, None] + torch.arange(1, batch.segment_len)  # (B, L-1)
    truth = batch.tokens[rows, targets]
    source = targets - offset
    valid = source >= 0
    guess = batch.tokens[rows, source.clamp(min=0)]
    return float(((guess == truth) & valid).float().mean())


#: How many held-out sequences :func:`train` writes greedily (free running).
FREE_RUNNING = 50


def free_running(model: InductionModel, batch: Batch) -> tuple[float, float, float]:
    """Teacher-forced and free-running (greedy) accuracy on the repeat.

    Explained in the chapter *decoders*. Each sequence is cut after the first
    token of its repeat; the model then appends its own most likely next token
    until the repeat ends (free running). Teacher-forced, it predicts the same
    tokens reading the true ones before each.

    Returns:
        ``(teacher_forced, free_running, whole)``: the accuracy per token of the
        repeat (tokens 2..L) each way, and the share of sequences whose repeat
        was written without a mistake.
    """
    length = batch.segment_len
    rows = torch.arange(len(batch.tokens))  # (B,)
    starts = batch.repeat.long()  # (B,): where each repeat begins
    offsets = torch.arange(1, length)  # (L - 1,)
    positions = starts[:, None] + offsets  # (B, L - 1): the tokens to predict
    truth = batch.tokens[rows[:, None], positions]  # (B, L - 1)
    with torch.no_grad():
        logits, _ = model(batch.tokens, need_weights=False)  # (B, T, V)
        forced = logits[rows[:, None], positions - 1].argmax(dim=-1)  # (B, L - 1)
        # Free running, every sequence at once: the model is causal, so the
        # logits at a position read only the tokens before it, and the tokens
        # after it (still the true ones) change nothing.
        text = batch.tokens.clone()  # (B, T)
        for k in range(length - 1):
            step, _ = model(text, need_weights=False)  # (B, T, V)
            written = step[rows, positions[:, k] - 1].argmax(dim=-1)  # (B,)
            text[rows, positions[:, k]] = written
        written = text[rows[:, None], positions]  # (B, L - 1)
    forced_hits = forced == truth
    free_hits = written == truth
    return (
        float(forced_hits.float().mean()),
        float(free_hits.float().mean()),
        float(free_hits.all(dim=1).float().mean()),
    )


def without_head(model: InductionModel, layer: int, head: int) -> InductionModel:
    """A copy of ``model`` whose head ``head`` of layer ``layer`` writes nothing.

    Explained in the chapter *decoders*: the head's output enters the residual
    stream only through its columns of ``W_o.weight``, set to zero.
    """
    ablated = copy.deepcopy(model)
    attention = ablated.layers[layer]
    size = attention.head_dim
    with torch.no_grad():
        attention.W_o.weight[:, head * size : (head + 1) * size] = 0.0
    return ablated


#: Where :class:`InductionModel` adds its position embeddings.
POSITIONS = ("queries-keys", "residual")


class InductionModel(nn.Module):
    """A two-layer attention-only Transformer (Olsson et al. 2022).

    Explained in the chapter *decoders*. Each layer of
    :class:`qkv.MultiHeadAttention` (causal) adds its output to the residual
    stream, which starts as the token embeddings; a linear unembedding reads the
    next-token logits. No MLP and no layer norm: everything the model does,
    attention does.

    Positions are learned and, by default, added to the queries and keys of every
    layer but not to the residual stream nor to the values ("position-infused
    attention" of Shortformer, Press et al. 2021, as in the small models of the
    induction-head literature). A head can then use positions to decide where to
    look, but what it copies is tokens only. With ``positions="residual"`` they are
    added once to the token embeddings, as in GPT-2, so that the values, and what
    a head copies, carry positions too. :func:`train` and the chapter use the
    default only: what a model with ``"residual"`` learns on this task is not
    measured here.

    Args:
        vocab_size: V.
        max_len: the longest sequence (rows of the position table).
        embed_dim: D.
        num_heads: H, per layer.
        num_layers: N.
        positions: one of :data:`POSITIONS`.
    """

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        max_len: int = SEQ_LEN,
        embed_dim: int = 64,
        num_heads: int = 2,
        num_layers: int = 2,
        positions: str = "queries-keys",
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("max_len", max_len),
            ("num_layers", num_layers),
        ):
            check_int(name, value, 1)
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {positions!r}")
        self.positions = positions
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.position_embedding = nn.Embedding(max_len, embed_dim)
        self.layers = nn.ModuleList(
            MultiHeadAttention(embed_dim, num_heads) for _ in range(num_layers)
        )
        self.unembedding = nn.Linear(embed_dim, vocab_size)

    def forward(
        self, tokens: Tensor, need_weights: bool = True
    ) -> tuple[Tensor, list[Tensor]]:
        """Next-token logits and every layer's attention.

        Args:
            tokens: (B, T) token ids, T at most ``max_len``.
            need_weights: if False, the layers run PyTorch's fused attention
                (faster, the same logits) and ``weights`` is an empty list.

        Returns:
            ``(logits, weights)``: logits (B, T, V), position t scoring the token
            at t + 1; weights, one (B, H, T, T) tensor per layer.
        """
        check_token_ids("tokens", tokens, self.token_embedding.num_embeddings)
        length = tokens.shape[-1]
        rows = self.position_embedding.num_embeddings
        if length > rows:
            raise ValueError(
                f"tokens must have shape (B, T) with T <= max_len={rows}, got "
                f"{tuple(tokens.shape)}"
            )
        x = self.token_embedding(tokens)  # (B, T, D): the residual stream
        where = self.position_embedding(torch.arange(length, device=tokens.device))
        if self.positions == "residual":
            x = x + where  # (B, T, D)
            where = torch.zeros_like(where)
        weights = []
        for attention in self.layers:
            # Queries and keys see the positions, values do not.
            context, layer_weights = attention(
                x + where, x + where, x, is_causal=True, need_weights=need_weights
            )  # (B, T, D), (B, H, T, T) or None
            x = x + context
            if need_weights:
                weights.append(layer_weights)
        return self.unembedding(x), weights  # (B, T, V)


@dataclass
class Measurement:
    """What :func:`measure` finds on a batch.

    Attributes:
        first_accuracy: next-token accuracy inside the first occurrence of the
            segment (its tokens 2..L, predicted from the token before each):
            random tokens, so near chance, 1 / V.
        repeat_accuracy: the same inside the repeat. Its first token is left
            out: nothing announces where the repeat begins.
        induction_scores: (N, H), the mean weight from each token of the repeat
            to the token after its earlier occurrence.
        previous_token_scores: (N, H), the mean weight from each position t >= 1
            to t - 1.
        sink_scores: (N, H), the mean weight on the first token, from the
            positions t >= 1.
        uniform_sink: what a head attending uniformly to every allowed position
            would put on the first token (the mean of 1 / (t + 1)).
    """

    first_accuracy: float
    repeat_accuracy: float
    induction_scores: Tensor
    previous_token_scores: Tensor
    sink_scores: Tensor
    uniform_sink: float


def measure(model: InductionModel, batch: Batch) -> Measurement:
    """Accuracies and attention scores of ``model`` on ``batch``.

    Explained in the chapter *decoders*.
    """
    with torch.no_grad():
        logits, weights = model(batch.tokens)
    stacked = torch.stack(weights, dim=1)  # (B, N, H, T, T)
    rows = torch.arange(len(batch.tokens))[:, None]  # (B, 1)
    inside = torch.arange(1, batch.segment_len)[None, :]  # (1, L - 1)
    predictions = logits.argmax(dim=-1)  # (B, T)

    def accuracy(start: Tensor) -> float:
        targets = start[:, None] + inside  # (B, L - 1): positions predicted
        hits = predictions[rows, targets - 1] == batch.tokens[rows, targets]
        return float(hits.float().mean())

    along = torch.arange(batch.segment_len)[None, :]  # (1, L)
    queries = batch.repeat[:, None] + along  # (B, L): every token of the repeat
    keys = batch.first[:, None] + along + 1  # the token after its earlier copy
    induction = stacked[rows, :, :, queries, keys]  # (B, L, N, H)
    length = batch.tokens.shape[-1]
    previous = stacked.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, N, H, T - 1)
    sink = stacked[..., 1:, 0]  # (B, N, H, T - 1)
    uniform = 1.0 / torch.arange(2, length + 1, dtype=torch.float64)  # (T - 1,)
    return Measurement(
        first_accuracy=accuracy(batch.first),
        repeat_accuracy=accuracy(batch.repeat),
        induction_scores=induction.mean(dim=(0, 1)),  # (N, H)
        previous_token_scores=previous.mean(dim=(0, 3)),  # (N, H)
        sink_scores=sink.mean(dim=(0, 3)),  # (N, H)
        uniform_sink=float(uniform.mean()),
    )


@dataclass
class TrainResult:
    """What :func:`train` returns; scores are measured on held-out sequences.

    Attributes:
        model: the trained model (in eval mode).
        initial_model: a copy of the model before training.
        first_accuracy: see :class:`Measurement`.
        repeat_accuracy: see :class:`Measurement`.
        induction_scores: (N, H), see :class:`Measurement`.
        previous_token_scores: (N, H).
        sink_scores: (N, H), the attention-sink measurement.
        uniform_sink: the sink share of a uniform head, for comparison.
        induction_head: ``(layer, head)`` with the highest induction score
            (0-based: layer 1 means the second layer).
        previous_token_head: ``(0, head)``, the head of the first layer with the
            highest previous-token score.
        history: training loss at each step.
        curve: measured every ``eval_every`` steps on :data:`PROBE_SIZE` held-out
            sequences:
            ``step``, ``loss``, ``repeat_accuracy``, ``induction`` (best head)
            and ``previous_token`` (best head of the first layer).
        heldout: the held-out sequences.
        example: one held-out sequence (a :class:`Batch` of one) to draw.
        example_weights: its attention, (N, H, T, T).
        ablated_accuracy: (N, H), the repeat accuracy with each head removed
            (:func:`without_head`), on the held-out sequences.
        teacher_forced: the repeat accuracy on the first :data:`FREE_RUNNING`
            held-out sequences, reading the true tokens (:func:`free_running`).
        free_running: the same, writing its own tokens.
        whole_repeats: the share of those sequences written without a mistake.
        seconds: wall time of the training.
        cpu_seconds: its CPU time (``time.process_time``).
    """

    model: InductionModel
    initial_model: InductionModel
    first_accuracy: float
    repeat_accuracy: float
    induction_scores: Tensor
    previous_token_scores: Tensor
    sink_scores: Tensor
    uniform_sink: float
    induction_head: tuple[int, int]
    previous_token_head: tuple[int, int]
    history: list[float] = field(repr=False)
    curve: dict[str, list[float]] = field(repr=False)
    heldout: Batch = field(repr=False)
    example: Batch = field(repr=False)
    example_weights: Tensor = field(repr=False)
    ablated_accuracy: Tensor = field(repr=False)
    teacher_forced: float = 0.0
    free_running: float = 0.0
    whole_repeats: float = 0.0
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def train(
    seed: int = 0,
    steps: int = 1000,
    batch_size: int = 128,
    lr: float = 1e-2,
    embed_dim: int = 64,
    num_heads: int = 2,
    positions: str = "queries-keys",
    n_heldout: int = 1000,
    eval_every: int = 10,
) -> TrainResult:
    """Train an :class:`InductionModel` on next-token prediction, deterministically.

    Explained in the chapter *decoders*. Every step draws a new batch from
    :func:`make_batch`; the loss is the cross-entropy of every next token (the
    random ones included, as a language model is trained), with Adam.

    Args:
        seed: seeds the weights and the data.
        steps: optimisation steps.
        batch_size: sequences per step.
        lr: learning rate of Adam.
        embed_dim, num_heads: the size of the model.
        positions: see :class:`InductionModel`.
        n_heldout: held-out sequences for the final measurement.
        eval_every: steps between two points of ``curve``.

    Returns:
        A :class:`TrainResult`.
    """
    check_int("seed", seed, 0)
    for name, value in (
        ("steps", steps),
        ("batch_size", batch_size),
        ("n_heldout", n_heldout),
        ("eval_every", eval_every),
    ):
        check_int(name, value, 1)
    check_positive("lr", lr)
    torch.manual_seed(seed)
    model = InductionModel(
        embed_dim=embed_dim, num_heads=num_heads, positions=positions
    )
    initial_model = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    heldout = heldout_batch(seed, n_heldout)
    probe = Batch(
        heldout.tokens[:PROBE_SIZE],
        heldout.first[:PROBE_SIZE],
        heldout.repeat[:PROBE_SIZE],
        heldout.segment_len,
    )
    # foreach: every tensor in one call, the same numbers, less Python per step
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    history: list[float] = []
    curve: dict[str, list[float]] = {
        key: []
        for key in ("step", "loss", "repeat_accuracy", "induction", "previous_token")
    }
    start, cpu_start = time.perf_counter(), time.process_time()
    with torch.enable_grad():
        for step in range(1, steps + 1):
            tokens = make_batch(batch_size, generator).tokens  # (B, T)
            logits, _ = model(tokens, need_weights=False)  # (B, T, V)
            loss = nn.functional.cross_entropy(
                logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()
            )  # position t predicts token t + 1
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            history.append(float(loss.detach()))
            if step % eval_every == 0 or step == steps:
                now = measure(model, probe)
                curve["step"].append(step)
                curve["loss"].append(history[-1])
                curve["repeat_accuracy"].append(now.repeat_accuracy)
                curve["induction"].append(float(now.induction_scores.max()))
                curve["previous_token"].append(
                    float(now.previous_token_scores[0].max())
                )
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    model.eval()
    final = measure(model, heldout)
    heads = final.induction_scores.shape[1]
    layer, head = divmod(int(final.induction_scores.argmax()), heads)
    example = Batch(
        heldout.tokens[:1], heldout.first[:1], heldout.repeat[:1], heldout.segment_len
    )
    with torch.no_grad():
        _, example_weights = model(example.tokens)
    layers, heads = final.induction_scores.shape
    ablated = torch.tensor(
        [
            [
                measure(without_head(model, n, h), heldout).repeat_accuracy
                for h in range(heads)
            ]
            for n in range(layers)
        ]
    )  # (N, H)
    forced, free, whole = free_running(
        model,
        Batch(
            heldout.tokens[:FREE_RUNNING],
            heldout.first[:FREE_RUNNING],
            heldout.repeat[:FREE_RUNNING],
            heldout.segment_len,
        ),
    )
    return TrainResult(
        model=model,
        initial_model=initial_model,
        first_accuracy=final.first_accuracy,
        repeat_accuracy=final.repeat_accuracy,
        induction_scores=final.induction_scores,
        previous_token_scores=final.previous_token_scores,
        sink_scores=final.sink_scores,
        uniform_sink=final.uniform_sink,
        induction_head=(layer, head),
        previous_token_head=(0, int(final.previous_token_scores[0].argmax())),
        history=history,
        curve=curve,
        heldout=heldout,
        example=example,
        example_weights=torch.stack(example_weights, dim=1)[0],  # (N, H, T, T)
        ablated_accuracy=ablated,
        teacher_forced=forced,
        free_running=free,
        whole_repeats=whole,
        seconds=seconds,
        cpu_seconds=cpu_seconds,
    )
