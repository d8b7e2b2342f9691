"""Scaled dot-product attention, self-attention and multi-head attention.

This module is the reference implementation the book builds up chapter by chapter,
following Vaswani et al. (2017), "Attention Is All You Need":

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Shape legend (used in every docstring and end-of-line comment below):

    ...  any number of leading batch dimensions (they broadcast)
    B    batch size
    H    number of (query) heads
    Hkv  number of key/value heads (grouped-query attention; Hkv = H by default)
    T    sequence length, where one sequence gives the queries, keys and values
    L    query length (the positions that ask)
    S    key and value length (the positions that are looked at)
    D    model (embedding) dimension
    E    feature dimension of queries and keys (per head: E = D / H)
    Ev   feature dimension of values
    bq   number of queries in one tile of ``tiled_attention``
    bk   number of keys in one tile of ``tiled_attention``

Conventions:

* Masks are boolean and ``True`` means "may attend", as in PyTorch.
* A query that may attend to nothing gets all-zero weights and a zero output,
  not the NaN of a softmax over nothing.
* A NaN or an infinity in a query, key or value is never hidden, not even by a
  mask: it reaches the output where it does in PyTorch's own
  ``scaled_dot_product_attention`` (its reference "math" backend).
* Dropout on the attention weights (``dropout_p``, ``dropout``) is off by
  default; it draws from PyTorch's global generator unless a
  ``torch.Generator`` is given, and the same seed then drops the same weights
  as PyTorch's own functions on the CPU.
* Bad input raises ``ValueError`` naming the argument and the shapes seen.
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qkv.validate import (
    broadcast_shapes,
    check_bool,
    check_floating,
    check_generator,
    check_int,
    check_probability,
    message,
)

__all__ = [
    "MultiHeadAttention",
    "SelfAttention",
    "attention_dropout",
    "causal_mask",
    "concat_heads",
    "padding_mask",
    "scaled_dot_product_attention",
    "sliding_window_mask",
    "split_heads",
    "tiled_attention",
]


def causal_mask(
    query_len: int, key_len: int | None = None, device: torch.device | None = None
) -> Tensor:
    """Boolean mask that lets position i attend to positions 0..i only.

    Explained in the chapter *masking*.

    Args:
        query_len: L, the number of query positions.
        key_len: S, the number of key positions (default: ``query_len``).
        device: where to create the mask.

    Returns:
        Bool tensor of shape (L, S), True on and below the diagonal (aligned
        top-left, as in ``torch.nn.functional.scaled_dot_product_attention``).
    """
    query_len = check_int("query_len", query_len, minimum=0)
    key_len = query_len if key_len is None else check_int("key_len", key_len, 0)
    ones = torch.ones(query_len, key_len, dtype=torch.bool, device=device)
    return ones.tril()  # (L, S)


def sliding_window_mask(
    query_len: int,
    window: int,
    key_len: int | None = None,
    device: torch.device | None = None,
) -> Tensor:
    """Causal mask that lets position i attend to the ``window`` positions
    i - window + 1, ..., i only (itself and the window - 1 before it).

    Explained in the chapter *decoders* (Mistral 7B uses one, Jiang et al. 2023).
    With ``window >= key_len`` it equals :func:`causal_mask`.

    Args:
        query_len: L, the number of query positions.
        window: w >= 1, the number of positions each query may see.
        key_len: S, the number of key positions (default: ``query_len``).
        device: where to create the mask.

    Returns:
        Bool tensor of shape (L, S), True where 0 <= i - j < window (aligned
        top-left, as :func:`causal_mask`).
    """
    query_len = check_int("query_len", query_len, minimum=0)
    window = check_int("window", window, minimum=1)
    key_len = query_len if key_len is None else check_int("key_len", key_len, 0)
    i = torch.arange(query_len, device=device)[:, None]  # (L, 1)
    j = torch.arange(key_len, device=device)[None, :]  # (1, S)
    return (j <= i) & (j > i - window)  # (L, S)


def padding_mask(lengths: Tensor | list[int], max_len: int | None = None) -> Tensor:
    """Boolean mask of the real (non-padding) positions of a padded batch.

    Explained in the chapter *masking*.

    Args:
        lengths: shape (B,), the true length of each sequence.
        max_len: S, the padded length (default: the largest length).

    Returns:
        Bool tensor of shape (B, S), True where a token is real. To mask keys,
        index it as ``mask[:, None, :]`` (single head, scores (B, L, S)) or
        ``mask[:, None, None, :]`` (multi-head, scores (B, H, L, S)).
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(
            "lengths must be a 1-D tensor of integers, "
            f"got shape {tuple(lengths.shape)} and dtype {lengths.dtype}"
        )
    if (lengths < 0).any():
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_len = longest if max_len is None else check_int("max_len", max_len, 0)
    if max_len < longest:
        raise ValueError(
            f"max_len={max_len} is shorter than the longest of lengths "
            f"{lengths.tolist()}"
        )
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    return positions[None, :] < lengths[:, None]  # (B, S)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T * scale) V, returning the output and the attention weights.

    Explained in the chapters *attention-by-hand* and *scaled-dot-product*;
    the dropout in the chapter *multi-head*.

    Args:
        query: shape (..., L, E).
        key: shape (..., S, E).
        value: shape (..., S, Ev).
        attn_mask: optional bool tensor broadcastable to (..., L, S);
            True = may attend.
        is_causal: if True, query i sees keys 0..i only (top-left aligned).
            Cannot be combined with ``attn_mask``.
        scale: factor applied to the scores (default ``1 / sqrt(E)``): a finite
            number, or a tensor with one element.
        dropout_p: the probability p, 0 <= p < 1, of dropping each weight
            after the softmax (see :func:`attention_dropout`); 0 by default.
            A function has no ``eval()`` mode: pass 0 to evaluate.
        generator: the ``torch.Generator`` the dropout draws from (default:
            PyTorch's global one, as ``torch.nn.functional``'s
            ``scaled_dot_product_attention(..., dropout_p=p)`` does).

    Returns:
        ``(output, weights)`` with output of shape (..., L, Ev) and weights of
        shape (..., L, S). Each row of weights sums to 1, except a row whose
        query may attend to nothing: its weights and output are exactly 0.
        With ``dropout_p > 0`` the weights are those after dropout, the ones
        the output was mixed with: their rows sum to 1 only on average.

    Raises:
        ValueError: on mismatched shapes or dtypes, a rank below 2, a feature
            size of 0, a non-bool or non-broadcastable mask, ``attn_mask``
            given with ``is_causal``, an ``is_causal`` that is not a bool, a
            ``scale`` that is not a finite number, a ``dropout_p`` outside
            [0, 1), or a ``generator`` that is not a ``torch.Generator``.
    """
    scores_shape = _check_qkv(query, key, value)  # (..., L, S)
    _check_options(attn_mask, is_causal, scale, scores_shape)
    dropout_p = _check_dropout("dropout_p", dropout_p, generator)
    return _attend(
        query,
        key,
        value,
        attn_mask,
        is_causal,
        scale,
        dropout_p=dropout_p,
        generator=generator,
    )


def attention_dropout(
    weights: Tensor, p: float, generator: torch.Generator | None = None
) -> Tensor:
    """Drop each attention weight with probability p, scale up the others.

    Explained in the chapter *multi-head*. A dropped weight becomes 0, so its
    key's value is left out of the mix; a kept weight w becomes w / (1 - p),
    so that each weight keeps its mean: (1 - p) * w / (1 - p) + p * 0 = w.
    The same draws as PyTorch's dropout on the CPU: with the same seed, the
    same weights are dropped.

    Args:
        weights: the attention weights after the softmax, shape (..., L, S).
        p: the probability of dropping each weight, 0 <= p < 1.
        generator: the ``torch.Generator`` to draw from (default: PyTorch's
            global one).

    Returns:
        A tensor of the shape of ``weights``; ``weights`` itself when p = 0.
    """
    check_floating("weights", weights, min_rank=1)
    p = _check_dropout("p", p, generator)
    if p == 0.0:
        return weights
    # 1 with probability 1 - p (kept), 0 with probability p (dropped)
    keep = torch.empty_like(weights).bernoulli_(1 - p, generator=generator)
    return weights * (keep / (1 - p))  # (..., L, S)


def _check_dropout(name: str, p: float, generator: torch.Generator | None) -> float:
    """``p`` as a float in [0, 1), after checking it and ``generator``."""
    if generator is not None:
        check_generator("generator", generator)
    return check_probability(name, p)


def _attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`scaled_dot_product_attention` after its checks: the scores, the
    optional mask, the softmax, the optional dropout and the mix.

    The layers below call it too, after checking their own inputs: each input
    is checked once, where it enters.
    """
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], device=query.device)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    if attn_mask is not None:
        scores = _mask_scores(scores, attn_mask)  # -inf where a key is forbidden
    weights = torch.softmax(scores, dim=-1)  # (..., L, S)
    if attn_mask is not None:
        weights = weights * attn_mask  # exact zeros, also in a row with no key
    if dropout_p > 0:  # in training only: the chapter multi-head
        weights = attention_dropout(weights, dropout_p, generator)
    output = weights @ value  # (..., L, Ev)
    return output, weights


