"""Every method of another package that bookbuild replaces at run time, in one place.

Problem: a few gaps of the Sphinx stack (glued values and footnotes in
translated text, the cost of parsing 2,500 translated messages, the search
index of an incremental build) can only be closed by replacing a method of
MyST-Parser, myst-nb or Sphinx while the book builds. Such a replacement is
written for one version of the package: in another version the method may
have changed, or the gap may be closed, and the replacement would then break
the build quietly, or break it in a way nobody can trace back to it. Two of them
wrap the same method, and their order matters.

Answer: :data:`REGISTRY`, the list of every such replacement, in the order it
is applied. Each entry names the distribution and the exact version it was
written for, the target (``module:Class.method``), the function that makes the
replacement from the original (defined in the fix's own module, beside the
explanation of the gap), and in one line why. Before anything is replaced,
the installed version of each distribution is compared with the entry's: on
any other version the build stops with an ``ExtensionError`` that says what
to check. Applying twice replaces nothing twice; :func:`revert` puts the
originals back.

This module is a Sphinx extension, set up by each fix that needs a
replacement: once the configuration is read, it applies, in the registry's
order, the entries whose fix is loaded; an entry ``only_in_translations``
only in a build whose language is not the root one (the English site runs
the packages as they are). No other module of bookbuild assigns to another
package's attributes (``tests/bookbuild/test_patches.py`` checks it).

The same holds for every *private* internal of another package the build relies
on without replacing it: a method its own subclass overrides (jupyter_client's
kernel manager, :mod:`bookbuild.execute.kernels`) or a private function it calls
(nbclient's and jupyter-cache's in :mod:`bookbuild.execute.prefill`,
matplotlib's in :mod:`bookbuild.execute.fresh_state`). :data:`INTERNALS` lists
them, each with the version it was written for, and :func:`private` gives one
(the attribute itself) once its version is checked: on any other version, the
same ``ExtensionError`` as a replacement's, whether in Sphinx, in the prefill or
in a kernel. This module imports nothing heavier than ``sphinx.errors``: a
fix's ``make`` is named (``module:function``) and imported when applied, so a
kernel can check its internals without loading the Sphinx stack.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _metadata_version
from typing import TYPE_CHECKING

from sphinx.errors import ExtensionError

from bookbuild.i18n.languages import is_translation

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.config import Config


@dataclass(frozen=True)
class Patch:
    """One run-time replacement of another package's attribute."""

    #: What is replaced: ``module:attribute`` or ``module:Class.attribute``.
    target: str
    #: The distribution that defines it, and the version the fix was written for.
    distribution: str
    version: str
    #: Makes the replacement from the original (it may wrap it, or ignore it):
    #: the function, or its name (``module:function``), imported when applied.
    make: Callable[[object], object] | str
    #: Why, in one line (the fix's module explains it at length).
    why: str
    #: Applied only in a build whose language is not the root one.
    only_in_translations: bool = False

    @property
    def fix(self) -> str:
        """The module of the fix (the Sphinx extension that needs the entry)."""
        if isinstance(self.make, str):
            return self.make.partition(":")[0]
        return self.make.__module__

    def maker(self) -> Callable[[object], object]:
        """:attr:`make`, imported if it is named."""
        if not isinstance(self.make, str):
            return self.make
        module, _, name = self.make.partition(":")
        return getattr(importlib.import_module(module), name)

    def __str__(self) -> str:
        return f"{self.target} (by {self.fix})"


REGISTRY: tuple[Patch, ...] = (
    Patch(
        target="myst_nb.sphinx_:Parser.parse",
        distribution="myst-nb",
        version="1.4.0",
        make="bookbuild.i18n.glue:lending",
        why="translated paragraphs borrow the page's notebook renderer (glue roles)",
        only_in_translations=True,
    ),
    Patch(
        target="myst_parser.mdit_to_docutils.base:make_document",
        distribution="myst-parser",
        version="3.0.1",
        make="bookbuild.i18n.parse_speed:settings_made_once",
        why="docutils' default settings made once, not once per translated message",
        only_in_translations=True,
    ),
    # The two wrappers of MystParser.parse: the footnotes' must be the outer one
    # (applied last), so that the shared parser reads the added definitions.
    Patch(
        target="myst_parser.parsers.sphinx_:MystParser.parse",
        distribution="myst-parser",
        version="3.0.1",
        make="bookbuild.i18n.parse_speed:reusing_parser",
        why="translated messages parsed by one shared Markdown parser",
        only_in_translations=True,
    ),
    Patch(
        target="myst_parser.parsers.sphinx_:MystParser.parse",
        distribution="myst-parser",
        version="3.0.1",
        make="bookbuild.i18n.footnotes:defining",
        why="[^note] in a translated message: placeholder definitions (MyST 4 fix)",
        only_in_translations=True,
    ),
    Patch(
        target="sphinx.builders.html:StandaloneHTMLBuilder.load_indexer",
        distribution="sphinx",
        version="7.4.7",
        make="bookbuild.site.search_index:restoring_entries",
        why="the previous search index's entries kept (Sphinx issue #12599)",
    ),
    Patch(
        target="sphinx.builders.html:StandaloneHTMLBuilder.dump_search_index",
        distribution="sphinx",
        version="7.4.7",
        make="bookbuild.site.search_index:in_page_order",
        # Also pins the Sphinx whose searchtools.js site/static/search.js wraps.
        why="index entries in page order, without accents, a term's original too",
    ),
    Patch(
        target="pybtex.plugin:entry_points",
        distribution="pybtex",
        version="0.26.1",
        make="bookbuild.site.citation:cached_entry_points",
        why="pybtex's plugin lookups made once per build, not 156 times (0.8 s)",
    ),
)


