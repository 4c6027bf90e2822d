"""The import graph of dq_core: a tree, with the benchmarks on top and apart.

Read from the source with ``ast``: every import counts, those inside
functions (lazy) and under ``if TYPE_CHECKING:`` too, since each is a
dependency someone reading or type-checking the module follows.  The
selector (``_compat``) and the assembly (``_assemble``) sit at the top,
the faces below them, the cores (compiled and pure) and the leaf modules
(``_convert``, ``_pickling``, ...) at the bottom; nothing imports upwards.
The compiled cores are read too, line by line: Cython is not Python.
Last, the tree on the architecture page lists every source file of
``dq_core/`` and ``src/``, and none that does not exist.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dq_core"
SOURCES = ROOT / "src"

#: What stands above the cores: the public names, the selector, the
#: assembly, the faces (a package name covers its modules) and the benchmarks.
FACES = frozenset(
    {
        "dq_core",
        "dq_core._compat",
        "dq_core._assemble",
        "dq_core.aio",
        "dq_core.bench",
        "dq_core.benchmarks",
        "dq_core.redis",
        "dq_core._priorityqueue",
        "dq_core._delayqueue",
        "dq_core._ttldict",
        "dq_core._timer",
        "dq_core._priorityexecutor",
        "dq_core._ratelimiter",
        "dq_core._queueprotocol",
        "dq_core._wheelttldict",
        "dq_core._cached",
    }
)
#: The neutral modules below the faces, which the cores may import: rules,
#: states, exceptions and mechanics that both implementations share.
LEAVES = frozenset(
    {
        "dq_core._aiowaiting",
        "dq_core._argerrors",
        "dq_core._convert",
        "dq_core._exceptions",
        "dq_core._final",
        "dq_core._handles",
        "dq_core._heapstate",
        "dq_core._inuse",
        "dq_core._pickling",
        "dq_core._queuerepr",
        "dq_core._ringstate",
        "dq_core._signature",
        "dq_core._timerbatch",
        "dq_core._tokenbucket",
        "dq_core._ttldictstate",
        "dq_core._validate",
        "dq_core._waiting",
        "dq_core._wheelstate",
    }
)


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


def _imported(
    name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: dict[str, tuple[Path, bool]]
) -> set[str]:
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
        targets = [
            f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
            for alias in node.names
        ]
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
                found.append(path[path.index(dep) :] + [dep])
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
    assert "dq_core._pickling" in graph["dq_core._heapcore_py"]  # a lazy import
    assert "dq_core._heapcore_py" in graph["dq_core"]  # under TYPE_CHECKING
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
        for dep in sorted(deps)
        if dep.startswith("dq_core.benchmarks")
    ]
    assert not offenders, "\n".join(offenders)


def is_face(name: str) -> bool:
    """A face, or above one: ``FACES`` names it or a package of it (not the top package)."""
    return name in FACES or any(name.startswith(f"{face}.") for face in FACES - {"dq_core"})


#: One import statement of Cython: ``import a, b``, ``cimport a`` or
#: ``from m import|cimport names`` (parenthesised names may span lines).
_CYTHON_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<module>[\w.]+)[ \t]+c?import[ \t]+(?P<names>\([^)]*\)|[^#\n]*)"
    r"|c?import[ \t]+(?P<modules>[^#\n]+))",
    re.M,
)


def cython_imports(text: str) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of a ``.pyx``/``.pxd`` source, as ``ast`` nodes."""

    def aliases(names: str) -> list[ast.alias]:
        names = names.strip().strip("()")
        return [ast.alias(name.split()[0]) for name in names.replace("\\", " ").split(",") if name.strip()]

    found: list[ast.Import | ast.ImportFrom] = []
    for match in _CYTHON_IMPORT.finditer(text):
        if match["module"]:
            found.append(ast.ImportFrom(module=match["module"], names=aliases(match["names"]), level=0))
        else:
            found.append(ast.Import(names=aliases(match["modules"])))
    return found


def core_imports() -> dict[str, set[str]]:
    """Each compiled core (``src/``) and pure twin -> the modules of dq_core it imports."""
    modules = _modules()
    compiled = {f"dq_core.{path.stem}": (path, False) for path in SOURCES.glob("*.pyx")}
    known = {**modules, **compiled}
    graph = {}
    for path in sorted([*SOURCES.glob("*.pyx"), *SOURCES.rglob("*.pxd")]):
        name = str(path.relative_to(SOURCES).with_suffix("")).replace("/", ".")
        name = name if name.startswith("dq_core.") else f"dq_core.{name}"
        graph[f"src/{path.relative_to(SOURCES)}"] = {
            dep
            for node in cython_imports(path.read_text(encoding="utf-8"))
            for dep in _imported(name, False, node, known)
        }
    full = import_graph()
    for name in sorted(full):
        if name.endswith("_py"):
            graph[name] = full[name]
    return graph


