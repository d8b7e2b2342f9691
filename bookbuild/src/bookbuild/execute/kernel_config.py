"""What every kernel of the book starts with, whoever starts it.

Problem: a chapter's outputs depended on things outside the chapter. A printed
set of strings came out in another order at each build (Python salts string
hashes per process, and forked kernels share the salt of the process they were
forked from); a traceback shown for teaching (a cell tagged ``raises-exception``)
printed the machine's paths to ``src/qkv`` and ``site-packages``, and its length
depended on the code inside ``qkv``; and each kernel printed a line about its
TCP transport that a reader of the build log cannot act on.

Answer: the book's kernels run with

* ``PYTHONHASHSEED=0``: the same string hashes, so the same set order, in
  every build, on every machine;
* ``QKV_RESULTS=_build/results``, and the kept versions of the chapters'
  trainings and measurements installed as the kernel starts
  (:func:`bookbuild.execute.results.install`, from its configuration): their
  results kept there, so that a chapter executed again with the same code and
  arguments reads its trained models back instead of training again
  (deterministic training: the same numbers), and the notebooks' test runs
  against them;
* their own IPython folder (``IPYTHONDIR=_build/ipython``), whose kernel
  configuration (:data:`KERNEL_CONFIG`) shows exceptions as IPython's
  ``Minimal`` mode does (``ValueError: query and key must ...``: the error
  alone, no paths), keeps no history database (kernels run in parallel), and
  drops ipykernel's notice about TCP (the prefill's kernels use IPC and never
  print it; kernels that myst-nb starts itself cannot be told to) and the
  "KeyboardInterrupt caught in kernel" it logs as an ERROR when jupyter_client
  interrupts it before shutting it down (as it always does) while it ends a
  request.

The prefill sets this environment before it starts any kernel
(:func:`apply`); as a Sphinx extension, this module sets it in the Sphinx
process, whose kernels (a chapter that failed in the prefill, or a build
without ``make``) inherit it. :func:`fingerprint` is part of the execution
cache's key (:mod:`bookbuild.execute.cache`): editing this configuration re-executes
the chapters, as editing ``src/qkv`` does.

A failing cell's report then shows the cell's source and the error's last line:
to see the whole stack, run the chapter's code in Jupyter.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from bookbuild.toc import book_root

#: The environment variables of every kernel (besides IPYTHONDIR).
ENVIRONMENT = {"PYTHONHASHSEED": "0"}

#: ``ipython_kernel_config.py`` of the book's kernels.
KERNEL_CONFIG = '''\
# Written by bookbuild.execute.kernel_config at each build: the book's kernels only.
import logging

# Exceptions shown for teaching: the error alone, never the machine's paths.
c.InteractiveShell.xmode = "Minimal"
# Kernels run in parallel: no shared history database.
c.HistoryManager.enabled = False


class _NoTcpNotice(logging.Filter):
    """ipykernel's notice that a kernel talks over TCP without encryption, and
    its error line when jupyter_client interrupts it on the way to shutting it
    down (it always does) while it still ends a request: nothing went wrong."""

    def filter(self, record):
        return not str(record.msg).startswith(
            ("Kernel is running over TCP", "KeyboardInterrupt caught in kernel")
        )


logging.getLogger("IPKernelApp").addFilter(_NoTcpNotice())

# The chapters' trainings and measurements kept in QKV_RESULTS, read back by the
# same call of the same code (the chapters' cells call qkv's plain functions).
from bookbuild.execute import results as _results

_results.install()
'''


def ipython_dir(build_dir: Path) -> Path:
    """The kernels' IPython folder, in the book's ``_build``."""
    return Path(build_dir).resolve() / "ipython"


def environment(build_dir: Path) -> dict[str, str]:
    """The book's kernel environment; writes the kernel configuration into
    ``build_dir/ipython`` (unchanged files are not rewritten)."""
    folder = ipython_dir(build_dir)
    config = folder / "profile_default" / "ipython_kernel_config.py"
    if not config.is_file() or config.read_text(encoding="utf-8") != KERNEL_CONFIG:
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(KERNEL_CONFIG, encoding="utf-8")
    results = Path(build_dir).resolve() / "results"  # qkv.experiments' trainings
    return {**ENVIRONMENT, "IPYTHONDIR": str(folder), "QKV_RESULTS": str(results)}


def apply(build_dir: Path) -> dict[str, str]:
    """Set the book's kernel environment in this process, for the kernels it
    starts from now on; return it."""
    settings = environment(build_dir)
    os.environ.update(settings)
    return settings


#: The environment variables that give a kernel's torch the kernels of an
#: older CPU (CONTRIBUTING, "Claims about trained runs"): trained results, and
#: so the chapters' outputs, depend on them.
CPU_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


def fingerprint() -> str:
    """A short hash of what this module gives every kernel, and of the CPU
    emulation the kernels inherit (:data:`CPU_VARIABLES`): a build under
    ``ATEN_CPU_CAPABILITY=avx2`` never reads the chapters a native build
    executed, nor the reverse."""
    digest = hashlib.sha256(KERNEL_CONFIG.encode())
    for name, value in sorted(ENVIRONMENT.items()):
        digest.update(f"\0{name}={value}".encode())
    for name in CPU_VARIABLES:
        if os.environ.get(name):
            digest.update(f"\0{name}={os.environ[name]}".encode())
    return digest.hexdigest()[:16]


def _apply_for_sphinx(app, config) -> None:
    # The book's _build, whatever the output folder (as bookbuild.execute.cache does).

    apply(book_root(app.srcdir) / "_build")


def setup(app) -> dict:
    app.connect("config-inited", _apply_for_sphinx)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
