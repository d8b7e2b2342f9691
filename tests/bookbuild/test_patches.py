"""The run-time replacements of other packages' methods: all in bookbuild.patches,
each applied on the version it was written for, in the registry's order, once."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
from sphinx.errors import ExtensionError

from bookbuild import patches

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bookbuild" / "src" / "bookbuild"
SOURCES = sorted(PACKAGE.rglob("*.py"))


# -- no replacement outside bookbuild.patches ------------------------------------------


def third_party_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing another package (not the standard
    library, not bookbuild), wherever the import is."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases = [(alias, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            aliases = [(alias, node.module) for alias in node.names]
        else:
            continue
        for alias, module in aliases:
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top == "bookbuild":
                continue
            names.add(alias.asname or alias.name.split(".")[0])
    return names


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def replacements(source: str) -> list[str]:
    """Where a module replaces another package's attribute: an assignment (or
    ``del``, ``setattr``, ``delattr``) to an attribute of a name it imported from
    a third-party package (``MystParser.parse = ...``, ``base.make_document =
    ...``); or a function of its own assigned to an attribute of an object other
    than ``self`` (``builder.load_indexer = wrapper``: a method replaced on an
    instance). Setting data on Sphinx's ``app``, ``config`` or nodes is neither.
    Not seen: a foreign class reached through a variable and given a value that
    is not a function of the module; the review catches those."""
    tree = ast.parse(source)
    foreign = third_party_names(tree)
    functions = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Delete):
            targets, value = node.targets, None
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and node.args
        ):
            if root_name(node.args[0]) in foreign:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
            continue
        else:
            continue
        is_function = isinstance(value, ast.Lambda) or (
            isinstance(value, ast.Name) and value.id in functions
        )
        for target in assigned(targets):
            root = root_name(target)
            if root in foreign or (is_function and root != "self"):
                found.append(f"line {node.lineno}: {ast.unparse(target)}")
    return sorted(found, key=lambda line: int(line.split()[1].rstrip(":")))


def assigned(targets: list[ast.expr]):
    """The attributes a statement assigns to (``a.b, c.d = ...``: both)."""
    for target in targets:
        if isinstance(target, ast.Tuple | ast.List):
            yield from assigned(target.elts)
        elif isinstance(target, ast.Starred):
            yield from assigned([target.value])
        elif isinstance(target, ast.Attribute):
            yield target


def test_the_rule_sees_the_replacements_it_is_for():
    source = (
        "from myst_parser.parsers.sphinx_ import MystParser\n"
        "import myst_parser.mdit_to_docutils.base as base\n"
        "import sphinx\n"
        "import sys\n"
        "def wrapper(self): ...\n"
        "def install(app, node, config):\n"
        "    MystParser.parse = wrapper\n"
        "    base.make_document = None\n"
        "    setattr(sphinx.builders, 'x', 1)\n"
        "    app.builder.load_indexer = wrapper\n"
        "    app.builder.dump = lambda: None\n"
        "    sys.argv = []\n"
        "    config.html_title = 'T'\n"
        "    node.line = 3\n"
        "    self.parse = wrapper\n"
    )
    assert [line.split(":")[0] for line in replacements(source)] == [
        "line 7",
        "line 8",
        "line 9",
        "line 10",
        "line 11",
    ]


@pytest.mark.parametrize(
    "path", [p for p in SOURCES if p.name != "patches.py"], ids=lambda p: p.stem
)
def test_no_module_but_patches_replaces_another_packages_attribute(path):
    found = replacements(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(ROOT)} replaces another package's attribute at run "
        f"time: {found}. Declare it in bookbuild/src/bookbuild/patches.py."
    )


# -- the registry -----------------------------------------------------------------


def test_the_registry_was_written_for_the_installed_versions():
    for patch in patches.REGISTRY:
        owner, name = patches.check(patch)
        assert callable(getattr(owner, name)), patch
        assert patch.fix.startswith("bookbuild."), patch
        assert patch.why and len(patch.why) <= 80, patch


def test_footnotes_wrap_mysts_parse_outside_the_shared_parser():
    targets = [(p.target, p.fix) for p in patches.REGISTRY]
    parse = "myst_parser.parsers.sphinx_:MystParser.parse"
    assert targets.index((parse, "bookbuild.i18n.parse_speed")) < targets.index(
        (parse, "bookbuild.i18n.footnotes")
    )


# -- applying, on a package of our own ----------------------------------------------


def tracing(label: str):
    """A ``make`` whose replacement notes its label, then calls the original."""

    def make(original):
        def replacement(calls):
            calls.append(label)
            return original(calls)

        return replacement

    make.__module__ = f"bookbuild.fake_{label}"
    return make


@pytest.fixture
def fake(monkeypatch):
    """A module ``fake_package`` with a class whose method three patches wrap
    (``inner`` is applied first), version 1.0 installed."""
    module = types.ModuleType("fake_package")

    class Thing:
        def method(calls):
            calls.append("original")
            return "done"

    module.Thing = Thing
    monkeypatch.setitem(sys.modules, "fake_package", module)
    monkeypatch.setattr(patches, "installed_version", lambda name: "1.0")
    registry = tuple(
        patches.Patch(
            target="fake_package:Thing.method",
            distribution="fake-package",
            version="1.0",
            make=tracing(label),
            why=f"the {label} wrapper",
            only_in_translations=label == "translated",
        )
        for label in ("inner", "translated", "outer")
    )
    monkeypatch.setattr(patches, "REGISTRY", registry)
    yield SimpleNamespace(Thing=Thing, registry=registry)
    patches.revert()


def called(Thing) -> list[str]:
    calls: list[str] = []
    assert Thing.method(calls) == "done"
    return calls


def build(*fixes: str, language: str = "en") -> tuple[SimpleNamespace, object]:
    app = SimpleNamespace(extensions={f"bookbuild.fake_{fix}": None for fix in fixes})
    config = SimpleNamespace(book_languages={"en": "English"}, language=language)
    return app, config


def test_the_registrys_order_is_the_order_applied(fake):
    app, config = build("outer", "inner", "translated", language="fr")
    assert patches.for_build(app, config) == list(fake.registry)
    patches._apply_for_build(app, config)
    assert patches.applied() == list(fake.registry)
    # The last applied is the outer wrapper: it runs first.
    assert called(fake.Thing) == ["outer", "translated", "inner", "original"]


def test_a_translations_patch_stays_out_of_the_root_language(fake):
    app, config = build("outer", "inner", "translated")
    patches._apply_for_build(app, config)
    assert called(fake.Thing) == ["outer", "inner", "original"]


def test_only_the_loaded_fixes_patches_are_applied(fake):
    patches._apply_for_build(*build("inner"))
    assert called(fake.Thing) == ["inner", "original"]


def test_applying_twice_wraps_once_and_revert_puts_the_original_back(fake):
    original = fake.Thing.method
    app, config = build("outer", "inner")
    patches._apply_for_build(app, config)
    patches._apply_for_build(app, config)
    assert patches.apply(fake.registry[:1]) == []
    assert called(fake.Thing) == ["outer", "inner", "original"]
    patches.revert()
    assert fake.Thing.method is original
    assert called(fake.Thing) == ["original"]


def test_an_inherited_method_is_reverted_to_the_inherited_one(fake, monkeypatch):
    class Child(fake.Thing):
        pass

    sys.modules["fake_package"].Child = Child
    patch = patches.Patch(
        "fake_package:Child.method", "fake-package", "1.0", tracing("c"), "why"
    )
    patches.apply([patch])
    assert called(Child) == ["c", "original"]
    patches.revert()
    assert "method" not in vars(Child)
    assert called(Child) == ["original"]


def test_another_version_fails_the_build_and_says_what_to_do(fake, monkeypatch):
    monkeypatch.setattr(patches, "installed_version", lambda name: "2.0")
    original = fake.Thing.method
    with pytest.raises(ExtensionError) as failure:
        patches._apply_for_build(*build("inner", "outer"))
    message = str(failure.value)
    for words in (
        "fake_package:Thing.method",  # what is patched
        "written for fake-package 1.0, but",
        "fake-package 2.0 is installed",
        "Check whether the gap bookbuild.fake_inner closes still exists",
        "bookbuild/src/bookbuild/patches.py",
    ):
        assert words in message, message
    # Nothing half-applied.
    assert fake.Thing.method is original
    assert patches.applied() == []


def test_a_missing_target_fails_the_build(fake):
    patch = patches.Patch(
        "fake_package:Thing.gone", "fake-package", "1.0", tracing("x"), "why"
    )
    with pytest.raises(ExtensionError, match="Thing.gone at run time.*not found"):
        patches.apply([patch])


def test_the_real_registry_applies_and_reverts(monkeypatch):
    from myst_parser.mdit_to_docutils import base
    from myst_parser.parsers.sphinx_ import MystParser

    from bookbuild.i18n import footnotes, parse_speed

    originals = (MystParser.parse, base.make_document)
    try:
        patches.apply(patches.REGISTRY)
        patches.apply(patches.REGISTRY)
        assert MystParser.parse.__code__ is footnotes.defining(None).__code__
        inner = dict(
            zip(
                MystParser.parse.__code__.co_freevars,
                MystParser.parse.__closure__,
                strict=True,
            )
        )["parse"].cell_contents
        assert inner.__code__ is parse_speed.reusing_parser(None).__code__
        assert base.make_document is parse_speed.make_document
    finally:
        patches.revert()
    assert (MystParser.parse, base.make_document) == originals


# -- private internals of other packages -------------------------------------------


def defined_private_names() -> set[str]:
    """The private names bookbuild defines itself (functions, classes, variables,
    attributes it assigns, arguments): its own, not another package's."""
    names = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[-1])
    return names


