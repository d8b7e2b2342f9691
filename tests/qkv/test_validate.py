"""Tests of qkv.validate, of the floors of qkv (who may import whom), and of
"each input is checked once, where it enters"."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import qkv
from qkv import attention, positions
from qkv.positions import PositionalAttention
from qkv.validate import (
    broadcast_shapes,
    check_bool,
    check_floating,
    check_index,
    check_int,
    check_positive,
)

SOURCE = Path(qkv.__file__).parent  # src/qkv
MODULES = sorted(SOURCE.rglob("*.py"))


def module_name(path: Path) -> str:
    """src/qkv/page/glue.py -> qkv.page.glue; src/qkv/__init__.py -> qkv."""
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def qkv_imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, names, line) of every import of a qkv module in ``path``,
    at the top of the file or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "qkv" or node.module.startswith("qkv."):
                names = [alias.name for alias in node.names]
                found.append((node.module, names, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "qkv" or alias.name.startswith("qkv."):
                    found.append((alias.name, [], node.lineno))
    return found


def floor(module: str) -> str:
    """ "page", "experiments" or "core" (the modules at the top of qkv)."""
    parts = module.split(".")
    return (
        parts[1] if len(parts) > 1 and parts[1] in ("page", "experiments") else "core"
    )


def test_every_module_is_found():
    names = {module_name(path) for path in MODULES}
    assert {"qkv", "qkv.attention", "qkv.validate", "qkv.cost"} <= names
    assert {"qkv.experiments.measure", "qkv.page.verdicts"} <= names


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_imports_a_private_name_of_another(path):
    private = [
        f"line {line}: from {module} import {name}"
        for module, names, line in qkv_imports(path)
        for name in names
        if name.startswith("_") and module != module_name(path)
    ]
    assert not private, f"{module_name(path)} imports private names: {private}"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_each_floor_imports_only_the_floors_below_it(path):
    """The core imports the core only; qkv.experiments never imports qkv.page."""
    allowed = {
        "core": {"core"},
        "experiments": {"core", "experiments"},
        "page": {"core", "experiments", "page"},
    }[floor(module_name(path))]
    wrong = [
        f"line {line}: {module}"
        for module, names, line in qkv_imports(path)
        for target in (
            [f"{module}.{n}" for n in names] if module == "qkv" else [module]
        )
        if floor(target) not in allowed
    ]
    assert not wrong, f"{module_name(path)} imports from a floor above it: {wrong}"


def test_import_qkv_loads_the_core_only():
    code = (
        "import sys, qkv\n"
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('qkv.page', 'qkv.experiments'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


# --- the functions of qkv.validate --------------------------------------------


def test_check_int():
    assert check_int("n", 3, minimum=1) == 3
    assert check_int("n", np.int64(0), minimum=0) == 0
    assert type(check_int("n", np.int64(5), minimum=0)) is int
    with pytest.raises(ValueError, match=r"n must be an int >= 1, got 0$"):
        check_int("n", 0, minimum=1)
    for bad, kind in ((2.0, "float"), (True, "bool"), (torch.tensor(2), "Tensor")):
        with pytest.raises(ValueError, match=rf"n must be an int >= 0, got .* {kind}"):
            check_int("n", bad, minimum=0)


def test_check_bool():
    check_bool("flag", True)
    check_bool("flag", False)
    for bad in ("no", 1, None, np.bool_(True)):
        with pytest.raises(ValueError, match=r"flag must be True or False, got"):
            check_bool("flag", bad)


def test_check_positive():
    assert check_positive("eps", 1e-5) == 1e-5
    assert check_positive("base", 10_000) == 10_000.0
    for bad in (0, -1.0, math.nan, math.inf, True, "1", None):
        with pytest.raises(ValueError, match=r"must be a finite number > 0, got"):
            check_positive("eps", bad)


def test_check_floating():
    check_floating("x", torch.zeros(2, 3))
    check_floating("x", torch.zeros(3), min_rank=1)
    with pytest.raises(ValueError, match=r"x must be a torch.Tensor, got list"):
        check_floating("x", [[1.0]])
    with pytest.raises(ValueError, match=r"at least 2 dimensions, got shape \(3,\)"):
        check_floating("x", torch.zeros(3))
    with pytest.raises(ValueError, match=r"x must be a floating tensor, got .*int64"):
        check_floating("x", torch.zeros(2, 3, dtype=torch.int64))


def test_check_index():
    assert check_index("head", 3, size=4) == 3
    with pytest.raises(ValueError, match=r"head must be an int in 0..3, got 4"):
        check_index("head", 4, size=4)
    with pytest.raises(ValueError, match=r"head must be an int >= 0, got -1"):
        check_index("head", -1, size=4)


def test_broadcast_shapes_follows_torch():
    for shapes in [
        ((2, 1, 3), (4, 3)),
        ((), (5,)),
        ((1,), (3, 1), (1, 4)),
        ((0, 1), (3,)),
    ]:
        assert broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    assert broadcast_shapes() == ()
    with pytest.raises(RuntimeError, match="do not broadcast"):
        broadcast_shapes((2, 3), (4, 3))


# --- each input is checked once, where it enters --------------------------------


@pytest.fixture
def counted(monkeypatch):
    """Count the calls to the checks of qkv.attention and to rope's checks."""
    calls: dict[str, int] = {}

    def counting(module, name):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    for name in ("_check_qkv", "_check_options", "_check_mask", "_check_input"):
        counting(attention, name)
    counting(positions, "_as_positions")  # the first check of rope's positions
    return calls


