"""A small decoder-only model that writes, trained on the book's own prose.

Explained in the chapter *writing*. Shapes: B batch, T positions, V vocabulary,
D model dimension, H heads, E = D / H head dimension, N layers.

The model is the decoder of the chapters before it, from ``qkv``'s own blocks:
token embeddings; N pre-norm :class:`qkv.transformer.TransformerBlock` whose
attention is :class:`qkv.positions.PositionalAttention` with RoPE, causal; a
final layer norm; a linear unembedding to next-token logits. :meth:`Writer.step`
runs new tokens against a :class:`qkv.cost.KVCache` per layer (the chapter
*cost-of-attention*); :func:`generate` writes with it or without it, the same
tokens either way.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.resources import files

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qkv.attention import concat_heads, split_heads
from qkv.cost import KVCache
from qkv.positions import PositionalAttention, rope
from qkv.transformer import TransformerBlock
from qkv.validate import check_generator, check_int, check_positive, check_token_ids

__all__ = [
    "CORPUS",
    "HELDOUT_SHARE",
    "SIZES",
    "LANGUAGES",
    "UNKNOWN",
    "Corpus",
    "Writer",
    "WriterResult",
    "bigram_loss",
    "corpus_digest",
    "decode",
    "encode",
    "generate",
    "heldout_loss",
    "load_corpus",
    "longest_copied_run",
    "train",
    "write",
]

#: The languages of the corpus, each a file ``prose/<language>.txt`` of qkv.
LANGUAGES = ("en", "fr")
#: The share of each language's paragraphs held out: the last ones, in the
#: book's order (the same paragraphs in both languages, which translate each
#: other: the model never reads a held-out paragraph in either language).
HELDOUT_SHARE = 0.1
#: A character seen fewer times than this in the training text is not in the
#: vocabulary: it reads as ``UNKNOWN``.
MIN_COUNT = 3
#: The one character that stands for every rare or unseen one.
UNKNOWN = "\N{REPLACEMENT CHARACTER}"


class Writer(nn.Module):
    """A decoder-only Transformer: pre-norm blocks, RoPE, causal attention.

    Explained in the chapter *writing*.

    Args:
        vocab_size: V.
        embed_dim: D.
        num_heads: H; E = D / H must be even (RoPE rotates pairs).
        num_layers: N.
        ff_dim: F, the hidden size of each block's feed-forward network.
        max_len: the longest context the model reads (its training windows).
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        ff_dim: int = 256,
        max_len: int = 128,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("num_layers", num_layers),
            ("max_len", max_len),
        ):
            check_int(name, value, minimum=1)
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, embed_dim)
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            block = TransformerBlock(embed_dim, num_heads, ff_dim, pre_norm=True)
            block.attention = PositionalAttention(embed_dim, num_heads, "rope")
            self.blocks.append(block)
        self.norm = nn.LayerNorm(embed_dim)
        self.unembedding = nn.Linear(embed_dim, vocab_size)

    def _check_tokens(self, tokens: Tensor, start: int = 0) -> None:
        vocab_size = self.token_embedding.num_embeddings
        check_token_ids("tokens", tokens, vocab_size, ("(T,)", "(B, T)"))
        if start + tokens.shape[-1] > self.max_len:
            raise ValueError(
                f"tokens must fit in max_len={self.max_len} positions, got "
                f"{tokens.shape[-1]} tokens from position {start}"
            )

    def forward(self, tokens: Tensor) -> Tensor:
        """Next-token logits: tokens (..., T) -> (..., T, V); position t scores
        the token at t + 1."""
        self._check_tokens(tokens)
        x = self.token_embedding(tokens)  # (..., T, D): the residual stream
        for block in self.blocks:
            x = block(x, is_causal=True)  # (..., T, D)
        return self.unembedding(self.norm(x))  # (..., T, V)

    def new_caches(self) -> list[KVCache]:
        """One empty :class:`qkv.cost.KVCache` per layer."""
        return [KVCache() for _ in self.blocks]

    def step(self, tokens: Tensor, caches: list[KVCache]) -> Tensor:
        """The logits of new tokens, the keys and values of the earlier ones read
        from ``caches`` (which this call extends).

        Args:
            tokens: (T,) ids of the new tokens, at the positions that follow
                those already in the caches.
            caches: one :class:`qkv.cost.KVCache` per layer, from
                :meth:`new_caches`, all holding the same positions.

        Returns:
            (T, V): the same rows :meth:`forward` gives on the whole text.
        """
        if not isinstance(caches, list) or len(caches) != len(self.blocks):
            raise ValueError(
                f"caches must be a list of {len(self.blocks)} KVCache (one per "
                f"layer), got {type(caches).__name__}"
            )
        if not isinstance(tokens, Tensor) or tokens.dim() != 1:
            got = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens)
            raise ValueError(f"tokens must be a (T,) long tensor, got {got}")
        past = 0 if caches[0].keys is None else caches[0].keys.shape[-2]
        self._check_tokens(tokens, start=past)
        length = tokens.shape[0]
        positions = torch.arange(past, past + length)  # (T,)
        # new query i (position past + i) sees the keys 0 .. past + i
        allowed = torch.ones(length, past + length, dtype=torch.bool).tril(past)
        x = self.token_embedding(tokens)  # (T, D)
        for block, cache in zip(self.blocks, caches, strict=True):
            attention, heads = block.attention, block.attention.num_heads
            h = block.norm1(x)  # (T, D)
            q = rope(split_heads(attention.W_q(h), heads), positions)  # (H, T, E)
            k = rope(split_heads(attention.W_k(h), heads), positions)  # (H, T, E)
            v = split_heads(attention.W_v(h), heads)  # (H, T, E)
            keys, values = cache.append(k, v)  # (H, past + T, E) each
            context = F.scaled_dot_product_attention(
                q, keys, values, attn_mask=allowed
            )  # (H, T, E)
            x = x + attention.W_o(concat_heads(context))  # (T, D)
            x = x + block.feed_forward(block.norm2(x))  # (T, D)
        return self.unembedding(self.norm(x))  # (T, V)


