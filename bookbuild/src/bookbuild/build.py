"""How ``make book`` builds the book: the entry point.

``python -m bookbuild.build COMMAND`` from the book's folder:

* ``site [--path-output DIR] [--log-dir DIR] [--with-prefill]`` (``make book``):
  the whole site, once the chapters are in the execution cache: the root
  language (``jupyter-book build . -W -n --keep-going``) and the translations
  (``build``) side by side, two processes (a Sphinx build uses one core; the two
  read the same cache and write to different folders). The root language's log
  shows as it comes, the translations' when they end; fails when either fails.
  With ``--log-dir DIR`` (``make book``), each build's whole log goes to a
  file instead, ``DIR/build-<code>.log`` (the translations' in one,
  ``build-fr.log``), and what is printed is a summary: per language, the time,
  the pages written and the warnings; for a build that failed, its warning and
  error lines, the end of its log and the log's path (:func:`summary`). With
  ``--with-prefill`` (``make book``), the prefill runs first
  (:func:`prefill_first`: every chapter executed into the cache, in parallel);
  a chapter that fails stops the build there (the prefill says where; no
  Sphinx build starts, nothing is written into the site); the prefill's list
  of the claims that did not hold on this machine
  (:mod:`bookbuild.execute.claims`)
  is printed again at the end. Before anything, the environment is checked
  (:mod:`bookbuild.execute.environment`: Sphinx executes a chapter the cache
  lacks). Ctrl-C stops both builds and the kernels they started
  (:func:`stop_builds`), removes every file they had written into the site
  (:func:`remove_written`), prints one line and exits with 130.
* ``build [--path-output DIR]``: each language of ``book_languages`` but the
  first, built strictly into ``<DIR>/_build/html/<code>`` (default DIR: the
  book's folder), with the same page paths as the root language. This runs
  Jupyter Book's own pipeline (its ``_config.yml`` translation and
  ``build_sphinx``, :func:`run_sphinx`), as ``jupyter-book build`` does, with
  the language set and the output folder chosen. Chapters come from the
  execution cache: nothing is executed again.

The steps, in order: :mod:`bookbuild.execute.environment` (the environment is
the one the lock file names), :mod:`bookbuild.execute.prefill` (every chapter
executed into the cache, English then its translations, in warm kernels), then
the two Sphinx builds, whose extensions are listed in ``_config.yml``.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from bookbuild.execute import environment, prefill
from bookbuild.i18n.catalogues import languages, translated_languages
from bookbuild.i18n.checks import catalogue_problems

#: The line ``site`` prints before the translations' log.
TRANSLATIONS_LOG = "site: what the build of the translations printed:"
#: The exit code of an interrupted ``site`` (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


def run_sphinx(
    root: Path, builder: str, outdir: Path, doctrees: Path, overrides: dict
) -> int:
    """Jupyter Book's Sphinx build of the book in ``root``, strict (``-W -n
    --keep-going``), into ``outdir``; 0 on success."""
    from jupyter_book.sphinx import build_sphinx

    root = Path(root).resolve()
    settings = {
        "external_toc_path": (root / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "nitpicky": True,
        **overrides,
    }
    result = build_sphinx(
        root,
        Path(outdir).resolve(),
        noconfig=True,
        path_config=str(root / "_config.yml"),
        confoverrides=settings,
        doctreedir=Path(doctrees).resolve(),
        builder=builder,
        warningiserror=True,
        keep_going=True,
    )
    return result if isinstance(result, int) else 1


def build(root: Path, path_output: Path | None = None) -> int:
    """Every translated language into ``<path_output>/_build/html/<code>``;
    none when a catalogue is missing or unreadable."""
    base = Path(path_output or root) / "_build"
    for language in translated_languages(root):
        if wrong := catalogue_problems(Path(root), language):
            print(
                "translations: the catalogues of these pages are missing or "
                "broken (restore them from git, or `make translations` writes a "
                "missing one to translate):\n  " + "\n  ".join(wrong)
            )
            return 1
        print(f"== {languages(root)[language]}: {base / 'html' / language}")
        start, cpu = time.perf_counter(), time.process_time()
        code = run_sphinx(
            root,
            "html",
            base / "html" / language,
            base / f".doctrees-{language}",
            {"language": language},
        )
        if code:
            return code
        print(
            f"translations: {language} built in {time.perf_counter() - start:.1f} s "
            f"({time.process_time() - cpu:.1f} s CPU)"
        )
    return 0


def site(
    root: Path, path_output: Path | None = None, with_prefill: bool = False
) -> int:
    """The root language and every translation, built side by side (``site``);
    ``with_prefill``: the prefill runs first (:func:`prefill_first`)."""
    import tempfile

    output = ["--path-output", str(path_output)] if path_output else []
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    root_build = [str(jupyter_book), "build", str(root), "-W", "-n", "--keep-going"]
    others_build = [sys.executable, "-m", "bookbuild.build", "build"]
    if with_prefill and (code := prefill_first(root)):
        return code
    with tempfile.TemporaryFile("w+", encoding="utf-8") as log, StopOnCtrlC() as stop:
        builds = [
            subprocess.Popen(
                others_build + output,
                cwd=root,
                stdout=log,
                stderr=subprocess.STDOUT,
                process_group=0,  # a Ctrl-C is for `site` to handle (StopOnCtrlC)
            )
        ]
        try:
            sys.stdout.flush()
            builds.append(  # its log shows as it comes
                subprocess.Popen(root_build + output, cwd=root, process_group=0)
            )
            while not stop.interrupted and any(
                build.poll() is None for build in builds
            ):
                time.sleep(0.2)
            others_code, root_code = (build.poll() for build in builds)
        finally:
            for build in builds:
                if build.poll() is None:
                    build.terminate()
        if stop.interrupted:
            return interrupted(root, path_output, stop.started)
        log.seek(0)
        print(TRANSLATIONS_LOG)
        sys.stdout.write(log.read())
        sys.stdout.flush()
    if root_code or others_code:
        failed = ["the root language"] * bool(root_code)
        failed += ["the translations"] * bool(others_code)
        print(f"site: the build of {' and '.join(failed)} failed")
    say_claims_again(root, with_prefill)
    return root_code or others_code


class StopOnCtrlC:
    """A ``with`` block (or :meth:`install` to :meth:`restore`) during which a
    Ctrl-C stops every process this one started, and all they started, at
    once (:func:`stop_builds`), and sets ``interrupted``: the block's waits
    then return. The builds run in process groups of their own (``process_group=0``),
    so the terminal's Ctrl-C reaches this process only: no build is left half
    stopped, nor prints a traceback."""

    def __init__(self) -> None:
        self.interrupted = False
        self.started = time.time()
        self._previous = None

    def install(self) -> StopOnCtrlC:
        """Handle Ctrl-C from now on (in the main thread only: elsewhere
        Python cannot)."""
        import threading

        self.started = time.time()
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._stop)
        return self

    def _stop(self, *_) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits
        self.interrupted = True
        stop_builds()

    def restore(self) -> None:
        """Ctrl-C as before :meth:`install`."""
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def __enter__(self) -> StopOnCtrlC:
        return self.install()

    def __exit__(self, *_) -> None:
        self.restore()


def stop_builds() -> int:
    """Stop every process this one started, and everything they started (the
    kernels in which Sphinx executes chapters run in sessions of their own):
    each child's process group is frozen (SIGSTOP: it starts nothing more),
    every descendant listed, then all are killed and waited for. Returns how
    many processes were killed."""
    import psutil

    me = psutil.Process()
    children = me.children()
    for child in children:  # a child that leads a group (not this one's)
        _signal_group(child.pid, signal.SIGSTOP)
    family = me.children(recursive=True)
    for child in children:
        _signal_group(child.pid, signal.SIGKILL)
    for member in family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=5)
    return len(family)


def _signal_group(pgid: int, signum: int) -> None:
    if pgid == os.getpgrp():
        return  # never this process's own group
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def remove_written(folder: Path, since: float) -> int:
    """Delete every file under ``folder`` modified at or after ``since`` (a
    time from :func:`time.time`): what a stopped build wrote, some of it
    half-written. Sphinx writes again the pages whose file is missing, so the
    next build writes them whole. Returns how many files were deleted."""
    removed = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(directory, name)
            try:
                if os.stat(path).st_mtime >= since:
                    os.unlink(path)
                    removed += 1
            except OSError:
                pass
    return removed


def interrupted(root: Path, path_output: Path | None, started: float) -> int:
    """After a Ctrl-C stopped the builds: delete what they wrote into the
    site, say so on one line; :data:`INTERRUPTED`."""
    site_folder = Path(path_output or root) / "_build" / "html"
    removed = remove_written(site_folder, started - 1)  # coarse file times
    print(
        f"site: interrupted: the builds and their kernels were stopped, the "
        f"{removed} file(s) they had written into {site_folder} removed; nothing "
        "half-written was kept",
        flush=True,
    )
    return INTERRUPTED


ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A page Sphinx writes: "writing output... [ 40%] book/masking".
WRITTEN = re.compile(r"^writing output\.\.\. \[\s*\d+%\] (\S+)", re.M)
#: What a reader of a failed build needs: Sphinx's warnings and errors.
TROUBLE = re.compile(r"WARNING|ERROR|Error|Exception|Traceback|failed")
#: Sphinx's progress lines, left out of the end of a failed build's log.
PROGRESS = re.compile(
    r"^(copying images|reading sources|writing output|copying |dumping |"
    r"loading |checking |preparing |generating |pickling |updating |looking for "
    r"|building \[|.*\[mystnb\]$)"
)
#: How many lines of a failed build's log the summary shows at most.
TAIL, TROUBLES = 15, 40


def summary(name: str, log: Path, code: int, seconds: float) -> list[str]:
    """What ``site --log-dir`` prints of one build: a line when it succeeded;
    when it failed, also its warning and error lines and the end of its log."""
    text = log.read_text(encoding="utf-8", errors="replace")
    written = len(set(WRITTEN.findall(text)))
    warnings = len(re.findall(r"WARNING:", text))
    state = "built" if code == 0 else f"FAILED (exit code {code})"
    lines = [
        f"site: {name} {state} in {seconds:.0f} s: {written} page(s) written, "
        f"{warnings} warning(s); full log: {log}"
    ]
    # The translations' own lines, one per language: "translations: fr built in".
    lines += [f"  {line}" for line in re.findall(r"^translations: .*$", text, re.M)]
    if code == 0:
        return lines
    troubles = [line for line in text.splitlines() if TROUBLE.search(line)]
    if troubles:
        lines.append(f"  its warning and error lines ({len(troubles)}):")
        lines += [f"    {line}" for line in troubles[:TROUBLES]]
        if len(troubles) > TROUBLES:
            lines.append(f"    ... {len(troubles) - TROUBLES} more in {log}")
    lines.append(f"  the end of its log ({log}), progress lines left out:")
    lines += [
        f"    {line}"
        for line in text.splitlines()
        if line.strip() and not PROGRESS.match(line)
    ][-TAIL:]
    return lines


def prefill_first(root: Path) -> int:
    """The prefill (:mod:`bookbuild.execute.prefill`: every chapter not cached
    executed, in parallel) in a process of its own, before the builds; its
    exit code (0: the builds may start). Its lines go where this process's
    go. A Ctrl-C reaches it as it reaches this process (one process group):
    it stops its kernels, says so in one line and exits with 130, which this
    returns (nothing more is printed, no build starts).

    The builds ran beside the prefill until issue 36, each reading a page once
    its chapter was cached. Measured on a fresh clone's cold build (CPU
    seconds, user and system, on a busy machine), with the chapters longest
    first (:data:`bookbuild.execute.prefill.COLD_TIMES`): the kernels took 564
    s, balanced on the two cores to within 2 s; the Sphinx builds beside them
    28.5 s (English) and 36.0 s (French), after them, from the full cache,
    26.2 s and 34.0 s. Beside, their whole CPU time is taken from kernels that
    keep both cores busy to the end; after, it adds the longer of the two
    (they run side by side): the same wall time within a few seconds, for a
    waiting loop inside Sphinx, ready markers and an order file. So: after.
    """
    previous = signal.signal(signal.SIGINT, lambda *_: None)  # the prefill's to handle
    try:
        sys.stdout.flush()
        process = subprocess.run(
            [sys.executable, "-P", "-m", "bookbuild.execute.prefill", str(root)],
            cwd=root,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    return process.returncode


def say_claims_again(root: Path, with_prefill: bool) -> None:
    """At the end, what the prefill said of the claims that did not hold on
    this machine (:mod:`bookbuild.execute.claims`, kept by
    :func:`bookbuild.execute.prefill.tell_claims`): the builds' output came
    after it."""
    text = prefill.claims_message(root) if with_prefill else ""
    if text:
        print(text, flush=True)


def site_logged(
    root: Path,
    log_dir: Path,
    path_output: Path | None = None,
    with_prefill: bool = False,
) -> int:
    """``site``, each build's log in a file of ``log_dir``, a summary printed;
    ``with_prefill``: the prefill runs first (:func:`prefill_first`)."""
    output = ["--path-output", str(path_output)] if path_output else []
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    codes = list(languages(root))
    names = languages(root)
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    builds = {
        names[codes[0]]: (
            [str(jupyter_book), "build", str(root), "-W", "-n", "--keep-going"],
            log_dir / f"build-{codes[0]}.log",
        )
    }
    if codes[1:]:
        builds[", ".join(names[c] for c in codes[1:])] = (
            [sys.executable, "-m", "bookbuild.build", "build"],
            log_dir / f"build-{'-'.join(codes[1:])}.log",
        )
    started = (
        f"site: {' and '.join(builds)} built side by side, logs in {log_dir}/ "
        "(a few minutes when pages changed)"
    )
    if with_prefill and (code := prefill_first(root)):
        return code
    print(started, flush=True)
    start = time.perf_counter()
    running, handles, ended = {}, [], {}
    stop = StopOnCtrlC().install()
    try:
        for name, (command, log) in builds.items():
            handle = open(log, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            handles.append(handle)
            running[name] = subprocess.Popen(
                command + output,
                cwd=root,
                stdout=handle,
                stderr=subprocess.STDOUT,
                process_group=0,  # a Ctrl-C is for `site` to handle (StopOnCtrlC)
            )
        while not stop.interrupted and len(ended) < len(running):
            for name, process in running.items():
                if name not in ended and process.poll() is not None:
                    ended[name] = (process.returncode, time.perf_counter() - start)
            time.sleep(0.2)
    finally:
        stop.restore()
        for process in running.values():
            if process.poll() is None:
                process.terminate()
        for handle in handles:
            handle.close()
    if stop.interrupted:
        return interrupted(root, path_output, stop.started)
    lines = []
    for name, (_, log) in builds.items():
        log.write_text(  # plain text: Sphinx colours even a file
            ANSI.sub("", log.read_text(encoding="utf-8", errors="replace")),
            encoding="utf-8",
        )
        code, seconds = ended[name]
        lines += summary(name, log, code, seconds)
    print("\n".join(lines), flush=True)
    failed = [name for name, (code, _) in ended.items() if code]
    if failed:
        print(
            f"site: the build of {' and '.join(failed)} failed (strict: one "
            "warning fails it); what failed is above, all of it in the log"
        )
    say_claims_again(root, with_prefill)
    return next((code for code, _ in ended.values() if code), 0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    building = commands.add_parser("build", help="the translated sites")
    building.add_argument("--path-output", type=Path, default=None)
    whole = commands.add_parser("site", help="root language and translations")
    whole.add_argument("--path-output", type=Path, default=None)
    whole.add_argument(
        "--log-dir", type=Path, default=None, help="logs in files, a summary printed"
    )
    whole.add_argument(
        "--with-prefill",
        action="store_true",
        help="execute the chapters first, in parallel (make book)",
    )
    args = parser.parse_args(argv)
    root = Path(".").resolve()
    if args.command == "build":
        return build(root, args.path_output)
    try:
        code = environment.require(root)
    except KeyboardInterrupt:  # while checking: nothing started yet
        print("site: interrupted before the builds started", flush=True)
        return INTERRUPTED
    if code:
        return code
    if args.log_dir:
        return site_logged(root, args.log_dir, args.path_output, args.with_prefill)
    return site(root, args.path_output, args.with_prefill)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