def tiled_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    block_size: int = 64,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """Attention computed block by block with an online softmax.

    Explained in the chapter *cost-of-attention*. The idea behind FlashAttention
    (Dao et al. 2022), written for clarity: queries and keys are taken in blocks of
    ``block_size``, so no (L, S) matrix is ever held, only (block, block) tiles. For
    each query the running maximum ``w_max`` of the scores, the running sum ``ell``
    of their exponentials and the running output ``out`` (omega_max, ell and o of
    the chapter's online softmax, Milakov and Gimelshein 2018) are updated tile by
    tile, and what was accumulated is rescaled whenever the maximum grows.

    Args:
        query: shape (..., L, E).
        key: shape (..., S, E).
        value: shape (..., S, Ev).
        block_size: the tile size (>= 1); any value gives the same result.
        is_causal: if True, query i sees keys 0..i only (top-left aligned).
        scale: factor applied to the scores (default ``1 / sqrt(E)``).

    Returns:
        The output, shape (..., L, Ev), equal to that of
        :func:`scaled_dot_product_attention` (zero for a query with no key; NaN
        where a NaN input reaches it). With ``is_causal``, the tiles above the
        diagonal are never read: a NaN there reaches no earlier query.
    """
    block_size = check_int("block_size", block_size, minimum=1)
    scores_shape = _check_qkv(query, key, value)
    _check_options(None, is_causal, scale, scores_shape)
    *batch, n_queries, n_keys = scores_shape
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    output = query.new_zeros(*batch, n_queries, value.shape[-1])  # (..., L, Ev)
    for q0 in range(0, n_queries, block_size):
        q1 = min(q0 + block_size, n_queries)
        q_tile = query[..., q0:q1, :]  # (..., bq, E)
        w_max = q_tile.new_full((*batch, q1 - q0, 1), float("-inf"))  # running max
        ell = q_tile.new_zeros((*batch, q1 - q0, 1))  # running sum of exponentials
        out = q_tile.new_zeros((*batch, q1 - q0, value.shape[-1]))  # running output
        for k0 in range(0, n_keys, block_size):
            if is_causal and k0 > q1 - 1:
                break  # every later key is in the future of every query here
            k1 = min(k0 + block_size, n_keys)
            scores = (
                q_tile @ key[..., k0:k1, :].transpose(-2, -1) * scale
            )  # (..., bq, bk)
            if is_causal:
                rows = torch.arange(q0, q1, device=query.device)[:, None]
                cols = torch.arange(k0, k1, device=query.device)[None, :]
                scores = scores.masked_fill(cols > rows, float("-inf"))
            w_new = torch.maximum(w_max, scores.amax(dim=-1, keepdim=True))
            w_safe = w_new.masked_fill(w_new == float("-inf"), 0.0)
            p = torch.exp(scores - w_safe)  # (..., bq, bk), 0 where masked
            rescale = torch.exp(w_max - w_safe)  # shrink what came before
            ell = ell * rescale + p.sum(dim=-1, keepdim=True)
            out = out * rescale + p @ value[..., k0:k1, :]
            w_max = w_new
        # ell is 0 only for a query with no key (then out is 0 too); NaN stays NaN
        output[..., q0:q1, :] = out / ell.masked_fill(ell == 0, 1.0)
    return output


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> tuple[int, ...]:
    """Check query (..., L, E), key (..., S, E), value (..., S, Ev): floating,
    one dtype and device, E >= 1 and Ev >= 1 (L = 0 and S = 0 are allowed).

    Returns:
        The shape of the scores, (..., L, S), batch dims broadcast.
    """
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_floating(name, x)
    q_shape, k_shape, v_shape = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if not query.dtype == key.dtype == value.dtype:
        raise ValueError(
            message(
                "query, key and value must have the same dtype, got query {q}, "
                "key {k} and value {v}",
                q=query.dtype,
                k=key.dtype,
                v=value.dtype,
            )
        )
    if not query.device == key.device == value.device:
        raise ValueError(
            message(
                "query, key and value must be on the same device, got query {q}, "
                "key {k} and value {v}",
                q=query.device,
                k=key.device,
                v=value.device,
            )
        )
    if q_shape[-1] != k_shape[-1]:
        raise ValueError(
            message(
                "query and key must have the same feature size (last dim), got "
                "query {q} and key {k}",
                q=q_shape,
                k=k_shape,
            )
        )
    if q_shape[-1] == 0:
        raise ValueError(
            message(
                "query and key must have a feature size (last dim) of at least 1, "
                "got query {q} and key {k}",
                q=q_shape,
                k=k_shape,
            )
        )
    if v_shape[-1] == 0:
        raise ValueError(
            message(
                "value must have a feature size (last dim) of at least 1, got "
                "value {v}",
                v=v_shape,
            )
        )
    if k_shape[-2] != v_shape[-2]:
        raise ValueError(
            message(
                "key and value must have the same length (dim -2), got key {k} "
                "and value {v}",
                k=k_shape,
                v=v_shape,
            )
        )
    try:
        batch = broadcast_shapes(q_shape[:-2], k_shape[:-2], v_shape[:-2])
    except RuntimeError:
        raise ValueError(
            message(
                "the batch dims of query, key and value must broadcast, got "
                "query {q}, key {k} and value {v}",
                q=q_shape,
                k=k_shape,
                v=v_shape,
            )
        ) from None
    return (*batch, q_shape[-2], k_shape[-2])  # (..., L, S)


