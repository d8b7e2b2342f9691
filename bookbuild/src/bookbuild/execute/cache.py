"""Re-execute the chapters when the code they import changes.

Problem: jupyter-cache keys a notebook by its code cells and kernelspec only, and
Sphinx re-reads a page only when its source changes. After an edit to ``src/qkv``
or to the requirements, a cached build would quietly show stale outputs.

Answer: hash the files listed in ``dependency_cache_paths`` (relative to the book
root), with the configuration every kernel starts with
(:func:`bookbuild.execute.kernel_config.fingerprint`), and use
``_build/.jupyter_cache/deps-<hash>`` as the execution cache. A
change of the hash gives an empty cache (every chapter executes again) and changes
the config value ``nb_execution_cache_path``, which Sphinx tracks: every page is
re-read. :func:`cache_path` only computes the folder; :func:`prune_caches`, called
when a build starts, keeps the most recent older cache (undoing an edit is then
free) and deletes the others. The cache path is absolute, so the build does not
depend on the directory it is started from.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from bookbuild.execute import kernel_config
from bookbuild.toc import book_root

DEFAULT_PATHS = ["src/qkv", "requirements.txt", "pyproject.toml"]
_SKIP_PARTS = {"__pycache__", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


def dependency_files(root: Path, paths: list[str]) -> list[Path]:
    """Every file under ``paths`` (files or folders, relative to ``root``), sorted."""
    found: list[Path] = []
    for entry in paths:
        path = Path(root) / entry
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not _SKIP_PARTS.intersection(p.parts)
                and p.suffix not in _SKIP_SUFFIXES
            )
    return sorted(set(found))


def dependency_hash(root: Path, paths: list[str]) -> str:
    """A short hash of the names and contents of the dependency files."""
    digest = hashlib.sha256()
    for path in dependency_files(root, paths):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_path(root: Path, build_dir: Path, paths: list[str]) -> Path:
    """The execution cache for the current dependencies and kernel configuration
    (nothing is created)."""
    key = hashlib.sha256(
        f"{dependency_hash(root, paths)} {kernel_config.fingerprint()}".encode()
    ).hexdigest()[:16]
    return Path(build_dir).resolve() / ".jupyter_cache" / f"deps-{key}"


def prune_caches(current: Path) -> list[Path]:
    """Delete the caches beside ``current`` but the most recent other one.

    Returns the deleted folders.
    """
    current = Path(current)
    others = sorted(
        (old for old in current.parent.glob("deps-*") if old != current),
        key=lambda old: old.stat().st_mtime,
    )
    for old in others[:-1]:
        shutil.rmtree(old, ignore_errors=True)
    return others[:-1]


def _set_cache_path(app, config) -> None:
    # The cache lives in the book's own _build, whatever the output folder, so
    # that the student edition (built elsewhere) reads the same outputs.

    root = book_root(app.srcdir)  # also in a one-page build: the book's cache
    cache = cache_path(root, root / "_build", list(config.dependency_cache_paths))
    config.nb_execution_cache_path = str(cache)


def _prune(app) -> None:
    from sphinx.util import logging

    cache = Path(app.config.nb_execution_cache_path)
    for old in prune_caches(cache):
        logging.getLogger(__name__).info("removed the stale cache %s", old.name)


def _hash_extensions(app, config) -> None:
    # Editing the build tooling changes how pages are read, not what the
    # chapters compute: re-read every page (from the cache), execute nothing.
    package = Path(__file__).parents[1]  # the whole of bookbuild
    config.extensions_hash = dependency_hash(package, ["."])


def setup(app) -> dict:
    app.add_config_value("dependency_cache_paths", DEFAULT_PATHS, "env", [list])
    app.add_config_value("extensions_hash", "", "env", [str])
    app.connect("config-inited", _hash_extensions)
    # After myst-nb has registered nb_execution_cache_path, before it reads it.
    app.connect("config-inited", _set_cache_path, priority=900)
    app.connect("builder-inited", _prune)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
