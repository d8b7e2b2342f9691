"""The Transformer encoder block, built on :mod:`qkv.attention`.

Explained in the chapter *transformer-block*. Shapes follow the legend of
:mod:`qkv.attention` (T positions, D model dimension, F feed-forward width).

The block is post-norm, as in Vaswani et al. (2017) and as PyTorch's
``nn.TransformerEncoderLayer`` by default:

    x = LayerNorm(x + MultiHeadAttention(x))
    x = LayerNorm(x + FeedForward(x))
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Tensor, nn

from qkv.attention import MultiHeadAttention, _check_bool, _check_int

__all__ = ["FeedForward", "TransformerBlock", "sinusoidal_positions"]


def sinusoidal_positions(length: int, dim: int, base: float = 10_000.0) -> Tensor:
    """The sinusoidal positional encoding of Vaswani et al. (2017).

    Explained in the chapter *transformer-block*. Row p is the code of position p:
    ``PE[p, 2i] = sin(p / base**(2i / dim))`` and
    ``PE[p, 2i + 1] = cos(p / base**(2i / dim))``.

    Args:
        length: T, the number of positions.
        dim: D, the size of each code (even).
        base: the longest wavelength is ``2 * pi * base``.

    Returns:
        Tensor of shape (T, D).
    """
    length = _check_int("length", length, minimum=1)
    dim = _check_int("dim", dim, minimum=1)
    _check_positive("base", base)
    if dim % 2:
        raise ValueError(f"dim must be even (sin and cos pairs), got dim={dim}")
    positions = torch.arange(length, dtype=torch.float32)[:, None]  # (T, 1)
    rates = torch.exp(-math.log(base) * torch.arange(0, dim, 2) / dim)  # (D/2,)
    angles = positions * rates  # (T, D/2)
    codes = torch.empty(length, dim)
    codes[:, 0::2] = torch.sin(angles)
    codes[:, 1::2] = torch.cos(angles)
    return codes


def _check_positive(name: str, value: float) -> None:
    """Raise ``ValueError`` unless ``value`` is a finite real number > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


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
        embed_dim = _check_int("embed_dim", embed_dim, minimum=1)
        ff_dim = _check_int("ff_dim", ff_dim, minimum=1)
        _check_bool("bias", bias)
        self.linear1 = nn.Linear(embed_dim, ff_dim, bias=bias)
        self.linear2 = nn.Linear(ff_dim, embed_dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        return self.linear2(torch.relu(self.linear1(x)))  # (..., T, F) -> (..., T, D)


class TransformerBlock(nn.Module):
    """Multi-head self-attention and a feed-forward network, each wrapped in a
    residual connection and a layer norm (post-norm).

    Explained in the chapter *transformer-block*. Equal to
    ``torch.nn.TransformerEncoderLayer(D, H, F, dropout=0, batch_first=True)``
    once the weights are copied with :meth:`from_torch`.

    Args:
        embed_dim: D.
        num_heads: H; D must be divisible by H.
        ff_dim: F, the hidden size of the feed-forward network.
        bias: whether the linear layers have biases.
        eps: the epsilon of the layer norms.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        bias: bool = True,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        _check_positive("eps", eps)
        self.attention = MultiHeadAttention(embed_dim, num_heads, bias=bias)
        self.norm1 = nn.LayerNorm(embed_dim, eps=eps, bias=bias)
        self.feed_forward = FeedForward(embed_dim, ff_dim, bias=bias)
        self.norm2 = nn.LayerNorm(embed_dim, eps=eps, bias=bias)

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """x: (..., T, D) -> (..., T, D)."""
        context, _ = self.attention(
            x, attn_mask=attn_mask, is_causal=is_causal, need_weights=False
        )
        x = self.norm1(x + context)  # residual, then normalise
        return self.norm2(x + self.feed_forward(x))

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> TransformerBlock:
        """A new block with the weights of a ``torch.nn.TransformerEncoderLayer``.

        Raises:
            ValueError: if ``layer`` is pre-norm or does not use ReLU.
        """
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise ValueError(
                f"layer must be a torch.nn.TransformerEncoderLayer, got {type(layer)}"
            )
        if layer.norm_first:
            raise ValueError("layer is pre-norm (norm_first=True): not supported")
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
        )
        block.to(dtype=layer.linear1.weight.dtype, device=layer.linear1.weight.device)
        block.attention = attention
        block.feed_forward.linear1.load_state_dict(layer.linear1.state_dict())
        block.feed_forward.linear2.load_state_dict(layer.linear2.state_dict())
        block.norm1.load_state_dict(layer.norm1.state_dict())
        block.norm2.load_state_dict(layer.norm2.state_dict())
        return block