def _next_token(
    logits: Tensor, temperature: float, top_k: int | None, generator
) -> int:
    """Greedy (temperature 0) or sampled from the top_k logits / temperature."""
    if temperature == 0:
        return int(logits.argmax())
    scaled = logits / temperature  # (V,)
    if top_k is not None and top_k < scaled.shape[0]:
        threshold = scaled.topk(top_k).values[-1]
        scaled = scaled.masked_fill(scaled < threshold, float("-inf"))
    probabilities = torch.softmax(scaled, dim=-1)  # (V,)
    return int(torch.multinomial(probabilities, 1, generator=generator))


def generate(
    model: Writer,
    prompt: Tensor,
    new_tokens: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> list[int]:
    """Write ``new_tokens`` tokens after ``prompt``, one at a time.

    Explained in the chapter *writing*.

    Args:
        model: the model.
        prompt: (T,) token ids, at least one.
        new_tokens: how many tokens to write; prompt and written tokens together
            fit in ``model.max_len``.
        temperature: 0 for greedy (the most likely token each time), else the
            logits are divided by it before sampling.
        top_k: sample among the k most likely tokens only (None: all).
        generator: the random generator of the sampling (needed when
            temperature > 0).
        use_cache: run each new token against the KV cache (:meth:`Writer.step`),
            or the whole text again (:meth:`Writer.forward`): the same tokens.

    Returns:
        The ids written, ``new_tokens`` of them.
    """
    check_int("new_tokens", new_tokens, minimum=0)
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature < math.inf  # NaN fails both
    ):
        raise ValueError(
            f"temperature must be a finite number >= 0, got {temperature!r}"
        )
    if top_k is not None:
        check_int("top_k", top_k, minimum=1)
    if temperature > 0:
        check_generator("generator", generator)
    model._check_tokens(prompt)
    if prompt.dim() != 1 or prompt.shape[0] + new_tokens > model.max_len:
        raise ValueError(
            f"prompt must be (T,) with T + new_tokens <= max_len={model.max_len}, "
            f"got prompt {tuple(prompt.shape)} and new_tokens={new_tokens}"
        )
    written: list[int] = []
    with torch.no_grad():
        if use_cache:
            caches = model.new_caches()
            logits = model.step(prompt, caches)[-1]  # (V,)
        else:
            logits = model(prompt)[-1]  # (V,)
        for _ in range(new_tokens):
            token = _next_token(logits, temperature, top_k, generator)
            written.append(token)
            if len(written) == new_tokens:
                break
            if use_cache:
                logits = model.step(torch.tensor([token]), caches)[-1]
            else:
                text = torch.cat([prompt, torch.tensor(written)])
                logits = model(text)[-1]
    return written