def _check_options(
    attn_mask: Tensor | None,
    is_causal: bool,
    scale: float | Tensor | None,
    scores_shape: tuple[int, ...],
) -> None:
    """Check the mask, ``is_causal`` and ``scale`` of an attention call."""
    check_bool("is_causal", is_causal)
    if attn_mask is not None:
        _check_mask(attn_mask, scores_shape)
        if is_causal:
            raise ValueError(
                message(
                    "give either attn_mask or is_causal=True, not both; got "
                    "attn_mask {shape} with is_causal=True",
                    shape=tuple(attn_mask.shape),
                )
            )
    if scale is None:
        return
    if isinstance(scale, Tensor):
        if scale.shape not in ((), (1,)) or not scale.is_floating_point():
            raise ValueError(
                "scale must be a number or a floating tensor of shape () or (1,), "
                f"got a tensor of shape {tuple(scale.shape)} and dtype {scale.dtype}"
            )
        finite = bool(torch.isfinite(scale).all())
    elif isinstance(scale, numbers.Real) and not isinstance(scale, bool):
        finite = math.isfinite(scale)
    else:
        raise ValueError(
            "scale must be a number (or None for 1 / sqrt(E)), got "
            f"{scale!r} of type {type(scale).__name__}"
        )
    if not finite:
        raise ValueError(f"scale must be finite, got {scale!r}")