@dataclass(frozen=True)
class Internal:
    """A private attribute of another package that bookbuild relies on without
    replacing it: overridden by a subclass of bookbuild's, or called."""

    #: What is used: ``module:attribute`` or ``module:Class.attribute``.
    target: str
    distribution: str
    version: str
    #: The module of bookbuild that uses it.
    user: str
    #: Why, in one line (the user's module explains it).
    why: str
    #: An attribute each instance gets (in ``__init__``), not the class: its
    #: version is checked, its presence where it is read.
    instance: bool = False

    # The names a check's message uses, as a replacement's do.
    @property
    def fix(self) -> str:
        return self.user

    def __str__(self) -> str:
        return f"{self.target} (used by {self.user})"


INTERNALS: tuple[Internal, ...] = (
    Internal(
        target="jupyter_client.manager:KernelManager._async_launch_kernel",
        distribution="jupyter-client",
        version="8.10.0",
        user="bookbuild.execute.kernels",
        why="overridden: the chapters' kernels forked from a warm process",
    ),
    Internal(
        target="jupyter_client.connect:ConnectionFileMixin._ip_default",
        distribution="jupyter-client",
        version="8.10.0",
        user="bookbuild.execute.kernels",
        why="called: the kernel's address when it is not an IPC socket",
    ),
    Internal(
        target="jupyter_client.connect:ConnectionFileMixin._reconcile_connection_info",
        distribution="jupyter-client",
        version="8.10.0",
        user="bookbuild.execute.kernels",
        why="called: a forked kernel's ports and key handed to its manager",
    ),
    Internal(
        target="nbclient.client:NotebookClient._cleanup_kernel",
        distribution="nbclient",
        version="0.11.0",
        user="bookbuild.execute.prefill",
        why="unregistered from atexit: nbclient leaves it when a kernel fails",
    ),
    Internal(
        target="jupyter_cache.cache.main:JupyterCacheBase._get_notebook_path_cache",
        distribution="jupyter-cache",
        version="1.0.1",
        user="bookbuild.execute.prefill",
        why="called: where a cache record's notebook is (half-written ones dropped)",
    ),
    Internal(
        target="matplotlib:RcParams._update_raw",
        distribution="matplotlib",
        version="3.11.2",
        user="bookbuild.execute.fresh_state",
        why="called: a kernel's rcParams put back without validating them again",
    ),
    Internal(
        target="IPython.core.compilerop:CachingCompiler._filename_map",
        distribution="ipython",
        version="9.18.1",
        user="bookbuild.execute.claims",
        why="read: the execution count of the cell that states a claim",
        instance=True,
    ),
    Internal(
        target="sphinx.search:IndexBuilder._index_entries",
        distribution="sphinx",
        version="7.4.7",
        user="bookbuild.site.search_index",
        why="read and filled: the search index's entries, page by page",
        instance=True,
    ),
)


@cache
def private(target: str) -> object:
    """The private attribute ``target`` of another package (an entry of
    :data:`INTERNALS`), once its distribution's installed version is the one
    the entry was written for; else an ExtensionError that says what to check.
    A target that is not registered: a KeyError (register it first)."""
    entry = _internal(target)
    if entry.instance:
        raise KeyError(f"{target} is an instance's: use instance_attribute()")
    owner, name = check(entry)
    return getattr(owner, name)


@cache
def instance_attribute(target: str) -> str:
    """The name of the private attribute ``target`` that instances of another
    package's class get (an entry of :data:`INTERNALS` marked ``instance``), for
    ``getattr``, once its version is checked as :func:`private` does."""
    entry = _internal(target)
    if not entry.instance:
        raise KeyError(f"{target} is the class's: use private()")
    check(entry)
    return target.rpartition(".")[2]


