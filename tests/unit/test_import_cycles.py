"""No import cycle between the modules of `app`.

A cycle makes a module's behaviour depend on which of its members happens to be imported first,
and it hides a layer that belongs elsewhere. An import inside a function counts too: it only
postpones the cycle to the first call. One under `if TYPE_CHECKING:` never runs and does not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"


def _module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements a module may run: all but those under `if TYPE_CHECKING:`."""
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
        else:
            pending.extend(ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, modules: set[str]) -> Iterator[str]:
    """The modules of `app` that `node` loads: a `from package import name` loads the submodule
    `package.name` when there is one, else the package."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in modules:
                yield alias.name
        return
    # `app` imports absolutely, so a relative import would be read wrong here: it is refused.
    assert not node.level, f"{importer}: relative import of {node.module or '.'}"
    base = node.module or ""
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if submodule in modules:
            yield submodule
        elif base in modules:
            yield base


def import_graph() -> dict[str, set[str]]:
    paths = {_module_name(path): path for path in APP.rglob("*.py")}
    modules = set(paths)
    return {
        name: {
            target
            for node in _run_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)))
            for target in _targets(node, name, modules)
            if target != name
        }
        for name, path in paths.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_finder_sees_a_cycle() -> None:
    """The check itself can fail: a made-up pair that imports each other is a cycle."""
    assert cycles({"app.a": {"app.b"}, "app.b": {"app.a"}, "app.c": {"app.a"}}) == [["app.a", "app.b"]]


def test_the_graph_reads_run_imports_only() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "import app.x\n"
        "if TYPE_CHECKING:\n    import app.y\n"
        "def late():\n    import app.z\n"
        "try:\n    from app import w\nexcept ImportError:\n    pass\n"
    )
    loaded = {alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
              for node in _run_imports(tree) for alias in node.names}  # fmt: skip
    assert loaded == {"typing.TYPE_CHECKING", "app.x", "app.z", "app.w"}


def test_no_import_cycle_in_app() -> None:
    found = cycles(import_graph())
    if found:
        pytest.fail("import cycles in app/:\n" + "\n".join(" <-> ".join(cycle) for cycle in found))
