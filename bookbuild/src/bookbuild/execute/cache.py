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
import os
import shutil
import time
from pathlib import Path

from bookbuild.execute import kernel_config
from bookbuild.i18n.messages import base_language
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


#: Set for Sphinx builds that start while the prefill still runs (``site
#: --with-prefill``: :class:`bookbuild.execute.prefill.Beside`): a folder where
#: the prefill marks each page as ready once its chapter is in the cache
#: (:func:`ready_marker`; a page with nothing to execute at once), and that
#: holds :data:`ENDED` once the prefill ended well. Such a build reads each page
#: once it is ready (:func:`_wait_until_ready`), so it reads the first chapters
#: while the last ones execute.
READY_FOLDER = "BOOKBUILD_READY_FOLDER"
ENDED = "ended"
#: In the folder: the pages the prefill executes, one per line, in its order
#: (longest chapters first); the builds read them in that order, after the
#: pages it does not execute (:func:`_read_in_the_prefills_order`).
ORDER = "order"


def ready_marker(folder: Path | str, language: str, docname: str) -> Path:
    """The file that says ``docname`` (``book/masking``) is ready in ``language``."""
    return Path(folder) / language / f"{docname}.ready"


def _wait_until_ready(app, docname: str, source) -> None:
    folder = os.environ.get(READY_FOLDER)
    if not folder:
        return

    language = base_language(app.config.language or "en")  # Sphinx's default
    marker = ready_marker(folder, language, docname)
    ended = Path(folder) / ENDED
    while not (marker.exists() or ended.exists()):
        time.sleep(0.05)  # a failed prefill stops this build (Beside)


def _read_in_the_prefills_order(app, env, docnames: list[str]) -> None:
    folder = os.environ.get(READY_FOLDER)
    if not folder:
        return
    order, ended = Path(folder) / ORDER, Path(folder) / ENDED
    while not (order.exists() or ended.exists()):
        time.sleep(0.05)  # the prefill writes it before it executes anything
    executed = order.read_text(encoding="utf-8").split() if order.exists() else []
    rank = {page: number for number, page in enumerate(executed)}
    docnames.sort(key=lambda docname: (rank.get(docname, -1), docname))


def setup(app) -> dict:
    app.add_config_value("dependency_cache_paths", DEFAULT_PATHS, "env", [list])
    app.add_config_value("extensions_hash", "", "env", [str])
    app.connect("config-inited", _hash_extensions)
    # After myst-nb has registered nb_execution_cache_path, before it reads it.
    app.connect("config-inited", _set_cache_path, priority=900)
    app.connect("builder-inited", _prune)
    app.connect("env-before-read-docs", _read_in_the_prefills_order)
    app.connect("source-read", _wait_until_ready)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
