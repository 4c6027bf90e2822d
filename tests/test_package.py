"""The package as a whole: the implementation selector, docs, build files."""

from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dq_core

from conftest import compiled_or_skip
from dq_core._assemble import CORE_MODULES, Classes

ROOT = Path(__file__).resolve().parents[1]
PURE_MODULES = [f"dq_core.{name}_py" for name in CORE_MODULES] + [
    "dq_core._convert", "dq_core._ratelimit",
]
# Faces: their classes become public only joined with a core (dq_core._assemble),
# so their examples run against each implementation's public classes.
FACE_MODULES = [
    "dq_core._queues", "dq_core._delayqueue", "dq_core._ttldict", "dq_core._executor",
    "dq_core._timer",
]


def _implementation(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DQ_CORE_NO_EXTENSIONS"}
    if env_value is not None:
        env["DQ_CORE_NO_EXTENSIONS"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", "import dq_core; print(dq_core.implementation, dq_core.Heap.__module__)"],
        env=env, cwd=str(ROOT / "tests"), capture_output=True, text=True, check=True,
    )
    return out.stdout.strip()


def _import_with_blocked_core(env_value: str | None) -> subprocess.CompletedProcess[str]:
    # sys.modules[name] = None makes that import raise ImportError, as a
    # missing or foreign-ABI extension would.
    env = {k: v for k, v in os.environ.items() if k != "DQ_CORE_NO_EXTENSIONS"}
    if env_value is not None:
        env["DQ_CORE_NO_EXTENSIONS"] = env_value
    code = (
        "import sys, warnings; warnings.simplefilter('error', RuntimeWarning); "
        "sys.modules['dq_core._wheel'] = None; import dq_core; print(dq_core.implementation)"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=str(ROOT / "tests"),
                          capture_output=True, text=True)


def test_missing_compiled_core_warns_with_the_reason():
    out = _import_with_blocked_core(None)
    assert out.returncode != 0
    assert "RuntimeWarning" in out.stderr and "dq_core._wheel" in out.stderr
    assert "DQ_CORE_NO_EXTENSIONS" in out.stderr


def test_deliberate_pure_python_does_not_warn():
    out = _import_with_blocked_core("1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "python"


def test_environment_variable_forces_pure_python():
    assert _implementation("1") == "python dq_core._heap_py"
    assert _implementation("yes") == "python dq_core._heap_py"


def test_compiled_is_the_default_when_built():
    compiled_or_skip()
    assert _implementation(None) == "cython dq_core._heap"
    assert _implementation("") == "cython dq_core._heap"  # empty means unset


def test_public_names():
    assert dq_core.implementation in ("cython", "python")
    assert set(dq_core.__all__) <= set(dir(dq_core))
    expected = "dq_core._heap" if dq_core.implementation == "cython" else "dq_core._heap_py"
    assert dq_core.Heap.__module__ == expected


@pytest.mark.parametrize("name", PURE_MODULES)
def test_doctests_of_pure_modules(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name != "dq_core._convert":
        assert result.attempted > 0


@pytest.mark.parametrize("name", FACE_MODULES)
def test_doctests_of_faces(impl, name):
    module = importlib.import_module(name)
    public = {field: getattr(impl, field) for field in Classes._fields}
    result = doctest.testmod(module, extraglobs=public, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_typed_package_passes_mypy_strict():
    pytest.importorskip("mypy")
    if not (ROOT / "dq_core").is_dir():
        pytest.skip("no source tree next to the tests")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "dq_core"],
        cwd=str(ROOT), capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (Path(dq_core.__file__).parent / "py.typed").is_file()


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else name


def test_workflows_are_valid():
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert {p.name for p in workflows} >= {"tests.yml", "wheels.yml"}
    out = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
         *map(str, workflows)],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_pyproject_is_valid():
    out = subprocess.run(
        [_tool("validate-pyproject"), str(ROOT / "pyproject.toml")],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_test_matrix_in_workflow_covers_the_supported_versions():
    text = (ROOT / ".github" / "workflows" / "tests.yml").read_text()
    for v in ("3.9", "3.10", "3.11", "3.12", "3.13"):
        assert f'"{v}"' in text
    for os_name in ("ubuntu-latest", "macos-latest", "windows-latest"):
        assert os_name in text


def test_bench_quick_runs_and_prints_a_table(capsys):
    from dq_core import bench

    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "ratio" in out
    for label, *_ in bench.rows(quick=True):
        assert label in out


@pytest.mark.parametrize("script, args, expect", [
    ("poller.py", ["--jobs", "1000", "--rate", "5000", "--workers", "4"], "polls of 1000 jobs"),
    ("timeouts.py", ["--connections", "2000", "--idle", "0.05"], "2000 of 2000 connections closed"),
])
def test_examples_run(script, args, expect):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout
