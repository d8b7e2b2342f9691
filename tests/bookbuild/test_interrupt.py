"""Ctrl-C stops the build at once, shuts its kernels down and keeps nothing
half-written (bookbuild.execute.prefill, bookbuild.build site).

A two-page book whose chapter sleeps for ten minutes is built as ``make book``
builds it; once the chapter's kernel runs, the build's process group gets
SIGINT, as from a terminal. The build must stop before the sleep would have
ended (the cell never completes), exit with 130, print one line and no
traceback, leave no kernel process, and cache nothing of the chapter; the next
build executes it again, as a clean build would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bookbuild.execute.prefill import INTERRUPTED_LINE
from bookbuild.tools.testing import MYST_NOTEBOOK

#: The chapter's sleep: far longer than any build takes to stop.
SLEEP = 600
#: Only "it stopped at all": the measured time is printed, never bounded
#: tightly (a busy machine is slow; the sleep not ending is what is asserted).
STOPPED_AT_ALL = 120

SLOW = (
    MYST_NOTEBOOK
    + """
# A slow chapter

```{code-cell} ipython3
import os
import time
from pathlib import Path

marks = Path(os.environ["QKV_TEST_MARKS"])
(marks / "running").write_text(str(os.getpid()))
time.sleep(float(os.environ.get("QKV_TEST_SLEEP", "0")))
(marks / "finished").write_text("")
```
"""
)

INTRO = "# A small book\n\nIts chapter sleeps.\n"


def write_book(small_book) -> Path:
    root = small_book(
        {"intro": INTRO, "slow": SLOW},
        title="interrupted book",
        toc="format: jb-book\nroot: intro\nchapters:\n  - file: slow\n",
    )
    (root / "marks").mkdir()
    return root


def environment(root: Path, sleep: float) -> dict[str, str]:
    env = {**os.environ, "QKV_TEST_MARKS": str(root / "marks")}
    env["QKV_TEST_SLEEP"] = str(sleep)
    env.pop("MPLBACKEND", None)
    return env


def interrupt_when_running(command: list[str], root: Path) -> dict:
    """Start ``command`` in the book's folder, in a session of its own (the
    terminal's Ctrl-C reaches its whole process group); once the chapter's
    kernel runs, SIGINT to that group. What happened, timed from the signal."""
    running = root / "marks" / "running"
    process = subprocess.Popen(
        command,
        cwd=root,
        env=environment(root, SLEEP),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not running.exists() or not running.read_text():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the chapter never started"
            time.sleep(0.1)
        kernel = int(running.read_text())
        family = psutil.Process(process.pid).children(recursive=True)
        signalled = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=STOPPED_AT_ALL)
        stopped = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    print(f"stopped {stopped:.1f} s after SIGINT: {command[2:5]}")
    return {
        "code": process.returncode,
        "stdout": stdout,
        "stderr": stderr,
        "seconds": stopped,
        "kernel": kernel,
        "family": family,
    }


def describe(process: psutil.Process) -> str:
    try:
        return f"{process.pid} {' '.join(process.cmdline())[:120]}"
    except psutil.Error:
        return str(process.pid)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_stopped_cleanly(done: dict, root: Path, line: str) -> None:
    output = done["stdout"] + done["stderr"]
    assert done["code"] == 130, output
    assert done["seconds"] < SLEEP, "the chapter's sleep ended first"
    assert not (root / "marks" / "finished").exists(), "the cell completed"
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output
    said = [text for text in output.splitlines() if "interrupted" in text]
    assert said == [line], output
    assert done["stdout"].rstrip().endswith(line), output  # the last it printed
    assert not alive(done["kernel"]), "the kernel is still running"
    # The rest of the build's processes end with it; multiprocessing's resource
    # tracker, a helper of the warm process, may take a moment to see its
    # parent gone (it exits on its own; it is no kernel).
    psutil.wait_procs(done["family"], timeout=10)
    left = [describe(p) for p in done["family"] if alive(p.pid)]
    assert not left, f"processes of the build left running: {left}"


def cache_records(root: Path) -> list:
    from jupyter_cache import get_cache

    records = []
    for folder in (root / "_build" / ".jupyter_cache").glob("deps-*"):
        records += get_cache(folder).list_cache_records()
    return records


def test_ctrl_c_stops_the_prefill_and_caches_nothing_of_the_chapter(small_book):
    root = write_book(small_book)
    prefill = [sys.executable, "-P", "-m", "bookbuild.execute.prefill", str(root)]
    done = interrupt_when_running(prefill, root)
    assert_stopped_cleanly(done, root, INTERRUPTED_LINE)
    assert cache_records(root) == [], "a chapter that did not finish was cached"
    # The next build executes the chapter again, and caches it (an ordinary
    # kernel: no warm process to start, seconds saved).
    (root / "marks" / "running").unlink()
    again = subprocess.run(
        prefill,
        cwd=root,
        env={**environment(root, 0), "QKV_WARM_KERNELS": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 executed, 0 failed" in again.stdout, again.stdout
    assert (root / "marks" / "finished").exists()
    assert [Path(r.uri).stem for r in cache_records(root)] == ["slow"]


@pytest.mark.parametrize("logged", [True, False], ids=["make-book", "tests"])
def test_ctrl_c_stops_the_sphinx_builds_and_their_kernels(small_book, logged):
    """``site`` as ``make book`` runs it (logs in files) and as the tests do."""
    root = write_book(small_book)
    site = [sys.executable, "-m", "bookbuild.build", "site"]
    site += ["--log-dir", str(root / "logs")] if logged else []
    done = interrupt_when_running(site, root)
    said = next(s for s in done["stdout"].splitlines() if "interrupted" in s)
    assert_stopped_cleanly(done, root, said)
    assert said.startswith("site: interrupted: the builds and their kernels")
    assert done["family"], "the builds were not seen running"
    assert cache_records(root) == [], "a chapter that did not finish was cached"
    html = root / "_build" / "html"
    assert not (html / "slow.html").exists() and not (html / ".buildinfo").exists()


def test_what_a_stopped_build_wrote_into_the_site_is_removed(tmp_path):
    from bookbuild.build import remove_written

    old, new = tmp_path / "old.html", tmp_path / "fr" / "new.html"
    new.parent.mkdir()
    old.write_text("a whole page from the build before")
    new.write_text("<html><body>half a pa")
    started = time.time()
    os.utime(old, (started - 60, started - 60))
    os.utime(new, (started + 1, started + 1))
    assert remove_written(tmp_path, started) == 1
    assert old.exists() and not new.exists()


def test_a_cache_entry_half_written_by_a_killed_build_is_dropped(tmp_path):
    """jupyter-cache records an entry before it writes its notebook: a build
    killed in between leaves a record whose notebook is missing or cut."""
    import nbformat
    from jupyter_cache import get_cache

    from bookbuild.execute.prefill import drop_partial_entries

    cache = get_cache(tmp_path / "cache")
    for name in ("whole", "cut", "missing"):
        notebook = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell(f"print('{name}')", execution_count=1)
        notebook.cells = [cell]
        path = tmp_path / f"{name}.ipynb"
        nbformat.write(notebook, path)
        cache.cache_notebook_file(path, check_validity=False)
    records = {Path(r.uri).stem: r for r in cache.list_cache_records()}
    cut = cache._get_notebook_path_cache(records["cut"].hashkey)
    cut.write_text(cut.read_text()[:40])
    cache._get_notebook_path_cache(records["missing"].hashkey).unlink()
    assert sorted(drop_partial_entries(cache)) == ["cut", "missing"]
    assert [Path(r.uri).stem for r in cache.list_cache_records()] == ["whole"]
    assert not cut.parent.exists()
