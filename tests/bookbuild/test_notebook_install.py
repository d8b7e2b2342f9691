"""The first cell of every downloaded notebook installs what is missing: the CPU
build of torch on Linux unless a torch is there, then qkv with its extras from
``QKV_SOURCE`` or the book's repository; with neither, it says how to give one.
The cell runs here with ``pip`` recorded: nothing is installed."""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
from pathlib import Path
from unittest import mock

import pytest

from bookbuild.i18n.messages import gettext
from bookbuild.site.notebooks import (
    FIRST_CELL,
    NO_SOURCE,
    install_cell,
    torch_version,
)
from bookbuild.tools.testing import make_variable

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "https://github.com/example-org/attention-book"
EVERYTHING = {"torch", "qkv", "matplotlib", "sklearn", "transformers"}


def run_cell(
    source: str,
    system: str,
    present: set[str],
    environ: dict | None = None,
    returncode: int = 0,
) -> tuple[list[list[str]], str]:
    """The pip commands the cell runs on ``system`` with only ``present``
    installed, and what it prints."""
    calls: list[list[str]] = []
    printed: list[str] = []
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        return real_find_spec("json") if name in present else None

    class Pip:  # records the command, installs nothing
        def __init__(self, command, **kwargs):
            calls.append(command)
            self.stdout = [f"Successfully installed {command[-1]}\n"]
            self.returncode = returncode

        def wait(self):
            return self.returncode

    with (
        mock.patch.object(subprocess, "Popen", Pip),
        mock.patch.object(importlib.util, "find_spec", find_spec),
        mock.patch.object(platform, "system", lambda: system),
        mock.patch.dict(os.environ, environ or {}, clear=False),
    ):
        if not environ:
            os.environ.pop("QKV_SOURCE", None)
        say = {"print": lambda text, end="\n": printed.append(text)}
        exec(compile(source, "<first cell>", "exec"), say)
    return calls, "\n".join(printed)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_on_linux_a_bare_jupyter_gets_the_cpu_build_then_the_package(language):
    source = install_cell(REPOSITORY, language).source
    (torch, package), printed = run_cell(source, "Linux", present=set())
    assert torch[1:5] == ["-m", "pip", "install", "--progress-bar=off"]
    # the release the book is built with, as the Makefile installs it
    assert torch_version() == make_variable(ROOT, "TORCH_VERSION")
    assert torch[5:] == [
        f"torch=={torch_version()}",
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
    ]
    assert package[-1] == f"qkv[notebooks] @ git+{REPOSITORY}"
    assert printed.count("Successfully installed") == 2  # pip's report, shown
    assert source.startswith(gettext(language)(FIRST_CELL))  # what it does


def test_colab_keeps_its_torch_and_elsewhere_torch_comes_with_the_package():
    source = install_cell(REPOSITORY).source
    # Colab: torch (its own build) is there, the book's package is not.
    (package,), _ = run_cell(source, "Linux", present={"torch"})
    assert package[-1] == f"qkv[notebooks] @ git+{REPOSITORY}"
    # macOS: PyPI's torch is a CPU build, it comes with the package.
    (package,), _ = run_cell(source, "Darwin", present=set())
    assert package[-1].startswith("qkv[notebooks] @ ")
    # The book's own environment: nothing to do.
    assert run_cell(source, "Linux", present=EVERYTHING) == ([], "")


def test_a_failing_pip_stops_the_cell():
    source = install_cell(REPOSITORY).source
    with pytest.raises(subprocess.CalledProcessError):
        run_cell(source, "Linux", present={"torch"}, returncode=1)


def test_qkv_source_names_a_folder_or_an_address(tmp_path):
    source = install_cell(REPOSITORY).source
    folder = {"QKV_SOURCE": str(tmp_path)}
    (package,), _ = run_cell(source, "Linux", present={"torch"}, environ=folder)
    assert package[-1] == f"qkv[notebooks] @ {tmp_path.resolve().as_uri()}"
    assert "-c" not in package  # a folder without constraints.txt
    (tmp_path / "constraints.txt").write_text("torch==2.13.0\n", encoding="utf-8")
    (package,), _ = run_cell(source, "Linux", present={"torch"}, environ=folder)
    # a copy of the book: its pins (constraints.txt, from requirements.lock)
    assert package[-3:-1] == ["-c", str(tmp_path / "constraints.txt")]
    fork = {"QKV_SOURCE": "git+https://example.org/fork"}
    (package,), _ = run_cell(source, "Linux", present={"torch"}, environ=fork)
    assert package[-1] == "qkv[notebooks] @ git+https://example.org/fork"


@pytest.mark.parametrize("language", ["en", "fr"])
def test_without_a_repository_it_says_how_to_install(language):
    """A book built without a repository address names no place (no path of
    the machine that built it): the cell installs nothing and says how."""
    source = install_cell("", language).source
    assert "file:" not in source and str(Path.cwd()) not in source
    calls, printed = run_cell(source, "Linux", present={"torch"})
    assert calls == []
    assert printed == gettext(language)(NO_SOURCE)
    assert all(len(line) <= 77 for line in source.splitlines())
