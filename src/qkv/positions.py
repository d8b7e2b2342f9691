"""How attention learns word order: sinusoidal, learned, rotary (RoPE) and ALiBi.

Explained in the chapter *positions*. Attention alone is blind to order (the
chapter *self-attention* shows it is permutation equivariant), so every Transformer
adds position information somewhere:

* **absolute codes** added to the token vectors before the first layer: the
  sinusoidal codes of Vaswani et al. (2017),
  :func:`qkv.transformer.sinusoidal_positions`, or a learned table,
  ``torch.nn.Embedding(max_len, D)``;
* **RoPE** (Su et al. 2021, RoFormer), :func:`rope`: queries and keys are rotated by
  an angle proportional to their position, so that their dot product depends on
  the offset between them only;
* **ALiBi** (Press et al. 2022), :func:`alibi_bias`: no code at all, a penalty
  proportional to the distance is added to each score.

:func:`qkv.experiments.positions.extrapolation` trains one small model per choice
on short sequences and tests it on sequences twice as long.

Shape legend (as in :mod:`qkv.attention`):

    ...  any number of leading batch dimensions
    B    batch size
    H    number of heads
    T    sequence length (L queries and S keys when they differ)
    D    model dimension
    E    feature dimension of queries and keys (per head), even for RoPE
    C    number of classes a model predicts at each position
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from qkv.attention import (
    MultiHeadAttention,
    concat_heads,
    split_heads,
)
from qkv.transformer import sinusoidal_positions
from qkv.validate import broadcast_shapes, check_int, check_positive

__all__ = [
    "ENCODINGS",
    "PositionalAttention",
    "alibi_bias",
    "alibi_slopes",
    "fit_rope_offset",
    "rope",
    "rope_scores",
    "sinusoidal_similarity",
]

#: The position encodings :func:`qkv.experiments.positions.extrapolation`
#: compares, in the order of its table.
ENCODINGS = ("none", "learned", "sinusoidal", "rope", "alibi")


def _as_positions(name: str, positions: Tensor | list | range) -> Tensor:
    """``positions`` as a real tensor of rank >= 1, or a ValueError."""
    positions = torch.as_tensor(positions)
    if positions.dtype == torch.bool or positions.is_complex() or positions.dim() < 1:
        raise ValueError(
            f"{name} must be integers or floats of rank >= 1, got shape "
            f"{tuple(positions.shape)} and dtype {positions.dtype}"
        )
    if positions.is_floating_point() and not torch.isfinite(positions).all():
        raise ValueError(f"{name} must be finite, got {positions.tolist()}")
    return positions


def _rotation_angles(positions: Tensor, dim: int, base: float) -> Tensor:
    """Angle ``p * base**(-2f / dim)`` of each position p and pair f: (..., T, E/2).

    The rates are those of :func:`qkv.transformer.sinusoidal_positions`. They are
    computed in float64 so that a rotation by a large position stays exact enough
    for the offset property to hold to float32 precision.
    """
    pairs = torch.arange(0, dim, 2, dtype=torch.float64, device=positions.device)
    rates = torch.exp(-math.log(base) * pairs / dim)  # (E/2,)
    return positions.to(torch.float64)[..., None] * rates  # (..., T, E/2)


def rope(
    x: Tensor,
    positions: Tensor | list | range,
    base: float = 10_000.0,
    interleaved: bool = True,
) -> Tensor:
    """Rotary position embedding (RoPE) of Su et al. (2021).

    Explained in the chapter *positions*. The features of ``x`` are taken in pairs;
    pair f of the vector at position p (counted from 0, as the code counts) is a
    point in the plane, rotated by the angle ``p * theta_f`` with
    ``theta_f = base**(-2f / E)`` (the frequencies of the sinusoidal code).
    Applied to queries and keys, it makes their dot product a function of the
    offset between them only:
    ``rope(q, p) . rope(k, p') = q . R(p' - p) k`` with R a rotation.

    Pairs: by default ``(x0, x1), (x2, x3), ...`` (interleaved), as in the paper's
    block-diagonal rotation matrix and as the (sin, cos) pairs of
    :func:`qkv.transformer.sinusoidal_positions`, so the formula on the page is the
    code. ``interleaved=False`` pairs feature c with feature c + E/2 (the
    "rotate_half" layout of GPT-NeoX and Llama, which slices two contiguous halves
    instead of every other feature). The two are the same rotation of permuted
    features: a model trained from scratch cannot tell them apart, but weights
    trained with one layout need the same layout.

    Args:
        x: shape (..., T, E), E even: queries or keys (e.g. (B, H, T, E)).
        positions: the position of each of the T vectors, shape (T,) or any shape
            (..., T) that broadcasts against ``x.shape[:-1]``; integers or floats
            (a fractional position is allowed, as position interpolation uses).
        base: sets the slowest rotation, ``theta = base**(-(E - 2) / E)``.
        interleaved: the pair layout (see above).

    Returns:
        Tensor of the shape and dtype of ``x``: every pair rotated. Norms are
        unchanged.

    Raises:
        ValueError: if ``x`` is not a floating tensor of rank >= 2 with an even
            last dimension, or ``positions`` does not have T entries along its last
            dimension or does not broadcast against ``x``.
    """
    if not isinstance(x, Tensor) or not x.is_floating_point() or x.dim() < 2:
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating tensor of shape (..., T, E), got {got}")
    length, dim = x.shape[-2:]
    if dim % 2:
        raise ValueError(
            f"x must have an even last dimension E (pairs of features), "
            f"got x {tuple(x.shape)}"
        )
    check_positive("base", base)
    positions = _as_positions("positions", positions).to(x.device)
    try:
        fits = positions.shape[-1] == length and broadcast_shapes(
            tuple(positions.shape), tuple(x.shape[:-1])
        ) == tuple(x.shape[:-1])
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"positions must have shape (T,) or (..., T) broadcasting against "
            f"x.shape[:-1] = {tuple(x.shape[:-1])}, got positions "
            f"{tuple(positions.shape)}"
        )
    return _rotate(x, positions, base, interleaved)


def _rotate(x: Tensor, positions: Tensor, base: float, interleaved: bool) -> Tensor:
    """:func:`rope` after its checks: x (..., T, E), positions (..., T)."""
    dim = x.shape[-1]
    angles = _rotation_angles(positions, dim, base)  # (..., T, E/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, E/2) each: the pairs
    else:
        x1, x2 = x[..., : dim // 2], x[..., dim // 2 :]
    rotated = (x1 * cos - x2 * sin, x1 * sin + x2 * cos)  # the 2 x 2 rotation
    if interleaved:
        return torch.stack(rotated, dim=-1).flatten(-2)  # (..., T, E)
    return torch.cat(rotated, dim=-1)  # (..., T, E)


def alibi_slopes(num_heads: int) -> Tensor:
    """The head-specific slopes m of ALiBi (Press et al. 2022).

    Explained in the chapter *positions*. For H a power of two the slopes are the
    geometric sequence ``2**(-8 h / H)``, h = 1..H (1/2, 1/4, ..., 1/256 for
    H = 8). For other H, as in the authors' reference code: the H' slopes of the
    largest power of two H' < H, then every other slope of 2 H' heads (the ones
    that fall between them) until there are H.

    Args:
        num_heads: H.

    Returns:
        Float tensor of shape (H,), decreasing within each of the two groups.
    """
    check_int("num_heads", num_heads, 1)

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    power = 2 ** int(math.log2(num_heads))  # largest power of two <= H
    slopes = geometric(power) + geometric(2 * power)[0::2][: num_heads - power]
    return torch.tensor(slopes)


def alibi_bias(num_heads: int, query_len: int, key_len: int) -> Tensor:
    """The ALiBi bias added to the attention scores (Press et al. 2022).

    Explained in the chapter *positions*. Head h adds ``-m_h * (i - j)`` to the
    score of the query at position i and the key at position j, a penalty growing
    with the distance, with the slopes m of :func:`alibi_slopes`. ALiBi is defined
    for causal attention: a key after its query gets ``-inf``, so that the bias
    alone is a causal mask as well, and no query is ever left without a key.

    Alignment: bottom-right. The last query is aligned with the last key, as when
    a decoder with a KV cache computes the L newest positions against all S cached
    ones: query i stands at position ``S - L + i``. With L = S it is the usual
    square matrix. (:func:`qkv.causal_mask` aligns top-left, as PyTorch does;
    the two agree when L = S.)

    Args:
        num_heads: H.
        query_len: L, at most ``key_len``.
        key_len: S.

    Returns:
        Float tensor of shape (H, L, S) to add to scores of shape (..., H, L, S):
        0 on the diagonal, ``-m_h * distance`` below it, ``-inf`` above it.
    """
    check_int("num_heads", num_heads, 1)
    check_int("query_len", query_len, 0)
    check_int("key_len", key_len, 0)
    if query_len > key_len:
        raise ValueError(
            f"query_len={query_len} must be at most key_len={key_len}: the last "
            "query is aligned with the last key"
        )
    query_positions = torch.arange(key_len - query_len, key_len)  # (L,)
    distance = query_positions[:, None] - torch.arange(key_len)[None, :]  # (L, S)
    bias = -alibi_slopes(num_heads)[:, None, None] * distance  # (H, L, S)
    return bias.masked_fill(distance < 0, float("-inf"))


def sinusoidal_similarity(
    offsets: Tensor | list | range,
    dim: int,
    position: int | None = None,
    base: float = 10_000.0,
) -> Tensor:
    """Dot product of the sinusoidal codes of positions p and p + k, for each k.

    Explained in the chapter *positions*. It equals ``sum_f cos(k * theta_f)``:
    it depends on the offset k only (not on p), and it is the same for +k and -k.
    Compared with each other, two codes say how far apart two positions are, not
    which comes first.

    Args:
        offsets: the offsets k, shape (K,), integers.
        dim: D, the size of the codes (even).
        position: p; default the smallest p with ``p + k >= 0`` for every k.
        base: as in :func:`qkv.transformer.sinusoidal_positions`.

    Returns:
        Tensor of shape (K,): ``PE[p] . PE[p + k]``.
    """
    offsets = _as_positions("offsets", offsets)
    if offsets.dim() != 1 or offsets.is_floating_point():
        raise ValueError(
            f"offsets must be a 1-D tensor of integers, got shape "
            f"{tuple(offsets.shape)} and dtype {offsets.dtype}"
        )
    lowest = int(offsets.min()) if len(offsets) else 0
    position = max(0, -lowest) if position is None else position
    check_int("position", position, 0)
    if position + lowest < 0:
        raise ValueError(
            f"position + offset must be >= 0, got position={position} and the "
            f"offset {lowest}"
        )
    highest = int(offsets.max()) if len(offsets) else 0
    codes = sinusoidal_positions(position + max(highest, 0) + 1, dim, base)  # (P, D)
    return codes[position + offsets] @ codes[position]  # (K,)


def rope_scores(
    query: Tensor,
    key: Tensor,
    offsets: Tensor | list | range,
    position: float = 0,
    base: float = 10_000.0,
) -> Tensor:
    """Score of a rotated query at position p with a rotated key at p + k.

    Explained in the chapter *positions*: ``rope(q, p) . rope(k, p + k)``, a
    function of the offset k only. Unlike :func:`sinusoidal_similarity` it is not
    symmetric in k unless ``query`` and ``key`` point the same way in every
    pair: a query can look three places back and not three places ahead.

    Args:
        query: shape (E,), E even.
        key: shape (E,).
        offsets: the offsets k, shape (K,).
        position: p.
        base: as in :func:`rope`.

    Returns:
        Tensor of shape (K,).
    """
    for name, vector in (("query", query), ("key", key)):
        if not isinstance(vector, Tensor) or vector.dim() != 1:
            got = tuple(vector.shape) if isinstance(vector, Tensor) else type(vector)
            raise ValueError(f"{name} must be a 1-D tensor (E,), got {got}")
    if query.shape != key.shape:
        raise ValueError(
            f"query and key must have the same shape, got {tuple(query.shape)} "
            f"and {tuple(key.shape)}"
        )
    offsets = _as_positions("offsets", offsets)
    if offsets.dim() != 1:
        raise ValueError(f"offsets must be 1-D, got shape {tuple(offsets.shape)}")
    rotated_query = rope(query[None, :], [position], base)  # (1, E)
    key_positions = position + offsets.to(torch.float64)  # (K,)
    rotated_keys = rope(key.expand(len(offsets), -1), key_positions, base)  # (K, E)
    return rotated_keys @ rotated_query[0]  # (K,)


def fit_rope_offset(
    target: int = -3,
    dim: int = 8,
    max_offset: int = 8,
    steps: int = 200,
    seed: int = 0,
    base: float = 10_000.0,
) -> tuple[Tensor, Tensor]:
    """Learn a query and a key whose RoPE score picks out one offset.

    Explained in the chapter *positions*. A softmax over the keys at offsets
    ``-max_offset .. max_offset`` (scores from :func:`rope_scores`) is trained by
    gradient descent to put its weight on ``target``; with ``target = -3`` the
    query learns to look three places back, which a symmetric score such as
    :func:`sinusoidal_similarity` cannot do.

    Args:
        target: the offset to pick out, in ``[-max_offset, max_offset]``.
        dim: E, the size of the query and key (even).
        max_offset: the offsets compared.
        steps: optimisation steps (Adam, learning rate 0.1).
        seed: seeds the initial query and key.
        base: as in :func:`rope`.

    Returns:
        ``(query, key)``, each of shape (E,), detached.
    """
    check_int("max_offset", max_offset, 1)
    check_int("steps", steps, 1)
    check_int("dim", dim, 2)
    if isinstance(target, bool) or not isinstance(target, int):
        raise ValueError(f"target must be an int, got {target!r}")
    if abs(target) > max_offset:
        raise ValueError(f"target={target} must be within max_offset={max_offset}")
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(dim, generator=generator).requires_grad_()
    key = torch.randn(dim, generator=generator).requires_grad_()
    offsets = torch.arange(-max_offset, max_offset + 1)  # (K,)
    label = torch.tensor([target + max_offset])
    optimizer = torch.optim.Adam([query, key], lr=0.1)
    with torch.enable_grad():
        for _ in range(steps):
            scores = rope_scores(query, key, offsets, base=base)  # (K,)
            loss = nn.functional.cross_entropy(scores[None, :], label)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return query.detach(), key.detach()


class PositionalAttention(MultiHeadAttention):
    """Multi-head attention that adds RoPE or ALiBi inside, between the
    projections and the scores.

    Explained in the chapter *positions*. With ``encoding`` "rope", queries and
    keys are rotated by :func:`rope` after W_q and W_k (the values are not); with
    "alibi", :func:`alibi_bias` is added to the scores. Any other encoding works
    outside attention (codes added to the inputs, or nothing), and the module is
    exactly :class:`qkv.MultiHeadAttention`. It drops into
    :class:`qkv.transformer.TransformerBlock` in place of its attention.

    Args:
        embed_dim: D.
        num_heads: H; with RoPE, E = D / H must be even.
        encoding: one of :data:`ENCODINGS`.
        bias: whether the four projections have a bias.
    """

    def __init__(
        self, embed_dim: int, num_heads: int, encoding: str, bias: bool = True
    ) -> None:
        super().__init__(embed_dim, num_heads, bias=bias)
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        if encoding == "rope" and self.head_dim % 2:
            raise ValueError(
                f"RoPE needs an even head dimension, got embed_dim={embed_dim} / "
                f"num_heads={num_heads} = {self.head_dim}"
            )
        self.encoding = encoding

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = True,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention over ``query`` of shape (..., T, D).

        Same arguments and returns as :meth:`qkv.MultiHeadAttention.forward`. With
        RoPE or ALiBi it is self-attention only (positions 0..T-1 for queries and
        keys), and ALiBi needs ``is_causal=True`` and no ``attn_mask``.
        """
        if self.encoding not in ("rope", "alibi"):
            return super().forward(
                query, key, value, attn_mask, is_causal, need_weights
            )
        if key is not None or value is not None:
            raise ValueError(f"{self.encoding} attention here is self-attention only")
        self._check_forward(query, query, query, attn_mask, is_causal, need_weights)
        if self.encoding == "alibi" and (attn_mask is not None or not is_causal):
            raise ValueError(
                "ALiBi is causal: call with is_causal=True and no attn_mask, got "
                f"is_causal={is_causal} and attn_mask "
                f"{None if attn_mask is None else tuple(attn_mask.shape)}"
            )
        x = query
        heads, length = self.num_heads, x.shape[-2]
        q = split_heads(self.W_q(x), heads)  # (..., H, T, E)
        k = split_heads(self.W_k(x), heads)  # (..., H, T, E)
        v = split_heads(self.W_v(x), heads)  # (..., H, T, E)
        if self.encoding == "rope":
            positions = torch.arange(length, device=x.device)  # (T,)
            q = _rotate(q, positions, 10_000.0, interleaved=True)  # as rope(q, ...)
            k = _rotate(k, positions, 10_000.0, interleaved=True)  # as rope(k, ...)
            context, weights = self._weighted_attention(
                q, k, v, attn_mask, is_causal
            )  # (..., H, T, E), (..., H, T, T); inputs checked above
        else:
            # scaled_dot_product_attention takes boolean masks only: add the
            # bias here. Its -inf above the diagonal is the causal mask.
            bias = alibi_bias(heads, length, length).to(x.device, x.dtype)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + bias
            weights = torch.softmax(scores, dim=-1)  # (..., H, T, T)
            context = weights @ v  # (..., H, T, E)
        output = self.W_o(concat_heads(context))  # (..., T, D)
        return output, (weights if need_weights else None)
