"""Trained results kept on disk (qkv.experiments._results): read back only by
the same call of the same code, and only when QKV_RESULTS names a folder."""

from __future__ import annotations

import ast
import multiprocessing
import os
import sys
from pathlib import Path

import pytest
import torch

from qkv.experiments import _results, measure, toy
from qkv.experiments._results import RESULTS, remembered, result_path


def counting():
    calls = []

    @remembered
    def train(seed: int = 0, steps: int = 3, data: torch.Tensor | None = None):
        calls.append((seed, steps))
        return {"seed": seed, "weights": torch.full((2,), float(seed + steps))}

    return train, calls


def test_without_the_variable_every_call_trains(monkeypatch):
    monkeypatch.delenv(RESULTS, raising=False)
    train, calls = counting()
    train(1)
    train(1)
    assert calls == [(1, 3), (1, 3)]


def test_the_same_call_is_read_back_and_another_one_trains(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    train, calls = counting()
    first = train(1)
    again = train(seed=1, steps=3)  # the same call, written another way
    other = train(1, steps=4)
    assert calls == [(1, 3), (1, 4)]
    assert again["seed"] == first["seed"]
    torch.testing.assert_close(again["weights"], first["weights"])
    assert other["weights"][0].item() == 5.0
    assert len(list(tmp_path.glob("*/*.pt"))) == 2
    assert not list(tmp_path.glob("*/*.partial"))


def test_a_tensor_argument_is_keyed_by_its_numbers(tmp_path):
    train, _ = counting()
    a = result_path(tmp_path, train, (), {"data": torch.arange(4.0)})
    b = result_path(tmp_path, train, (), {"data": torch.arange(4.0)})
    c = result_path(tmp_path, train, (), {"data": torch.arange(4.0) + 1})
    d = result_path(tmp_path, train, (), {"data": torch.tensor(2.0)})  # 0-d
    assert a == b and a != c and d not in (a, c)


def test_other_code_does_not_read_a_result_back(monkeypatch, tmp_path):
    train, _ = counting()
    before = result_path(tmp_path, train, (1,), {})
    monkeypatch.setattr(_results, "code_hash", lambda: "another version of qkv")
    assert result_path(tmp_path, train, (1,), {}) != before


def test_a_result_is_keyed_on_the_core_and_its_own_module_only(monkeypatch):
    # An edit of the drawing code (qkv.page) or of another experiment keeps the
    # results; an edit of the experiment's own module or of the core does not.
    core = [
        _results._is_core(Path(p))
        for p in (
            "attention.py",
            "cost.py",
            "experiments/_results.py",
            "experiments/__init__.py",
        )
    ]
    others = [
        _results._is_core(Path(p))
        for p in ("page/plot.py", "page/explorables/by_hand.py", "experiments/toy.py")
    ]
    assert all(core) and not any(others)
    before = result_path(Path("r"), toy.train, (0,), {})
    monkeypatch.setattr(_results, "module_hash", lambda module: "another toy.py")
    assert result_path(Path("r"), toy.train, (0,), {}) != before


def test_the_experiments_import_no_other_experiment_and_not_the_page():
    # What makes a key on the core and the function's own module sound.
    folder = Path(_results.__file__).parent
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert not name.startswith("qkv.page"), (path, name)
                if name.startswith("qkv.experiments"):
                    assert name == "qkv.experiments._results", (path, name)


def test_a_real_training_round_trips(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    trained = toy.train(seed=0, steps=2, n_heldout=20)
    read_back = toy.train(seed=0, steps=2, n_heldout=20)
    assert read_back.accuracy == trained.accuracy
    for name, value in trained.model.state_dict().items():
        torch.testing.assert_close(read_back.model.state_dict()[name], value)


def test_a_patched_call_is_kept_under_its_patch_s_code(monkeypatch, tmp_path):
    """A chapter that trains with a part of qkv replaced (cross-attention: a
    model without its causal mask) keeps that result under a key that holds the
    patch's code: the same patch reads it back (the French page's run), another
    patch trains, a mock object (no code to read) trains and keeps nothing."""
    from unittest import mock

    import qkv

    monkeypatch.setenv(RESULTS, str(tmp_path))
    assert _results.patched() == []
    train, calls = counting()

    def peeking(self, *args, **kwargs):
        return None

    def other(self, *args, **kwargs):
        return 1

    train(2)
    with mock.patch.object(qkv.MultiHeadAttention, "forward", peeking):
        assert "qkv.MultiHeadAttention.forward" in _results.patched()
        train(2)
        train(2)  # read back
    with mock.patch.object(qkv.MultiHeadAttention, "forward", other):
        train(2)
    with mock.patch.object(qkv.MultiHeadAttention, "forward", mock.Mock()):
        train(2)
        train(2)
    assert calls == [(2, 3)] * 5
    assert len(list(tmp_path.glob("*/*.pt"))) == 3


def test_a_new_version_of_qkv_drops_the_results_of_the_old_one(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    train, calls = counting()
    train(1)
    old = {path.parent.name for path in tmp_path.glob("*/*.pt")}
    monkeypatch.setattr(_results, "code_hash", lambda: "f" * 64)
    train(1)
    assert calls == [(1, 3), (1, 3)]  # the new code trains again
    assert {path.parent.name for path in tmp_path.glob("*/*.pt")} == {"f" * 16}
    assert old and old != {"f" * 16}


@remembered
def _slow_training(log: str, seed: int = 0) -> int:
    """Appends a line to ``log`` each time it really trains."""
    import time

    with open(log, "a") as handle:
        handle.write(f"{os.getpid()}\n")
    time.sleep(0.5)  # long enough for the other process to arrive meanwhile
    return seed


def _train_after(barrier, log: str) -> None:
    barrier.wait()
    assert _slow_training(log, seed=7) == 7


@pytest.mark.skipif(sys.platform == "win32", reason="the lock uses fcntl")
def test_two_processes_that_need_the_same_result_train_it_once(monkeypatch, tmp_path):
    """Two kernels of the build, or two test workers, asking for one result at
    the same moment: the second waits for the first and reads its file."""
    monkeypatch.setenv(RESULTS, str(tmp_path / "results"))
    log = str(tmp_path / "trained")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    workers = [
        context.Process(target=_train_after, args=(barrier, log)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert len(Path(log).read_text().split()) == 1
    assert _slow_training(log, seed=7) == 7  # read back, not trained a third time
    assert len(Path(log).read_text().split()) == 1


NOTEBOOK_FUNCTION = """
def {name}(x):
    {doc}
    total = 0  # {comment}
    for value in x:
        total += value * {factor}
    return total
"""


def notebook_function(tmp_path, name, doc, comment, factor):
    """A function defined in ``__main__`` (as a notebook's cell defines it),
    from its own file so that its source can be read."""
    path = tmp_path / f"{name}_{abs(hash((doc, comment, factor)))}.py"
    path.write_text(
        NOTEBOOK_FUNCTION.format(name=name, doc=doc, comment=comment, factor=factor)
    )
    space = {"__name__": "__main__"}
    exec(compile(path.read_text(), str(path), "exec"), space)
    return space[name]


def test_a_notebook_s_function_is_keyed_by_what_it_does(tmp_path):
    """A translated notebook's copy of a function (docstring and comments in
    French) reads the English one's measurement back; other code does not."""
    english = notebook_function(tmp_path, "f", '"""Sum, scaled."""', "start", 2)
    french = notebook_function(tmp_path, "f", '"""Somme, multipliée."""', "début", 2)
    other = notebook_function(tmp_path, "f", '"""Sum, scaled."""', "start", 3)
    assert english.__module__ == "__main__"

    def key(function):
        return result_path(tmp_path, measure.timed, (function, [1, 2]), {})

    assert key(english) == key(french)
    assert key(english) != key(other)


def test_a_measurement_is_kept_like_a_result(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    ticks = iter(range(100))

    def clock():
        return float(next(ticks))

    first = measure.timed(sum, [1, 2, 3], repeats=2, clock=clock)
    assert first == (6, 1.0)
    # Read back, not measured again: the clock is not read.
    assert measure.timed(sum, [1, 2, 3], repeats=2, clock=clock) == first
    assert next(ticks) == 4
    with pytest.raises(ValueError, match="repeats"):
        measure.timed(sum, [1], repeats=0)
