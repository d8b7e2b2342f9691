"""The chapters' trained results kept on disk, read back instead of training again.

Problem: every ``train(seed, ...)`` of :mod:`qkv.experiments` is deterministic
(the same function, arguments and code of ``qkv`` give the same result on the
same CPU kernels), and training is the longest part of executing the chapters:
a chapter executed again after an edit of its prose, its French edition, the
tests of the claims on seeds 0-4, all would train the same models again. The
measurements of :mod:`qkv.experiments.measure` are the same case: a page's times
measured once per version of the code, every edition showing the same ones.
Keeping results is the build's business, not the reader's: ``qkv`` holds plain
``train(seed)`` functions, and a reader's notebook just trains.

Answer: :data:`REMEMBERED`, the explicit list of the functions of ``qkv`` whose
results the build keeps, and :func:`install`, which replaces each by
:func:`remembered` of it, in its module (so a chapter's ``from
qkv.experiments.toy import train`` and qkv's own calls get the kept one). The
book's kernels install it as they start (their configuration,
:mod:`bookbuild.execute.kernel_config`), and so does the test session
(``tests/conftest.py``); :func:`uninstall` puts the plain functions back. A
chapter's cells do not change.

When the environment variable ``QKV_RESULTS`` names a folder, :func:`remembered`
keeps each result there (``torch.save``), and a later call with the same arguments
and the same code reads it back. Results sit in a folder per version of the code;
the first result of a new version removes the folders of the others. The book's
build sets it for its kernels (their ``_build/results``): a chapter executed again
after an edit of its prose or code does not train again, and the tests run the
chapters' notebooks against the build's trained results. Without it, every call
trains.

A result depends on the CPU's kernels (one ulp early in a training moves where
it ends): the key holds the kernels torch dispatches to and the variables that
emulate an older CPU (:data:`CPU_VARIABLES`), and each file records its
:func:`provenance`. A file is read by torch's weights-only unpickler: tensors,
plain data and the classes :func:`_allowed` names, never code (a file planted
in the folder cannot run anything). A file that cannot be read (truncated,
corrupt, another call's, holding anything else) is said on stderr, trained
again and overwritten. Two processes that need the same result (two kernels,
two test workers) train it once: the second waits on a lock for the first.

This module imports only torch, NumPy, ``qkv`` and the standard library: a
kernel without Sphinx (the notebooks' test in a reader's environment) can
install it.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import hashlib
import importlib
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

import numpy
import torch
from torch import nn

import qkv
from bookbuild.execute.kernel_config import CPU_VARIABLES

__all__ = [
    "CPU_VARIABLES",
    "REMEMBERED",
    "RESULTS",
    "code_hash",
    "install",
    "installed",
    "provenance",
    "remembered",
    "result_path",
    "uninstall",
]

#: The environment variable that names the folder of kept results.
RESULTS = "QKV_RESULTS"

#: The functions of ``qkv`` whose results the build keeps (``module:function``):
#: every training of :mod:`qkv.experiments` and every measurement of
#: :mod:`qkv.experiments.measure`. A new ``train`` of a chapter is added here.
REMEMBERED = (
    "qkv.experiments.toy:train",
    "qkv.experiments.toy:train_lookup",
    "qkv.experiments.positions:extrapolation",
    "qkv.experiments.induction:train",
    "qkv.experiments.writer:train",
    "qkv.experiments.vision:train",
    "qkv.experiments.translate:train",
    "qkv.experiments.measure:interleaved_times",
    "qkv.experiments.measure:timed",
    "qkv.experiments.measure:peak_memories",
    "qkv.experiments.measure:time_decoding",
)

#: What a kept result may hold from outside ``qkv``, besides tensors and plain
#: data (numbers, strings, lists, tuples, dicts, sets): the torch layers of
#: qkv's models, NumPy arrays (the times of
#: :func:`~qkv.experiments.measure.time_decoding`) and the fitted baseline whose
#: fit *attention on images* times (``measure.timed``).
ALLOWED_OUTSIDE_QKV = frozenset(
    {
        "torch.nn.modules.container.ModuleList",
        "torch.nn.modules.linear.Linear",
        "torch.nn.modules.normalization.LayerNorm",
        "torch.nn.modules.sparse.Embedding",
        "numpy._core.multiarray._reconstruct",
        "numpy.dtype",
        "numpy.ndarray",
        "sklearn.linear_model._logistic.LogisticRegression",
    }
)
#: The classes of NumPy's numeric dtypes: ``numpy.dtype("f8")`` is one, which
#: a file does not name (unpickling ``numpy.dtype`` makes it).
_NUMPY_DTYPES = [
    type(numpy.dtype(code))
    for code in "?" + numpy.typecodes["AllInteger"] + numpy.typecodes["AllFloat"]
]

R = TypeVar("R")


#: The modules of ``qkv`` every result depends on: all of them but the
#: experiments (each result depends on its own module only: they never import
#: each other) and :mod:`qkv.page`, which draws and never trains nor measures.
_EXPERIMENTS_SHARED = ("__init__.py",)


def provenance() -> dict[str, str | int]:
    """Where a result computed now comes from (kept in each result's file, shown
    by the page *build information*): the kernels torch dispatches to on this
    CPU (``cpu_capability``, e.g. ``"AVX512"``), its number of ``threads``, the
    versions of ``torch`` and ``numpy``, and each of :data:`CPU_VARIABLES` that
    is set."""
    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "torch": str(torch.__version__),  # a plain string, not torch's own class
        "numpy": numpy.__version__,
        **_emulated(),
    }


def _emulated() -> dict[str, str]:
    """Each of :data:`CPU_VARIABLES` that is set, with its value."""
    return {name: os.environ[name] for name in CPU_VARIABLES if os.environ.get(name)}


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
    package = Path(qkv.__file__).resolve().parent
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
    function's own module), of every argument, defaults filled in (``train(0)``
    and ``train(seed=0)`` are one result), of the CPU's kernels (torch's CPU
    capability and the :data:`CPU_VARIABLES` set: an emulated CPU's result is
    never read by a native run, nor the reverse) and of what replaces parts of
    ``qkv`` during the call (``patches``, if any)."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    digest = hashlib.sha256(code_hash().encode())
    digest.update(module_hash(function.__module__).encode())
    digest.update(f"{function.__module__}.{function.__qualname__}".encode())
    digest.update(_pickled(sorted(bound.arguments.items())))
    kernels = torch.backends.cpu.get_cpu_capability(), sorted(_emulated().items())
    digest.update(_pickled(kernels))
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


def _allowed(name: str) -> object:
    """What ``name`` (``module.name``, a global of a kept file) names, if a kept
    result may hold it: one of :data:`ALLOWED_OUTSIDE_QKV`, or a dataclass or
    module of ``qkv``'s own (defined in one of its imported modules, outside
    ``qkv.page``: their constructors only build data). Else a ValueError."""
    module, _, attribute = name.rpartition(".")
    if name in ALLOWED_OUTSIDE_QKV:
        return getattr(importlib.import_module(module), attribute)
    value = getattr(sys.modules.get(module), attribute, None)
    if (
        module.startswith("qkv.")
        and not module.startswith("qkv.page")
        and isinstance(value, type)
        and value.__module__ == module
        and (dataclasses.is_dataclass(value) or issubclass(value, nn.Module))
    ):
        return value
    raise ValueError(f"it holds {name}, which a kept result may not hold")


def _read(path: Path) -> dict:
    """The record kept at ``path`` (:func:`_write`), by torch's weights-only
    unpickler: tensors, plain data and what :func:`_allowed` names, no other
    object, no code. A ValueError if it is not such a record."""
    names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    allowed = [_allowed(name) for name in names] + _NUMPY_DTYPES
    with torch.serialization.safe_globals(allowed):
        record = torch.load(path, weights_only=True)
    if not isinstance(record, dict) or record.keys() != {"key", "provenance", "result"}:
        raise ValueError("it is not a kept result")
    if record["key"] != path.name:
        raise ValueError(f"it holds the result kept as {record['key']!r}")
    return record


#: What :func:`_kept` returns when there is no result to read back.
_ABSENT = object()


def _kept(path: Path, *, say: bool) -> object:
    """The result kept at ``path``, or :data:`_ABSENT` when there is none or it
    cannot be read (then, if ``say``, one line on stderr names the file)."""
    if not path.is_file():
        return _ABSENT
    try:
        return _read(path)["result"]
    except Exception as error:  # whatever is wrong with the file, train again
        if say:
            lines = str(error).strip().splitlines()
            reason = type(error).__name__ + (f": {lines[0]}" if lines else "")
            print(
                f"bookbuild: kept result {path} could not be read ({reason}): "
                "training again",
                file=sys.stderr,
            )
        return _ABSENT


def _write(result: object, path: Path, made: dict) -> None:
    """Keep ``result`` at ``path`` with its key (the file's name) and ``made``,
    its :func:`provenance`, whole or absent: written beside it, then renamed
    (even in parallel). A result holding what :func:`_allowed` refuses could
    not be read back: it is not kept, and stderr says so."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    record = {"key": path.name, "provenance": made, "result": result}
    torch.save(record, partial)
    try:
        for name in torch.serialization.get_unsafe_globals_in_checkpoint(partial):
            _allowed(name)
    except ValueError as error:
        partial.unlink()
        print(f"bookbuild: result {path} not kept ({error})", file=sys.stderr)
        return
    os.replace(partial, path)


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
    object) trains and keeps nothing. A kept file that cannot be read is
    trained again and overwritten (see the module's docstring)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs) -> R:
        folder = os.environ.get(RESULTS, "").strip()
        patches = _patches_key() if folder else None
        if not folder or patches is None:
            return function(*args, **kwargs)
        path = result_path(Path(folder), function, args, kwargs, patches)
        result = _kept(path, say=False)  # an unreadable file is said below
        if result is not _ABSENT:
            return result
        if not path.parent.is_dir():  # the first result of this version of qkv
            path.parent.mkdir(parents=True, exist_ok=True)
            _drop_other_versions(path.parent)
        with _one_at_a_time(path):
            # Made by another process while this one waited, or unreadable.
            result = _kept(path, say=True)
            if result is _ABSENT:
                made = provenance()  # before the call, which may set the threads
                result = function(*args, **kwargs)
                _write(result, path, made)
        return result

    wrapper.__remembered__ = True
    return wrapper


def _target(name: str) -> tuple[types.ModuleType, str]:
    """The module and attribute of ``name`` (``module:function``), or a
    ValueError that names the entry of :data:`REMEMBERED` gone from ``qkv``."""
    module_name, _, attribute = name.partition(":")
    module = importlib.import_module(module_name)
    if not callable(getattr(module, attribute, None)):
        raise ValueError(
            f"REMEMBERED names {name}, which qkv does not define: update "
            f"REMEMBERED in {__name__} (bookbuild/src/bookbuild/execute/results.py)"
        )
    return module, attribute


def install() -> list[str]:
    """Replace each function of :data:`REMEMBERED` by :func:`remembered` of it,
    in its module (once: installing twice wraps nothing twice). Returns the
    names replaced by this call."""
    done = []
    for name in REMEMBERED:
        module, attribute = _target(name)
        function = getattr(module, attribute)
        if getattr(function, "__remembered__", False):
            continue
        setattr(module, attribute, remembered(function))
        done.append(name)
    return done


def installed() -> list[str]:
    """The names of :data:`REMEMBERED` whose kept version is in place."""
    return [
        name
        for name in REMEMBERED
        if getattr(getattr(*_target(name)), "__remembered__", False)
    ]


def uninstall() -> None:
    """Put the plain functions of ``qkv`` back."""
    for name in REMEMBERED:
        module, attribute = _target(name)
        function = getattr(module, attribute)
        if getattr(function, "__remembered__", False):
            setattr(module, attribute, function.__wrapped__)