def _check_mask(attn_mask: Tensor, scores_shape: tuple[int, ...]) -> None:
    """Raise ``ValueError`` unless ``attn_mask`` is bool and broadcasts to scores."""
    if not isinstance(attn_mask, Tensor) or attn_mask.dtype != torch.bool:
        got = attn_mask.dtype if isinstance(attn_mask, Tensor) else type(attn_mask)
        raise ValueError(
            message(
                "attn_mask must be a bool tensor (True = may attend), got {got}",
                got=got,
            )
        )
    mask_shape = tuple(attn_mask.shape)
    try:
        fits = broadcast_shapes(mask_shape, scores_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            message(
                "attn_mask of shape {mask} does not broadcast to the scores "
                "shape (..., L, S) = {scores}",
                mask=mask_shape,
                scores=scores_shape,
            )
        )


def _mask_scores(scores: Tensor, attn_mask: Tensor) -> Tensor:
    """The scores (..., L, S) with -inf where ``attn_mask`` is False.

    The -inf is added, not written, so that a NaN score stays NaN, as in
    PyTorch. A row with no allowed key would be softmax(-inf, ..., -inf) = 0/0:
    its scores become 0 instead (finite weights and gradients), and the
    ``weights * attn_mask`` after the softmax sets its weights to 0.
    """
    forbidden = torch.zeros(attn_mask.shape, dtype=scores.dtype, device=scores.device)
    forbidden = forbidden.masked_fill(~attn_mask, float("-inf"))
    scores = scores + forbidden  # (..., L, S)
    no_key = ~attn_mask.any(dim=-1, keepdim=True)  # (..., L, 1)
    return scores.masked_fill(no_key & scores.isneginf(), 0.0)


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    """Cut the feature dimension into ``num_heads`` heads.

    Explained in the chapter *multi-head*.

    Args:
        x: shape (..., T, D), with D divisible by ``num_heads``.
        num_heads: H.

    Returns:
        Shape (..., H, T, D / H): each head sees its own slice of the features.
    """
    num_heads = check_int("num_heads", num_heads, minimum=1)
    check_floating("x", x)
    *batch, length, dim = x.shape
    if dim % num_heads:
        raise ValueError(
            f"the last dim of x must be divisible by num_heads={num_heads}, "
            f"got x {tuple(x.shape)}"
        )
    x = x.reshape(*batch, length, num_heads, dim // num_heads)  # (..., T, H, E)
    return x.transpose(-3, -2)  # (..., H, T, E)


def concat_heads(x: Tensor) -> Tensor:
    """Undo :func:`split_heads`: put the heads side by side again.

    Explained in the chapter *multi-head*.

    Args:
        x: shape (..., H, T, E).

    Returns:
        Shape (..., T, H * E).
    """
    check_floating("x", x, min_rank=3)
    *batch, num_heads, length, head_dim = x.shape
    x = x.transpose(-3, -2)  # (..., T, H, E)
    return x.reshape(*batch, length, num_heads * head_dim)  # (..., T, D)


def _check_input(name: str, x: Tensor, layer: nn.Linear) -> None:
    """Raise ``ValueError`` unless ``x`` (..., T, D) fits the projection ``layer``."""
    check_floating(name, x)
    if x.shape[-1] != layer.in_features:
        raise ValueError(
            message(
                "the last dim of {name} must be embed_dim={dim}, got {name} {shape}",
                name=name,
                dim=layer.in_features,
                shape=tuple(x.shape),
            )
        )
    if x.dtype != layer.weight.dtype:
        raise ValueError(
            message(
                "{name} has dtype {dtype} but the module's weights have dtype "
                "{weights}: convert one of them, e.g. module.to({dtype})",
                name=name,
                dtype=x.dtype,
                weights=layer.weight.dtype,
            )
        )


class SelfAttention(nn.Module):
    """Single-head self-attention with trainable projections W_q, W_k and W_v.

    Explained in the chapter *self-attention*. It has 3 (D^2 + D) parameters with
    bias and 3 D^2 without; it has no output projection (see
    :class:`MultiHeadAttention` for that).

    Args:
        embed_dim: D, the size of each input vector (and of each output vector).
        bias: whether the projections have a bias.
    """

    def __init__(self, embed_dim: int, bias: bool = True) -> None:
        super().__init__()
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        check_bool("bias", bias)
        self.embed_dim = embed_dim
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_v = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Attend from every position of ``x`` to every (allowed) position of ``x``.

        Args:
            x: shape (..., T, D).
            attn_mask: optional bool mask broadcastable to (..., T, T).
            is_causal: if True, position i sees positions 0..i only.

        Returns:
            ``(output, weights)``: output (..., T, D), weights (..., T, T).
        """
        _check_input("x", x, self.W_q)
        length = x.shape[-2]
        _check_options(attn_mask, is_causal, None, (*x.shape[:-2], length, length))
        query, key, value = self.W_q(x), self.W_k(x), self.W_v(x)  # (..., T, D) each
        return _attend(query, key, value, attn_mask, is_causal)  # checked above


class MultiHeadAttention(nn.Module):
    """Multi-head attention: H heads in parallel, mixed by an output projection W_o.

    Explained in the chapter *multi-head*; grouped-query and multi-query attention
    (``num_kv_heads`` below H) in the chapter *decoders*. Inputs are batch-first,
    (..., T, D). With bias and ``num_kv_heads = H`` it has 4 (D^2 + D) parameters,
    the same as ``torch.nn.MultiheadAttention(D, H)``; copy that module's weights
    with :meth:`from_torch`.

    Grouped-query attention (Ainslie et al. 2023) keeps H query heads but only
    Hkv = ``num_kv_heads`` key/value heads: W_k and W_v map D to Hkv * E, and
    each key/value head serves H / Hkv neighbouring query heads. Query head h
    uses key/value head h // (H / Hkv), the convention of ``repeat_interleave``
    and of PyTorch's ``scaled_dot_product_attention(..., enable_gqa=True)``.
    Hkv = 1 is multi-query attention (Shazeer 2019). A decoder's KV cache
    shrinks by H / Hkv.

    With ``need_weights=False``, :meth:`forward` computes the same output with
    PyTorch's fused ``scaled_dot_product_attention``, which never holds the
    (L, S) weights: faster, and lighter on memory.

    With ``dropout`` p > 0, each attention weight is dropped with probability
    p in training mode (see :func:`attention_dropout`, chapter *multi-head*),
    as in ``torch.nn.MultiheadAttention(..., dropout=p)``; ``eval()`` turns
    it off.

    Args:
        embed_dim: D, the model dimension; must be divisible by ``num_heads``.
        num_heads: H, the number of query heads; each works in dimension
            E = D / H.
        num_kv_heads: Hkv, the number of key/value heads (default H); it must
            divide H.
        bias: whether the four projections have a bias.
        dropout: the probability p, 0 <= p < 1, of dropping each attention
            weight in training mode (default 0: no dropout).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        num_heads = check_int("num_heads", num_heads, minimum=1)
        if embed_dim % num_heads:
            raise ValueError(
                message(
                    "embed_dim={dim} must be divisible by num_heads={heads}",
                    dim=embed_dim,
                    heads=num_heads,
                )
            )
        if num_kv_heads is None:
            num_kv_heads = num_heads
        num_kv_heads = check_int("num_kv_heads", num_kv_heads, minimum=1)
        if num_kv_heads > num_heads or num_heads % num_kv_heads:
            raise ValueError(
                message(
                    "num_kv_heads={kv} must divide num_heads={heads} (every "
                    "key/value head serves the same number of query heads)",
                    kv=num_kv_heads,
                    heads=num_heads,
                )
            )
        check_bool("bias", bias)
        self.dropout = check_probability("dropout", dropout)
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = embed_dim // num_heads
        kv_dim = num_kv_heads * self.head_dim  # Hkv * E
        self.W_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.W_k = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.W_v = nn.Linear(embed_dim, kv_dim, bias=bias)
        self.W_o = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = True,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value`` (self-attention by default).

        Args:
            query: shape (..., L, D).
            key: shape (..., S, D); defaults to ``query``.
            value: shape (..., S, D); defaults to ``key``.
            attn_mask: optional bool mask broadcastable to (..., H, L, S),
                e.g. (L, S) for all heads, or ``padding_mask(...)[:, None, None, :]``.
            is_causal: if True, query i sees keys 0..i only.
            need_weights: if False, return ``None`` instead of the weights, and
                compute the same output with PyTorch's fused kernel (unless a
                ``generator`` is given: that kernel cannot take one).
            generator: the ``torch.Generator`` the dropout draws from
                (default: PyTorch's global one, as in PyTorch's module).

        Returns:
            ``(output, weights)``: output (..., L, D); weights (..., H, L, S),
            one map per query head (after dropout, in training), or None.
        """
        key = query if key is None else key
        value = key if value is None else value
        self._check_forward(
            query, key, value, attn_mask, is_causal, need_weights, generator
        )
        q = split_heads(self.W_q(query), self.num_heads)  # (..., H, L, E)
        k = split_heads(self.W_k(key), self.num_kv_heads)  # (..., Hkv, S, E)
        v = split_heads(self.W_v(value), self.num_kv_heads)  # (..., Hkv, S, E)
        if not need_weights and generator is None:  # PyTorch's fused kernel
            context = self._fused_attention(q, k, v, attn_mask, is_causal)
            return self.W_o(concat_heads(context)), None
        group = self.num_heads // self.num_kv_heads  # query heads per k/v head
        k = k.repeat_interleave(group, dim=-3)  # (..., H, S, E)
        v = v.repeat_interleave(group, dim=-3)  # (..., H, S, E)
        p = self.dropout if self.training else 0.0  # no dropout in eval()
        context, weights = self._weighted_attention(
            q, k, v, attn_mask, is_causal, p, generator
        )  # (..., H, L, E), (..., H, L, S)
        output = self.W_o(concat_heads(context))  # (..., L, D)
        return output, weights if need_weights else None

    def _fused_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None,
        is_causal: bool,
    ) -> Tensor:
        """q (..., H, L, E), k and v (..., Hkv, S, E) -> context (..., H, L, E).

        PyTorch (>= 2.5) gives a query with no allowed key a zero output, as
        :func:`scaled_dot_product_attention` does; a test checks it. Its
        dropout (in training mode only) draws from PyTorch's global generator.
        """
        return F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=is_causal,
            enable_gqa=self.num_kv_heads != self.num_heads,
        )

    def _weighted_attention(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        attn_mask: Tensor | None,
        is_causal: bool,
        dropout_p: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> tuple[Tensor, Tensor]:
        """q (..., H, L, E), k and v (..., H, S, E) -> context (..., H, L, E) and
        weights (..., H, L, S).

        :func:`scaled_dot_product_attention` without checking its inputs again:
        :meth:`_check_forward` has checked them where they entered.
        """
        return _attend(
            q, k, v, attn_mask, is_causal, dropout_p=dropout_p, generator=generator
        )

    def _check_forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: Tensor | None,
        is_causal: bool,
        need_weights: bool,
        generator: torch.Generator | None = None,
    ) -> None:
        """The checks of :meth:`forward`, done once for both of its paths."""
        _check_input("query", query, self.W_q)
        _check_input("key", key, self.W_k)
        _check_input("value", value, self.W_v)
        check_bool("need_weights", need_weights)
        if generator is not None:
            check_generator("generator", generator)
        if key.shape[-2] != value.shape[-2]:
            raise ValueError(
                "key and value must have the same length (dim -2), got "
                f"key {tuple(key.shape)} and value {tuple(value.shape)}"
            )
        try:
            batch = broadcast_shapes(
                tuple(query.shape[:-2]), tuple(key.shape[:-2]), tuple(value.shape[:-2])
            )
        except RuntimeError:
            raise ValueError(
                "the batch dims of query, key and value must broadcast, got "
                f"query {tuple(query.shape)}, key {tuple(key.shape)} and "
                f"value {tuple(value.shape)}"
            ) from None
        scores_shape = (*batch, self.num_heads, query.shape[-2], key.shape[-2])
        _check_options(attn_mask, is_causal, None, scores_shape)  # (..., H, L, S)

    @classmethod
    def from_torch(
        cls, module: nn.MultiheadAttention, num_kv_heads: int | None = None
    ) -> MultiHeadAttention:
        """A new module with the weights of a ``torch.nn.MultiheadAttention``.

        PyTorch stores W_q, W_k and W_v stacked in ``in_proj_weight`` (3D, D);
        they are split and copied, as is ``out_proj`` into W_o. The dropout
        probability and the training mode are copied too.

        Args:
            module: the PyTorch module.
            num_kv_heads: must be None or ``module.num_heads``: PyTorch's module
                has one key/value head per query head (no grouped-query attention).

        Raises:
            ValueError: if ``module`` uses features this class does not have
                (different key/value sizes, ``add_bias_kv``, ``add_zero_attn``),
                or ``num_kv_heads`` asks for grouped-query attention.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise ValueError(
                f"module must be a torch.nn.MultiheadAttention, got {type(module)}"
            )
        if num_kv_heads not in (None, module.num_heads):
            raise ValueError(
                "torch.nn.MultiheadAttention has one key/value head per query head "
                f"(num_heads={module.num_heads}): it cannot give num_kv_heads="
                f"{num_kv_heads!r}"
            )
        if not module._qkv_same_embed_dim:
            raise ValueError(
                "module has kdim/vdim different from embed_dim: got "
                f"kdim={module.kdim}, vdim={module.vdim}, embed_dim={module.embed_dim}"
            )
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("module uses add_bias_kv or add_zero_attn: not supported")
        has_bias = module.in_proj_bias is not None
        dim, heads, p = module.embed_dim, module.num_heads, module.dropout
        new = cls(dim, heads, bias=has_bias, dropout=p)
        new.train(module.training)  # dropout is on in training mode only
        new.to(dtype=module.in_proj_weight.dtype, device=module.in_proj_weight.device)
        projections = (new.W_q, new.W_k, new.W_v)
        with torch.no_grad():
            stacked = module.in_proj_weight.chunk(3)  # 3 x (D, D)
            for layer, weight in zip(projections, stacked, strict=True):
                layer.weight.copy_(weight)
            new.W_o.weight.copy_(module.out_proj.weight)
            if has_bias:
                stacked = module.in_proj_bias.chunk(3)  # 3 x (D,)
                for layer, bias in zip(projections, stacked, strict=True):
                    layer.bias.copy_(bias)
                new.W_o.bias.copy_(module.out_proj.bias)
        return new