# -- the corpus and the tokenizer ----------------------------------------------


@dataclass
class Corpus:
    """The book's prose, split: ``train[language]`` and ``heldout[language]``
    are texts (paragraphs joined by newlines); ``vocabulary[i]`` is the
    character of id ``i``, sorted, ``UNKNOWN`` first."""

    train: dict[str, str]
    heldout: dict[str, str]
    vocabulary: list[str]

    @property
    def training_text(self) -> str:
        """Every language's training text, one after the other."""
        return "\n".join(self.train[language] for language in LANGUAGES)


def _prose(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    path = files("qkv.experiments") / "prose" / f"{language}.txt"
    return path.read_text(encoding="utf-8")


def corpus_digest() -> str:
    """A hash of the corpus files: part of :func:`train`'s arguments, so that
    a refreshed corpus trains again."""
    digest = hashlib.sha256()
    for language in LANGUAGES:
        digest.update(_prose(language).encode() + b"\0")
    return digest.hexdigest()


def load_corpus() -> Corpus:
    """The corpus shipped with qkv (``qkv/experiments/prose``), split.

    Explained in the chapter *writing*. The last ``HELDOUT_SHARE`` of each
    language's paragraphs are held out; the vocabulary is every character seen
    at least ``MIN_COUNT`` times in the training text of both languages, plus
    ``UNKNOWN`` for the others.
    """
    train: dict[str, str] = {}
    heldout: dict[str, str] = {}
    for language in LANGUAGES:
        paragraphs = _prose(language).strip("\n").split("\n")
        cut = len(paragraphs) - max(1, round(HELDOUT_SHARE * len(paragraphs)))
        train[language] = "\n".join(paragraphs[:cut])
        heldout[language] = "\n".join(paragraphs[cut:])
    counts = Counter("\n".join(train.values()))
    kept = sorted(c for c, n in counts.items() if n >= MIN_COUNT and c != UNKNOWN)
    return Corpus(train, heldout, [UNKNOWN, *kept])


def encode(text: str, vocabulary: list[str]) -> Tensor:
    """Character ids, (len(text),) long; a character not in ``vocabulary``
    becomes ``UNKNOWN``'s id."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"text must be a non-empty str, got {text!r:.40}")
    ids = {c: i for i, c in enumerate(vocabulary)}
    unknown = ids[UNKNOWN]
    return torch.tensor([ids.get(c, unknown) for c in text], dtype=torch.long)


def decode(tokens: list[int] | Tensor, vocabulary: list[str]) -> str:
    """The text of character ids."""
    ids = [int(t) for t in tokens]
    if ids and not 0 <= min(ids) <= max(ids) < len(vocabulary):
        raise ValueError(
            f"tokens must be ids in [0, {len(vocabulary)}) (the vocabulary's "
            f"size), got ids from {min(ids)} to {max(ids)}"
        )
    return "".join(vocabulary[i] for i in ids)


# -- measuring -------------------------------------------------------------------


def _windows(tokens: Tensor, length: int) -> tuple[Tensor, Tensor]:
    """Inputs and targets of consecutive windows of ``length`` targets; every
    token but the first is a target once; the last window is cut off."""
    count = (len(tokens) - 1) // length
    inputs = tokens[: count * length].view(count, length)  # (B, T)
    targets = tokens[1 : count * length + 1].view(count, length)  # (B, T)
    return inputs, targets


#: How many windows :func:`heldout_loss` runs through the model at once.
EVAL_WINDOWS = 32


def heldout_loss(model: Writer, tokens: Tensor) -> float:
    """The mean cross-entropy (nats per character) of the model on ``tokens``,
    read in consecutive windows of ``model.max_len`` (each window starts
    without context, as the bigram model's every prediction does). The tokens
    after the last whole window are left out (as in :func:`bigram_loss`)."""
    inputs, targets = _windows(tokens, model.max_len)
    if len(inputs) == 0:
        raise ValueError(
            f"tokens must hold more than max_len={model.max_len} ids, got "
            f"{tuple(tokens.shape)}"
        )
    with torch.no_grad():
        # EVAL_WINDOWS windows at a time: each window's logits are the same as
        # with all of them at once, without every window's attention weights
        # (H, T, T) in memory together, twice as fast on the whole held-out text.
        parts = [model(part) for part in inputs.split(EVAL_WINDOWS)]
        logits = torch.cat(parts)  # (B, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))


def bigram_loss(
    train_tokens: Tensor, tokens: Tensor, vocab_size: int, max_len: int, k: float = 1.0
) -> float:
    """The loss of a count-based bigram model on the targets of
    :func:`heldout_loss`: P(b | a) = (count(a b) + k) / (count(a) + k V), the
    counts from ``train_tokens`` (add-k smoothing; k = 1 is add-one)."""
    check_positive("k", k)
    counts = torch.zeros(vocab_size, vocab_size)
    counts.index_put_(
        (train_tokens[:-1], train_tokens[1:]),
        torch.ones(len(train_tokens) - 1),
        accumulate=True,
    )
    log_p = torch.log((counts + k) / (counts.sum(1, keepdim=True) + k * vocab_size))
    inputs, targets = _windows(tokens, max_len)
    return float(-log_p[inputs.flatten(), targets.flatten()].mean())


def longest_copied_run(sample: str, text: str) -> str:
    """The longest run of ``sample`` that appears verbatim in ``text`` (the
    first of the longest, "" if no character of it does).

    Explained in the chapter *writing*: what a model copies from its training
    text. Two pointers: the longest run that starts at i + 1 is at least the one
    that starts at i, less its first character.
    """
    if not isinstance(sample, str) or not isinstance(text, str):
        raise ValueError(
            f"sample and text must be str, got {type(sample).__name__} and "
            f"{type(text).__name__}"
        )
    best = ""
    end = 0
    for start in range(len(sample)):
        end = max(end, start)
        while end < len(sample) and sample[start : end + 1] in text:
            end += 1
        if end - start > len(best):
            best = sample[start:end]
    return best


# -- training ----------------------------------------------------------------------


@dataclass
class WriterResult:
    """What :func:`train` returns.

    Attributes:
        model: the trained model, in eval mode.
        vocabulary: ``vocabulary[i]`` is the character of id ``i``.
        seed: the seed.
        heldout: held-out loss (nats per character) per language, and ``"all"``
            (both languages' targets together).
        bigram: the same for the add-one bigram model of the training text.
        uniform: log V, the loss of the uniform guess.
        curve: ``step``, ``train`` (the mean loss of the batches since the
            previous point) and the held-out loss of a fixed sample of each
            language's held-out text (``en``, ``fr``) along the training.
        cpu_seconds: the training loop's CPU time (``time.process_time``, one
            thread).
        parameters: the model's number of parameters.
        steps, batch_size: the training's.
    """

    model: Writer
    vocabulary: list[str]
    seed: int
    heldout: dict[str, float]
    bigram: dict[str, float]
    uniform: float
    curve: dict[str, list[float]] = field(repr=False)
    cpu_seconds: float = 0.0
    parameters: int = 0
    steps: int = 0
    batch_size: int = 0


#: The sizes of the book's model: D, H, N, F and the context.
SIZES = {
    "embed_dim": 64,
    "num_heads": 4,
    "num_layers": 2,
    "ff_dim": 128,
    "max_len": 128,
}
#: :func:`corpus_digest` of the corpus when qkv was imported.
CORPUS = corpus_digest()


def train(
    seed: int = 0,
    steps: int = 250,
    batch_size: int = 16,
    lr: float = 1e-2,
    eval_every: int = 25,
    corpus: str = CORPUS,
) -> WriterResult:
    """Train a :class:`Writer` on the book's prose, deterministically, on one
    thread.

    Explained in the chapter *writing*. Each step reads ``batch_size`` windows
    of ``max_len + 1`` characters at random places of the training text and
    minimises the cross-entropy of every next character, with AdamW (weight
    decay 0.01) and a learning rate that decays linearly to zero after a
    warm-up of ``steps // 20`` steps.

    Args:
        seed: seeds the weights and the windows.
        steps: optimisation steps.
        batch_size: windows per step.
        lr: the peak learning rate.
        eval_every: steps between two points of the curve.
        corpus: :func:`corpus_digest` of the shipped corpus (the default): as
            an argument, part of the key under which the book's build keeps
            the result, so that a refreshed corpus trains again.

    Returns:
        A :class:`WriterResult`.
    """
    check_int("seed", seed, 0)
    for name, value in (
        ("steps", steps),
        ("batch_size", batch_size),
        ("eval_every", eval_every),
    ):
        check_int(name, value, 1)
    check_positive("lr", lr)
    if corpus != corpus_digest():
        raise ValueError(
            f"corpus must be corpus_digest() of the shipped corpus, got {corpus!r:.24}"
        )
    text = load_corpus()
    vocabulary = text.vocabulary
    train_tokens = encode(text.training_text, vocabulary)  # (L,)
    heldout = {lang: encode(text.heldout[lang], vocabulary) for lang in LANGUAGES}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        model = Writer(len(vocabulary), **SIZES)
        length = model.max_len
        # the points of the curve: 8 windows of each held-out text
        probes = {lang: heldout[lang][: 8 * length + 1] for lang in LANGUAGES}
        generator = torch.Generator().manual_seed(seed)
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        other = [p for n, p in model.named_parameters() if p.dim() < 2]
        optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": 0.01},
                {"params": other, "weight_decay": 0.0},
            ],
            lr=lr,
            # foreach: every tensor in one call, the same numbers, less Python per step
            foreach=True,
        )
        warmup = max(1, steps // 20)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup))),
        )
        offsets = torch.arange(length + 1)  # (T + 1,)
        curve: dict[str, list[float]] = {k: [] for k in ("step", "train", *LANGUAGES)}
        since: list[float] = []
        cpu_start = time.process_time()
        model.train()
        with torch.enable_grad():  # also where a caller turned gradients off
            for step in range(1, steps + 1):
                starts = torch.randint(
                    len(train_tokens) - length, (batch_size,), generator=generator
                )  # (B,)
                window = train_tokens[starts[:, None] + offsets]  # (B, T + 1)
                logits = model(window[:, :-1])  # (B, T, V)
                loss = F.cross_entropy(logits.flatten(0, 1), window[:, 1:].flatten())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                since.append(float(loss.detach()))
                if step % eval_every == 0 or step == steps:
                    model.eval()
                    curve["step"].append(step)
                    curve["train"].append(sum(since) / len(since))
                    for lang in LANGUAGES:
                        curve[lang].append(heldout_loss(model, probes[lang]))
                    since = []
                    model.train()
        cpu_seconds = time.process_time() - cpu_start
        model.eval()
        both = torch.cat([heldout["en"], heldout["fr"]])
        losses, bigrams = {}, {}
        for name, tokens in (*heldout.items(), ("all", both)):
            losses[name] = heldout_loss(model, tokens)
            bigrams[name] = bigram_loss(train_tokens, tokens, len(vocabulary), length)
    finally:
        torch.set_num_threads(threads)
    return WriterResult(
        model=model,
        vocabulary=vocabulary,
        seed=seed,
        heldout=losses,
        bigram=bigrams,
        uniform=math.log(len(vocabulary)),
        curve=curve,
        cpu_seconds=cpu_seconds,
        parameters=sum(p.numel() for p in model.parameters()),
        steps=steps,
        batch_size=batch_size,
    )


def write(
    result: WriterResult,
    prompt: str,
    new_tokens: int,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int = 0,
) -> str:
    """What the trained model writes after ``prompt`` (the prompt not
    included): :func:`generate` with the KV cache, sampled from a generator
    seeded with ``seed``.

    Explained in the chapter *writing*.
    """
    tokens = encode(prompt, result.vocabulary)
    written = generate(
        result.model,
        tokens,
        new_tokens,
        temperature,
        top_k,
        torch.Generator().manual_seed(seed),
    )
    return decode(written, result.vocabulary)
