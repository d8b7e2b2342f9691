"""Execute the chapters in parallel into the execution cache, before Sphinx runs.

Problem: Jupyter Book executes notebooks one after the other (``sphinx-build -j``
falls back to serial with a warning), so a cold build of the book takes the sum of
all chapters' execution times on a machine with several cores. And each chapter's
fresh kernel first spends seconds importing torch.

Answer: ``make book`` first runs this module. It registers every chapter of
``_toc.yml`` in the same jupyter-cache folder that ``bookbuild.execute.cache`` gives
Sphinx, reading them with myst-nb's own reader (so the cache keys match), and
executes the ones not cached yet, one kernel per core at a time, longest chapters
first (by the last run's times, kept with the trained results in
``_build/results``, and the times of a cold build kept in the repository,
:data:`COLD_TIMES`: a fresh clone's order is right too). A chapter's
languages run one after the other in one kernel (English, then its translations,
each as if in a fresh kernel: :mod:`bookbuild.execute.fresh_state`): the second
does not pay again for the kernel's start, the libraries the chapter imports and
its data loaded. Kernels are forked from a process that has imported torch
already (``bookbuild.execute.kernels``), and each gets one torch thread
(``OMP_NUM_THREADS=1``), so kernels do not fight over the cores. Sphinx then finds
every chapter in the cache (``make book`` runs the prefill, then the Sphinx
builds: ``bookbuild.build site --with-prefill``).
A chapter that fails here is not cached, and the build stops after the prefill
(exit code 1): each failing chapter is reported once, where it failed
(:func:`failure_report`: the file, the code cell and its first line, the line
in the cell and in the file, the error's last line), and Sphinx never executes
it again (a strict build would run it twice more, English and French, for the
same error). Its pages from an earlier build, in every language, are deleted
with their doctrees (:func:`forget_pages`): nothing of the site looks current
for a chapter that does not run, and Sphinx reads it again once it does.

A failed ``assert`` of a cell is not such a failure: in these kernels it is a
claim, recorded instead of raised (:mod:`bookbuild.execute.claims`, set up
before each run). A chapter whose claims failed is cached with them (in its
record's data) and marked ready, and the build goes on; at its end, the
prefill lists every failed claim of the book, where it is and the sentence it
guards (:func:`tell_claims`), and leaves the list for ``make book`` to print
again after the builds' summary (:func:`claims_message`). The site
then leaves such a page out, or marks its sentences
(:mod:`bookbuild.site.claim_notices`).

Every kernel gets the book's kernel environment (:mod:`bookbuild.execute.kernel_config`:
the same string hashes in every build, short tracebacks). Before a chapter is
cached, the pieces of text its cells printed are joined into one output per
stream (:func:`join_streams`): the kernel sends printed text in pieces whose
boundaries depend on timing, and myst-nb's own merge of the pieces strips the
newline at the end of each one, so the page would get a blank line in some
builds and not in others. One line is printed per chapter as it finishes.

Before anything, the environment is checked (:mod:`bookbuild.execute.environment`:
torch and qkv import, at the pinned version and from this checkout); if not,
one line says what is wrong and how to repair it, and the prefill exits with
``environment.BROKEN``. A cache entry left half-written by a build that was
killed (jupyter-cache records an entry before it writes its notebook) is
removed before the cache is used (:func:`drop_partial_entries`).

Ctrl-C (SIGINT) stops the prefill within about a second: every kernel is
killed with whatever it started, and the warm process
(:func:`bookbuild.execute.kernels.stop_all`), chapters not started are not
started, no chapter that did not finish is cached (the cache is written by the
main thread between two waits, never while a signal is handled), and one line
is printed; the exit code is 130, as for a shell's interrupted command, so
``make`` stops and does not write its stamp.

Usage: ``python -m bookbuild.execute.prefill [BOOK_ROOT]`` (default: the current
folder).
``QKV_WARM_KERNELS=0`` starts ordinary kernels instead of forked ones. A forked
kernel that fails to start is not an error: the chapter runs again in an
ordinary kernel, and later chapters too (one line says so).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from functools import cache
from pathlib import Path

import yaml

from bookbuild import patches
from bookbuild.execute import claims, environment, kernel_config, kernels
from bookbuild.execute.cache import DEFAULT_PATHS, cache_path, prune_caches
from bookbuild.execute.claims import by_cell
from bookbuild.execute.kernels import WarmKernelManager
from bookbuild.execute.sources import (
    TRANSLATED_SOURCES,
    cell_start,
    source_path,
    translation,
)
from bookbuild.i18n.catalogues import translated_languages
from bookbuild.i18n.code import CODE_CELL, translated_source
from bookbuild.toc import is_notebook, pages

READER = {"name": "myst_nb_md", "type": "plugin"}
#: The exit code of an interrupted prefill (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130
#: The one line an interrupted prefill prints.
INTERRUPTED_LINE = (
    "prefill: interrupted: the kernels were shut down, no chapter that did not "
    "finish was cached; nothing half-written was kept"
)
#: How long the stopped chapters' threads may take to notice their dead
#: kernels (nbclient checks every second) before the prefill exits anyway.
STOP_WAIT = 10.0


class Interrupted(Exception):
    """The build was stopped before or while this chapter ran."""


def book_config(root: Path) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def dependency_paths(config: dict) -> list[str]:
    sphinx_config = (config.get("sphinx") or {}).get("config") or {}
    return list(sphinx_config.get("dependency_cache_paths", DEFAULT_PATHS))


def execute(runs: list, execution: dict, manager=WarmKernelManager) -> list:
    """Run one chapter's runs (its English notebook, then each translation's,
    those not cached) one after the other in one warm kernel, in the chapter's
    folder, with the ``execute:`` settings of ``_config.yml`` (as Sphinx would),
    each as if in a fresh kernel (:mod:`bookbuild.execute.fresh_state`); never
    raises. One ``(project_nb, ExecutionResult)`` per run, in order.

    If the kernel could not start or died (not a failing cell: that is the
    chapter's own error), the runs it did not finish run again in an ordinary
    kernel, and warm kernels are given up for the rest of the build.
    """
    from jupyter_cache.executors.utils import ExecutionResult

    cwd = str(source_path(runs[0].uri).parent)  # a translation's too

    def finished() -> list:  # the runs that ended, with their outcomes
        ended = runs[: len(outcomes)]
        done = []
        for run, (seconds, error, trace, recorded) in zip(ended, outcomes, strict=True):
            result = ExecutionResult(run.nb, cwd, seconds, error, trace)
            result.claims = recorded  # its asserts (bookbuild.execute.claims)
            done.append((run, result))
        return done

    def not_run(error, trace="", seconds=0.0) -> list:  # the others
        return [
            (run, ExecutionResult(run.nb, cwd, seconds, error, trace))
            for run in runs[len(outcomes) :]
        ]

    outcomes: list = []
    if kernels.stopping():  # Ctrl-C before this chapter's turn
        return not_run(Interrupted("not started"))
    # Each notebook is executed in place (a retry clears each output).
    client = client_class()(
        runs[0].nb,
        timeout=execution.get("timeout", 30),
        allow_errors=execution.get("allow_errors", False),
        kernel_manager_class=manager,
        resources={"metadata": {"path": cwd}},
        record_timing=False,  # cell metadata is part of the cache key
    )
    start = time.perf_counter()
    try:
        client.execute_all([run.nb for run in runs], outcomes)
    except Exception as kernel_error:  # a kernel that did not start, or died
        # nbclient leaves its clean-up registered when a kernel fails to start.
        patches.private("nbclient.client:NotebookClient._cleanup_kernel")
        atexit.unregister(client._cleanup_kernel)
        done = finished()
        elapsed = time.perf_counter() - start - sum(o[0] for o in outcomes)
        if kernels.stopping():  # killed by stop_all (Ctrl-C): not a failure
            why = Interrupted(f"{type(kernel_error).__name__}: {kernel_error}")
            return done + not_run(why, seconds=elapsed)
        if issubclass(manager, WarmKernelManager) and kernels.enabled():
            kernels.fall_back(
                f"a forked kernel failed in {Path(runs[len(done)].uri).stem}: "
                f"{type(kernel_error).__name__}: {kernel_error}"
            )
            # now in an ordinary kernel
            return done + execute(runs[len(done) :], execution)
        return done + not_run(kernel_error, traceback.format_exc(), elapsed)
    return finished() + not_run(Interrupted("not started"))  # Ctrl-C between runs


def in_kernel(call: str, module: str = "fresh_state") -> str:
    """The code that runs ``call`` of ``bookbuild.execute.<module>``
    (:mod:`bookbuild.execute.fresh_state` by default) in a kernel, silently
    (the module is imported there, not in this process)."""
    return f"__import__('bookbuild.execute.{module}').execute.{module}.{call}"


#: Run in a kernel that will execute several runs: before the first, and
#: between two (:mod:`bookbuild.execute.fresh_state`).
REMEMBER_FRESH = in_kernel("remember()")
RESTORE_FRESH = in_kernel("restore()")
#: Run before a cell whose outputs the page removes, and before the next cell
#: whose outputs it shows (``fresh_state.show_figures``).
HIDE_FIGURES = in_kernel("show_figures(False)")
SHOW_FIGURES = in_kernel("show_figures(True)")
#: The tags of a cell whose outputs the page does not show (myst-nb).
OUTPUTS_REMOVED = {"remove-output", "remove-cell"}
#: Run before each run: its asserts recorded, not raised
#: (:mod:`bookbuild.execute.claims`); after it, what they recorded is asked.
START_CLAIMS = in_kernel("start()", "claims")
CLAIMS_RECORDED = in_kernel("records()", "claims")
#: Around a cell that shows its error (tag ``raises-exception``): plain asserts.
PLAIN_ASSERTS = in_kernel("plain(True)", "claims")
RECORDED_ASSERTS = in_kernel("plain(False)", "claims")


#: Asked of a kernel whose cell just failed: the (file, line) of each frame of
#: the error that ran code of a cell, outermost first (the cell's own frame
#: first); a SyntaxError has none, only its line.
FAILING_FRAMES = (
    "[(f.filename, f.lineno) for f in __import__('traceback').extract_tb("
    "__import__('sys').last_traceback) if f.filename in "
    "get_ipython().compile._filename_map] or "
    "[(None, getattr(__import__('sys').last_value, 'lineno', None))]"
)


@cache
def client_class():
    """nbclient's ``NotebookClient`` that remembers which cell failed and,
    before the kernel is shut down, asks it on which line of that cell (the
    book's kernels show the error alone, no traceback: kernel_config)."""
    from jupyter_core.utils import ensure_async, run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    class Client(NotebookClient):
        failed_cell: int | None = None
        failed_line: int | None = None
        #: The kernel draws no figure at the end of a cell (show_figures).
        figures_hidden = False
        #: The kernel keeps plain asserts (a ``raises-exception`` cell).
        asserts_plain = False
        #: This run's cells by the kernel's execution count (claims' keys).
        cells_by_count: dict[int, int]

        async def async_execute_all(self, notebooks: list, outcomes: list) -> None:
            """Execute ``notebooks`` one after the other in one kernel, each
            as if in a fresh one; append ``(seconds, error, traceback,
            claims)`` to ``outcomes`` as each ends (a failing cell is its
            notebook's error; a kernel that dies raises, as ``execute`` does;
            ``claims``: what its asserts recorded, :mod:`bookbuild.execute.claims`)."""
            start = time.perf_counter()
            self.on_cell_executed = self.note_execution_count
            async with self.async_setup_kernel():
                for number, notebook in enumerate(notebooks):
                    if kernels.stopping():
                        return
                    if len(notebooks) > 1:
                        code = RESTORE_FRESH if number else REMEMBER_FRESH
                        await self.run_silently(code)
                    await self.run_silently(START_CLAIMS)
                    self.nb = notebook
                    self.figures_hidden = False  # a fresh kernel's (restore)
                    self.asserts_plain = False  # (claims.start)
                    self.cells_by_count = {}
                    self.reset_execution_trackers()
                    self.failed_cell = self.failed_line = None
                    error = trace = None
                    recorded: list = []
                    try:
                        await self.async_execute_notebook()
                        recorded = await self.claims_recorded()
                    except (CellExecutionError, CellTimeoutError) as cell_error:
                        error, trace = cell_error, traceback.format_exc()
                        error.failed_cell = self.failed_cell  # failure_report
                        error.failed_line = self.failed_line
                        if isinstance(cell_error, CellExecutionError):
                            # (not a timeout: the kernel is still busy)
                            recorded = await self.claims_recorded()
                    end = time.perf_counter()
                    outcomes.append((end - start, error, trace, recorded))
                    start = end

        execute_all = run_sync(async_execute_all)

        async def async_execute_notebook(self) -> None:
            """What ``NotebookClient.async_execute`` does in its kernel."""
            reply = await self.async_wait_for_reply(
                await ensure_async(self.kc.kernel_info())
            )
            if reply is not None:
                self.nb.metadata["language_info"] = reply["content"]["language_info"]
            for index, cell in enumerate(self.nb.cells):
                await self.async_execute_cell(
                    cell, index, execution_count=self.code_cells_executed + 1
                )
            self.set_widgets_metadata()

        async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
            if cell.get("cell_type") == "code":
                tags = cell.get("metadata", {}).get("tags", ())
                hidden = not OUTPUTS_REMOVED.isdisjoint(tags)
                if hidden != self.figures_hidden:  # the kernel's setting changes
                    await self.run_silently(HIDE_FIGURES if hidden else SHOW_FIGURES)
                    self.figures_hidden = hidden
                plain = "raises-exception" in tags
                if plain != self.asserts_plain:
                    await self.run_silently(
                        PLAIN_ASSERTS if plain else RECORDED_ASSERTS
                    )
                    self.asserts_plain = plain
            try:
                return await super().async_execute_cell(
                    cell, cell_index, *args, **kwargs
                )
            except (CellExecutionError, CellTimeoutError) as error:
                self.failed_cell = cell_index
                if isinstance(error, CellExecutionError):
                    self.failed_line = await self.line_of_error()
                raise

        def note_execution_count(self, cell, cell_index, execute_reply) -> None:
            """nbclient's hook after each cell: which cell ran under which
            execution count of the kernel (the claims' key)."""
            count = ((execute_reply or {}).get("content") or {}).get("execution_count")
            if count is not None:
                self.cells_by_count[count] = cell_index

        async def evaluate(self, expression: str):
            """The value of ``expression`` in the kernel, outside any notebook
            (a Python literal, read back with ast.literal_eval); raises when
            the kernel cannot evaluate it."""
            import ast

            msg_id = self.kc.execute(
                "",
                silent=True,
                store_history=False,
                user_expressions={"value": expression},
            )
            reply = await self.async_wait_for_reply(msg_id)
            found = (reply or {}).get("content", {}).get("user_expressions", {})
            found = found.get("value", {})
            if found.get("status") != "ok":
                raise RuntimeError(
                    f"{expression} failed in the kernel: "
                    f"{found.get('ename')}: {found.get('evalue')}"
                )
            return ast.literal_eval(found["data"]["text/plain"])

        async def claims_recorded(self) -> list[dict]:
            """What the run's asserts recorded, by cell (claims.by_cell);
            raises when the kernel cannot say (a bug, not the chapter's)."""

            return by_cell(await self.evaluate(CLAIMS_RECORDED), self.cells_by_count)

        async def line_of_error(self) -> int | None:
            """The line of the failing cell where the error arose: in a
            function the cell defines, the innermost; else the cell's own."""
            try:
                frames = await self.evaluate(FAILING_FRAMES)
            except Exception:  # no line is better than no report
                return None
            cell_file = frames[0][0]
            return [line for name, line in frames if name == cell_file][-1]

        async def run_silently(self, code: str) -> None:
            """Run ``code`` in the kernel, outside any notebook; raise if it fails."""
            reply = await self.async_wait_for_reply(
                self.kc.execute(code, silent=True, store_history=False)
            )
            content = (reply or {}).get("content", {})
            if content.get("status") != "ok":
                raise RuntimeError(
                    f"{code} failed in the kernel: "
                    f"{content.get('ename')}: {content.get('evalue')}"
                )

    return Client


def failure_report(project_nb, error, root: Path | None = None) -> str:
    """Where a chapter failed, in a few lines: the file, the code cell (its
    number among the chapter's code cells, its first line), the failing line
    in the cell and in the file, the error's last line."""
    path = Path(project_nb.uri)
    shown = path.relative_to(root) if root and path.is_relative_to(root) else path
    last = _last_line(error)
    index = getattr(error, "failed_cell", None)
    cells = project_nb.nb.cells
    if index is None or index >= len(cells):
        return f"prefill: {shown} failed: {last}"
    cell = cells[index]
    number = sum(c.cell_type == "code" for c in cells[: index + 1])
    source = cell.source.splitlines() or [""]
    first = cell_start(path, project_nb.nb, index, source)
    line = getattr(error, "failed_line", None)
    if "Timeout" in type(error).__name__:  # nbclient's CellTimeoutError
        where = f"{shown}:{first}" if first else f"{shown}"
        what = f"timed out in code cell {number}"
    elif line and 0 < line <= len(source):
        where = f"{shown}:{first + line - 1}" if first else f"{shown}"
        what = f"failed in code cell {number}, line {line} of the cell"
    else:
        where = f"{shown}:{first}" if first else f"{shown}"
        what = f"failed in code cell {number}"
    lines = [f"prefill: {where}: {what}: {last}"]
    at = f" (line {first})" if first else ""
    lines.append(f"  the cell begins{at}: {source[0].strip()}")
    if line and 1 < line <= len(source):
        lines.append(f"  the failing line: {source[line - 1].strip()}")
    return "\n".join(lines)


def _last_line(error) -> str:
    """The error's last line, ``ValueError: ...`` (a cell's error as the
    kernel named it)."""
    ename = getattr(error, "ename", None)
    if ename:
        evalue = (getattr(error, "evalue", "") or "").strip().splitlines()
        return f"{ename}: {evalue[-1]}" if evalue else ename
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[-1]}" if text else type(error).__name__


def forget_pages(root: Path, page: str) -> list[Path]:
    """Delete ``page``'s HTML (``book/masking``) in every built site and
    language (``_build/html``, ``_build/html/fr``, the student edition's) and
    its doctrees, so that nothing looks current for a page that failed, and
    Sphinx reads it again; the deleted files."""
    build = Path(root) / "_build"
    sites = [build / "html", *build.glob("*/_build/html")]
    doctrees = [*build.glob(".doctrees*"), *build.glob("*/_build/.doctrees*")]
    found = [
        *(
            p
            for site in sites
            for p in (site / f"{page}.html", *site.glob(f"*/{page}.html"))
        ),
        *(folder / f"{page}.doctree" for folder in doctrees),
    ]
    deleted = [p for p in found if p.is_file()]
    for path in deleted:
        path.unlink()
    return deleted


def join_streams(notebook) -> None:
    """Join the consecutive pieces of each cell's printed text, in place: one
    ``stdout`` (or ``stderr``) output where the kernel sent several, their texts
    concatenated exactly as printed."""
    for cell in notebook.cells:
        joined = []
        for output in cell.get("outputs", []):
            previous = joined[-1] if joined else None
            if (
                output.get("output_type") == "stream"
                and previous is not None
                and previous.get("output_type") == "stream"
                and previous.get("name") == output.get("name")
            ):
                previous["text"] += output["text"]
            else:
                joined.append(output)
        if "outputs" in cell:
            cell["outputs"] = joined


def store(cache, project_nb, result, root: Path | None = None) -> int:
    """Cache a chapter that ran, with its failed claims if any (its asserts
    that did not hold: :mod:`bookbuild.execute.claims`, in the record's data,
    :data:`~bookbuild.execute.claims.FAILED_CLAIMS`); or report where it
    failed, record its traceback (as jupyter-cache's own executors do) and
    forget its pages; 0 when cached."""
    from jupyter_cache.cache.db import NbProjectRecord
    from jupyter_cache.executors.utils import create_cache_bundle

    if result.err is not None:
        print(failure_report(project_nb, result.err, root), flush=True)
        for claim in claims.failures(project_nb, getattr(result, "claims", []), root):
            measured = f": {claim['measured']} is false" if claim["measured"] else ""
            print(
                f"  before it, a claim did not hold: {claim['file']}:"
                f"{claim['line']}: {claim['check']}{measured}",
                flush=True,
            )
        if project_nb.pk:  # not a translation's run (not a project record)
            NbProjectRecord.set_traceback(project_nb.uri, result.exc_string, cache.db)
        if root is not None:
            page = source_path(project_nb.uri).relative_to(root).with_suffix("")
            forget_pages(root, page.as_posix())
        return 1
    join_streams(project_nb.nb)  # executed in place
    bundle = create_cache_bundle(project_nb, result.cwd, None, result.time, None)
    recorded = getattr(result, "claims", [])
    failed = claims.failures(project_nb, recorded, root)
    if failed:
        bundle.data[claims.FAILED_CLAIMS] = failed
    bundle.data[claims.CLAIM_MARGINS] = [
        claim
        for claim in claims.failures(project_nb, recorded, root, margins=True)
        if claim["margin"] is not None
    ]
    cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
    return 0


def kept_claims(root: Path, cache) -> list[dict]:
    """The failed claims kept with every chapter of the book in the cache, in
    every language (those of the chapters as they are now)."""
    found = []
    for record in cache.list_project_records():
        cached = cache.get_cached_project_nb(record.pk)
        if cached is not None:
            found += (cached.data or {}).get(claims.FAILED_CLAIMS, [])
    for _, notebook in translated_runs(root):
        try:
            cached = cache.match_cache_notebook(notebook)
        except KeyError:
            continue
        found += (cached.data or {}).get(claims.FAILED_CLAIMS, [])
    return found


def claims_path(root: Path) -> Path:
    """Where the prefill leaves what it said of the failed claims, for
    ``make book`` to say again at its end (:func:`claims_message`)."""
    return root / "_build" / "claims-message.txt"


def claims_message(root: Path) -> str:
    """What the last prefill said of the failed claims (empty: none failed)."""
    path = claims_path(root)
    return path.read_text(encoding="utf-8").rstrip() if path.is_file() else ""


def tell_claims(root: Path, cache) -> None:
    """Print the message about every failed claim of the book (none: nothing),
    and leave it for ``make book`` to say again (:func:`claims_message`)."""
    address = ((book_config(root).get("repository") or {}).get("url") or "").strip()
    issues = f"{address.rstrip('/')}/issues" if address else ""
    text = claims.message(kept_claims(root, cache), claims.note_mode(), issues)
    path = claims_path(root)
    if text:
        print(text, flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


def drop_partial_entries(cache) -> list[str]:
    """Remove every cache entry whose notebook is missing or not whole JSON
    (a build killed while jupyter-cache wrote it: the record is written
    first); the names of the chapters removed."""
    from jupyter_cache.cache.db import NbCacheRecord

    notebook_path = patches.private(
        "jupyter_cache.cache.main:JupyterCacheBase._get_notebook_path_cache"
    )
    dropped = []
    for record in cache.list_cache_records():
        path = notebook_path(cache, record.hashkey)
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            NbCacheRecord.remove_record(record.pk, cache.db)
            if path.parent.is_dir():
                import shutil

                shutil.rmtree(path.parent, ignore_errors=True)
            dropped.append(Path(record.uri).stem)
    return dropped


def _on_sigint(handler):
    """Install ``handler`` for SIGINT (in the main thread only: elsewhere
    Python cannot); the previous one."""
    if threading.current_thread() is not threading.main_thread() or handler is None:
        return None
    return signal.signal(signal.SIGINT, handler)


def main(root: Path) -> int:
    """The prefill of the book in ``root``; its exit code (0 when every chapter
    is cached or was executed, even if one failed: Sphinx reports it)."""
    try:
        return environment.require(root) or _prefill(root)
    except KeyboardInterrupt:  # Ctrl-C before the chapters started
        kernels.stop_all()
        print(INTERRUPTED_LINE, flush=True)
        return INTERRUPTED


#: Each run's time (by :func:`run_name`) when its chapter trains its models
#: from nothing, as on a fresh clone: measured on a cold ``make book`` of an
#: idle 2-core machine, kept in the repository (a fresh clone has no
#: ``runtimes.json``: without these it would order the chapters by the size of
#: their source, and the longest, last, would leave one core idle for a
#: minute). Refresh it after a cold build that changed the chapters' times:
#: ``python -m bookbuild.execute.prefill --keep-cold-times`` copies the last
#: run's times (``runtimes.json``) into it.
COLD_TIMES = Path(__file__).with_name("cold_times.json")


def cold_times() -> dict[str, float]:
    """:data:`COLD_TIMES` (empty when the file is missing or unreadable)."""
    try:
        return {
            str(name): float(seconds)
            for name, seconds in json.loads(COLD_TIMES.read_text()).items()
        }
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def expected_seconds(
    names: list[str], last: dict[str, float], cold: dict[str, float]
) -> float:
    """How long a chapter's runs ``names`` are expected to take, to order the
    chapters longest first: each run's longer of its last time (``last``,
    which, once the trained results are kept, is short) and its cold time
    (``cold``, :data:`COLD_TIMES`: training from nothing). The longer, since a
    build that has to execute a chapter after an edit of ``qkv`` may also
    train again, and there the order matters (minutes of training to spread
    over the cores); when every result is read back, every chapter is short
    and the order hardly matters. A run known to neither: first of all
    (infinite)."""
    total = 0.0
    for name in names:
        known = [times[name] for times in (last, cold) if name in times]
        total += max(known) if known else float("inf")
    return total


def keep_cold_times(root: Path) -> dict[str, float]:
    """Write the last run's times (``runtimes.json``) into :data:`COLD_TIMES`
    (after a cold build: every model trained), rounded to 0.1 s; the times."""
    last = json.loads(runtimes_path(root).read_text())
    times = {name: round(seconds, 1) for name, seconds in sorted(last.items())}
    COLD_TIMES.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n")
    return times


def runtimes_path(root: Path) -> Path:
    """Where the prefill keeps each run's last execution time (seconds by
    :func:`run_name`): beside the chapters' trained results (``QKV_RESULTS``)."""
    return root / "_build" / "results" / "runtimes.json"


def _prefill(root: Path) -> int:
    os.environ["OMP_NUM_THREADS"] = "1"  # one torch thread per kernel
    os.environ.pop("MPLBACKEND", None)  # a headless backend would hide figures
    kernel_config.apply(root / "_build")  # before the warm process starts
    from jupyter_cache import get_cache
    from jupyter_cache.cache.db import NbProjectRecord

    start = time.perf_counter()
    config = book_config(root)
    folder = cache_path(root, root / "_build", dependency_paths(config))
    if not folder.exists():
        kernels.start_warm_process()  # every chapter will run: import torch now
    cache = get_cache(folder)
    prune_caches(folder)
    for stem in drop_partial_entries(cache):
        print(f"prefill: {stem}: a half-written cache entry removed")
    for page in pages(root):
        if is_notebook(root, page):
            cache.add_nb_to_project(str(root / f"{page}.md"), read_data=READER)
    for record in cache.list_project_records():
        if not Path(record.uri).is_file():  # a chapter that was deleted
            cache.remove_nb_from_project(record.pk)
    todo = cache.list_unexecuted()
    translated = translated_notebooks(root, cache)
    if not todo and not translated:
        print(f"prefill: all chapters cached ({time.perf_counter() - start:.1f} s)")
        tell_claims(root, cache)
        return 0
    kernels.start_warm_process()
    # One task per chapter: its English run, then its translations' (those not
    # cached), in one kernel (execute). Their trained results and measurements
    # are the English run's (qkv's `remembered`), read, not redone.
    # Longest chapters first (times of the previous run; a chapter never run
    # first of all), one chapter per task: the two cores then finish at about
    # the same time. The times are kept with the trained results, which a
    # build that starts again from an empty execution cache keeps too, and
    # those of a cold build are in the repository (expected_seconds).
    runtimes_file = runtimes_path(root)
    runtimes = json.loads(runtimes_file.read_text()) if runtimes_file.exists() else {}
    expected = cold_times()
    # Threads only wait on their kernels; the cache database is used from here.
    chapters: dict[Path, list] = {}
    for run in [cache.get_project_notebook(record.pk) for record in todo]:
        chapters.setdefault(source_path(run.uri), []).append(run)
    for run in translated:  # in the order of their languages
        chapters.setdefault(source_path(run.uri), []).append(run)

    def longest_first(source: Path) -> tuple[float, int]:
        names = [run_name(root, run.uri) for run in chapters[source]]
        return (-expected_seconds(names, runtimes, expected), -source.stat().st_size)

    tasks = [chapters[source] for source in sorted(chapters, key=longest_first)]
    count = sum(len(task) for task in tasks)
    names = ", ".join(run_name(root, run.uri) for task in tasks for run in task)
    print(f"prefill: executing {count} chapter(s) in parallel: {names}", flush=True)
    NbProjectRecord.remove_tracebacks([r.pk for r in todo], cache.db)
    outcomes = []
    execution = config.get("execute") or {}
    # Ctrl-C from here on only sets `interrupted`: the main thread, which alone
    # writes the cache, sees it between two waits and stops the kernels.
    interrupted = threading.Event()
    previous = _on_sigint(lambda *_: interrupted.set())
    pool = ThreadPoolExecutor(min(os.cpu_count() or 1, len(tasks)))
    try:
        pending = {pool.submit(execute, task, execution) for task in tasks}
        while pending and not interrupted.is_set():
            finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            for done in finished:
                for project_nb, result in done.result():
                    code = store(cache, project_nb, result, root)
                    outcomes.append((code, project_nb.uri))
                    status = (
                        "failed" if result.err is not None else f"{result.time:.1f} s"
                    )
                    failed_claims = sum(
                        claim["failures"] > 0 for claim in getattr(result, "claims", [])
                    )
                    if failed_claims and code == 0:
                        status += f", {failed_claims} claim(s) did not hold"
                    print(
                        f"prefill: [{len(outcomes)}/{count}] "
                        f"{run_name(root, project_nb.uri)} ({status})",
                        flush=True,
                    )
        if interrupted.is_set():
            kernels.stop_all()  # the running chapters' threads see it and return
            pool.shutdown(wait=False, cancel_futures=True)
            # A chapter not started is cancelled: never "done" for wait().
            started = {run for run in pending if not run.cancelled()}
            _, stuck = wait(started, timeout=STOP_WAIT)
            print(INTERRUPTED_LINE, flush=True)
            if stuck:  # a thread that does not return: leave without it
                os._exit(INTERRUPTED)
            return INTERRUPTED
    finally:
        pool.shutdown(wait=True)
        _on_sigint(previous)
    failed = [uri for code, uri in outcomes if code != 0]
    for record in cache.list_cache_records():
        if record.data.get("execution_seconds") is not None:
            runtimes[run_name(root, record.uri)] = record.data["execution_seconds"]
    runtimes_file.parent.mkdir(parents=True, exist_ok=True)
    runtimes_file.write_text(json.dumps(runtimes, indent=1, sort_keys=True))
    print(
        f"prefill: {len(outcomes) - len(failed)} executed, {len(failed)} failed "
        f"({time.perf_counter() - start:.1f} s; kernels: "
        f"{WarmKernelManager.launches['forked']} forked from the warm process, "
        f"{WarmKernelManager.launches['ordinary']} ordinary)"
        + (
            f"; the build stops here: fix {', '.join(Path(f).stem for f in failed)}"
            " (where each failed is above)"
            if failed
            else ""
        )
    )
    if not failed:  # a chapter that failed stops the build: its claims are moot
        tell_claims(root, cache)
    return 1 if failed else 0


def run_name(root: Path, uri: str) -> str:
    """A chapter's name in the prefill's lines and times: ``masking``, or
    ``fr/masking`` for its French execution."""
    found = translation(uri)
    return f"{found[0]}/{Path(uri).stem}" if found else Path(uri).stem


def translated_notebooks(root: Path, cache) -> list:
    """Each translated language's chapters not in the cache yet, as the
    translation's build reads them (their code translated), ready to run."""
    from jupyter_cache.base import ProjectNb

    found = []
    for path, notebook in translated_runs(root):
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            found.append(ProjectNb(pk=0, uri=str(path), nb=notebook))
    return found


def translated_runs(root: Path):
    """Each translated language's chapters as its build reads them (their code
    translated): ``(path, notebook)``, the source written at ``path``
    (:data:`TRANSLATED_SOURCES`) for the failure reports."""
    from myst_nb.core.read import read_myst_markdown_notebook

    for language in translated_languages(root):
        for page in pages(root):
            if not is_notebook(root, page):
                continue
            english = (root / f"{page}.md").read_text(encoding="utf-8")
            if not CODE_CELL.search(english):
                continue
            text = translated_source(root, page, language)
            path = Path(root) / TRANSLATED_SOURCES / language / f"{page}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            notebook = read_myst_markdown_notebook(
                text, add_source_map=True, path=str(path)
            )
            yield path, notebook


if __name__ == "__main__":
    if sys.argv[1:2] == ["--keep-cold-times"]:
        book = Path(sys.argv[2] if len(sys.argv) > 2 else ".").resolve()
        print(f"prefill: {len(keep_cold_times(book))} cold times kept in {COLD_TIMES}")
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
