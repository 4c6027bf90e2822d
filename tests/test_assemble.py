"""The assembly point: what the test matrix exercises is what dq_core exports."""

from __future__ import annotations

import ast
import pathlib
import pickle

import pytest

import dq_core
from conftest import IMPLEMENTATIONS
from dq_core._assemble import CORE_MODULES, Classes, assemble, classes, cores


def test_the_matrix_tests_the_classes_that_ship(impl):
    in_use = IMPLEMENTATIONS[impl.name] == dq_core.implementation
    for name in Classes._fields:
        public = getattr(dq_core, name)
        assert (getattr(impl, name) is public) == in_use, name
        assert getattr(impl, name).__name__ == name
    for name in ("PriorityQueue", "DelayQueue", "Timer", "TTLDict", "PriorityExecutor"):
        assert getattr(impl, name).__module__ == "dq_core", name  # faces, as users see them


def test_classes_are_built_once_per_implementation(impl):
    implementation = IMPLEMENTATIONS[impl.name]
    assert classes(implementation) is classes(implementation)
    # assemble itself builds afresh, from whatever core modules it is given
    fresh = assemble(cores(implementation))
    assert fresh.PriorityQueue is not impl.PriorityQueue
    assert fresh.Heap is impl.Heap  # a core class public as it is


def test_each_face_holds_the_cores_of_its_own_implementation(impl):
    modules = cores(IMPLEMENTATIONS[impl.name])
    assert impl.DelayQueue()._heap.__class__ is modules["_heapcore"].Heap
    assert isinstance(impl.PriorityQueue(), modules["_queuecore"].QueueCore)
    assert isinstance(impl.TTLDict(1), modules["_ttldictcore"].TTLDictCore)
    with impl.Timer() as timer:
        assert type(timer._shared.wheel) is modules["_wheelcore"].TimingWheel
    with impl.PriorityExecutor(max_workers=1) as ex:
        assert type(ex._pending) is impl.PriorityQueue


def test_every_core_has_a_pure_twin_with_the_same_public_names():
    pure = cores("python")
    assert set(pure) == set(CORE_MODULES)
    try:
        compiled = cores("cython")
    except ImportError:
        pytest.skip("compiled core not built")
    for name in CORE_MODULES:
        assert sorted(compiled[name].__all__) == sorted(pure[name].__all__), name


def test_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="implementation must be one of"):
        cores("rust")


def test_a_pickle_loads_on_the_implementation_in_use(impl):
    h = impl.Heap()
    h.push(1.0, "a")
    assert type(pickle.loads(pickle.dumps(h))) is dq_core.Heap


# -- the wiring ------------------------------------------------------------------

ROOT = pathlib.Path(__file__).resolve().parents[1]

# A structure built on another takes that one's core of the same implementation.
BUILT_ON = {
    "_ttldictcore_py": {"._ringcore_py"},
    "_delaycore_py": {"._heapcore_py", "._lockcore_py"},
    "_queuecore_py": {"._itemheapcore_py", "._lockcore_py"},
    "_aioqueuecore_py": {"._heapcore_py", "._itemheapcore_py", "._lockcore_py"},
}


def imported_modules(path: pathlib.Path) -> set[str]:
    if path.suffix != ".py":  # a .pyx or .pxd: its Python-level imports, line by line
        return {
            line.split()[1]
            for line in path.read_text().splitlines()
            if line.startswith(("from ", "import ")) and " cimport " not in line
        }
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            out.add(("." * node.level) + (node.module or ""))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def core_files() -> list[pathlib.Path]:
    return sorted((ROOT / "src").rglob("*.p[yx][xd]")) + [
        ROOT / "dq_core" / f"{name}_py.py" for name in CORE_MODULES
    ]


@pytest.mark.skipif(not (ROOT / "src").is_dir(), reason="no source tree next to the tests")
@pytest.mark.parametrize("path", core_files(), ids=lambda p: p.name)
def test_no_compiled_core_imports_a_twin_nor_a_twin_another(path):
    twins = {m for m in imported_modules(path) if m.endswith("_py")}
    assert twins <= BUILT_ON.get(path.stem, set()), f"{path.name} imports {sorted(twins)}"


def test_the_aio_cores_arm_loop_timers_as_far_as_the_faces(impl):
    # one value in five places: the faces' (RateLimiter) and each DelayQueue and Timer core's
    from dq_core.aio._base import MAX_ARM

    assert impl.aioqueuecore.MAX_ARM == impl.aiotimercore.MAX_ARM == MAX_ARM == 86400.0


def _faces(impl):
    return [impl.PriorityQueue, impl.DelayQueue, impl.TTLDict, impl.aio.PriorityQueue, impl.aio.DelayQueue]


def test_faces_own_the_c_methods_they_inherit(impl):
    # CPython's specialised call of a C method wants type(self) to be exactly
    # the method's class: each face holds its own copy of its core's methods
    # (where the shortcut that copies a method descriptor is on)
    modules = cores(IMPLEMENTATIONS[impl.name])
    copies = modules["_heapcore"].SHORTCUTS.get("method_descr", False)
    adopted = 0
    for face in _faces(impl):
        for base in face.__mro__[1:]:
            if not base.__module__.startswith("dq_core."):
                continue
            for name, d in vars(base).items():
                if name.startswith("__") or type(d) is not type(list.append):
                    continue
                mine = vars(face).get(name)
                if any(name in vars(k) for k in face.__mro__[1 : face.__mro__.index(base)]):
                    continue  # overridden between: not the core's
                assert type(mine) is type(list.append), (face, name)
                assert mine.__objclass__ is face and mine.__doc__ == d.__doc__, (face, name)
                adopted += 1
    assert (adopted > 0) == copies
    assert copies == (impl.name == "c" and modules["_aioqueuecore"].SHORTCUTS.get("method_descr", False))
    with pytest.raises(TypeError, match="cls must be a class"):
        modules["_heapcore"].adopt_methods("PriorityQueue")


def test_an_adopted_method_is_still_overridable(impl):
    seen = []

    class Q(impl.PriorityQueue):
        def put_nowait(self, item):
            seen.append(item)
            super().put_nowait(item)

    q = Q()
    q.put_nowait(3)
    q.put_nowait(1)
    assert seen == [3, 1] and q.get_nowait() == 1 and q.qsize() == 1


def test_the_timer_class_in_use_is_handed_down_to_default_timer():
    import asyncio

    import dq_core.aio
    from dq_core._inuse import in_use

    assert in_use("aio.Timer") is dq_core.aio.Timer  # provided by dq_core.aio, built on first use

    async def main() -> object:
        return dq_core.aio.default_timer()

    assert type(asyncio.run(main())) is dq_core.aio.Timer
    with pytest.raises(RuntimeError, match=r"dq_core\.nowhere is not imported: it provides nowhere\.Thing"):
        in_use("nowhere.Thing")
