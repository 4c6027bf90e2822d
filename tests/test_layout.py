"""The import graph of dq_core: a tree, with the benchmarks on top and apart.

Read from the source with ``ast``: every import counts, those inside
functions (lazy) and under ``if TYPE_CHECKING:`` too, since each is a
dependency someone reading or type-checking the module follows.  The
selector (``_compat``) and the assembly (``_assemble``) sit at the top,
the faces below them, the pure twins and the leaf modules (``_convert``,
``_pickling``, ...) at the bottom; nothing imports upwards.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dq_core"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        out[".".join(parts)] = (path, is_package)
    return out


def _imported(name: str, is_package: bool, node: ast.Import | ast.ImportFrom,
              modules: dict[str, tuple[Path, bool]]) -> set[str]:
    """The package's modules that one import statement of module ``name`` names."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = name.split(".")[: len(name.split(".")) - node.level + is_package]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        # "from . import _x" names a module; "from ._x import y" names _x
        targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                   for alias in node.names]
    found = set()
    for target in targets:
        while target and target not in modules:  # a name inside a module: the module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module of dq_core -> the modules of dq_core it imports anywhere in its body."""
    modules = _modules()
    graph = {}
    for name, (path, is_package) in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= _imported(name, is_package, node, modules)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one, as the path that closes it."""
    found = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                found.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                visit(dep)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_graph_is_read():
    graph = import_graph()
    assert "dq_core._compat" in graph["dq_core"]
    assert "dq_core._pickling" in graph["dq_core._heap_py"]  # a lazy import
    assert "dq_core._heap_py" in graph["dq_core"]  # under TYPE_CHECKING
    assert "dq_core.benchmarks.table" in graph["dq_core.bench"]


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_only_the_benchmarks_import_the_benchmarks():
    entry_points = {"dq_core.bench"}  # python -m dq_core.bench
    offenders = [
        f"{name} imports {dep}"
        for name, deps in import_graph().items()
        if not name.startswith("dq_core.benchmarks") and name not in entry_points
        for dep in sorted(deps) if dep.startswith("dq_core.benchmarks")
    ]
    assert not offenders, "\n".join(offenders)
