"""Trained results kept on disk, read back instead of training again.

Every ``train(seed, ...)`` of :mod:`qkv.experiments` is deterministic: the same
function, the same arguments and the same code of ``qkv`` give the same result.
The measurements of :mod:`qkv.experiments.measure` are kept the same way: a
page's times are measured once per version of the code, and every edition of
the page (English, French) shows the same ones.
When the environment variable ``QKV_RESULTS`` names a folder, :func:`remembered`
keeps each result there (``torch.save``), and a later call with the same arguments
and the same code reads it back. Results sit in a folder per version of the code;
the first result of a new version removes the folders of the others. The book's
build sets it for its kernels (their ``_build/results``): a chapter executed again
after an edit of its prose or code does not train again, and the tests run the
chapters' notebooks against the build's trained results. Without it, as in a
reader's notebook, every call trains.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import inspect
import io
import os
import pickle
import shutil
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import torch

#: The environment variable that names the folder of kept results.
RESULTS = "QKV_RESULTS"

R = TypeVar("R")


#: The modules of ``qkv`` every result depends on: all of them but the
#: experiments (each result depends on its own module only: they never import
#: each other) and :mod:`qkv.page`, which draws and never trains nor measures.
_EXPERIMENTS_SHARED = ("__init__.py", "_results.py")


def _is_core(relative: Path) -> bool:
    """Whether the module at ``relative`` (to the package) is part of every key."""
    if relative.parts[0] == "page":
        return False
    if relative.parts[0] == "experiments":
        return relative.name in _EXPERIMENTS_SHARED
    return True


@functools.cache
def code_hash() -> str:
    """A hash of the core modules of ``qkv`` (paths relative to the package, and
    contents): a result is read back only by the code that made it. With
    :func:`module_hash` of the function's own module, a result is kept across
    edits of the drawing code and of the other experiments."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if _is_core(relative):
            digest.update(relative.as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def module_hash(module: str) -> str:
    """A hash of the source of the module named ``module`` ("" if it has none)."""
    source = getattr(sys.modules.get(module), "__file__", None)
    if not source:
        return ""
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


def result_path(
    folder: Path,
    function: Callable,
    args: tuple,
    kwargs: dict,
    patches: list[tuple[str, str]] | None = None,
) -> Path:
    """Where the result of ``function(*args, **kwargs)`` is kept in ``folder``:
    named by the function and a hash of the code (the core of ``qkv`` and the
    function's own module) and of every argument, defaults
    filled in (``train(0)`` and ``train(seed=0)`` are one result), and of what
    replaces parts of ``qkv`` during the call (``patches``, if any)."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    digest = hashlib.sha256(code_hash().encode())
    digest.update(module_hash(function.__module__).encode())
    digest.update(f"{function.__module__}.{function.__qualname__}".encode())
    digest.update(_pickled(sorted(bound.arguments.items())))
    if patches:
        digest.update(_pickled(patches))
    module = function.__module__.rsplit(".", 1)[-1]
    name = f"{module}.{function.__name__}-{digest.hexdigest()[:20]}.pt"
    return Path(folder) / code_hash()[:16] / name


def _drop_other_versions(version: Path) -> None:
    """Remove the results of other versions of the code beside ``version``: no
    call can read them again (kernels in parallel may race: nothing to fail)."""
    for other in version.parent.iterdir():
        if other.is_dir() and other != version:
            shutil.rmtree(other, ignore_errors=True)


class _ByContent(pickle.Pickler):
    """Pickles a tensor as its dtype, shape and the hash of its numbers: the same
    bytes in every process (a tensor's own pickle is not)."""

    def persistent_id(self, obj):
        if isinstance(obj, types.FunctionType) and (
            obj.__module__ == "__main__" or "<" in obj.__qualname__
        ):  # a notebook's function, a local one, a lambda: not importable
            return ("function", obj.__qualname__, _code_of(obj))
        if isinstance(obj, torch.Tensor):
            flat = obj.detach().cpu().contiguous().reshape(-1)
            numbers = flat.view(torch.uint8).numpy()
            content = hashlib.sha256(numbers.tobytes()).hexdigest()
            return ("tensor", str(obj.dtype), tuple(obj.shape), content)
        return None


def _code_of(function: types.FunctionType) -> str:
    """A hash of what a notebook's function does: its syntax tree, without
    its docstring and comments, so that a translated notebook's copy of it
    (comments and docstring in another language) is the same function."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):  # a lambda within a line, no source
        code = function.__code__
        consts = [c for c in code.co_consts if not isinstance(c, types.CodeType)]
        seen = (
            f"{function.__qualname__} {code.co_code.hex()} {consts!r} {code.co_names}"
        )
        return hashlib.sha256(seen.encode()).hexdigest()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def _pickled(value: object) -> bytes:
    buffer = io.BytesIO()
    _ByContent(buffer, protocol=4).dump(value)
    return buffer.getvalue()


def patched() -> list[str]:
    """What of ``qkv`` is replaced at this moment by code from outside it (a
    chapter's ``mock.patch.object(qkv.MultiHeadAttention, "forward", ...)``): the
    public functions of its modules and the methods of its classes."""
    return [name for name, _ in _replacements()]


def _replacements() -> list[tuple[str, object]]:
    """:func:`patched`, each name with what replaces it."""
    found = []
    for name, module in list(sys.modules.items()):
        if name != "qkv" and not name.startswith("qkv."):
            continue
        for public in getattr(module, "__all__", ()):
            value = getattr(module, public, None)
            if isinstance(value, type) and value.__module__.startswith("qkv"):
                for attribute, method in vars(value).items():
                    if callable(method) and _foreign(method):
                        found.append((f"{name}.{public}.{attribute}", method))
            elif callable(value) and _foreign(value):
                found.append((f"{name}.{public}", value))
    return found


def _patches_key() -> list[tuple[str, str]] | None:
    """What replaces parts of ``qkv`` now, as (name, hash of its code): part of
    a result's key. None when a replacement is not a function whose code can
    be read (a mock object): such a call is not kept."""
    found = []
    for name, value in _replacements():
        if not isinstance(value, types.FunctionType):
            return None
        found.append((name, _code_of(value)))
    return sorted(found)


def _foreign(value: object) -> bool:
    """True for a function from outside qkv: not qkv's own, nor what a module of
    qkv exports from torch, the builtins or typing (its names and aliases)."""
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, type) or module.startswith(("qkv", "torch", "builtins")):
        return False
    return module != "typing"


@contextlib.contextmanager
def _one_at_a_time(path: Path) -> Iterator[None]:
    """Hold a lock on ``path`` (a file beside it): two processes that need the
    same result (two kernels of the build, two test workers) train it once,
    the second waiting for the first. Where there is no ``fcntl`` (Windows),
    both train, and the last one's file stays: the same result."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(f"{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def remembered(function: Callable[..., R]) -> Callable[..., R]:
    """``function``, whose results are kept in the folder ``QKV_RESULTS`` names
    (when it names one) and read back by the same call. While code from outside
    ``qkv`` replaces a part of it (:func:`patched`: a chapter's model without
    its causal mask), that code is part of the key (its syntax tree, without
    docstring and comments): the same patch reads its own result back, in
    every edition of the page; a replacement whose code cannot be read (a mock
    object) trains and keeps nothing."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs) -> R:
        folder = os.environ.get(RESULTS, "").strip()
        patches = _patches_key() if folder else None
        if not folder or patches is None:
            return function(*args, **kwargs)
        path = result_path(Path(folder), function, args, kwargs, patches)
        if path.is_file():
            return torch.load(path, weights_only=False)
        if not path.parent.is_dir():  # the first result of this version of qkv
            path.parent.mkdir(parents=True, exist_ok=True)
            _drop_other_versions(path.parent)
        with _one_at_a_time(path):
            if path.is_file():  # another process made it while this one waited
                return torch.load(path, weights_only=False)
            result = function(*args, **kwargs)
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            torch.save(result, partial)
            os.replace(partial, path)  # whole or absent, even in parallel
        return result

    return wrapper
