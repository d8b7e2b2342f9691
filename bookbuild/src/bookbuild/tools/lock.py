"""The lock: every package of the book's environment pinned, by a tool.

``requirements.txt`` lists the direct dependencies, pinned by hand. This module
asks uv to resolve them (``uv pip compile --universal``: one file for Linux, macOS
and Windows, Python 3.11 and newer) into ``requirements.lock``, which ``make
book`` installs with ``--no-deps``: the same versions on every machine, whatever
is released the week before a course.

Two things stay out of the lock, on purpose:

* torch, which the Makefile installs first, from the right place for the
  machine: PyTorch's CPU index on Linux (PyPI's Linux wheel is the CUDA build,
  several GB), PyPI elsewhere, or a local folder of wheels;
* the CUDA libraries that PyPI's Linux torch would pull in (``nvidia-*``,
  ``cuda-*``, ``triton``): the book runs on a CPU.

With the lock, ``constraints.txt``: the same pins plus torch's release, as pip
constraints (``pip install "qkv[notebooks]" -c constraints.txt``), so that the
package installed by hand, or by a downloaded notebook's first cell, gets the
versions the book is tested with.

Refresh after editing ``requirements.txt``, from the book's folder::

    .venv/bin/python -m bookbuild.tools.lock
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

LOCK = "requirements.lock"
CONSTRAINTS = "constraints.txt"
#: Installed by the Makefile itself, or not wanted on a CPU.
LEFT_OUT = ("torch", "qkv")
CUDA = re.compile(r"^(nvidia-[\w-]+|cuda-[\w-]+|triton)==", re.M)


def uv() -> str:
    """The uv of this environment (installed by the Makefile)."""
    return str(Path(sys.executable).parent / "uv")


def local_wheels() -> list[str]:
    """Folders of wheels that pip is configured to look in (``find-links``)."""
    found = os.environ.get("PIP_FIND_LINKS", "").split()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
        capture_output=True,
        text=True,
    )
    found += done.stdout.split() if done.returncode == 0 else []
    return sorted({folder for folder in found if Path(folder).is_dir()})


def compile_lock(root: Path, left_out: list[str]) -> str:
    """The lock's text, with ``left_out`` packages not written."""
    command = [
        uv(),
        "pip",
        "compile",
        "requirements.txt",
        "--universal",
        "--python-version",
        "3.11",
        "--quiet",
        "--output-file",
        LOCK,
    ]
    for name in left_out:
        command += ["--no-emit-package", name]
    for folder in local_wheels():  # torch's own dependencies, as for the CPU wheel
        command += ["--find-links", folder]
    subprocess.run(command, cwd=root, check=True)
    return (Path(root) / LOCK).read_text(encoding="utf-8")


def constraints(lock: str, requirements: str) -> str:
    """``constraints.txt``: every pin of the lock (with its environment marker)
    and torch's release from ``requirements.txt`` (no local part: ``+cpu`` is
    where it comes from, not which release)."""
    (torch,) = re.findall(r"^torch==([\w.]+)", requirements, re.M)
    pins = re.findall(r"^[\w.-]+==\S+(?: ;.*)?$", lock, re.M)
    pins = sorted(pins + [f"torch=={torch}"], key=lambda pin: pin.lower())
    head = (
        f"# Generated with {LOCK} by python -m bookbuild.tools.lock: do not edit.\n"
        "# The versions the book is tested with, as pip constraints:\n"
        '#   pip install "qkv[notebooks] @ ..." -c constraints.txt\n'
    )
    return head + "\n".join(pins) + "\n"


def write_constraints(root: Path) -> None:
    lock = (root / LOCK).read_text(encoding="utf-8")
    requirements = (root / "requirements.txt").read_text(encoding="utf-8")
    (root / CONSTRAINTS).write_text(constraints(lock, requirements), encoding="utf-8")


def main(root: Path) -> int:
    left_out = list(LEFT_OUT)
    text = compile_lock(root, left_out)
    cuda = CUDA.findall(text)
    if cuda:  # a second pass, now that we know their names
        text = compile_lock(root, left_out + cuda)
    write_constraints(root)
    pins = len(re.findall(r"^[\w.-]+==", text, re.M))
    print(f"{LOCK}: {pins} packages pinned (left out: {', '.join(left_out + cuda)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(".").resolve()))
