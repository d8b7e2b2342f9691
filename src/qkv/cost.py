"""What attention costs: operation counts and the KV cache.

Explained in the chapter *cost-of-attention*. Shapes follow :mod:`qkv.attention`
(T sequence length, D model dimension, H heads, Hkv key/value heads, E head size).

Two parts:

* counts: :func:`attention_flops`, :func:`score_bytes`,
  :func:`decode_multiply_adds`, :func:`kv_cache_bytes`;
* decoding one token at a time: :class:`KVCache`, :func:`decode` (timed on the
  clock of :func:`default_clock`).

The times and peak memory the chapter measures on the machine that builds it
are in :mod:`qkv.experiments.measure`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from qkv.attention import MultiHeadAttention, concat_heads, split_heads
from qkv.language import pgettext
from qkv.validate import check_int

__all__ = [
    "DECODE_SCHEMES",
    "KVCache",
    "attention_flops",
    "decode",
    "decode_multiply_adds",
    "default_clock",
    "kv_cache_bytes",
    "scheme_label",
    "score_bytes",
]

# ---------------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------------


def attention_flops(n: int, d: int) -> int:
    """Floating-point operations of one attention head on n tokens of size d.

    Counts a multiply-add as 2 operations: Q K^T costs 2 n^2 d, the weighted sum of
    the values 2 n^2 d, and the softmax about 5 n^2 (max, subtract, exp, sum,
    divide). Projections are not included.
    """
    n = check_int("n", n, minimum=0)
    d = check_int("d", d, minimum=1)
    return 4 * n * n * d + 5 * n * n


def score_bytes(n: int, bytes_per_number: int = 4) -> int:
    """Memory of one (n, n) matrix of scores (float32 by default)."""
    n = check_int("n", n, minimum=0)
    bytes_per_number = check_int("bytes_per_number", bytes_per_number, minimum=1)
    return n * n * bytes_per_number


#: The three ways :func:`decode` computes a step, from the most work to the least.
DECODE_SCHEMES = ("recompute", "reproject", "cache")


def _check_scheme(scheme: str) -> None:
    if scheme not in DECODE_SCHEMES:
        raise ValueError(f"scheme must be one of {DECODE_SCHEMES}, got {scheme!r}")


def scheme_label(scheme: str) -> str:
    """The name of ``scheme`` (one of :data:`DECODE_SCHEMES`) a table or a
    figure shows, in the current language (:func:`qkv.set_language`): the
    key itself in English, ``"recalculer"`` for ``"recompute"`` in French.

    Raises:
        ValueError: if ``scheme`` is not one of :data:`DECODE_SCHEMES`.
    """
    _check_scheme(scheme)
    if scheme == "recompute":
        return pgettext("decode scheme", "recompute")
    if scheme == "reproject":
        return pgettext("decode scheme", "reproject")
    return pgettext("decode scheme", "cache")


def decode_multiply_adds(
    length: int, embed_dim: int, scheme: str, kv_dim: int | None = None
) -> dict[str, int]:
    """Multiply-adds of one step of :func:`decode`, by kind.

    Explained in the chapter *cost-of-attention*. The step is the one at which the
    prefix holds ``length`` tokens, the new one included: its query attends to
    ``length`` keys. One layer of :class:`~qkv.MultiHeadAttention` of width D:
    the counts do not depend on the number of heads (H heads of size E = D / H).

    * ``"recompute"``: the layer runs on the whole prefix with a causal mask.
      Every token is projected again (queries, keys, values and W_o: 4 T D^2) and
      query i is compared with its i allowed keys (T (T + 1) / 2 pairs).
    * ``"reproject"``: one query, but the keys and values of the whole prefix are
      projected again (2 T D Dkv + 2 D^2); T pairs.
    * ``"cache"``: one query, one key, one value (2 D^2 + 2 D Dkv); the other keys
      and values come from the cache; T pairs.

    A pair costs D multiply-adds for its score (E in each of H heads) and D for
    its share of the weighted sum of the values. The softmax (a few operations per
    pair) and the biases are not counted.

    Args:
        length: T >= 1, the number of tokens the new query attends to.
        embed_dim: D.
        scheme: one of :data:`DECODE_SCHEMES`.
        kv_dim: Dkv = Hkv * E, the width of the keys and values (default D;
            smaller with grouped-query attention).

    Returns:
        ``{"projections": ..., "scores": ..., "weighted sum": ...}``.
    """
    length = check_int("length", length, minimum=1)
    dim = check_int("embed_dim", embed_dim, minimum=1)
    kv_dim = dim if kv_dim is None else check_int("kv_dim", kv_dim, minimum=1)
    _check_scheme(scheme)
    queries = length if scheme == "recompute" else 1  # rows through W_q and W_o
    projected = 1 if scheme == "cache" else length  # rows through W_k and W_v
    pairs = length * (length + 1) // 2 if scheme == "recompute" else length
    return {
        "projections": 2 * queries * dim * dim + 2 * projected * dim * kv_dim,
        "scores": pairs * dim,
        "weighted sum": pairs * dim,
    }


def kv_cache_bytes(
    n_tokens: int, num_layers: int, kv_dim: int, bytes_per_number: int = 4
) -> int:
    """Memory of a KV cache: a key and a value of size ``kv_dim`` (Hkv * E) per
    token and per layer, float32 by default.

    Explained in the chapter *cost-of-attention*.
    """
    n_tokens = check_int("n_tokens", n_tokens, minimum=0)
    num_layers = check_int("num_layers", num_layers, minimum=1)
    kv_dim = check_int("kv_dim", kv_dim, minimum=1)
    bytes_per_number = check_int("bytes_per_number", bytes_per_number, minimum=1)
    return 2 * n_tokens * num_layers * kv_dim * bytes_per_number


# ---------------------------------------------------------------------------
# The clock
# ---------------------------------------------------------------------------


def _clock_tick(clock: Callable[[], float], budget: float = 0.05) -> float:
    """The smallest step of ``clock`` seen within ``budget`` seconds of wall time
    (infinity if it never moved)."""
    smallest = math.inf
    deadline = time.perf_counter() + budget
    last = clock()
    while time.perf_counter() < deadline:
        now = clock()
        if now != last:
            smallest = min(smallest, now - last)
            last = now
            if smallest <= 1e-5:
                break  # fine enough: no need to look further
    return smallest


@functools.cache
def default_clock() -> Callable[[], float]:
    """The clock :func:`decode` and :mod:`qkv.experiments.measure` use by default: the
    CPU time of this process (``time.process_time``) where the system measures it
    in steps of at most 0.1 ms (Linux, macOS), else the wall clock
    (``time.perf_counter``; Windows counts CPU time in steps of about 16 ms, too
    coarse for calls of a millisecond)."""
    if _clock_tick(time.process_time) <= 1e-4:
        return time.process_time
    return time.perf_counter


# ---------------------------------------------------------------------------
# Decoding one token at a time
# ---------------------------------------------------------------------------


class KVCache:
    """The keys and values of the tokens generated so far, for one layer.

    Explained in the chapter *cost-of-attention*. Each step appends one position;
    ``torch.cat`` copies the whole cache to do so (real decoders write into a
    buffer allocated in advance).
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (Hkv, t, E)
        self.values: Tensor | None = None  # (Hkv, t, E)

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new position's (Hkv, 1, E) key and value; return all of them."""
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
        return self.keys, self.values


def _check_decode(layer: MultiHeadAttention, inputs: Tensor, scheme: str) -> None:
    """Raise ``ValueError`` unless :func:`decode` can run ``layer`` on ``inputs``."""
    if not isinstance(layer, MultiHeadAttention):
        raise ValueError(
            f"layer must be a qkv.MultiHeadAttention, got {type(layer).__name__}"
        )
    if not isinstance(inputs, Tensor) or inputs.dim() != 2:
        shape = tuple(inputs.shape) if isinstance(inputs, Tensor) else type(inputs)
        raise ValueError(f"inputs must be a (T, D) tensor, got {shape}")
    if inputs.shape[1] != layer.embed_dim:
        raise ValueError(
            f"inputs must have D = embed_dim = {layer.embed_dim} features, "
            f"got inputs {tuple(inputs.shape)}"
        )
    _check_scheme(scheme)


def decode(
    layer: MultiHeadAttention,
    inputs: Tensor,
    scheme: str = "cache",
    clock: Callable[[], float] | None = None,
) -> tuple[Tensor, list[float]]:
    """Causal self-attention over ``inputs`` one position at a time, as a decoder
    generating text does, computing each step by one of three schemes.

    Explained in the chapter *cost-of-attention*. Every scheme gives the same
    outputs, and all three run attention in PyTorch's fused kernel
    (``scaled_dot_product_attention``): they differ only in what they compute
    again at each step (counted by :func:`decode_multiply_adds`).

    Args:
        layer: the attention layer.
        inputs: shape (T, D), the vectors of the tokens, arriving one per step.
        scheme: ``"recompute"`` runs the layer on the whole prefix at each step,
            every query of it included (a stack of layers without a cache must:
            past positions' outputs are the next layer's inputs);
            ``"reproject"`` computes the new query only, but projects the keys
            and values of the whole prefix again (enough for one layer);
            ``"cache"`` projects the new token only and keeps keys and values in
            a :class:`KVCache`.
        clock: seconds, read before and after each step (default:
            :func:`default_clock`, the CPU time of this process).

    Returns:
        ``(outputs, seconds)``: the output at each step, (T, D), and the time
        each step took.
    """
    _check_decode(layer, inputs, scheme)
    clock = clock or default_clock()
    heads, kv_heads = layer.num_heads, layer.num_kv_heads
    cache = KVCache()
    outputs, seconds = [], []
    with torch.no_grad():
        for t in range(inputs.shape[0]):
            start = clock()
            if scheme == "recompute":  # every row of the prefix, again
                prefix = inputs[: t + 1]  # (t + 1, D)
                out = layer(prefix, is_causal=True, need_weights=False)[0][-1]
            elif scheme == "reproject":  # one query; the prefix's keys and values
                new, prefix = inputs[t : t + 1], inputs[: t + 1]  # (1, D), (t + 1, D)
                out = layer(new, prefix, need_weights=False)[0][0]
            else:  # one query, one key, one value; the rest from the cache
                x = inputs[t : t + 1]  # (1, D): only the new token
                q = split_heads(layer.W_q(x), heads)  # (H, 1, E)
                keys, values = cache.append(
                    split_heads(layer.W_k(x), kv_heads),
                    split_heads(layer.W_v(x), kv_heads),
                )  # (Hkv, t + 1, E) each
                context = F.scaled_dot_product_attention(
                    q, keys, values, enable_gqa=kv_heads != heads
                )  # (H, 1, E)
                out = layer.W_o(concat_heads(context))[0]  # (D,)
            seconds.append(clock() - start)
            outputs.append(out)
    return torch.stack(outputs), seconds
