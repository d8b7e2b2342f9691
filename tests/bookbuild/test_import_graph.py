"""bookbuild's modules import each other without a circle: the graph of its
internal imports, those inside functions included, has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bookbuild" / "src" / "bookbuild"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the modules of the package it imports, wherever the import
    is (top, function, class); ``from bookbuild.x import y`` counts ``y`` when
    it is a module, else ``bookbuild.x``."""
    modules = {
        module_name(path, package): path for path in sorted(package.rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            found |= {t for t in targets if t in modules and t != name}
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_bookbuild_has_no_import_circle():
    graph = import_graph()
    assert len(graph) > 50  # the whole package was read
    found = cycles(graph)
    assert not found, "\n".join(
        " <-> ".join(c)
        + ": "
        + "; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c)
        for c in found
    )


def test_the_rule_sees_a_circle_through_a_function_level_import(tmp_path):
    package = tmp_path / "bookbuild"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "one.py").write_text("from bookbuild.a import two\n")
    (package / "a" / "two.py").write_text(
        "def f():\n    from bookbuild.a.one import x\n"
    )
    (package / "three.py").write_text("import bookbuild.a.one\n")
    graph = import_graph(package)
    assert graph["bookbuild.a.two"] == {"bookbuild.a.one"}
    assert cycles(graph) == [["bookbuild.a.one", "bookbuild.a.two"]]


def test_the_book_is_built_by_a_module_that_says_so():
    """make book's entry point is bookbuild.build, not a module of i18n."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-m bookbuild.build site" in makefile
    assert "-m bookbuild.i18n.translations site" not in makefile
