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

Also in the kernel, for the prefill: :func:`show_figures`. A cell whose outputs
the page removes (tags ``remove-output``, ``remove-cell``) often draws a figure
that a later cell glues; the inline backend would also display it when the cell
ends (and IPython its last expression's value, often the figure or an axis of
it), drawing it once more for an output nobody sees (128 figures of the two
editions). The prefill turns both off for such cells: their figures are closed
undrawn, and glued ones are drawn where they are glued.
"""

from __future__ import annotations

import os
import warnings

from bookbuild import patches
from bookbuild.execute.kernels import reseed

#: What :func:`remember` saw, in this kernel.
_fresh: dict | None = None


def remember() -> None:
    """Keep this kernel's settings as they are before any chapter ran, once
    matplotlib's inline backend is on (in a kernel, a chapter's first figure
    switches it on, which changes settings; only once per kernel)."""
    import matplotlib as mpl
    import numpy as np
    import torch

    import qkv

    global _fresh
    _inline_backend_on()
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

    if _fresh is None:
        raise RuntimeError("fresh_state.restore() before fresh_state.remember()")
    from IPython import get_ipython

    get_ipython().reset(new_session=True)
    plt.close("all")
    update_raw = patches.private("matplotlib:RcParams._update_raw")
    update_raw(mpl.rcParams, _fresh["rc"])
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
    show_figures(True)


#: What IPython displays of a cell's last expression, where cells show it.
_interactivity: str | None = None


def show_figures(shown: bool) -> None:
    """Whether the end of a cell displays what it leaves (the figures still
    open, the inline backend's way, and the value of its last expression), or
    closes the figures undrawn and displays nothing (see the module)."""
    from IPython import get_ipython
    from matplotlib_inline import backend_inline

    global _interactivity
    shell = get_ipython()
    if _interactivity is None:
        _interactivity = shell.ast_node_interactivity
    shell.ast_node_interactivity = _interactivity if shown else "none"
    events = shell.events
    registered = events.callbacks["post_execute"]
    if not shown and backend_inline.flush_figures not in registered:
        _inline_backend_on()  # so that there is a display to turn off
    drawn, undrawn = backend_inline.flush_figures, _close_figures
    old, new = (undrawn, drawn) if shown else (drawn, undrawn)
    if old in registered:
        events.unregister("post_execute", old)
        events.register("post_execute", new)


def _inline_backend_on() -> None:
    """Switch on matplotlib's inline backend, as a chapter's first figure does
    (it registers its end-of-cell display and changes settings, once)."""
    import matplotlib.pyplot as plt

    plt.close(plt.figure())


def _close_figures() -> None:
    """The inline backend's end of a cell, without displaying the figures (its
    own flags are reset at the next shown cell's end, which finds none open)."""
    import matplotlib.pyplot as plt

    plt.close("all")
