"""The portability check bites (bookbuild.tools.portability, make portability).

A small book whose claims are deliberately on a knife edge is executed under
the native and two emulated CPUs: a claim that fails under one of them, and one
that holds there by less than the margin while the others hold with room, fail
the check and are listed with every configuration's value; a claim that holds
everywhere with room is not listed; a thin margin that no configuration moves
is listed apart and does not fail it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from bookbuild.tools.portability import compare
from bookbuild.tools.testing import MYST_NOTEBOOK, write_small_book

PAGE = (
    MYST_NOTEBOOK
    + """
# Knife edges

```{code-cell} ipython3
:tags: [remove-cell]

import torch

from qkv.experiments import toy

capability = torch.backends.cpu.get_cpu_capability()
emulated_default = capability == "DEFAULT"
assert not emulated_default  # fails under ATEN_CPU_CAPABILITY=default only
edge = 1.0 if emulated_default else 1.2
assert edge > 0.98  # holds everywhere, by 2 % under `default`: thin
assert 0.5 < 0.5001  # thin, but no CPU moves it: listed, not failed
assert 2 * edge > 1  # holds everywhere with room: not listed
raw = toy.train_lookup(scaled=False, seed=0, steps=100)  # a real training run
assert raw[-1] < 10  # with room everywhere
```

The page's sentence.
"""
)


@pytest.mark.slow
@pytest.mark.build
def test_a_knife_edge_claim_fails_the_check(tmp_path):
    root = write_small_book(
        tmp_path / "book", {"index": PAGE}, toc="format: jb-book\nroot: index\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "bookbuild.tools.portability", str(root)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    failed = output.split("failed on a configuration:")[1].split("portability:")[0]
    assert "index.md:22: assert not emulated_default" in failed, output
    assert "default: FAILED" in failed, output
    thin = output.split("where the CPU moves them:")[1].split("portability:")[0]
    assert "index.md:24: assert edge > 0.98" in thin, output
    assert "default: 1 > 0.98 (margin 2.0 %)" in thin, output
    steady = output.split("the same on every configuration:")[1]
    assert "assert 0.5 < 0.5001" in steady.split("portability:")[0], output
    assert "assert 2 * edge > 1" not in output and "raw[-1] < 10" not in output
    assert "2 to fix" in output, output
    # every configuration trained its own model: three results kept, not one
    kept = list((root / "_build" / "results").rglob("toy.train_lookup-*.pt"))
    assert len(kept) == 3, kept


def test_compare_needs_every_configuration_to_call_a_margin_steady():
    claim = {"file": "a.md", "line": 3, "check": "assert x < 1", "failures": 0}
    thin = {**claim, "margin": 0.01, "worst": "0.99 < 1"}
    measured = {"native": [thin], "avx2": [thin], "default": []}
    assert compare(measured)["thin"] and not compare(measured)["steady"]
    measured["default"] = [thin]
    assert compare(measured)["steady"] and not compare(measured)["thin"]
    moved = {**thin, "worst": "0.98 < 1", "margin": 0.02}
    assert compare({"native": [thin], "avx2": [moved]})["thin"]
    roomy = {**claim, "margin": 0.3, "worst": "0.7 < 1"}
    assert compare({"native": [roomy], "avx2": [roomy]}) == {
        "failed": [],
        "thin": [],
        "steady": [],
    }
    failed = {**claim, "failures": 1, "margin": -0.1, "measured": "1.1 < 1"}
    assert compare({"native": [roomy], "avx2": [failed]})["failed"]
