"""Kernels forked from the warm process (bookbuild.execute.kernels) act as fresh ones.

Each check runs the same small notebook in an ordinary kernel and in a forked
one: figures must still be displayed, the kernel must run in the folder and
environment the executor gave it, start from its own random state, and be gone
once the notebook is done.
"""

from __future__ import annotations

import json
import os
import sys

import nbclient
import nbformat
import pytest

from bookbuild.execute import kernels
from bookbuild.execute.kernels import WarmKernelManager, enabled, ipykernel_arguments

PROBE = """\
import json, os, random
import numpy as np
import torch
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.plot([0, 1], [1, 0])
plt.show()
print(json.dumps({
    "cwd": os.getcwd(),
    "pid": os.getpid(),
    "parent": os.getppid(),
    "marker": os.environ.get("QKV_TEST_MARKER"),
    "threads": torch.get_num_threads(),
    "torch": torch.rand(1).item(),
    "numpy": float(np.random.rand()),
    "random": random.random(),
}))
"""


def run_probe(folder, kernel_manager_class=None) -> tuple[dict, list[str]]:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(PROBE)]
    options = (
        {}
        if kernel_manager_class is None
        else {"kernel_manager_class": kernel_manager_class}
    )
    client = nbclient.NotebookClient(
        notebook, timeout=120, resources={"metadata": {"path": str(folder)}}, **options
    )
    client.execute()
    outputs = notebook.cells[0].outputs
    mime_types = [kind for out in outputs for kind in out.get("data", {})]
    text = "".join(
        out.get("text", "") for out in outputs if out.output_type == "stream"
    )
    return json.loads(text.strip().splitlines()[-1]), mime_types


@pytest.fixture
def probe_env(monkeypatch):
    monkeypatch.setenv("QKV_TEST_MARKER", "seen")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.delenv("QKV_WARM_KERNELS", raising=False)


def test_forked_kernels_act_as_fresh_kernels(tmp_path, probe_env):
    cold, cold_types = run_probe(tmp_path)
    first, first_types = run_probe(tmp_path, WarmKernelManager)
    second, _ = run_probe(tmp_path, WarmKernelManager)
    assert "image/png" in cold_types
    assert first_types == cold_types, "a forked kernel must display figures"
    for state in (cold, first, second):
        assert state["cwd"] == str(tmp_path)
        assert state["marker"] == "seen"
        assert state["threads"] == 1
    assert cold["parent"] == os.getpid(), "an ordinary kernel is our child"
    assert first["parent"] == second["parent"] != os.getpid(), "not forked"
    assert first["pid"] != second["pid"]
    for generator in ("torch", "numpy", "random"):
        assert first[generator] != second[generator], f"{generator} state was shared"
    for state in (first, second):
        with pytest.raises(ProcessLookupError):
            os.kill(state["pid"], 0)  # the kernel exited with its notebook


def test_switched_off_kernels_start_the_ordinary_way(tmp_path, probe_env, monkeypatch):
    monkeypatch.setenv("QKV_WARM_KERNELS", "0")
    state, mime_types = run_probe(tmp_path, WarmKernelManager)
    assert state["parent"] == os.getpid()
    assert "image/png" in mime_types
    assert state["cwd"] == str(tmp_path)


def test_only_ipykernel_commands_of_this_python_are_forked():
    command = [sys.executable, "-m", "ipykernel_launcher", "-f", "c.json"]
    assert ipykernel_arguments(command) == ["-f", "c.json"]
    assert ipykernel_arguments(["R", "--slave", "-f", "c.json"]) is None
    other_python = ["/opt/other/bin/python", *command[1:]]
    assert ipykernel_arguments(other_python) is None


def test_forking_is_on_by_default_on_linux_only(monkeypatch):
    monkeypatch.delenv("QKV_WARM_KERNELS", raising=False)
    assert enabled() == sys.platform.startswith("linux")
    monkeypatch.setenv("QKV_WARM_KERNELS", "1")
    assert enabled()
    monkeypatch.setenv("QKV_WARM_KERNELS", "0")
    assert not enabled()


# Warm kernels must never cost a user the build: both ways they can fail.


def run_chapter(folder, manager=WarmKernelManager):
    """Run a one-cell chapter as the prefill does; return its result."""
    from types import SimpleNamespace

    from bookbuild.execute.prefill import execute

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    chapter = SimpleNamespace(uri=str(folder / "chapter.md"), nb=notebook)
    ((_, result),) = execute([chapter], {"timeout": 120}, manager)
    return result


class KernelThatDoesNotStart(WarmKernelManager):
    """Forks a process that exits at once instead of becoming a kernel."""

    kernel_main = staticmethod(print)


@pytest.fixture
def warm_on(probe_env, monkeypatch):
    monkeypatch.setenv("QKV_WARM_KERNELS", "1")
    monkeypatch.setattr(kernels, "_given_up", None)  # restored after the test
    launches = dict(WarmKernelManager.launches)
    yield
    WarmKernelManager.launches.update(launches)


def outputs(result) -> str:
    return "".join(out.get("text", "") for out in result.nb.cells[0].outputs)