def test_cython_imports_are_read():
    nodes = cython_imports(
        "cimport cython\nfrom _handles cimport (\n    Handles, handles_free,\n)\n"
        "import asyncio, os\n# from dq_core.aio import x\n    from dq_core._compat import restore\n"
        "    from a finaliser that runs\nfrom dq_core import _ringstate as rs\n"
    )
    assert [ast.dump(node) for node in nodes] == [
        ast.dump(node)
        for node in [
            ast.Import(names=[ast.alias("cython")]),
            ast.ImportFrom(
                module="_handles", names=[ast.alias("Handles"), ast.alias("handles_free")], level=0
            ),
            ast.Import(names=[ast.alias("asyncio"), ast.alias("os")]),
            ast.ImportFrom(module="dq_core._compat", names=[ast.alias("restore")], level=0),
            ast.ImportFrom(module="dq_core", names=[ast.alias("_ringstate")], level=0),
        ]
    ]
    graph = core_imports()
    assert "dq_core._heapcore" in graph["src/_aioqueuecore.pyx"]  # a cimport
    assert "dq_core._convert" in graph["src/_number.pxd"]  # a lazy import in a .pxd
    assert "dq_core._ringstate" in graph["src/_ringcore.pyx"]  # "from dq_core import _ringstate"
    assert "dq_core._aiowaiting" in graph["dq_core._aioqueuecore_py"]


def test_every_module_has_its_layer():
    unplaced = [
        name for name in import_graph() if not (is_face(name) or name in LEAVES or name.endswith("_py"))
    ]
    assert not unplaced, f"add each to FACES or LEAVES: {unplaced}"
    assert is_face("dq_core.aio._base") and is_face("dq_core") and not is_face("dq_core._convert")


def face_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a face by a core in ``graph`` (as ``core_imports`` gives it)."""
    return [
        f"{name} imports {dep}"
        for name, deps in sorted(graph.items())
        for dep in sorted(deps)
        if is_face(dep)
    ]


def test_a_core_importing_a_face_is_found():
    assert face_imports({"src/_x.pyx": {"dq_core._convert"}, "dq_core._x_py": set()}) == []
    assert face_imports({"src/_x.pyx": {"dq_core.aio._base"}}) == ["src/_x.pyx imports dq_core.aio._base"]
    assert face_imports({"dq_core._x_py": {"dq_core._priorityqueue", "dq_core._compat"}}) == [
        "dq_core._x_py imports dq_core._compat",
        "dq_core._x_py imports dq_core._priorityqueue",
    ]


def test_no_core_imports_a_face():
    offenders = face_imports(core_imports())
    assert not offenders, "\n".join(offenders)


def test_the_leaves_import_only_leaves():
    graph = import_graph()
    offenders = [
        f"{name} imports {dep}" for name in sorted(LEAVES) for dep in sorted(graph[name]) if dep not in LEAVES
    ]
    assert not offenders, "\n".join(offenders)


#: The threaded faces; the asyncio faces are dq_core.aio's modules.  What a
#: threaded and an asyncio face share lives in a leaf below both.
THREADED_FACES = frozenset(
    {
        "dq_core._priorityqueue",
        "dq_core._delayqueue",
        "dq_core._ttldict",
        "dq_core._timer",
        "dq_core._priorityexecutor",
        "dq_core._ratelimiter",
        "dq_core._queueprotocol",
    }
)


def sideways_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from an asyncio face into a threaded one, or the other way."""

    def aio(name: str) -> bool:
        return name.startswith("dq_core.aio.")  # the package's __init__ assembles, not a face

    return [
        f"{name} imports {dep}"
        for name in sorted(graph)
        for dep in sorted(graph[name])
        if (aio(name) and dep in THREADED_FACES)
        or (name in THREADED_FACES and (aio(dep) or dep == "dq_core.aio"))
    ]


def test_a_sideways_import_is_found():
    assert (
        sideways_imports({"dq_core.aio._x": {"dq_core._tokenbucket"}, "dq_core._timer": {"dq_core._waiting"}})
        == []
    )
    assert sideways_imports(
        {"dq_core.aio._x": {"dq_core._delayqueue"}, "dq_core._ratelimiter": {"dq_core.aio._base"}}
    ) == ["dq_core._ratelimiter imports dq_core.aio._base", "dq_core.aio._x imports dq_core._delayqueue"]