def _internal(target: str) -> Internal:
    entry = next((e for e in INTERNALS if e.target == target), None)
    if entry is None:
        raise KeyError(f"{target} is not in bookbuild.patches.INTERNALS")
    return entry


@dataclass
class _Applied:
    patch: Patch
    owner: object  # the module or class that holds the attribute
    name: str
    own: object  # what the owner itself held (``_MISSING``: an inherited method)
    replacement: object


_MISSING = object()
#: What :func:`apply` replaced, in the order it did.
_applied: list[_Applied] = []


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (None if it is not installed)."""
    try:
        return _metadata_version(distribution)
    except PackageNotFoundError:
        return None


def _owner_and_name(target: str, instance: bool = False) -> tuple[object, str]:
    module_name, _, path = target.partition(":")
    *holders, name = path.split(".")
    owner = importlib.import_module(module_name)
    for holder in holders:
        owner = getattr(owner, holder)
    if not instance:
        getattr(owner, name)  # AttributeError if it is gone
    return owner, name


def check(patch: Patch | Internal) -> tuple[object, str]:
    """The owner and attribute name of ``patch``'s target, if the installed
    version is the one the replacement (or the use of a private internal) was
    written for; else ExtensionError."""
    found = installed_version(patch.distribution)
    if isinstance(patch, Patch):
        does = "replaces"
        advice = (
            f"Check whether the gap {patch.fix} closes still exists in "
            f"{patch.distribution} {found} (its docstring explains it), then update "
            f"the entry in bookbuild/src/bookbuild/patches.py: its version if the "
            f"replacement still fits, or remove the entry and the fix if the gap "
            f"is closed."
        )
    else:
        does = "relies on the private"
        advice = (
            f"Check that {patch.target} still does what {patch.user} needs in "
            f"{patch.distribution} {found} (its docstring explains why), then "
            f"update the entry in bookbuild/src/bookbuild/patches.py (INTERNALS): "
            f"its version if it does, or change {patch.user} to do without it."
        )
    advice += f" Or install {patch.distribution}=={patch.version} (requirements.lock)."
    if found != patch.version:
        raise ExtensionError(
            f"bookbuild {does} {patch.target} at run time. Why: {patch.why}. "
            f"It was written for {patch.distribution} {patch.version}, but "
            f"{patch.distribution} {found or '(not installed)'} is installed. "
            f"{advice}",
            modname=patch.fix,
        )
    try:
        return _owner_and_name(patch.target, getattr(patch, "instance", False))
    except (ImportError, AttributeError) as error:
        raise ExtensionError(
            f"bookbuild {does} {patch.target} at run time. Why: {patch.why}. "
            f"It is not found in {patch.distribution} {found}: {error}. {advice}",
            orig_exc=error,
            modname=patch.fix,
        ) from error


def is_applied(patch: Patch) -> bool:
    return any(done.patch is patch for done in _applied)


def apply(patches: Iterable[Patch]) -> list[Patch]:
    """Apply ``patches`` in their order (those not applied yet), once every
    version is checked: nothing is replaced if one of them does not fit.
    Returns the patches applied by this call."""
    todo = [patch for patch in dict.fromkeys(patches) if not is_applied(patch)]
    targets = [check(patch) for patch in todo]
    for patch, (owner, name) in zip(todo, targets, strict=True):
        replacement = patch.maker()(getattr(owner, name))
        own = vars(owner).get(name, _MISSING)
        setattr(owner, name, replacement)
        _applied.append(_Applied(patch, owner, name, own, replacement))
    return todo


def applied() -> list[Patch]:
    """The patches in place, in the order they were applied."""
    return [done.patch for done in _applied]


def revert() -> None:
    """Put back every original, last applied first."""
    while _applied:
        done = _applied.pop()
        if done.own is _MISSING:
            delattr(done.owner, done.name)
        else:
            setattr(done.owner, done.name, done.own)


def for_build(app: Sphinx, config: Config) -> list[Patch]:
    """The registry's entries this build needs, in order: those whose fix is
    loaded, and the translations' ones only in another language than the root."""
    loaded = [patch for patch in REGISTRY if patch.fix in app.extensions]
    if any(patch.only_in_translations for patch in loaded) and is_translation(config):
        return loaded
    return [patch for patch in loaded if not patch.only_in_translations]


def _apply_for_build(app: Sphinx, config: Config) -> None:
    apply(for_build(app, config))


def setup(app: Sphinx) -> dict:
    # After the languages' overrides (priority 300): the language is final.
    app.connect("config-inited", _apply_for_build, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
