"""The ways to install the book agree: make, conda, the lock, the Makefile."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bookbuild.testing import make_variable

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
    assert "-r requirements.lock" in pip and "-e ." in pip
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
