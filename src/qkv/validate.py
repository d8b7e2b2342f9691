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

from qkv.language import text

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


#: The messages of these checks, per language: English template -> text.
_FRENCH = {
    "{name} must be an int >= {minimum}, got {value} of type {type}": (
        "`{name}` doit être un `int` >= {minimum}, reçu {value} de type {type}"
    ),
    "{name} must be an int >= {minimum}, got {value}": (
        "`{name}` doit être un `int` >= {minimum}, reçu {value}"
    ),
    "{name} must be a finite number > 0, got {value}": (
        "`{name}` doit être un nombre fini > 0, reçu {value}"
    ),
    "{name} must be a probability p with 0 <= p < 1, got {value}": (
        "`{name}` doit être une probabilité p avec 0 <= p < 1, reçu {value}"
    ),
    "{name} must be True or False, got {value} of type {type}": (
        "`{name}` doit valoir `True` ou `False`, reçu {value} de type {type}"
    ),
    "{name} must be a torch.Tensor, got {type}": (
        "`{name}` doit être un `torch.Tensor`, reçu {type}"
    ),
    "{name} must have at least {rank} dimensions, got shape {shape}": (
        "`{name}` doit avoir au moins {rank} dimensions, reçu la forme {shape}"
    ),
    "{name} must be a floating tensor, got dtype {dtype}": (
        "`{name}` doit être un tenseur à virgule flottante, reçu le `dtype` {dtype}"
    ),
    "{name} must be a torch.Generator (for example "
    "torch.Generator().manual_seed(0)), got {value} of type {type}": (
        "`{name}` doit être un `torch.Generator` (par exemple "
        "`torch.Generator().manual_seed(0)`), reçu {value} de type {type}"
    ),
    "{name} must be an int in 0..{last}, got {value}": (
        "`{name}` doit être un `int` dans 0..{last}, reçu {value}"
    ),
    "shapes {shapes} do not broadcast": (
        "les formes {shapes} ne se diffusent pas l'une sur l'autre (broadcast)"
    ),
    # the shape checks of qkv.attention
    "query, key and value must have the same dtype, got query {q}, "
    "key {k} and value {v}": (
        "`query`, `key` et `value` doivent avoir le même `dtype`, reçu `query` {q}, "
        "`key` {k} et `value` {v}"
    ),
    "query, key and value must be on the same device, got query {q}, "
    "key {k} and value {v}": (
        "`query`, `key` et `value` doivent être sur le même device, reçu `query` {q}, "
        "`key` {k} et `value` {v}"
    ),
    "query and key must have the same feature size (last dim), got "
    "query {q} and key {k}": (
        "`query` et `key` doivent avoir la même taille de vecteur (dernière "
        "dimension), reçu `query` {q} et `key` {k}"
    ),
    "query and key must have a feature size (last dim) of at least 1, "
    "got query {q} and key {k}": (
        "`query` et `key` doivent avoir une taille de vecteur (dernière dimension) "
        "d'au moins 1, reçu `query` {q} et `key` {k}"
    ),
    "value must have a feature size (last dim) of at least 1, got value {v}": (
        "`value` doit avoir une taille de vecteur (dernière dimension) d'au "
        "moins 1, reçu `value` {v}"
    ),
    "key and value must have the same length (dim -2), got key {k} and value {v}": (
        "`key` et `value` doivent avoir la même longueur (dimension -2), reçu "
        "`key` {k} et `value` {v}"
    ),
    "the batch dims of query, key and value must broadcast, got "
    "query {q}, key {k} and value {v}": (
        "les dimensions de lot de `query`, `key` et `value` doivent se diffuser "
        "(broadcast), reçu `query` {q}, `key` {k} et `value` {v}"
    ),
    "give either attn_mask or is_causal=True, not both; got "
    "attn_mask {shape} with is_causal=True": (
        "donnez `attn_mask` ou `is_causal=True`, pas les deux ; reçu "
        "attn_mask {shape} avec is_causal=True"
    ),
    "attn_mask must be a bool tensor (True = may attend), got {got}": (
        "`attn_mask` doit être un tenseur booléen (`True` = peut regarder), reçu {got}"
    ),
    "attn_mask of shape {mask} does not broadcast to the scores "
    "shape (..., L, S) = {scores}": (
        "`attn_mask` de forme {mask} ne se diffuse pas à la forme des scores "
        "(..., L, S) = {scores}"
    ),
    "the last dim of {name} must be embed_dim={dim}, got {name} {shape}": (
        "la dernière dimension de `{name}` doit valoir `embed_dim={dim}`, reçu "
        "`{name}` {shape}"
    ),
    "{name} has dtype {dtype} but the module's weights have dtype "
    "{weights}: convert one of them, e.g. module.to({dtype})": (
        "`{name}` a le `dtype` {dtype} mais les poids du module ont le `dtype` "
        "{weights} : convertissez l'un des deux, par exemple `module.to({dtype})`"
    ),
    "{name} must be a long tensor of token ids of shape {shapes}, got {got}": (
        "`{name}` doit être un tenseur d'entiers longs (des identifiants de "
        "jetons) de forme {shapes}, reçu {got}"
    ),
    "{name} must be ids in [0, {vocab}), got ids from {low} to {high}": (
        "`{name}` doit contenir des identifiants dans [0, {vocab}), reçu des "
        "identifiants de {low} à {high}"
    ),
    "embed_dim={dim} must be divisible by num_heads={heads}": (
        "`embed_dim={dim}` doit être divisible par `num_heads={heads}`"
    ),
    "num_kv_heads={kv} must divide num_heads={heads} (every "
    "key/value head serves the same number of query heads)": (
        "`num_kv_heads={kv}` doit diviser `num_heads={heads}` (chaque tête de "
        "clés et de valeurs sert le même nombre de têtes de requêtes)"
    ),
}
MESSAGES = {"en": {english: english for english in _FRENCH}, "fr": _FRENCH}


def message(english: str, **values: object) -> str:
    """The message ``english`` in the current language, filled with ``values``
    (a key missing from :data:`MESSAGES` raises ``LookupError``)."""
    return text(MESSAGES, english).format(**values)


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
