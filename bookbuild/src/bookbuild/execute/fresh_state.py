"""One kernel for a chapter's languages, each run as if in a fresh kernel.

Problem: the prefill runs each chapter once per language (English, then its
French translation), and each run in a fresh kernel pays again what the
chapter's first cells set up: the model libraries a chapter imports itself
(``transformers``: 3 s), its data and fonts loaded, the kernel's own start
(0.4 s of CPU). About a tenth of the build's execution, spent twice.

Answer: the prefill runs a chapter's languages one after the other in one kernel
(``bookbuild.execute.prefill``) and, between two runs, puts back what a fresh
kernel has (:func:`restore`): an empty namespace and a new history (IPython's
``reset``: names of the English run are gone, execution counts start at 1), the
settings a chapter may change (matplotlib's ``rcParams``, torch's and NumPy's
print options, torch's default dtype, gradient mode and threads, ``qkv``'s
language, the warning filters and which warnings were already shown, the
working folder and environment variables), no open figure, and fresh random
states. What stays is what a fresh kernel would build again the same way:
imported modules and their caches. The translated run's outputs are those of a
run in its own kernel (checked on every chapter when this was written, and on
a polluting chapter by ``tests/bookbuild/test_warm_kernels.py``).

Both functions run inside the kernel, called silently by the prefill:
:func:`remember` before the first run, :func:`restore` before each next one.
"""

from __future__ import annotations

import os
import warnings

#: What :func:`remember` saw, in this kernel.
_fresh: dict | None = None


def remember() -> None:
    """Keep this kernel's settings as they are before any chapter ran, once
    matplotlib's inline backend is on (in a kernel, a chapter's first figure
    switches it on, which changes settings; only once per kernel)."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    import qkv

    global _fresh
    plt.close(plt.figure())  # the inline backend on, as a first figure does
    rc = dict(mpl.rcParams.copy())
    rc.pop("backend", None)  # as matplotlib's rc_context: never switched back
    _fresh = {
        "rc": rc,
        "numpy": np.get_printoptions(),
        "dtype": torch.get_default_dtype(),
        "threads": torch.get_num_threads(),
        "language": qkv.get_language(),
        "warnings": list(warnings.filters),
        "cwd": os.getcwd(),
        "environ": dict(os.environ),
    }


def restore() -> None:
    """Make this kernel look fresh to the next chapter (see the module)."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    import qkv
    import qkv.page.widgets
    from bookbuild.execute.kernels import reseed

    if _fresh is None:
        raise RuntimeError("fresh_state.restore() before fresh_state.remember()")
    from IPython import get_ipython

    get_ipython().reset(new_session=True)
    plt.close("all")
    mpl.rcParams._update_raw(_fresh["rc"])
    np.set_printoptions(**_fresh["numpy"])
    torch.set_printoptions(profile="default", sci_mode=None)
    torch.set_default_dtype(_fresh["dtype"])
    torch.set_grad_enabled(True)
    torch.set_num_threads(_fresh["threads"])
    if qkv.get_language() != _fresh["language"]:
        qkv.set_language(_fresh["language"])
    warnings.resetwarnings()  # also forgets which warnings were shown
    warnings.filters[:] = _fresh["warnings"]
    os.chdir(_fresh["cwd"])
    os.environ.clear()
    os.environ.update(_fresh["environ"])
    reseed()
    qkv.page.widgets.restart_numbering()  # ids unique in a page, from 0
