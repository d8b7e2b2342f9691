"""The environment is checked before any chapter executes
(bookbuild.execute.environment, called by the prefill and by ``site``).

A broken environment is faked without touching the venv: a folder on
``PYTHONPATH`` holds a ``torch`` (and a ``qkv``) of its own, which fails to
import or has another version. Each entry point must then stop before
executing anything, with one line that says what is wrong and how to repair
it, a non-zero exit code and no traceback. Fast: the fake torch imports at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bookbuild.execute import environment
from bookbuild.execute.environment import BROKEN, REPAIR, fingerprint, problems
from bookbuild.tools.testing import MYST_NOTEBOOK, make_variable, write_small_book

ROOT = Path(__file__).resolve().parents[2]
OWN_QKV = ROOT / "src" / "qkv" / "__init__.py"
PIN = environment.pinned_torch(ROOT)


def fake_packages(folder: Path, torch: str, qkv: str | None = None) -> Path:
    """A folder whose ``torch/__init__.py`` (and ``qkv/__init__.py``) hold
    the given code; put first on ``PYTHONPATH``, it hides the venv's."""
    for name, code in (("torch", torch), ("qkv", qkv)):
        if code is not None:
            (folder / name).mkdir(parents=True)
            (folder / name / "__init__.py").write_text(code, encoding="utf-8")
    return folder


def run(command: list[str], cwd: Path, fakes: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(fakes)}
    env.pop("MPLBACKEND", None)
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def one_line(done: subprocess.CompletedProcess) -> str:
    """The one line a broken environment gets; nothing else printed."""
    output = done.stdout + done.stderr
    assert done.returncode == BROKEN, output
    assert "Traceback" not in output, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("environment: ") and REPAIR in lines[0], lines
    return lines[0]


# -- what the check reports, from what the fresh process found ---------------------


def found(torch_version: str = f"{PIN}+cpu", qkv_file: str = str(OWN_QKV)) -> dict:
    return {
        "torch": {"version": torch_version, "file": "/venv/torch/__init__.py"},
        "qkv": {"version": "0.1.0", "file": qkv_file},
    }


def test_the_pinned_torch_and_this_checkouts_qkv_pass():
    assert PIN == make_variable(ROOT, "TORCH_VERSION")
    assert problems(ROOT, found(f"{PIN}+cpu")) == []
    assert problems(ROOT, found(f"{PIN}+cu128")) == [], "a local build suffix"


def test_each_fault_is_named():
    assert problems(ROOT, found("2.12.1+cpu")) == [
        f"torch is 2.12.1+cpu, the book pins {PIN}"
    ]
    elsewhere = "/other/checkout/src/qkv/__init__.py"
    (wrong,) = problems(ROOT, found(qkv_file=elsewhere))
    assert "/other/checkout/src/qkv" in wrong and str(OWN_QKV.parent) in wrong
    missing = {"torch": {"error": "ModuleNotFoundError: No module named 'torch'"}}
    missing["qkv"] = {"error": "ModuleNotFoundError: No module named 'torch'"}
    assert problems(ROOT, missing) == [
        "torch does not import (ModuleNotFoundError: No module named 'torch')"
    ], "qkv failing because torch does is one fault"
    crashed = {"python": {"error": "exit code -11: no output"}}
    assert "exit code -11" in problems(ROOT, crashed)[0]


