"""Argument checks shared by every module of :mod:`qkv`.

The book's contract for bad input (see :mod:`qkv.attention`): a ``ValueError``
that names the argument and the value or shapes seen, never a silent wrong result.
Each module checks its inputs with these functions, once, where they enter.

The messages follow :func:`qkv.set_language` (the French edition): each is
written from :data:`MESSAGES`, an en/fr table; argument names, values and
types stay as Python writes them.
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import Generator, Tensor

from qkv.language import gettext as _

__all__ = [
    "broadcast_shapes",
    "check_bool",
    "check_floating",
    "check_generator",
    "check_index",
    "check_int",
    "check_positive",
    "check_probability",
    "check_token_ids",
    "message",
]


def message(english: str, **values: object) -> str:
    """The message ``english`` in the current language, filled with ``values``
    (a key missing from :data:`MESSAGES` raises ``LookupError``)."""
    return _(english).format(**values)


def check_int(name: str, value: int, minimum: int) -> int:
    """Return ``value`` as an int; raise ``ValueError`` unless it is an integer
    (not a bool, a float or a tensor) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            message(
                "{name} must be an int >= {minimum}, got {value} of type {type}",
                name=name,
                minimum=minimum,
                value=repr(value),
                type=type(value).__name__,
            )
        )
    if value < minimum:
        raise ValueError(
            message(
                "{name} must be an int >= {minimum}, got {value}",
                name=name,
                minimum=minimum,
                value=repr(value),
            )
        )
    return int(value)


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float; raise ``ValueError`` unless it is a finite real
    number > 0 (not a bool, a NaN or an infinity)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(
            message(
                "{name} must be a finite number > 0, got {value}",
                name=name,
                value=repr(value),
            )
        )
    return float(value)


def check_probability(name: str, value: float) -> float:
    """Return ``value`` as a float; raise ``ValueError`` unless it is a real number
    p with 0 <= p < 1 (a dropout probability: p = 1 would drop everything and
    divide by 1 - p = 0)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 <= value < 1  # False for NaN too
    ):
        raise ValueError(
            message(
                "{name} must be a probability p with 0 <= p < 1, got {value}",
                name=name,
                value=repr(value),
            )
        )
    return float(value)


def check_bool(name: str, value: bool) -> None:
    """Raise ``ValueError`` unless ``value`` is True or False (``"no"`` is not)."""
    if not isinstance(value, bool):
        raise ValueError(
            message(
                "{name} must be True or False, got {value} of type {type}",
                name=name,
                value=repr(value),
                type=type(value).__name__,
            )
        )


def check_floating(name: str, x: Tensor, min_rank: int = 2) -> None:
    """Raise ``ValueError`` unless ``x`` is a floating tensor of rank >= min_rank."""
    if not isinstance(x, Tensor):
        raise ValueError(
            message(
                "{name} must be a torch.Tensor, got {type}",
                name=name,
                type=type(x).__name__,
            )
        )
    if x.dim() < min_rank:
        raise ValueError(
            message(
                "{name} must have at least {rank} dimensions, got shape {shape}",
                name=name,
                rank=min_rank,
                shape=tuple(x.shape),
            )
        )
    if not x.is_floating_point():
        raise ValueError(
            message(
                "{name} must be a floating tensor, got dtype {dtype}",
                name=name,
                dtype=x.dtype,
            )
        )


def check_generator(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a ``torch.Generator``: a seed given
    as an int, or None (PyTorch's global generator), would make the draw
    irreproducible or fail deep inside torch."""
    if not isinstance(value, Generator):
        raise ValueError(
            message(
                "{name} must be a torch.Generator (for example "
                "torch.Generator().manual_seed(0)), got {value} of type {type}",
                name=name,
                value=repr(value),
                type=type(value).__name__,
            )
        )


def check_index(name: str, value: int, size: int) -> int:
    """Return ``value`` as an int; ``ValueError`` unless it is an int in 0..size-1."""
    value = check_int(name, value, minimum=0)
    if value >= size:
        raise ValueError(
            message(
                "{name} must be an int in 0..{last}, got {value}",
                name=name,
                last=size - 1,
                value=value,
            )
        )
    return value


def check_token_ids(
    name: str, tokens: Tensor, vocab_size: int, shapes: tuple[str, ...] = ("(B, T)",)
) -> None:
    """Raise ``ValueError`` unless ``tokens`` is a long tensor of one of the
    ranks of ``shapes`` (written as "(T,)", "(B, T)"), with at least one token,
    every id in ``0..vocab_size - 1`` (an embedding would fail deep in torch, or
    a negative id silently read the last row)."""
    ranks = {len([d for d in s.strip("()").split(",") if d.strip()]) for s in shapes}
    if (
        not isinstance(tokens, Tensor)
        or tokens.dtype != torch.long
        or tokens.dim() not in ranks
        or tokens.shape[-1] == 0
    ):
        if isinstance(tokens, Tensor):
            got = f"shape {tuple(tokens.shape)}, dtype {tokens.dtype}"
        else:
            got = f"{tokens!r:.60} of type {type(tokens).__name__}"
        raise ValueError(
            message(
                "{name} must be a long tensor of token ids of shape {shapes}, "
                "got {got}",
                name=name,
                shapes=" or ".join(shapes),
                got=got,
            )
        )
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(
            message(
                "{name} must be ids in [0, {vocab}), got ids from {low} to {high}",
                name=name,
                vocab=vocab_size,
                low=low,
                high=high,
            )
        )


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (NumPy's rules); ``RuntimeError`` if they
    do not. Plain Python: ``torch.broadcast_shapes`` imports sympy on first use."""
    rank = max((len(shape) for shape in shapes), default=0)
    result = []
    for sizes in zip(*((1,) * (rank - len(s)) + tuple(s) for s in shapes), strict=True):
        grown = {size for size in sizes if size != 1}
        if len(grown) > 1:
            raise RuntimeError(
                message("shapes {shapes} do not broadcast", shapes=shapes)
            )
        result.append(grown.pop() if grown else 1)
    return tuple(result)
