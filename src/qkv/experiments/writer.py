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

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from qkv.attention import concat_heads, split_heads
from qkv.cost import KVCache
from qkv.positions import PositionalAttention, rope
from qkv.transformer import TransformerBlock
from qkv.validate import check_generator, check_int

__all__ = ["Writer", "generate"]


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
        if (
            not isinstance(tokens, Tensor)
            or tokens.dtype != torch.long
            or tokens.dim() not in (1, 2)
            or tokens.shape[-1] == 0
        ):
            got = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens)
            raise ValueError(f"tokens must be a (T,) or (B, T) long tensor, got {got}")
        if start + tokens.shape[-1] > self.max_len:
            raise ValueError(
                f"tokens must fit in max_len={self.max_len} positions, got "
                f"{tokens.shape[-1]} tokens from position {start}"
            )
        if tokens.min() < 0 or tokens.max() >= vocab_size:
            raise ValueError(
                f"tokens must be ids in [0, {vocab_size}), got ids from "
                f"{int(tokens.min())} to {int(tokens.max())}"
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
    if not isinstance(temperature, (int, float)) or temperature < 0:
        raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
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