def test_no_face_imports_a_face_of_the_other_kind():
    offenders = sideways_imports(import_graph())
    assert not offenders, "\n".join(offenders)


def foreign_writes(sources: dict[str, str]) -> list[str]:
    """Each write, in a module of ``sources`` (dotted name -> its text), into
    another module of dq_core or into what it defines: an assignment to, or a
    ``setattr``/``delattr`` on, a name imported from dq_core.  What a lower
    module needs from above is handed down through that module's own
    functions (``_inuse.provide``, ``_pickling.publish``), never set on it."""
    out = []
    for name, text in sorted(sources.items()):
        imported = set()
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("dq_core")):
                imported |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                imported |= {
                    alias.asname or alias.name.partition(".")[0]
                    for alias in node.names
                    if alias.name.startswith("dq_core")
                }
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("setattr", "delattr")
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in imported
            ):
                out.append(f"{name}:{node.lineno} {node.func.id}s on {node.args[0].id}")
                continue
            else:
                continue
            for target in targets:
                for part in ast.walk(target):
                    if not isinstance(part, ast.Attribute):
                        continue
                    root = part.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name) and root.id in imported:
                        out.append(f"{name}:{node.lineno} sets {ast.unparse(part)}")
                        break
    return out


def test_a_write_into_another_module_is_found():
    planted = {
        "dq_core.aio": "from . import _timer\n_timer.timer_class = len\n",
        "dq_core.a": "import dq_core._pickling as p\nsetattr(p, 'x', 1)\n",
        "dq_core.b": "from ._queuecore_py import QueueCore\nQueueCore.limit += 1\n",
        "dq_core.c": "import dq_core._waiting\ndel dq_core._waiting.MAX_WAIT\n",
        "dq_core.ok": (
            "import sys\nfrom ._inuse import provide\nprovide('aio.Timer', len)\n"
            "sys.flags_seen = 1\n\ndef f(self, loop):\n    self.x = 1\n    setattr(loop, 'a', 2)\n"
        ),
    }
    assert foreign_writes(planted) == [
        "dq_core.a:2 setattrs on p",
        "dq_core.aio:2 sets _timer.timer_class",
        "dq_core.b:2 sets QueueCore.limit",
        "dq_core.c:2 sets dq_core._waiting.MAX_WAIT",
    ]


def test_no_module_writes_into_another():
    sources = {name: path.read_text(encoding="utf-8") for name, (path, _) in _modules().items()}
    offenders = foreign_writes(sources)
    assert not offenders, "\n".join(offenders)


ARCHITECTURE = ROOT / "docs" / "architecture.rst"


def documented_tree(text: str) -> list[str]:
    """The paths the architecture page's tree lists (the code block under "The tree")."""
    block = text[text.index("\nThe tree\n") :]
    block = block[block.index(".. code-block:: text\n") + len(".. code-block:: text\n") :]
    paths, stack = [], []
    for line in block.splitlines():
        if not line.strip():
            continue
        if not line.startswith("   "):  # the block ends at the first unindented line
            break
        depth, name = (len(line) - len(line.lstrip()) - 3) // 2, line.split()[0]
        stack[depth:] = [name]
        if not name.endswith("/"):
            paths.append("".join(stack))
    return paths


def shipped_sources() -> set[str]:
    """The files of dq_core/ and src/ that the tree should list: sources, not build products."""
    found = {p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".lua") or p.name == "py.typed"}
    found |= {p for p in SOURCES.rglob("*") if p.suffix in (".pyx", ".pxd", ".h")}
    return {str(p.relative_to(ROOT)) for p in found if "__pycache__" not in p.parts}


def test_the_tree_is_read():
    text = (
        "\nThe tree\n--------\n\n.. code-block:: text\n\n   a/\n     b.py   one\n     c/\n"
        "       d.h  two\n   e.py      three\n\nAfter\n"
    )
    assert documented_tree(text) == ["a/b.py", "a/c/d.h", "e.py"]


@pytest.mark.skipif(not ARCHITECTURE.is_file() or not SOURCES.is_dir(), reason="not a source checkout")
def test_the_architecture_page_lists_every_file():
    listed = documented_tree(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(listed) == len(set(listed)), "listed twice: " + str(
        sorted({p for p in listed if listed.count(p) > 1})
    )
    files = shipped_sources()
    assert not files - set(listed), f"add to docs/architecture.rst's tree: {sorted(files - set(listed))}"
    assert not set(listed) - files, f"no such file: {sorted(set(listed) - files)}"
