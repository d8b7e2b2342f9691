"""ARCHITECTURE.md is the map of the repository: it must stay true."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def tracked_top_level_folders() -> set[str]:
    """The folders at the top of the repository that git tracks files in."""
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {name.split("/", 1)[0] for name in files if "/" in name}


def test_every_top_level_folder_is_on_the_map():
    folders = tracked_top_level_folders()
    assert {"book", "src", "tests", "_ext"} <= folders
    missing = sorted(f for f in folders if f"{f}/" not in MAP)
    assert not missing, f"ARCHITECTURE.md does not show {missing}"


def test_every_module_of_both_packages_is_on_the_map():
    for package in ("qkv", "bookbuild"):
        assert f"src/{package}/" in MAP, package
        modules = sorted((ROOT / "src" / package).glob("*.py"))
        assert len(modules) > 3, package
        missing = [
            m.name
            for m in modules
            if m.name != "__init__.py" and f"`{m.name}`" not in MAP
        ]
        assert not missing, f"ARCHITECTURE.md does not list {package}: {missing}"


def test_the_extensions_are_thin():
    """Each file of _ext/ loads a bookbuild module and holds no code of its own."""
    for extension in sorted((ROOT / "_ext").glob("*.py")):
        code = [
            line
            for line in extension.read_text(encoding="utf-8")
            .split('"""')[-1]
            .splitlines()
            if line.strip()
        ]
        assert code[0].startswith("from bookbuild."), extension.name
        assert len(code) <= 3, f"{extension.name} is not thin: {code}"


def test_nothing_edits_sys_path():
    offenders = []
    for path in [
        *ROOT.glob("src/**/*.py"),
        *ROOT.glob("tests/*.py"),
        *ROOT.glob("_ext/*.py"),
    ]:
        text = path.read_text(encoding="utf-8")
        if "sys.path." in text.replace('"sys.path."', ""):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def test_the_version_is_written_once():
    """src/qkv/__init__.py holds it; pyproject reads it; CITATION.cff repeats it
    for citation tools, and this test keeps the copy equal."""
    import re
    from importlib.metadata import version

    import qkv

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert not re.search(r"^version\s*=\s*\"", pyproject, re.M), "pyproject types it"
    assert version("qkv") == qkv.__version__
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(qkv.__version__)}$", citation, re.M)
