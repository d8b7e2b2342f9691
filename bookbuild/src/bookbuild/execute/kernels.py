"""Kernels that start with torch already imported: forked from a warm process.

Problem: every chapter runs in a fresh Jupyter kernel, and a fresh kernel spends
about 3.5 s of CPU before the chapter's first line does any work: Python and
ipykernel start, then ``import torch`` (about 2 s), matplotlib, the model
libraries. Thirteen chapters pay it thirteen times, on a 2-core laptop.

Answer: one *warm* process (multiprocessing's ``forkserver``) imports those
libraries once; each kernel is a ``fork()`` of it, so it starts with the modules
already in memory. It is still a fresh process per chapter, in the chapter's
folder, with the environment the kernel manager asked for, talking to the
executor over the usual Jupyter protocol: only the imports are shared.

Use ``WarmKernelManager`` as nbclient's ``kernel_manager_class``. A kernel spec
that is not ``python -m ipykernel_launcher ...`` with this very Python starts the
ordinary way. By default kernels are forked on Linux only; ``QKV_WARM_KERNELS=0``
starts every kernel the ordinary way, ``QKV_WARM_KERNELS=1`` forks them anywhere.

Warm kernels must never cost a user their build. If the warm process cannot
start, every kernel starts the ordinary way, after a one-line notice
(:func:`fall_back`); if a forked kernel fails to start, the prefill runs that
chapter again in an ordinary kernel and forks no more (``bookbuild.execute.prefill``).

The kernels talk to the executor over IPC (Unix sockets in Jupyter's private
runtime folder), not TCP: no port is opened, and ipykernel has nothing to warn
about. On Windows, or if that folder's path is too long for a socket name, they
use TCP as usual.

Two things a fork must not carry over, and how they are avoided:

* matplotlib reads ``MPLBACKEND`` once, at import: the warm process imports it
  with ipykernel's inline backend, as a kernel would.
* torch sizes its thread pool from ``OMP_NUM_THREADS``: the warm process is
  started with the caller's value (``prefill_cache.py`` sets 1) and imports
  torch without running any operation, so no pool exists yet.

Stopping (Ctrl-C): :func:`stop_all` kills every kernel this process started,
forked or ordinary, with its process group (whatever the chapter started), and
the warm process; from then on no kernel starts (:func:`stopping`). The warm
process is started with SIGINT blocked: a Ctrl-C in the terminal, which reaches
every process of its group, would otherwise interrupt its imports and print a
traceback; the caller decides what a Ctrl-C does (``bookbuild.execute.prefill``).
Each kernel unblocks it again (a kernel is interrupted by SIGINT).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import uuid
import weakref
from multiprocessing import forkserver
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import default

from bookbuild import patches

# jupyter_client's private methods that WarmKernelManager overrides or calls,
# checked against the version they were written for (bookbuild.patches.INTERNALS).
for _target in (
    "jupyter_client.manager:KernelManager._async_launch_kernel",
    "jupyter_client.connect:ConnectionFileMixin._ip_default",
    "jupyter_client.connect:ConnectionFileMixin._reconcile_connection_info",
):
    patches.private(_target)

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"

# What a chapter's kernel imports before its first cell does any work. Not
# matplotlib.pyplot nor the inline backend: importing them outside a kernel
# skips IPython's figure display hooks (figures would vanish from the book).
# Not transformers either: 4 s of imports for one chapter, while every kernel
# waits for this list to be imported.
PRELOAD = [
    "ipykernel.kernelapp",
    # imported by every kernel as it starts (debugpy: 0.1 s of CPU each)
    "ipykernel.debugger",
    "IPython",
    "numpy",
    "torch",
    # torch imports these lazily, on the first torch.broadcast_shapes (every
    # call of qkv's attention) and the first optimizer step: 1.4 s per kernel.
    "torch.fx.experimental.symbolic_shapes",
    "torch._dynamo",
    "matplotlib",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "qkv",
    # what every kernel of the book imports as it starts (its configuration
    # installs the kept trainings: qkv.experiments) and for its claims and
    # fresh state (bookbuild.patches, which reads Sphinx's errors and languages)
    "bookbuild.execute.results",
    "bookbuild.execute.claims",
    "bookbuild.execute.fresh_state",
]

#: What the warm process imports ``PRELOAD`` with: matplotlib's backend, as in a
#: kernel; debugpy's check of frozen modules off (a kernel's spec turns them
#: off, the warm process cannot: the check would print a note at the import).
WARM_ENVIRONMENT = {
    "MPLBACKEND": INLINE_BACKEND,
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}

#: The longest socket path the system allows, less room for the port suffix.
_MAX_SOCKET_PATH = 100

_context_lock = threading.Lock()
_context: multiprocessing.context.ForkServerContext | None = None
#: Why warm kernels were given up in this process (None while they work).
_given_up: str | None = None
#: Set by :func:`stop_all`: no kernel starts after it.
_stopping = threading.Event()
#: Guards the kernels started against :func:`stop_all` (an RLock: it may run in a
#: signal handler of the main thread).
_running_lock = threading.RLock()


class Stopped(RuntimeError):
    """A kernel was asked for after :func:`stop_all`."""


def enabled() -> bool:
    """``QKV_WARM_KERNELS=1`` or ``0`` decides; by default, on Linux only (on
    macOS, a fork after loading system frameworks can crash the child). False
    once :func:`fall_back` was called."""
    if _given_up is not None:
        return False
    setting = os.environ.get("QKV_WARM_KERNELS")
    if setting is not None:
        return setting != "0"
    return sys.platform.startswith("linux")


def fall_back(reason: str) -> None:
    """Start every later kernel the ordinary way; say so once, on one line."""
    global _given_up
    with _context_lock:
        if _given_up is None:
            _given_up = reason
            print(f"warm kernels off ({reason}): starting ordinary kernels")


def start_warm_process() -> bool:
    """Start the warm process now if warm kernels are on; False if they are off
    or it could not start (then :func:`fall_back` has been called)."""
    if not enabled():
        return False
    try:
        warm_context()
    except Exception as error:  # any failure: the build goes on without it
        fall_back(f"the warm process did not start: {type(error).__name__}: {error}")
        return False
    return True


def warm_context() -> multiprocessing.context.ForkServerContext:
    """The forkserver, started once per process with ``PRELOAD`` imported."""
    global _context
    with _context_lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload([*PRELOAD, __name__])
            saved = {name: os.environ.get(name) for name in WARM_ENVIRONMENT}
            os.environ.update(WARM_ENVIRONMENT)
            # The server inherits the mask: a Ctrl-C for the build never
            # interrupts it (its kernels unblock SIGINT, _run_kernel).
            blocked = _block_sigint()
            try:
                # The server starts now, with this environment, and imports PRELOAD.
                forkserver.ensure_running()
            finally:
                _restore_mask(blocked)
                for name, value in saved.items():
                    if value is None:
                        del os.environ[name]
                    else:
                        os.environ[name] = value
            _context = context
        return _context


def _block_sigint() -> set | None:
    """Block SIGINT in the calling thread; the previous mask (None where the
    system has no signal masks)."""
    if not hasattr(signal, "pthread_sigmask"):
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _restore_mask(mask: set | None) -> None:
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def stopping() -> bool:
    """True once :func:`stop_all` was called in this process."""
    return _stopping.is_set()


def _kill_group(pid: int) -> None:
    """SIGKILL to the process group of ``pid`` (a kernel leads its own)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all() -> int:
    """Kill every kernel this process started and is still running, each with
    its process group, and the warm process; no kernel starts after this.
    Returns how many kernels were killed. Safe to call twice."""
    with _running_lock:
        _stopping.set()
        managers = list(WarmKernelManager.running)
    killed = 0
    for manager in managers:
        process = getattr(manager.provisioner, "process", None)
        if process is not None and process.poll() is None:  # ours, still alive
            _kill_group(process.pid)
            killed += 1
    server = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if _context is not None and server:
        try:
            os.kill(server, signal.SIGKILL)
            os.waitpid(server, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    return killed


def _run_kernel(argv: list[str], cwd: str | None, env: dict[str, str]) -> None:
    """The body of a forked kernel: what ``python -m ipykernel_launcher`` does."""
    os.setsid()  # its own process group, as jupyter_client gives a kernel
    if hasattr(signal, "pthread_sigmask"):  # blocked in the warm process
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    os.environ.clear()
    os.environ.update(env)
    os.environ.pop("JPY_PARENT_PID", None)  # the parent is the forkserver
    if cwd:
        os.chdir(cwd)
    sys.argv = ["ipykernel_launcher", *argv]
    reseed()
    from ipykernel import kernelapp

    # Exit with the forkserver (it exits with the executor), like a kernel
    # whose parent died.
    kernelapp.launch_new_instance(
        argv=[*argv, f"--IPKernelApp.parent_handle={os.getppid()}"]
    )


def reseed() -> None:
    """Fresh random states, as a new process has (torch and NumPy would repeat
    the server's state after a fork; also called between two chapters run in
    one kernel: :mod:`bookbuild.execute.fresh_state`)."""
    import random

    import numpy as np
    import torch

    random.seed()
    torch.seed()
    np.random.seed()


class _ForkedProcess:
    """The part of ``subprocess.Popen`` that jupyter_client's provisioner uses."""

    stdin = stdout = stderr = None

    def __init__(self, process: multiprocessing.process.BaseProcess):
        self._process = process
        self.pid = process.pid

    def poll(self) -> int | None:
        return None if self._process.is_alive() else self._process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def ipykernel_arguments(kernel_cmd: list[str]) -> list[str] | None:
    """The arguments of ``python -m ipykernel_launcher ...`` when ``python`` is
    this very interpreter (the one the warm process runs); else None."""
    if kernel_cmd[1:3] != ["-m", "ipykernel_launcher"]:
        return None
    if os.path.abspath(kernel_cmd[0]) != os.path.abspath(sys.executable):
        return None  # another Python: its kernel starts the ordinary way
    return kernel_cmd[3:]


def ipc_address() -> str | None:
    """A fresh IPC address (a socket path without its port suffix) in Jupyter's
    private runtime folder; None where IPC cannot be used (Windows, or a path
    too long for a Unix socket)."""
    if sys.platform == "win32":
        return None
    folder = jupyter_runtime_dir()
    address = os.path.join(folder, f"kernel-{uuid.uuid4().hex[:12]}-ipc")
    if len(address) > _MAX_SOCKET_PATH:
        return None
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return address


class WarmKernelManager(AsyncKernelManager):
    """An ``AsyncKernelManager`` whose kernels are forked from the warm process,
    and talk to it over IPC where the system allows."""

    #: How many kernels were forked, and how many started the ordinary way.
    launches = {"forked": 0, "ordinary": 0}
    #: The managers whose kernel was started (for :func:`stop_all`).
    running: weakref.WeakSet = weakref.WeakSet()
    #: What a forked process runs (a picklable function of argv, cwd, env).
    kernel_main = staticmethod(_run_kernel)

    @default("transport")
    def _default_transport(self) -> str:
        return "tcp" if self._ipc_address is None else "ipc"

    @default("ip")
    def _default_ip(self) -> str:
        # An absolute path: the kernel runs in the chapter's folder, the
        # executor in the book's (the default, "kernel-ipc", is relative).
        if self.transport == "ipc" and self._ipc_address:
            return self._ipc_address
        return super()._ip_default()

    @property
    def _ipc_address(self) -> str | None:
        if not hasattr(self, "_address"):
            self._address = ipc_address()
        return self._address

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if stopping():
            raise Stopped("the build is being stopped: no kernel starts")
        await self._launch(kernel_cmd, **kw)
        with _running_lock:  # a stop_all since the check above kills it now
            self.running.add(self)
            if stopping():
                _kill_group(self.provisioner.process.pid)
                raise Stopped("the build is being stopped: kernel killed")

    async def _launch(self, kernel_cmd: list[str], **kw: Any) -> None:
        argv = ipykernel_arguments(kernel_cmd)
        if argv is None or not start_warm_process():
            await super()._async_launch_kernel(kernel_cmd, **kw)
            with _context_lock:
                self.launches["ordinary"] += 1
            return
        provisioner = self.provisioner
        assert provisioner is not None
        env = dict(kw.get("env") or os.environ)
        cwd = kw.get("cwd")
        process = warm_context().Process(
            target=self.kernel_main, args=(argv, str(cwd) if cwd else None, env)
        )
        process.start()
        with _context_lock:
            self.launches["forked"] += 1
        forked = _ForkedProcess(process)
        provisioner.process = forked
        provisioner.pid = forked.pid
        provisioner.pgid = forked.pid  # _run_kernel calls setsid()
        provisioner.cwd = cwd
        self._reconcile_connection_info(provisioner.connection_info)