def test_a_warm_process_that_cannot_start_gives_ordinary_kernels(
    tmp_path, warm_on, monkeypatch, capsys
):
    def broken():
        raise OSError("no forkserver here")

    monkeypatch.setattr(kernels, "warm_context", broken)
    ordinary = WarmKernelManager.launches["ordinary"]
    result = run_chapter(tmp_path)
    assert result.err is None, result.exc_string
    assert outputs(result).strip() == "42"
    assert WarmKernelManager.launches["ordinary"] == ordinary + 1
    notice = capsys.readouterr().out.strip().splitlines()
    assert len(notice) == 1 and "no forkserver here" in notice[0], notice
    assert not kernels.enabled()


def test_a_forked_kernel_that_fails_to_start_is_replaced_by_an_ordinary_one(
    tmp_path, warm_on, capsys
):
    forked = WarmKernelManager.launches["forked"]
    result = run_chapter(tmp_path, KernelThatDoesNotStart)
    assert result.err is None, result.exc_string
    assert outputs(result).strip() == "42"
    assert WarmKernelManager.launches["forked"] == forked + 1  # tried once
    notice = [
        line
        for line in capsys.readouterr().out.splitlines()
        if "warm kernels off" in line
    ]
    assert len(notice) == 1 and "chapter" in notice[0], notice
    assert not kernels.enabled()


# One kernel runs a chapter's languages (bookbuild.execute.fresh_state): the
# second run must see what a fresh kernel has, whatever the first one changed.

POLLUTE = """\
import os, warnings
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
import qkv
from qkv.page.widgets import Widget
leftover = 1
torch.set_printoptions(precision=1)
np.set_printoptions(precision=1)
torch.set_default_dtype(torch.float64)
torch.set_grad_enabled(False)
mpl.rcParams["lines.linewidth"] = 9.0
qkv.set_language("fr")
os.environ["QKV_TEST_LEFTOVER"] = "1"
os.chdir("/")
warnings.warn("once per place")
fig = plt.figure()
plt.close(fig)
"""

FRESH_CHECK = """\
import json, os, warnings
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
import qkv
warnings.warn("once per place")
print(json.dumps({
    "leftover": "leftover" in globals(),
    "torch": str(torch.tensor([0.123456])),
    "numpy": str(np.array([0.123456])),
    "dtype": str(torch.get_default_dtype()),
    "grad": torch.is_grad_enabled(),
    "linewidth": mpl.rcParams["lines.linewidth"],
    "language": qkv.get_language(),
    "environ": os.environ.get("QKV_TEST_LEFTOVER"),
    "cwd": os.getcwd(),
}))
fig, ax = plt.subplots()
ax.plot([0, 1], [1, 0])
"""


def two_runs(folder) -> list:
    """The polluting chapter, then the checking one, as the prefill runs a
    chapter's two languages: in one kernel."""
    from types import SimpleNamespace

    from bookbuild.execute.prefill import execute

    runs = []
    for code in (POLLUTE, FRESH_CHECK):
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
        notebook.cells = [nbformat.v4.new_code_cell(code)]
        runs.append(SimpleNamespace(uri=str(folder / "chapter.md"), nb=notebook))
    return execute(runs, {"timeout": 120})


def test_the_second_run_in_a_kernel_sees_a_fresh_kernel(tmp_path, warm_on):
    forked = WarmKernelManager.launches["forked"]
    (_, first), (_, second) = two_runs(tmp_path)
    assert first.err is None, first.exc_string
    assert second.err is None, second.exc_string
    assert WarmKernelManager.launches["forked"] == forked + 1  # one kernel
    cell = second.nb.cells[0]
    streams = {"stdout": "", "stderr": ""}
    for out in cell.outputs:
        if out.output_type == "stream":
            streams[out.name] += out.text
    seen = json.loads(streams["stdout"])
    assert seen == {
        "leftover": False,
        "torch": "tensor([0.1235])",
        "numpy": "[0.123456]",
        "dtype": "torch.float32",
        "grad": True,
        "linewidth": 1.5,
        "language": "en",
        "environ": None,
        "cwd": str(tmp_path),
    }
    assert "once per place" in streams["stderr"]  # the warning is shown again
    assert cell.execution_count == 1  # counts start again
    mime_types = [kind for out in cell.outputs for kind in out.get("data", {})]
    assert "image/png" in mime_types  # figures still shown at the cell's end


def test_cells_whose_outputs_the_page_removes_draw_no_figure(tmp_path, warm_on):
    """A figure left open by a ``remove-output`` cell, or its last value, is
    not drawn (nobody sees it); glued there, it is; in a shown cell, it is."""
    from types import SimpleNamespace

    from bookbuild.execute.prefill import execute

    draw = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1])"
    cells = [
        (draw + "\nfig", ["remove-output"]),
        (
            "from myst_nb import glue\nglue('drawn', fig, display=False)",
            ["remove-cell"],
        ),
        (draw, []),
    ]
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    for code, tags in cells:
        notebook.cells.append(nbformat.v4.new_code_cell(code, metadata={"tags": tags}))
    chapter = SimpleNamespace(uri=str(tmp_path / "chapter.md"), nb=notebook)
    ((_, result),) = execute([chapter], {"timeout": 120})
    assert result.err is None, result.exc_string

    def images(cell) -> int:
        return sum(
            any(kind.endswith("image/png") for kind in out.get("data", {}))
            for out in cell.outputs
        )

    hidden, glued, shown = result.nb.cells
    assert hidden.outputs == []  # no figure, no value
    assert images(glued) == 1 and "scrapbook" in str(glued.outputs[0].metadata)
    assert images(shown) == 1
