"""Check the environment before any chapter executes.

Problem: ``make``'s install stamp (``.venv/.installed``) watches the lock and
the package metadata only. A venv that broke after its install (torch
uninstalled or replaced by another version, ``qkv`` installed from another
checkout) goes unnoticed, and with every chapter in the execution cache the
book even builds "successfully" from outputs this environment can no longer
produce.

Answer: before anything executes, :func:`require` (called at the start of
``bookbuild.execute.prefill`` and of ``bookbuild.build site``)
imports ``torch`` and ``qkv`` in a fresh process of this Python, the kernels'
Python (:func:`probe`), and checks that torch is the version the book pins
(``torch==`` of ``requirements.txt``, else ``TORCH_VERSION`` of the Makefile; a
local build suffix such as ``+cpu`` is not compared) and that ``qkv`` is the
package of the book's own checkout (``src/qkv``, installed editable), when the
book has one. If not, it prints one line, what is wrong and how to repair it,
and the command exits with :data:`BROKEN`, with no traceback. ``make book``
runs ``python -m bookbuild.execute.environment`` first and, when it fails,
installs the venv again once before checking again (the Makefile).

Importing torch takes seconds (7 s of wall time on a loaded 2-core machine), so
a check that passed leaves a stamp in the environment itself,
``<sys.prefix>/.environment-checked`` (the venv's: removed with it), holding a
fingerprint of what the import depends on, computed without importing anything
(:func:`fingerprint`: this Python, the pin, the checkout's ``qkv``, where
``torch`` and ``qkv`` are found, the files and folders of their installs and
their metadata). While the fingerprint is unchanged the check is free (0.4 s,
most of it Python starting); any install, removal or replacement changes it,
and the next check imports again. The stamp keeps the last few fingerprints
(the book and the small books of the tests are checked against different
expectations).

Usage: ``python -m bookbuild.execute.environment [BOOK_ROOT] [--what-only]``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

#: The exit code of a command that found the environment broken.
BROKEN = 3
#: What a user runs to repair it (``make book`` also does it by itself).
REPAIR = "make repair"
#: The fingerprints of the last checks that passed, in the environment.
STAMP = Path(sys.prefix) / ".environment-checked"
#: How many fingerprints the stamp keeps.
KEPT = 4

#: What runs in the fresh process: each import, its version and file, as JSON.
PROBE = """\
import json
found = {}
for name in ("torch", "qkv"):
    try:
        module = __import__(name)
    except BaseException as error:
        found[name] = {"error": f"{type(error).__name__}: {error}"}
    else:
        found[name] = {
            "version": str(getattr(module, "__version__", "")),
            "file": getattr(module, "__file__", None),
        }
print(json.dumps(found))
"""


def pinned_torch(root: Path) -> str | None:
    """The torch version the book pins: ``torch==`` of ``requirements.txt``,
    else ``TORCH_VERSION :=`` of the Makefile; None for a book that pins none."""
    for name, pattern in (
        ("requirements.txt", r"^torch==([^\s;#]+)"),
        ("Makefile", r"^TORCH_VERSION\s*:?=\s*(\S+)"),
    ):
        path = Path(root) / name
        if path.is_file():
            found = re.search(pattern, path.read_text(encoding="utf-8"), re.M)
            if found:
                return found.group(1)
    return None


def own_qkv(root: Path) -> Path | None:
    """The ``qkv`` of the book's own checkout (``src/qkv``), if it has one."""
    package = Path(root).resolve() / "src" / "qkv" / "__init__.py"
    return package if package.is_file() else None