def test_every_private_internal_of_another_package_is_registered():
    """A private attribute (``x._name``, ``super()._name``) that bookbuild reads
    and does not define is another package's: it must be in INTERNALS (or a
    replacement of REGISTRY), with the version it was written for. The
    standard library's (``sys._getframe``, ``forkserver._forkserver``) are
    not: Python is pinned by the environment, not by a distribution."""
    own = defined_private_names()
    registered = {
        entry.target.rpartition(".")[2].rpartition(":")[2]
        for entry in (*patches.INTERNALS, *patches.REGISTRY)
    }
    stdlib = {"_exit", "_getframe", "_forkserver"}
    unregistered = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in own | registered | stdlib
            ):
                unregistered.add(f"{path.relative_to(PACKAGE)}: .{node.attr}")
    assert not unregistered, sorted(unregistered)


def test_every_internal_is_used_where_it_says():
    for entry in patches.INTERNALS:
        name = entry.target.rpartition(".")[2]
        module = PACKAGE / (entry.user.removeprefix("bookbuild.").replace(".", "/"))
        source = module.with_suffix(".py").read_text(encoding="utf-8")
        assert name in source and entry.target in source, entry


def test_the_internals_were_written_for_the_installed_versions():
    for entry in patches.INTERNALS:
        assert patches.installed_version(entry.distribution) == entry.version, entry
        if entry.instance:
            assert patches.instance_attribute(entry.target).startswith("_"), entry
        else:
            assert callable(patches.private(entry.target)), entry


def test_another_version_of_an_internal_fails_and_says_what_to_do(monkeypatch):
    monkeypatch.setattr(patches, "installed_version", lambda name: "99.0")
    patches.private.cache_clear()
    target = "matplotlib:RcParams._update_raw"
    try:
        with pytest.raises(ExtensionError) as raised:
            patches.private(target)
    finally:
        patches.private.cache_clear()
    message = str(raised.value)
    assert f"relies on the private {target}" in message
    assert "matplotlib 3.11.2" in message and "matplotlib 99.0" in message
    assert "bookbuild.execute.fresh_state" in message and "INTERNALS" in message


def test_an_unregistered_internal_is_refused():
    with pytest.raises(KeyError, match="INTERNALS"):
        patches.private("matplotlib:RcParams._get")


def test_the_registry_loads_no_fix_and_no_sphinx_application():
    """A kernel checks its internals through bookbuild.patches: importing it
    loads none of the fixes (named, imported when applied), nor MyST."""
    import subprocess

    code = (
        "import sys, bookbuild.patches\n"
        "heavy = [m for m in ('myst_nb', 'myst_parser', 'bookbuild.i18n.glue',"
        " 'bookbuild.site.search_index', 'pybtex') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
