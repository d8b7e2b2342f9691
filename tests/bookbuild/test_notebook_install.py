"""The first cell of every downloaded notebook installs what is missing: the CPU
build of torch on Linux unless a torch is there, then qkv with its extras."""

from __future__ import annotations

import importlib.util
import platform
import subprocess
from pathlib import Path
from unittest import mock

import pytest

from bookbuild.site.notebooks import install_cell, torch_version

REPOSITORY = "https://github.com/example-org/attention-book"


def commands_run(source: str, system: str, present: set[str]) -> list[list[str]]:
    """The pip commands the cell runs on ``system`` with only ``present``
    installed (nothing is installed: the calls are recorded)."""
    calls: list[list[str]] = []
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        return real_find_spec("json") if name in present else None

    with (
        mock.patch.object(subprocess, "check_call", calls.append),
        mock.patch.object(importlib.util, "find_spec", find_spec),
        mock.patch.object(platform, "system", lambda: system),
    ):
        exec(compile(source, "<first cell>", "exec"), {})
    return calls


@pytest.mark.parametrize("language", ["en", "fr"])
def test_on_linux_a_bare_jupyter_gets_the_cpu_build_then_the_package(language):
    source = install_cell(REPOSITORY, language).source
    torch, package = commands_run(source, "Linux", present=set())
    assert torch[1:5] == ["-m", "pip", "install", "-q"]
    assert torch[5:] == [
        f"torch=={torch_version()}",
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
    ]
    assert package[-1] == f"qkv[notebooks] @ git+{REPOSITORY}"
    assert all(line.startswith("#") for line in source.splitlines()[:4])


def test_elsewhere_torch_comes_from_pypi_and_a_torch_already_there_stays():
    source = install_cell(REPOSITORY).source
    torch, _ = commands_run(source, "Darwin", present=set())
    assert "--index-url" not in torch and torch[-1].startswith("torch==")
    # Colab: torch (its own build) is there, the book's package is not.
    (package,) = commands_run(source, "Linux", present={"torch"})
    assert package[-1].startswith("qkv[notebooks]")
    # Everything there: nothing to do.
    everything = {"torch", "qkv", "matplotlib", "sklearn", "transformers"}
    assert commands_run(source, "Linux", present=everything) == []


def test_without_a_repository_the_package_comes_from_the_copy_built_from(tmp_path):
    source = install_cell("", "en", tmp_path).source
    (package,) = commands_run(source, "Linux", present={"torch"})
    assert package[-1] == f"qkv[notebooks] @ {Path(tmp_path).resolve().as_uri()}"
