"""dq_core.aio as a type checker sees it: generic, no Any leaks, a drop-in for asyncio's type.

One mypy --strict run over a small program: ``assert_type`` catches an
``Any`` where a precise type belongs; the lines marked ``# E: <code>`` must
be reported with that code, and no other line may be.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dq_core

PACKAGE_PARENT = Path(dq_core.__file__).resolve().parents[1]

CASE = textwrap.dedent("""\
    from __future__ import annotations

    import asyncio
    import concurrent.futures
    from typing import Optional

    from typing_extensions import assert_type

    from dq_core import aio


    async def main() -> None:
        q: aio.PriorityQueue[tuple[int, str]] = aio.PriorityQueue(maxsize=5)
        await q.put((1, "a"))
        q.put_many([(2, "b")])
        assert_type(q.put_threadsafe((3, "c")), None)
        assert_type(await q.get(), tuple[int, str])
        assert_type(q.get_nowait(), tuple[int, str])
        assert_type(q.get_many(1), list[tuple[int, str]])
        assert_type(q.maxsize, int)
        std: asyncio.PriorityQueue[tuple[int, str]] = q  # accepted where asyncio's is expected
        dq: aio.DelayQueue[str] = aio.DelayQueue(maxsize=10)
        assert_type(dq.put_nowait("x", 1.0), int)
        assert_type(await dq.put_at("x", 5), int)
        assert_type(await dq.get(), str)
        assert_type(dq.get_many(), list[str])
        assert_type(dq.next_deadline(), Optional[float])
        assert_type(dq.cancel(1), bool)
        assert_type(dq.put_threadsafe("x"), concurrent.futures.Future[int])
        async for item in dq:
            assert_type(item, str)
        q.put_nowait("wrong")  # E: arg-type
        q.put_threadsafe("wrong")  # E: arg-type
        dq.put_nowait(3)  # E: arg-type
        aio.DelayQueue[int]().put_nowait(1, delay="soon")  # E: arg-type
""")

ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[\w-]+)\]$")


def test_aio_types_under_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    case = tmp_path / "aio_case.py"
    case.write_text(CASE)
    args = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--follow-imports=silent",
        "--show-error-codes",
        "--no-error-summary",
        "--no-pretty",
        "--cache-dir",
        str(tmp_path / ".mypy_cache"),
    ]
    env = dict(os.environ)
    config = PACKAGE_PARENT / "pyproject.toml"
    if config.is_file():  # a source checkout: its configuration and its dq_core
        args += ["--config-file", str(config)]
        env["MYPYPATH"] = str(PACKAGE_PARENT)
    # run from the case's directory, never from site-packages (where mypy
    # would take typing_extensions.py for a user module)
    out = subprocess.run(
        args + [case.name], capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120
    )
    got = sorted(
        (int(m["line"]), m["code"])
        for m in map(ERROR.match, out.stdout.splitlines())
        if m and Path(m["file"]).name == case.name
    )
    expected = sorted(
        (n, m.group(1))
        for n, line in enumerate(CASE.splitlines(), 1)
        if (m := re.search(r"# E: ([\w-]+)$", line))
    )
    assert got == expected, out.stdout + out.stderr
