"""Installing ``qkv`` anywhere gets the book's torch: the package's requirements
keep torch (and transformers) on the releases the book is tested with, and
``constraints.txt``, generated with the lock, pins everything else to the lock's
versions (no network: the files are read, nothing is resolved)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from bookbuild.tools.lock import CONSTRAINTS, LOCK, constraints

ROOT = Path(__file__).resolve().parents[2]


def _pins(text: str) -> dict[str, str]:
    return {
        name.lower(): version
        for name, version in re.findall(r"^([\w.-]+)==([\w.]+)", text, re.M)
    }


def test_constraints_are_the_lock_and_torch_and_up_to_date():
    lock = (ROOT / LOCK).read_text(encoding="utf-8")
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    written = (ROOT / CONSTRAINTS).read_text(encoding="utf-8")
    assert written == constraints(lock, requirements), (
        "constraints.txt is stale: run .venv/bin/python -m bookbuild.tools.lock"
    )
    pins = _pins(written)
    assert pins["torch"] == _pins(requirements)["torch"]
    assert {name: pins[name] for name in _pins(lock)} == _pins(lock)
    # pip reads every line: a pin, a marker at most, nothing pip refuses
    for line in written.splitlines():
        if line and not line.startswith("#"):
            assert Requirement(line).specifier, line


def test_the_package_accepts_only_the_tested_torch_and_transformers():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tested = _pins((ROOT / "requirements.txt").read_text(encoding="utf-8"))
    needs = [Requirement(text) for text in project["project"]["dependencies"]]
    needs += [
        Requirement(text)
        for text in project["project"]["optional-dependencies"]["notebooks"]
    ]
    for name in ("torch", "transformers"):
        (need,) = [req for req in needs if req.name == name]
        major, minor, _ = tested[name].split(".")
        assert need.specifier.contains(tested[name]), need
        assert need.specifier.contains(f"{major}.{minor}.9"), need  # its fixes
        assert not need.specifier.contains(f"{major}.{int(minor) + 1}.0"), need
        assert not need.specifier.contains(f"{major}.{int(minor) - 1}.0"), need
    # every other requirement of the notebooks is in the constraints
    pins = _pins((ROOT / CONSTRAINTS).read_text(encoding="utf-8"))
    assert all(need.name.lower() in pins for need in needs)


def test_the_readme_installs_the_cpu_build_in_one_line():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"^pip install -e \. .*$", readme, re.M)
    assert line, "the README's one-line install of qkv"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in line[0]
    assert "-c constraints.txt" in line[0]
