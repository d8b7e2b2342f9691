"""Argument checks shared by every module of :mod:`qkv`.

The book's contract for bad input (see :mod:`qkv.attention`): a ``ValueError``
that names the argument and the value or shapes seen, never a silent wrong result.
Each module checks its inputs with these functions, once, where they enter.
"""

from __future__ import annotations

import math
import numbers

from torch import Generator, Tensor

__all__ = [
    "broadcast_shapes",
    "check_bool",
    "check_floating",
    "check_generator",
    "check_index",
    "check_int",
    "check_positive",
]


def check_int(name: str, value: int, minimum: int) -> int:
    """Return ``value`` as an int; raise ``ValueError`` unless it is an integer
    (not a bool, a float or a tensor) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"{name} must be an int >= {minimum}, got {value!r} "
            f"of type {type(value).__name__}"
        )
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
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
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_bool(name: str, value: bool) -> None:
    """Raise ``ValueError`` unless ``value`` is True or False (``"no"`` is not)."""
    if not isinstance(value, bool):
        raise ValueError(
            f"{name} must be True or False, got {value!r} "
            f"of type {type(value).__name__}"
        )


def check_floating(name: str, x: Tensor, min_rank: int = 2) -> None:
    """Raise ``ValueError`` unless ``x`` is a floating tensor of rank >= min_rank."""
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_rank:
        raise ValueError(
            f"{name} must have at least {min_rank} dimensions, "
            f"got shape {tuple(x.shape)}"
        )
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor, got dtype {x.dtype}")


def check_generator(name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a ``torch.Generator``: a seed given
    as an int, or None (PyTorch's global generator), would make the draw
    irreproducible or fail deep inside torch."""
    if not isinstance(value, Generator):
        raise ValueError(
            f"{name} must be a torch.Generator (for example "
            f"torch.Generator().manual_seed(0)), got {value!r} "
            f"of type {type(value).__name__}"
        )


def check_index(name: str, value: int, size: int) -> int:
    """Return ``value`` as an int; ``ValueError`` unless it is an int in 0..size-1."""
    value = check_int(name, value, minimum=0)
    if value >= size:
        raise ValueError(f"{name} must be an int in 0..{size - 1}, got {value}")
    return value


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to (NumPy's rules); ``RuntimeError`` if they
    do not. Plain Python: ``torch.broadcast_shapes`` imports sympy on first use."""
    rank = max((len(shape) for shape in shapes), default=0)
    result = []
    for sizes in zip(*((1,) * (rank - len(s)) + tuple(s) for s in shapes), strict=True):
        grown = {size for size in sizes if size != 1}
        if len(grown) > 1:
            raise RuntimeError(f"shapes {shapes} do not broadcast")
        result.append(grown.pop() if grown else 1)
    return tuple(result)