def probe(python: str | None = None, timeout: float = 900) -> dict:
    """``{name: {"version", "file"} or {"error"}}`` for torch and qkv, imported
    in a fresh process of ``python`` (default: this one) with safe paths
    (``-P``: the current folder is not searched first)."""
    try:
        done = subprocess.run(
            [python or sys.executable, "-P", "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"python": {"error": f"{type(error).__name__}: {error}"}}
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"python": {"error": f"exit code {done.returncode}: {last}"}}


def base_version(version: str) -> str:
    """``"2.13.0+cpu"`` -> ``"2.13.0"``: the local build suffix left out."""
    return version.split("+", 1)[0]


def problems(root: Path, found: dict) -> list[str]:
    """What is wrong with the environment :func:`probe` found ([] when sound)."""
    if "python" in found:
        error = found["python"]["error"]
        return [f"{sys.executable} cannot import torch and qkv ({error})"]
    wrong = []
    torch = found.get("torch", {})
    if "error" in torch:
        wrong.append(f"torch does not import ({torch['error']})")
    else:
        pin = pinned_torch(root)
        if pin is not None and base_version(torch["version"]) != base_version(pin):
            wrong.append(f"torch is {torch['version']}, the book pins {pin}")
    qkv = found.get("qkv", {})
    if "error" in qkv:
        if "error" not in torch:  # else it is the same problem
            wrong.append(f"qkv does not import ({qkv['error']})")
    else:
        own = own_qkv(root)
        used = Path(qkv.get("file") or "").resolve()
        if own is not None and used != own and not same_code(used.parent, own.parent):
            wrong.append(
                f"qkv is imported from {used.parent}, whose code differs from this "
                f"checkout's {own.parent} (installed from another checkout?)"
            )
    return wrong


def same_code(one: Path, other: Path) -> bool:
    """Whether two folders hold the same files with the same bytes (Python
    caches left out): a copy of the checkout built with the checkout's venv,
    as ``make same-site`` builds one, imports the same code."""

    def files(folder: Path) -> dict[str, Path]:
        return {
            str(path.relative_to(folder)): path
            for path in folder.rglob("*")
            if path.is_file()
            and "__pycache__" not in path.parts
            and path.suffix not in {".pyc", ".pyo"}
        }

    mine, theirs = files(one), files(other)
    return sorted(mine) == sorted(theirs) and all(
        mine[name].read_bytes() == theirs[name].read_bytes() for name in mine
    )


def _stat(path: Path | str | None) -> str:
    try:
        status = os.stat(path) if path else None
    except OSError:
        return "missing"
    if status is None:
        return "none"
    return f"{status.st_ino}:{status.st_size}:{status.st_mtime_ns}"


def _find(name: str):
    """Where ``name`` would be imported from by a fresh process: searched on
    ``sys.path`` even if this process imported it already (then
    ``importlib.util.find_spec`` answers from ``sys.modules``); a package
    found by an import hook only (an editable install's finder) after that."""
    import importlib.machinery

    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
        return spec or importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def fingerprint(root: Path) -> str:
    """A hash of what importing torch and qkv depends on, computed without
    importing them: this Python, the pin, where each package is found, its
    folder and file, and its installed metadata."""
    parts = [sys.executable, os.path.realpath(sys.executable), sys.version]
    parts += [str(own_qkv(root)), str(pinned_torch(root))]
    for name in ("torch", "qkv"):
        spec = _find(name)
        origin = spec.origin if spec is not None else None
        folder = Path(origin).parent if origin else None
        parts += [name, str(origin), _stat(origin), _stat(folder)]
        if folder is not None:
            parts += [_stat(folder / "lib"), _stat(folder / "version.py")]
        try:
            distribution = importlib.metadata.distribution(name)
            record = distribution.read_text("RECORD") or ""
            parts += [distribution.version, hashlib.sha256(record.encode()).hexdigest()]
            parts.append(distribution.read_text("direct_url.json") or "")
        except importlib.metadata.PackageNotFoundError:
            parts.append("not installed")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def check(root: Path) -> list[str]:
    """What is wrong with the environment ([] when sound): free while the
    fingerprint matches the stamp of the last check that passed, else a
    :func:`probe` (which writes the stamp when it passes)."""
    current = fingerprint(root)
    try:
        passed = STAMP.read_text(encoding="utf-8").split()
    except OSError:
        passed = []
    if current in passed:
        return []
    wrong = problems(root, probe())
    if not wrong:
        try:
            STAMP.write_text("\n".join([*passed, current][-KEPT:]) + "\n")
        except OSError:  # an environment we may not write to: check every time
            pass
    return wrong


def message(wrong: list[str], advice: bool = True) -> str:
    """The one line printed for a broken environment."""
    line = f"environment: {'; '.join(wrong)}"
    return f"{line}. To repair: {REPAIR}" if advice else line


def require(root: Path, advice: bool = True) -> int:
    """0 when the environment is sound; else print one line and return
    :data:`BROKEN` (the caller exits with it)."""
    wrong = check(root)
    if wrong:
        print(message(wrong, advice), file=sys.stderr, flush=True)
        return BROKEN
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=".", type=Path)
    parser.add_argument(
        "--what-only", action="store_true", help="say what is wrong, not how to repair"
    )
    args = parser.parse_args(argv)
    # Ctrl-C ends the check as a signal does, with no traceback: the shell of
    # the Makefile's recipe then stops, and does not take it for a broken venv.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return require(args.root.resolve(), advice=not args.what_only)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
