"""The Transformer encoder block, built on :mod:`qkv.attention`.

Explained in the chapter *transformer-block*. Shapes follow the legend of
:mod:`qkv.attention` (T positions, D model dimension, F feed-forward width).

The block is post-norm by default, as in Vaswani et al. (2017) and as PyTorch's
``nn.TransformerEncoderLayer`` by default:

    x = LayerNorm(x + MultiHeadAttention(x))
    x = LayerNorm(x + FeedForward(x))

and pre-norm with ``pre_norm=True`` (Xiong et al. 2020; PyTorch's
``norm_first=True``):

    x = x + MultiHeadAttention(LayerNorm(x))
    x = x + FeedForward(LayerNorm(x))

The pieces of the modern block (section "The modern block" of the chapter) are
here too: :class:`RMSNorm` (Zhang and Sennrich 2019) and :class:`SwiGLU`
(Shazeer 2020).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention
from qkv.validate import (
    check_bool,
    check_floating,
    check_int,
    check_positive,
    message,
)

__all__ = [
    "FeedForward",
    "PreNormStack",
    "RMSNorm",
    "SwiGLU",
    "TransformerBlock",
    "sinusoidal_positions",
]


def _check_features(x: Tensor, embed_dim: int) -> None:
    """Raise ``ValueError`` unless ``x`` is a floating tensor (..., D)."""
    check_floating("x", x, min_rank=1)
    if x.shape[-1] != embed_dim:
        raise ValueError(
            f"the last dim of x must be embed_dim={embed_dim}, got x {tuple(x.shape)}"
        )


def sinusoidal_positions(length: int, dim: int, base: float = 10_000.0) -> Tensor:
    """The sinusoidal positional encoding of Vaswani et al. (2017).

    Explained in the chapter *transformer-block*. Row p is the code of position p:
    ``PE[p, 2f] = sin(p / base**(2f / dim))`` and
    ``PE[p, 2f + 1] = cos(p / base**(2f / dim))``, for pair f counted from 0.

    Args:
        length: T, the number of positions.
        dim: D, the size of each code (even).
        base: the longest wavelength is ``2 * pi * base``.

    Returns:
        Tensor of shape (T, D).
    """
    length = check_int("length", length, minimum=1)
    dim = check_int("dim", dim, minimum=1)
    check_positive("base", base)
    if dim % 2:
        raise ValueError(f"dim must be even (sin and cos pairs), got dim={dim}")
    positions = torch.arange(length, dtype=torch.float32)[:, None]  # (T, 1)
    rates = torch.exp(-math.log(base) * torch.arange(0, dim, 2) / dim)  # (D/2,)
    angles = positions * rates  # (T, D/2)
    codes = torch.empty(length, dim)
    codes[:, 0::2] = torch.sin(angles)
    codes[:, 1::2] = torch.cos(angles)
    return codes


class FeedForward(nn.Module):
    """Two linear layers with a ReLU between them, applied to each position alone.

    Explained in the chapter *transformer-block*.

    Args:
        embed_dim: D, input and output size.
        ff_dim: F, the hidden size (4 D in the original Transformer).
        bias: whether the linear layers have biases.
    """

    def __init__(self, embed_dim: int, ff_dim: int, bias: bool = True) -> None:
        super().__init__()
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        ff_dim = check_int("ff_dim", ff_dim, minimum=1)
        check_bool("bias", bias)
        self.linear1 = nn.Linear(embed_dim, ff_dim, bias=bias)
        self.linear2 = nn.Linear(ff_dim, embed_dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        return self.linear2(torch.relu(self.linear1(x)))  # (..., T, F) -> (..., T, D)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation: a layer norm without the mean and the shift.

    Explained in the chapter *transformer-block* (the modern block), after Zhang
    and Sennrich (2019)::

        RMSNorm(x) = weight * x / sqrt(mean(x ** 2) + eps)

    The mean is over the last dim. Equal to ``torch.nn.RMSNorm(D, eps=eps)``
    with the same weight. It has D parameters (a layer norm has 2 D).

    Args:
        embed_dim: D, the size of each vector.
        eps: added to the mean square (a vector of zeros stays zero, not NaN).
    """

    def __init__(self, embed_dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        check_positive("eps", eps)
        self.embed_dim = embed_dim
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(embed_dim))  # (D,), the learned scale

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., D) -> (..., D)."""
        _check_features(x, self.embed_dim)
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return self.weight * x / torch.sqrt(mean_square + self.eps)


class SwiGLU(nn.Module):
    """A gated feed-forward network: SwiGLU of Shazeer (2020), no biases.

    Explained in the chapter *transformer-block* (the modern block)::

        SwiGLU(x) = (SiLU(x W_gate) * (x W_up)) W_down,  SiLU(z) = z * sigmoid(z)

    (Shazeer writes W, V and W_2.) Three weight matrices, D x F, D x F and F x D:
    3 D F parameters without biases. With
    F = 8 D / 3 it has as many as a :class:`FeedForward` of hidden size 4 D
    without biases (2 D * 4 D), as in Shazeer (2020), where D = 768, F = 2048.

    Args:
        embed_dim: D, input and output size.
        hidden_dim: F, the hidden size.
        bias: whether the linear layers have biases (Shazeer and LLaMA use none).
    """

    def __init__(self, embed_dim: int, hidden_dim: int, bias: bool = False) -> None:
        super().__init__()
        embed_dim = check_int("embed_dim", embed_dim, minimum=1)
        hidden_dim = check_int("hidden_dim", hidden_dim, minimum=1)
        self.embed_dim = embed_dim
        self.gate = nn.Linear(embed_dim, hidden_dim, bias=bias)  # W_gate
        self.up = nn.Linear(embed_dim, hidden_dim, bias=bias)  # W_up
        self.down = nn.Linear(hidden_dim, embed_dim, bias=bias)  # W_down

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        _check_features(x, self.embed_dim)
        hidden = nn.functional.silu(self.gate(x)) * self.up(x)  # (..., T, F)
        return self.down(hidden)  # (..., T, D)


class TransformerBlock(nn.Module):
    """Multi-head self-attention and a feed-forward network, each wrapped in a
    residual connection and a layer norm (post-norm, or pre-norm).

    Explained in the chapter *transformer-block*. Equal to
    ``torch.nn.TransformerEncoderLayer(D, H, F, dropout=0, batch_first=True,
    norm_first=pre_norm)`` once the weights are copied with :meth:`from_torch`.

    Args:
        embed_dim: D.
        num_heads: H; D must be divisible by H.
        ff_dim: F, the hidden size of the feed-forward network.
        bias: whether the linear layers have biases.
        eps: the epsilon of the layer norms.
        pre_norm: normalise the input of each sub-layer, ``x + f(norm(x))``,
            instead of the sum, ``norm(x + f(x))`` (the default, post-norm).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        bias: bool = True,
        eps: float = 1e-5,
        pre_norm: bool = False,
    ) -> None:
        super().__init__()
        check_positive("eps", eps)
        check_bool("pre_norm", pre_norm)
        self.pre_norm = pre_norm
        self.attention = MultiHeadAttention(embed_dim, num_heads, bias=bias)
        self.norm1 = nn.LayerNorm(embed_dim, eps=eps, bias=bias)
        self.feed_forward = FeedForward(embed_dim, ff_dim, bias=bias)
        self.norm2 = nn.LayerNorm(embed_dim, eps=eps, bias=bias)

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        check_floating("x", x, min_rank=2)
        _check_features(x, self.norm1.normalized_shape[0])  # before a norm sees it

        def attend(h: Tensor) -> Tensor:  # multi-head self-attention, (..., T, D)
            context, _ = self.attention(
                h, attn_mask=attn_mask, is_causal=is_causal, need_weights=False
            )
            return context

        if self.pre_norm:  # normalise each sub-layer's input; the sums stay raw
            x = x + attend(self.norm1(x))
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + attend(x))  # post-norm: add, then normalise
        return self.norm2(x + self.feed_forward(x))

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> TransformerBlock:
        """A new block with the weights of a ``torch.nn.TransformerEncoderLayer``.

        Pre-norm layers (``norm_first=True``) give a block with ``pre_norm=True``.

        Raises:
            ValueError: if ``layer`` does not use ReLU.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise ValueError(
                f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer)}"
            )
        if layer.activation_relu_or_gelu != 1:
            raise ValueError(f"layer must use ReLU, got {layer.activation}")
        attention = MultiHeadAttention.from_torch(layer.self_attn)
        has_bias = layer.linear1.bias is not None
        block = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            bias=has_bias,
            eps=layer.norm1.eps,
            pre_norm=bool(layer.norm_first),
        )
        block.to(dtype=layer.linear1.weight.dtype, device=layer.linear1.weight.device)
        block.attention = attention
        block.feed_forward.linear1.load_state_dict(layer.linear1.state_dict())
        block.feed_forward.linear2.load_state_dict(layer.linear2.state_dict())
        block.norm1.load_state_dict(layer.norm1.state_dict())
        block.norm2.load_state_dict(layer.norm2.state_dict())
        return block


class PreNormStack(nn.Module):
    """Pre-norm blocks, then one final norm on the output of the last.

    Explained in the chapter *transformer-block* (pre-norm, post-norm): the
    output of a pre-norm block is a plain sum, never normalised, so a pre-norm
    stack ends with one more norm, applied once (GPT-2's ``ln_f``, LLaMA's last
    RMSNorm). Equal to ``torch.nn.TransformerEncoder(layer, N, norm=final_norm)``
    with ``norm_first=True`` layers once their weights are copied into
    :class:`TransformerBlock` with :meth:`TransformerBlock.from_torch`.

    Args:
        blocks: the N blocks, each (..., T, D) -> (..., T, D), such as
            ``TransformerBlock(D, H, F, pre_norm=True)``.
        final_norm: a norm (..., T, D) -> (..., T, D), such as
            ``nn.LayerNorm(D)`` or ``RMSNorm(D)``.

    Shapes: x (..., T, D) -> (..., T, D).
    """

    def __init__(self, blocks: Sequence[nn.Module], final_norm: nn.Module) -> None:
        super().__init__()
        _check_modules(blocks, final_norm)
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = final_norm

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        check_floating("x", x, min_rank=2)
        embed_dim = _normalised_size(self.final_norm)  # D, if the norm tells it
        if embed_dim is not None:
            _check_features(x, embed_dim)
        for block in self.blocks:
            x = block(x)  # a plain sum on the path: no norm
        return self.final_norm(x)  # GPT-2's ln_f, LLaMA's last RMSNorm


def _check_modules(blocks: object, final_norm: object) -> None:
    """Raise ``ValueError`` unless ``blocks`` is a non-empty list or tuple of
    modules and ``final_norm`` a module."""
    if (
        not isinstance(blocks, (list, tuple, nn.ModuleList))
        or len(blocks) == 0
        or not all(isinstance(block, nn.Module) for block in blocks)
    ):
        got = (
            [type(block).__name__ for block in blocks]
            if isinstance(blocks, (list, tuple))
            else type(blocks).__name__
        )
        raise ValueError(
            message(
                "{name} must be a non-empty list of torch.nn.Module, got {got}",
                name="blocks",
                got=got,
            )
        )
    if not isinstance(final_norm, nn.Module):
        raise ValueError(
            message(
                "{name} must be a torch.nn.Module, got {type}",
                name="final_norm",
                type=type(final_norm).__name__,
            )
        )


def _normalised_size(norm: nn.Module) -> int | None:
    """D for a norm over the last dim of size D (:class:`RMSNorm`,
    ``nn.LayerNorm(D)``, ``nn.RMSNorm(D)``), else None."""
    if isinstance(norm, RMSNorm):
        return norm.embed_dim
    shape = getattr(norm, "normalized_shape", None)
    if isinstance(shape, tuple) and len(shape) == 1:
        return int(shape[0])
    return None
