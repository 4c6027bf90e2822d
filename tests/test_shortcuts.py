"""The interpreter shortcuts each compiled core takes, per Python version and build.

Every reach past CPython's public API lives in src/include/dq_shortcuts.h,
one switch each; a core's ``SHORTCUTS`` maps the ones it uses to on/off.
The rule: what mirrors a private layout, reuses interpreter-managed memory
or hides objects from the collector is on only for the CPython minors the
suite has run on (3.10 to TESTED_UP_TO), and off on a free-threaded build.
This test states, for the running interpreter, which must be on; raising
TESTED_UP_TO here and DQ_TESTED_UP_TO in the header go together.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import sysconfig

import pytest

from dq_core._assemble import CORE_MODULES, cores
from test_aio_loops import run  # noqa: F401 -- the loop fixture

TESTED_UP_TO = (3, 15)

GIL = not sysconfig.get_config_var("Py_GIL_DISABLED")
TESTED = sys.version_info[:2] <= TESTED_UP_TO
LINUX = sys.platform.startswith("linux")
PY = sys.version_info[:2]
ASYNCIO_C = type(asyncio.get_running_loop).__name__ == "builtin_function_or_method"


def expected() -> dict[str, dict[str, bool]]:
    on = GIL and TESTED
    monotonic = LINUX and TESTED
    return {
        "_aioqueuecore": {
            "await_freelist": on,
            "code_flags": TESTED and PY < (3, 12),  # from 3.12: inspect.markcoroutinefunction
            "type_tag_cache": on and PY >= (3, 11),  # 3.10 reuses tags after sys._clear_type_cache()
            "type_lookup": on,
            "instance_dict_ptr": on,
            "method_descr": on,
            "running_loop_cfunc": on and ASYNCIO_C,
            "running_loop_entry": on and PY < (3, 12),  # 3.12+ keeps no such entry
            "monotonic_clock_gettime": monotonic,
        },
        "_aiotimercore": {"context_snapshot": on, "untrack_pending": on},
        "_delaycore": {"monotonic_clock_gettime": monotonic},
        "_heapcore": {"method_descr": on, "list_append": on, "long_digits": on},
        "_itemheapcore": {"list_hole": on},
        "_lockcore": {},
        "_queuecore": {},
        "_ringcore": {},
        "_ttldictcore": {},
        "_wheelcore": {"list_append": on, "long_digits": on, "monotonic_clock_gettime": monotonic},
        "_wheelttlcore": {},
    }


@pytest.fixture(scope="module")
def compiled():
    from conftest import compiled_or_skip

    compiled_or_skip()
    return cores("cython")


def test_each_core_takes_the_shortcuts_its_python_and_build_allow(compiled):
    got = {name: dict(module.SHORTCUTS) for name, module in compiled.items()}
    assert got == expected()


def test_the_pure_twins_take_none():
    for name, module in cores("python").items():
        assert dict(module.SHORTCUTS) == {}, name


def test_shortcut_tables_are_read_only(compiled):
    for name in CORE_MODULES:
        with pytest.raises(TypeError):
            compiled[name].SHORTCUTS["x"] = True  # type: ignore[index]


def test_timers_run_in_the_variables_current_when_scheduled(impl, run):
    # the context shortcut (snapshots shared between timers) seen from
    # outside: a timer sees the variables as they were when it was
    # scheduled, as with asyncio's call_at, shared snapshot or not
    var = contextvars.ContextVar("v", default="unset")
    seen = []

    async def main():
        t = impl.aio.Timer(tick=0.001)
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def report(tag):
            seen.append((tag, var.get()))
            if len(seen) == 3:
                done.set_result(None)

        t.call_later(0.001, report, "a")
        var.set("one")
        t.call_later(0.002, report, "b")
        ctx = contextvars.copy_context()
        ctx.run(var.set, "two")
        ctx.run(t.call_later, 0.003, report, "c")
        await done
        t.close()

    run(main())
    assert seen == [("a", "unset"), ("b", "one"), ("c", "two")]