def test_scaled_dot_product_attention_checks_each_input_once(counted):
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    mask = torch.ones(3, 5, dtype=torch.bool)
    qkv.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert counted == {"_check_qkv": 1, "_check_options": 1, "_check_mask": 1}


def test_self_attention_checks_its_inputs_once(counted):
    torch.manual_seed(0)
    layer, x = qkv.SelfAttention(8), torch.randn(2, 5, 8)
    output, weights = layer(x, attn_mask=torch.ones(5, 5, dtype=torch.bool))
    assert counted == {"_check_input": 1, "_check_options": 1, "_check_mask": 1}
    query, key, value = layer.W_q(x), layer.W_k(x), layer.W_v(x)
    expected = qkv.scaled_dot_product_attention(query, key, value)
    torch.testing.assert_close(output, expected[0])
    torch.testing.assert_close(weights, expected[1])


@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_checks_its_inputs_once(counted, need_weights):
    torch.manual_seed(0)
    layer = qkv.MultiHeadAttention(8, 4, num_kv_heads=2)
    query, key = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    layer(query, key, is_causal=True, need_weights=need_weights)
    # query, key and value once each; the options once; scaled_dot_product_attention
    # is not called to check the projections again.
    assert counted == {"_check_input": 3, "_check_options": 1}


@pytest.mark.parametrize("encoding", ["rope", "alibi", "none"])
def test_positional_attention_checks_its_inputs_once(counted, encoding):
    torch.manual_seed(0)
    layer, x = PositionalAttention(8, 2, encoding), torch.randn(2, 5, 8)
    layer(x, is_causal=True)
    assert counted == {"_check_input": 3, "_check_options": 1}


def test_positional_attention_rejects_a_bad_input_with_a_value_error():
    layer = PositionalAttention(8, 2, "rope")
    with pytest.raises(ValueError, match=r"last dim of query must be embed_dim=8"):
        layer(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"is_causal must be True or False"):
        layer(torch.randn(2, 5, 8), is_causal="yes")


def test_rope_inside_positional_attention_is_rope():
    torch.manual_seed(0)
    layer, x = PositionalAttention(8, 2, "rope"), torch.randn(2, 5, 8)
    output, weights = layer(x, is_causal=True)
    q = qkv.split_heads(layer.W_q(x), 2)
    k = qkv.split_heads(layer.W_k(x), 2)
    v = qkv.split_heads(layer.W_v(x), 2)
    steps = torch.arange(5)
    context, expected = qkv.scaled_dot_product_attention(
        positions.rope(q, steps), positions.rope(k, steps), v, is_causal=True
    )
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(output, layer.W_o(qkv.concat_heads(context)))
