"""Trained results kept on disk (bookbuild.execute.results): read back only by
the same call of the same code, and only when QKV_RESULTS names a folder; the
kept versions installed by the build, plain functions in qkv."""

from __future__ import annotations

import ast
import contextlib
import multiprocessing
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch

from bookbuild.execute import results as _results
from bookbuild.execute.results import RESULTS, remembered, result_path
from qkv.experiments import measure, toy


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
    torch.testing.assert_close(other["weights"], torch.full((2,), 5.0))
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
    folder = Path(toy.__file__).parent
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
                assert not name.startswith("qkv.experiments"), (path, name)
                assert not name.startswith("bookbuild"), (path, name)


def test_a_real_training_round_trips(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    trained = toy.train(seed=0, steps=2, n_heldout=20)
    read_back = toy.train(seed=0, steps=2, n_heldout=20)
    assert read_back.accuracy == pytest.approx(trained.accuracy)
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


# --- what a kept file may hold, and what happens when it cannot be read --------


class _Planted:
    """What an attacker plants: unpickling it calls ``open(marker, "w")``,
    which creates the file ``marker`` (any other code would run the same way)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def _plant_pickle(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(_Planted(marker)))


def _plant_torch_file(path: Path, marker: Path) -> None:
    torch.save({"key": path.name, "provenance": {}, "result": _Planted(marker)}, path)


@pytest.mark.parametrize("plant", [_plant_pickle, _plant_torch_file])
def test_a_planted_pickle_runs_nothing_and_is_trained_again(
    plant, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv(RESULTS, str(tmp_path / "results"))
    train, calls = counting()
    path = result_path(tmp_path / "results", train, (1,), {})
    path.parent.mkdir(parents=True)
    marker = tmp_path / "marker"
    plant(path, marker)
    # The payload is live: an unsafe load runs it (a bare pickle, then fails).
    with contextlib.suppress(RuntimeError):
        torch.load(path, weights_only=False)
    assert marker.exists()
    marker.unlink()

    result = train(1)
    assert not marker.exists()  # nothing ran
    assert calls == [(1, 3)]  # trained instead
    assert result["seed"] == 1
    assert (
        f"bookbuild: kept result {path} could not be read (" in capsys.readouterr().err
    )
    train(1)  # the planted file was overwritten by the trained result
    assert calls == [(1, 3)] and not marker.exists()


def _truncate(path: Path, other: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _another_call_s_result(path: Path, other: Path) -> None:
    path.write_bytes(other.read_bytes())  # a whole file, but another key's


def _not_a_kept_result(path: Path, other: Path) -> None:
    torch.save({"seed": 1, "weights": torch.zeros(2)}, path)  # the bare result


def _text(path: Path, other: Path) -> None:
    path.write_text("not a result at all\n")


@pytest.mark.parametrize(
    "spoil", [_truncate, _another_call_s_result, _not_a_kept_result, _text]
)
def test_a_file_that_cannot_be_read_is_trained_again_and_overwritten(
    spoil, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    train, calls = counting()
    train(1)
    train(2)
    path = result_path(tmp_path, train, (1,), {})
    spoil(path, result_path(tmp_path, train, (2,), {}))
    again = train(1)
    torch.testing.assert_close(again["weights"], torch.full((2,), 4.0))
    assert calls == [(1, 3), (2, 3), (1, 3)]
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and said[0].startswith(f"bookbuild: kept result {path} could")
    assert said[0].endswith(": training again")
    train(1)  # overwritten: read back
    assert calls == [(1, 3), (2, 3), (1, 3)]
    assert capsys.readouterr().err == ""


def test_a_result_that_could_not_be_read_back_is_not_kept(
    monkeypatch, tmp_path, capsys
):
    """A result holding a class that no kept file may hold (here one of the
    standard library) is returned, not kept, and stderr says so."""
    from fractions import Fraction

    monkeypatch.setenv(RESULTS, str(tmp_path))
    calls = []

    @remembered
    def train(seed: int = 0):
        calls.append(seed)
        return Fraction(1, 3)

    assert train() == Fraction(1, 3)
    assert train() == Fraction(1, 3)
    assert calls == [0, 0]
    assert not list(tmp_path.glob("*/*.pt")) and not list(tmp_path.glob("*/*.partial"))
    said = capsys.readouterr().err
    assert "not kept (it holds fractions.Fraction, which" in said


def test_numpy_arrays_and_the_timed_baseline_are_kept(monkeypatch, tmp_path):
    """The results from outside qkv that the book keeps: NumPy arrays
    (measure.time_decoding) and a fitted scikit-learn model (measure.timed),
    read back the second time: the clock is not read again."""
    from sklearn.linear_model import LogisticRegression

    import qkv

    monkeypatch.setenv(RESULTS, str(tmp_path))
    ticks = iter(range(10_000))

    def clock():
        return float(next(ticks))

    torch.manual_seed(0)
    layer, tokens = qkv.MultiHeadAttention(8, 2), torch.randn(3, 8)
    outputs, seconds = measure.time_decoding(layer, tokens, rounds=1, clock=clock)
    generator = torch.Generator().manual_seed(0)
    pixels = torch.randn(40, 4, generator=generator).numpy()
    labels = (pixels[:, 0] > 0).astype(int)
    fitted, _ = measure.timed(LogisticRegression().fit, pixels, labels, clock=clock)
    ticked = next(ticks)

    again, seconds_again = measure.time_decoding(layer, tokens, rounds=1, clock=clock)
    read_back, _ = measure.timed(LogisticRegression().fit, pixels, labels, clock=clock)
    assert next(ticks) == ticked + 1  # both read back, neither timed again
    for scheme, times in seconds.items():
        assert isinstance(seconds_again[scheme], numpy.ndarray)
        numpy.testing.assert_allclose(seconds_again[scheme], times)
        torch.testing.assert_close(again[scheme], outputs[scheme])
    assert isinstance(read_back, LogisticRegression)
    assert (read_back.predict(pixels) == fitted.predict(pixels)).all()  # classes
    assert len(list(tmp_path.glob("*/*.pt"))) == 2


def test_the_key_holds_the_cpu_s_kernels(monkeypatch, tmp_path):
    """A result trained under an emulated CPU (ATEN_CPU_CAPABILITY=avx2...)
    is never read back by a native run, nor the reverse."""
    train, _ = counting()
    for name in _results.CPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    native = result_path(tmp_path, train, (1,), {})
    paths = {native}
    for name in _results.CPU_VARIABLES:
        monkeypatch.setenv(name, "AVX2")
        paths.add(result_path(tmp_path, train, (1,), {}))
    assert len(paths) == 1 + len(_results.CPU_VARIABLES)
    for name in _results.CPU_VARIABLES:
        monkeypatch.delenv(name)
    assert result_path(tmp_path, train, (1,), {}) == native
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "ANOTHER")
    assert result_path(tmp_path, train, (1,), {}) != native


def test_a_kept_result_records_where_it_comes_from(monkeypatch, tmp_path):
    monkeypatch.setenv(RESULTS, str(tmp_path))
    for name in _results.CPU_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    train, _ = counting()
    train(1)
    record = _results._read(result_path(tmp_path, train, (1,), {}))
    assert record["provenance"] == _results.provenance()
    assert record["provenance"] == {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "torch": str(torch.__version__),
        "numpy": numpy.__version__,
        "ATEN_CPU_CAPABILITY": "avx2",
    }


def test_the_build_installs_the_kept_versions_and_uninstall_puts_qkv_s_back():
    """The session installed them (tests/conftest.py), as a kernel does; each
    is qkv's plain function wrapped, in its own module, once."""
    assert _results.installed() == list(_results.REMEMBERED)
    assert toy.train.__wrapped__.__module__ == "qkv.experiments.toy"
    assert _results.install() == []  # installing again wraps nothing twice
    try:
        _results.uninstall()
        assert _results.installed() == []
        assert not hasattr(toy.train, "__wrapped__")
    finally:
        _results.install()
    assert _results.installed() == list(_results.REMEMBERED)


def test_a_readers_qkv_just_trains():
    """Without bookbuild, qkv's trainings are plain functions: no wrapper, no
    kept result, whatever QKV_RESULTS says (a fresh process that never imports
    bookbuild)."""
    code = (
        "import sys, qkv.experiments.toy as toy, qkv.experiments.measure as m\n"
        "assert not hasattr(toy.train, '__wrapped__'), toy.train\n"
        "assert not hasattr(m.timed, '__wrapped__'), m.timed\n"
        "assert not any(n.startswith('bookbuild') for n in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_kernels_install_the_kept_versions(tmp_path):
    """The book's kernel configuration installs them as a kernel starts."""
    from bookbuild.execute import kernel_config

    assert "_results.install()" in kernel_config.KERNEL_CONFIG
    config = kernel_config.environment(tmp_path)
    file = tmp_path / "ipython" / "profile_default" / "ipython_kernel_config.py"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from traitlets.config import Config\n"
            "from bookbuild.execute import results\n"
            f"c = Config()\nexec(open({str(file)!r}).read())\n"
            "assert results.installed() == list(results.REMEMBERED)\n",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **config},
    )
    assert done.returncode == 0, done.stderr


def test_every_remembered_function_exists_and_an_unknown_one_is_named(monkeypatch):
    for name in _results.REMEMBERED:
        module, attribute = _results._target(name)
        assert callable(getattr(module, attribute))
    monkeypatch.setattr(_results, "REMEMBERED", ("qkv.experiments.toy:gone",))
    with pytest.raises(ValueError, match="qkv.experiments.toy:gone"):
        _results.install()