def test_a_copy_of_the_checkout_may_use_its_qkv(tmp_path):
    """``make same-site`` builds a copy of the checkout with the checkout's venv:
    the qkv it imports is elsewhere but the same code."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(OWN_QKV.parent, copy / "src" / "qkv")
    (copy / "requirements.txt").write_text(f"torch=={PIN}\n", encoding="utf-8")
    assert problems(copy, found()) == []
    (copy / "src" / "qkv" / "attention.py").write_text("# edited\n")
    (wrong,) = problems(copy, found())
    assert "differs from this checkout's" in wrong


def test_a_book_without_its_own_package_or_pin_only_needs_the_imports(tmp_path):
    assert environment.pinned_torch(tmp_path) is None
    assert problems(tmp_path, found("1.0.0", "/anywhere/qkv/__init__.py")) == []


# -- the fingerprint that makes a passed check free ---------------------------------


def test_the_fingerprint_follows_what_torch_is_imported_from(tmp_path, monkeypatch):
    import importlib

    before = fingerprint(ROOT)
    assert fingerprint(ROOT) == before
    fakes = fake_packages(tmp_path, torch="__version__ = '2.13.0'\n")
    monkeypatch.syspath_prepend(str(fakes))
    importlib.invalidate_caches()
    assert fingerprint(ROOT) != before, "another torch, the same fingerprint"
    assert fingerprint(tmp_path) != fingerprint(ROOT), "the pin and qkv count"


# -- each entry point stops on a broken environment, before executing anything -------


@pytest.mark.parametrize(
    "torch, qkv, says",
    [
        ("raise ImportError('hidden by the test')\n", None, "torch does not import"),
        ("__version__ = '2.12.1'\n", None, "torch is 2.12.1, the book pins"),
        ("__version__ = '2.13.0+cpu'\n", "", "differs from this checkout's"),
    ],
    ids=["torch-missing", "torch-version", "qkv-elsewhere"],
)
def test_the_check_says_what_is_wrong_on_one_line(tmp_path, torch, qkv, says):
    fakes = fake_packages(tmp_path, torch=torch, qkv=qkv)
    command = [sys.executable, "-m", "bookbuild.execute.environment", str(ROOT)]
    line = one_line(run(command, ROOT, fakes))
    assert says in line, line


SLEEPLESS = MYST_NOTEBOOK + "\n# Page\n\n```{code-cell} ipython3\nprint(1)\n```\n"


def test_prefill_and_site_stop_before_executing_anything(tmp_path):
    fakes = fake_packages(tmp_path / "fakes", torch="raise ImportError('gone')\n")
    book = write_small_book(
        tmp_path / "book", {"page": SLEEPLESS}, toc="format: jb-book\nroot: page\n"
    )
    for command in (
        [sys.executable, "-P", "-m", "bookbuild.execute.prefill", str(book)],
        [sys.executable, "-m", "bookbuild.build", "site"],
    ):
        line = one_line(run(command, book, fakes))
        assert "torch does not import (ImportError: gone)" in line
    assert not (book / "_build" / ".jupyter_cache").exists(), "something executed"
    assert not (book / "_build" / "html").exists(), "Sphinx started"


def test_make_checks_the_environment_before_every_build():
    """Both builds of the Makefile run the check (which repairs the venv) first,
    as an order-only prerequisite: it runs on every `make book`, even when no
    input changed and the site is not built again."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    check = make_variable(ROOT, "CHECK_ENVIRONMENT")
    assert "bookbuild.execute.environment" in check
    for target in ("$(BUILT):", "$(STUDENT_BUILT):"):
        prerequisites = makefile.split(f"\n{target}", 1)[1].split("\n", 1)[0]
        assert prerequisites.rstrip().endswith("| environment"), target
    environment = makefile.split("\nenvironment:", 1)[1].split("\n\n", 1)[0]
    assert "$(CHECK_ENVIRONMENT)" in environment
    definition = makefile.split("CHECK_ENVIRONMENT =", 1)[1].split("\n\n", 1)[0]
    assert "$(MAKE) --no-print-directory repair" in definition, "no repair"
    # the repair reinstalls torch and the book's packages: uv takes a torch
    # whose files are gone but whose metadata remains for installed
    repair = makefile.split("\nrepair:", 1)[1].split("\n\n", 1)[0]
    assert "rm -f $(INSTALLED)" in repair and "REPAIRING=1" in repair
    install = makefile.split("\n$(INSTALLED):", 1)[1].split("\n\n", 1)[0]
    assert '$(if $(REPAIRING),--reinstall) "$(TORCH)"' in install
