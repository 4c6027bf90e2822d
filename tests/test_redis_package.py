"""dq_core.redis's Lua scripts ship: the sdist carries every ``.lua`` file the
package reads, and so does the wheel built from that sdist (as a release is
built), at the path ``importlib.resources`` reads it from."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from dq_core.redis import _scripts

ROOT = Path(__file__).resolve().parents[1]


def test_every_script_is_read_from_a_lua_file():
    files = _scripts.lua_files()
    assert set(files) == {"prelude.lua"} | {f"{op}.lua" for op in _scripts.OPS}
    helper = re.compile(r"^local function (\w+)\(", re.M)
    helpers = helper.findall(files["prelude.lua"])
    marked = re.findall(r"^local function (\w+)\(.*  -- lazy$", files["prelude.lua"], re.M)
    for op, source in _scripts.SOURCES.items():
        body = files[f"{op}.lua"]
        assert source.endswith(body)
        prelude = source[: -len(body)]
        # the lazy helpers kept are made in one block, if the call may need
        # them (declared first, in the prelude's order); the others where the
        # prelude makes them
        lazy = re.findall(r"^function (\w+)\(", prelude, re.M)
        eager = _scripts.EAGER.get(op, frozenset())
        assert lazy and set(lazy) <= set(marked) - eager
        declared = f"local {', '.join(lazy)}  -- made below"
        assert re.search(rf"^{declared}", prelude, re.M)
        kept = helper.findall(prelude)
        assert not set(kept) & (set(marked) - eager)
        assert kept == [h for h in helpers if h in kept]  # the prelude's, in its order
        kept += lazy
        # the prelude's lines, less the helpers left out (none of which the
        # script names outside comments), in its order: the block's, and the others
        lines = prelude.splitlines()[1:]
        start = lines.index(f"if {_scripts.NEED.get(op, 'true')} then")
        end = lines.index("end  -- lazy helpers")
        inner = [re.sub(r"^function ", "local function ", line) for line in lines[start + 1 : end]]
        made = (declared, "-- the helpers off the common paths")
        outer = [line for line in lines[:start] + lines[end + 1 :] if not line.startswith(made)]
        if op in _scripts.NO_RECLAIM:
            outer = [line for line in outer if line != "local ended = {}"]
        for part in (inner, outer):
            mine = iter(files["prelude.lua"].splitlines())
            assert all(line in mine for line in part)
        code = re.sub(r"--[^\n]*", "", source)
        for name in set(helpers) - set(kept):
            assert not re.search(rf"\b{name}\b", code), (op, name)
    # a put leaves the claims' helpers out, a claim keeps them
    assert "local function take_due(" not in _scripts.SOURCES["put"]
    assert "local function take_due(" in _scripts.SOURCES["claim"]
    # a claim makes the helpers of recurring jobs and retries only if it may need them
    assert "\nfunction next_fire(" in _scripts.SOURCES["claim"]
    assert "\nfunction retry(" in _scripts.SOURCES["claim"]


def test_the_sdist_and_the_wheel_built_from_it_carry_every_lua_file(tmp_path):
    if not (ROOT / "setup.py").is_file():
        pytest.skip("no source tree next to the tests")
    spec = importlib.util.find_spec("build")
    if spec is None or spec.origin is None:  # absent, or a build/ directory on the path
        pytest.skip("the build package (pypa/build) is not installed")
    wanted = {f"dq_core/redis/lua/{name}" for name in _scripts.lua_files()}
    # pure (no compiler): the same files, in seconds
    env = {**os.environ, "DQ_CORE_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--skip-dependency-check",
            "-o",
            str(tmp_path),
            str(ROOT),
        ],  # the sdist, then the wheel from the unpacked sdist
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (sdist,) = tmp_path.glob("dq_core-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert wanted - names == set(), "the sdist lacks some"
    (wheel,) = tmp_path.glob("dq_core-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
    assert wanted - names == set(), "the wheel lacks some"


def test_without_redis_py_the_import_names_the_extra():
    # sys.modules["redis"] = None: "import redis" fails as if it were not installed
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "try:\n    import dq_core.redis\n"
        "except ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "dq_core.redis needs redis-py, which the 'redis' extra installs: pip install \"dq_core[redis]\""
    )
