"""Random numbers that the page draws too: :func:`seeded_normal`, the random vectors
of :func:`qkv.page.explorables.scaled_scores` (its page script: ``static/seeded.js``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from qkv.validate import check_int

__all__ = ["seeded_normal", "seeded_uniform"]


def _mulberry32(seed: int):
    """The 32-bit generator "mulberry32", as the page's script runs it."""
    state = seed & 0xFFFFFFFF
    while True:
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        t = ((state ^ (state >> 15)) * (1 | state)) & 0xFFFFFFFF
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & 0xFFFFFFFF)) & 0xFFFFFFFF) ^ t
        yield (t ^ (t >> 14)) & 0xFFFFFFFF


def seeded_uniform(seed: int, count: int) -> list[float]:
    """``count`` uniform numbers in (0, 1) drawn from ``seed`` by mulberry32, the
    same as the page's ``qkvMulberry32(seed)`` (``static/seeded.js``): the
    sampling of :func:`qkv.page.explorables.write_live`."""
    seed = check_int("seed", seed, minimum=0)
    if seed >= 2**32:
        raise ValueError(f"seed must be an int in 0..2**32 - 1, got {seed}")
    draws = _mulberry32(seed)
    return [(next(draws) + 0.5) / 4294967296 for _ in range(count)]


def seeded_normal(seed: int, *shape: int) -> Tensor:
    """Standard normal numbers drawn from ``seed``, the same in Python and in the
    page: the random vectors of :func:`scaled_scores`.

    Explained in the chapter *scaled-dot-product*. The generator is mulberry32
    (32-bit integers, the same bits in Python and JavaScript), turned into normal
    numbers by the Box-Muller transform in double precision. Python and the
    browser's ``Math.log``, ``Math.cos`` and ``Math.sin`` may differ in the last
    bit, so the numbers agree to about 1e-15, not bit for bit.

    Args:
        seed: an int in 0..2**32 - 1.
        *shape: the shape of the result; the numbers fill it row by row.

    Returns:
        A float64 tensor of shape ``shape``.
    """
    seed = check_int("seed", seed, minimum=0)
    if seed >= 2**32:
        raise ValueError(f"seed must be an int in 0..2**32 - 1, got {seed}")
    shape = tuple(check_int("shape", size, minimum=0) for size in shape)
    count = math.prod(shape)
    draws = _mulberry32(seed)
    values = []
    while len(values) < count:
        first, second = (
            (next(draws) + 0.5) / 4294967296,
            (next(draws) + 0.5) / 4294967296,
        )
        radius, angle = math.sqrt(-2 * math.log(first)), 2 * math.pi * second
        values += [radius * math.cos(angle), radius * math.sin(angle)]
    return torch.tensor(values[:count], dtype=torch.float64).reshape(shape)
