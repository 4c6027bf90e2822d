"""The package as a whole: the implementation selector, docs, build files."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import dq_core
from conftest import compiled_or_skip
from dq_core._assemble import CORE_MODULES, Classes

ROOT = Path(__file__).resolve().parents[1]
PURE_MODULES = [f"dq_core.{name}_py" for name in CORE_MODULES] + [
    "dq_core._convert",
    "dq_core._ratelimiter",
]
# Faces: their classes become public only joined with a core (dq_core._assemble),
# so their examples run against each implementation's public classes.
FACE_MODULES = [
    "dq_core._priorityqueue",
    "dq_core._delayqueue",
    "dq_core._ttldict",
    "dq_core._priorityexecutor",
    "dq_core._timer",
]


def _implementation(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DQ_CORE_NO_EXTENSIONS"}
    if env_value is not None:
        env["DQ_CORE_NO_EXTENSIONS"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", "import dq_core; print(dq_core.implementation, dq_core.Heap.__module__)"],
        env=env,
        cwd=str(ROOT / "tests"),
        capture_output=True,
        text=True,
        check=True,
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
        "sys.modules['dq_core._wheelcore'] = None; import dq_core; print(dq_core.implementation)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=str(ROOT / "tests"), capture_output=True, text=True
    )


def test_missing_compiled_core_warns_with_the_reason():
    from dq_core import _compat

    if _compat.BUILT_PURE:
        pytest.skip("this install was built pure on purpose (PURE_BUILD): it never warns")
    out = _import_with_blocked_core(None)
    assert out.returncode != 0
    assert "RuntimeWarning" in out.stderr and "dq_core._wheelcore" in out.stderr
    assert "DQ_CORE_NO_EXTENSIONS" in out.stderr


def _unbuilt_checkout(tmp_path: Path) -> Path:
    """A source checkout's layout whose compiled cores are not built: setup.py and dq_core/."""
    import shutil

    package = Path(dq_core.__file__).parent
    shutil.copytree(
        package,
        tmp_path / "dq_core",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "PURE_BUILD"),
    )
    (tmp_path / "setup.py").write_text("")
    return tmp_path


def _fallback_warning(cwd: Path, pythonpath: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DQ_CORE_NO_EXTENSIONS", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    code = (
        "import warnings\nwith warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n    import dq_core\n"
        "print(dq_core.implementation, dq_core.__file__)\nprint(*[str(x.message) for x in w])"
    )
    # -S: no site-packages, so no editable install's finder that maps dq_core elsewhere
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_an_unbuilt_source_checkout_says_what_to_run(tmp_path):
    root = _unbuilt_checkout(tmp_path)
    out = _fallback_warning(root, None)
    assert out.startswith(f"python {root / 'dq_core' / '__init__.py'}"), out
    assert f"this source tree ({root / 'dq_core'}) has no compiled cores built" in out
    assert f"'pip install -e .' (or 'python setup.py build_ext --inplace') in {root}" in out
    assert "or run Python from another directory" in out


def test_a_source_checkout_built_for_other_sources_says_so(tmp_path):
    root = _unbuilt_checkout(tmp_path)
    (root / "dq_core" / "_heapcore.cpython-39-x86_64-linux-gnu.so").write_bytes(b"")  # another Python's
    out = _fallback_warning(root, None)
    assert out.startswith("python "), out
    assert f"the compiled cores in this source tree ({root / 'dq_core'}) do not match its sources" in out
    assert f"'pip install -e .' (or 'python setup.py build_ext --inplace') in {root}" in out


def test_a_source_checkout_shadowing_an_installed_build_says_so(tmp_path):
    compiled_or_skip()
    installed = Path(dq_core.__file__).parent  # built: where the tests import dq_core from
    root = _unbuilt_checkout(tmp_path)
    out = _fallback_warning(root, str(installed.parent))
    assert out.startswith("python "), out  # the checkout, first on sys.path, was imported
    assert f"this source tree ({root / 'dq_core'}) shadows the installed build in {installed}" in out
    assert f"'pip install -e .' (or 'python setup.py build_ext --inplace') in {root}" in out


def test_deliberate_pure_python_does_not_warn():
    out = _import_with_blocked_core("1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "python"


def test_environment_variable_forces_pure_python():
    assert _implementation("1") == "python dq_core._heapcore_py"
    assert _implementation("yes") == "python dq_core._heapcore_py"


def test_compiled_is_the_default_when_built():
    compiled_or_skip()
    assert _implementation(None) == "cython dq_core._heapcore"
    assert _implementation("") == "cython dq_core._heapcore"  # empty means unset


def test_compiled_cores_share_one_copy_of_cythons_utility_code():
    """The compiled cores import Cython's utility code from dq_core._cyutility.

    It holds the memoryview type, function objects and argument parsing
    once; compiled into each core instead, it made the compiled modules of
    a CPython 3.11 Linux wheel 1.90 MB instead of 1.33 MB (.ci/run checks
    their total in the release wheel).
    """
    impl = compiled_or_skip()
    shared = sys.modules.get("dq_core._cyutility")
    assert shared is not None, "the compiled cores did not import dq_core._cyutility"
    for name in CORE_MODULES:
        core = getattr(impl, name.lstrip("_"))
        assert Path(core.__file__).parent == Path(shared.__file__).parent, (core, shared)


def test_public_names():
    assert dq_core.implementation in ("cython", "python")
    assert set(dq_core.__all__) <= set(dir(dq_core))
    expected = "dq_core._heapcore" if dq_core.implementation == "cython" else "dq_core._heapcore_py"
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
        cwd=str(ROOT),
        capture_output=True,
        text=True,
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
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, workflows)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_pyproject_is_valid():
    out = subprocess.run(
        [_tool("validate-pyproject"), str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_test_matrix_in_workflow_covers_the_operating_systems():
    text = (ROOT / ".github" / "workflows" / "tests.yml").read_text()
    for os_name in ("ubuntu-latest", "macos-latest", "windows-latest"):
        assert os_name in text


def test_bench_quick_runs_and_prints_a_table(capsys):
    from dq_core import bench

    readings = iter([0.5])  # quiet at the start, busy from then on
    assert bench.main(["--quick"], read_load=lambda: next(readings, 9.0), cores=2) == 0
    out, err = capsys.readouterr()
    assert "ratio" in out
    table = bench.rows(quick=True)
    for row in table:
        # what the baseline was, in words, not the workload's function name
        assert f"{row.label} " in out and out.split(row.label, 1)[1].split("\n")[0].endswith(
            f"x  {row.baseline}"
        )
        assert row.base.__name__ not in out
        assert f"{row.label}: {row.baseline}" in err  # progress goes to stderr
    assert f"[{len(table) + 1}/{len(table) + 1}] TimingWheel memory" in err
    assert "[1/" not in out
    assert out.rstrip().endswith(
        "run again when the machine is quiet, or use perf/ (pyperf) for careful numbers"
    )
    assert "load average (9.0) exceeded the 2 cores" in out


def test_bench_says_when_the_ratios_are_unreliable():
    from dq_core.benchmarks.table import overload_note

    assert overload_note(None, 2) is None  # no load average (Windows)
    assert overload_note(2.0, 2) is None
    note = overload_note(2.5, 2)
    assert note is not None and "load average (2.5) exceeded the 2 cores" in note
    assert "ratios are unreliable" in note


@pytest.mark.parametrize(
    "script, args, expect",
    [
        ("poller.py", ["--jobs", "1000", "--rate", "5000", "--workers", "4"], "polls of 1000 jobs"),
        ("poller_aio.py", ["--jobs", "1000", "--rate", "5000", "--concurrency", "16"], "polls of 1000 jobs"),
        ("timeouts.py", ["--connections", "2000", "--idle", "0.05"], "2000 of 2000 connections closed"),
    ],
)
def test_examples_run(script, args, expect):
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout


# -- packaging: licence, metadata, sdist, the pure build -----------------------


def _needs_source_tree() -> None:
    if not (ROOT / "setup.py").is_file():
        pytest.skip("no source tree next to the tests")


def test_changelog_has_the_keep_a_changelog_shape():
    _needs_source_tree()
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    blocks = re.split(r"^## ", text, flags=re.M)[1:]
    assert blocks and blocks[0].startswith("[Unreleased]\n"), "the first section is [Unreleased]"
    kinds = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
    for block in blocks:
        title = block.splitlines()[0]
        assert title == "[Unreleased]" or re.fullmatch(
            r"\[\d+\.\d+\.\d+\] - (\d{4}-\d\d-\d\d|not yet released)", title
        ), title
        sections = re.findall(r"^### (.+)$", block, flags=re.M)
        assert sections, f"{title}: no Added / Changed / Fixed / Removed section"
        assert set(sections) <= set(kinds) and len(sections) == len(set(sections)), (title, sections)
        assert [k for k in kinds if k in sections] == sections, f"{title}: sections out of order"


def test_licence_is_in_the_metadata():
    from importlib import metadata

    # the installed distribution, not the egg-info a source build leaves in the checkout
    path = [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    dist = next(iter(metadata.distributions(name="dq_core", path=path)))
    assert dist.metadata["License-Expression"] == "Apache-2.0"
    assert "LICENSE" in (dist.metadata.get_all("License-File") or [])
    licence = dist.read_text("licenses/LICENSE")
    assert licence is not None and "Apache License" in licence and "Version 2.0" in licence


def test_classifiers_name_the_tested_pythons_and_requires_python_allows_them():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: 3."
    listed = {c[len(prefix) - 2 :] for c in project["classifiers"] if c.startswith(prefix)}
    workflow = (ROOT / ".github" / "workflows" / "tests.yml").read_text()
    tested = set(re.findall(r'"(3\.\d+)"', workflow))
    assert listed == tested, (listed, tested)
    allowed = SpecifierSet(project["requires-python"])
    assert all(f"{v}.0" in allowed for v in listed)
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639


def _tree(*patterns: str) -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for pattern in patterns
        for p in ROOT.glob(pattern)
        if p.is_file() and "__pycache__" not in p.parts and "_build" not in p.parts
    }


def test_sdist_holds_what_the_tests_need_and_passes_twine_check(tmp_path):
    """The sdist carries the tests, the files they read, the sources and the docs.

    Built without isolation and without compiling (the file list is the same;
    .ci/run builds the real sdist and wheel and runs the tests from them).
    """
    _needs_source_tree()
    pytest.importorskip("build")
    env = {**os.environ, "DQ_CORE_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--no-isolation",
            "--skip-dependency-check",
            "-o",
            str(tmp_path),
            str(ROOT),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (sdist,) = tmp_path.glob("dq_core-*.tar.gz")
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        names = {n[len(top) + 1 :] for n in tar.getnames()}
    expected = _tree(
        "tests/**/*.py",
        "examples/*.py",
        "src/*.pyx",
        "src/*.pxd",
        "src/include/*.h",
        "dq_core/*.py",
        "dq_core/py.typed",
        "perf/*.py",
        "docs/**/*",
        ".github/workflows/*.yml",
    )
    expected |= {
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "setup.py",
        "MANIFEST.in",
        ".ci/run",
        ".clang-format",
    }
    assert {"examples/poller.py", "examples/timeouts.py", "docs/conf.py"} <= expected
    assert expected - names == set()
    assert not [n for n in names if n.startswith("src/") and n.endswith(".c")]  # Cython makes them

    out = subprocess.run([_tool("twine"), "check", "--strict", str(sdist)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_pure_build_is_marked_and_imports_without_a_warning(tmp_path):
    """A build with DQ_CORE_NO_EXTENSIONS set is pure on purpose: no warning at import.

    (One whose compiled core is missing by accident still warns: see
    test_missing_compiled_core_warns_with_the_reason.)
    """
    _needs_source_tree()
    env = {**os.environ, "DQ_CORE_NO_EXTENSIONS": "1"}
    out = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert (tmp_path / "dq_core" / "PURE_BUILD").is_file()
    assert not list((tmp_path / "dq_core").glob("*.so")) and not list((tmp_path / "dq_core").glob("*.pyd"))
    env = {k: v for k, v in os.environ.items() if k != "DQ_CORE_NO_EXTENSIONS"}
    env["PYTHONPATH"] = str(tmp_path)
    code = "import dq_core; print(dq_core.implementation, dq_core.__file__)"
    # -S: no site-packages, so no editable install of the checkout can answer instead
    out = subprocess.run(
        [sys.executable, "-S", "-W", "error::RuntimeWarning", "-c", code],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    implementation, where = out.stdout.split()
    assert implementation == "python" and Path(where).parent == tmp_path / "dq_core"


SUPPORTED = ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]
FREE_THREADED = ["3.14t", "3.15t"]


@pytest.mark.parametrize("platform", ["linux", "macos", "windows"])
def test_wheels_are_built_for_the_supported_pythons_only(platform):
    pytest.importorskip("cibuildwheel")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("no source tree next to the tests")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIBW_")}
    out = subprocess.run(
        [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", platform],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    tags = {ident.split("-")[0] for ident in out.stdout.split()}
    expected = {"cp" + v.replace(".", "") for v in SUPPORTED + FREE_THREADED}
    assert tags == expected, out.stdout


def test_workflows_cover_the_supported_pythons_and_a_current_cibuildwheel():
    workflows = ROOT / ".github" / "workflows"
    if not workflows.is_dir():
        pytest.skip("no source tree next to the tests")
    tests = (workflows / "tests.yml").read_text()
    matrix = re.search(r"python: \[(.*)\]", tests)
    assert matrix is not None
    assert re.findall(r'"([^"]+)"', matrix.group(1)) == SUPPORTED + ["3.14t"]
    wheels = (workflows / "wheels.yml").read_text()
    assert re.search(r"pypa/cibuildwheel@v4\.", wheels)
    runners = re.search(r"os: \[(.*)\]", wheels)
    assert runners is not None and "ubuntu-24.04-arm" in runners.group(1)


def test_every_package_of_the_source_tree_is_shipped():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("no source tree next to the tests")
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = sorted(
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "dq_core").rglob("__init__.py")
    )
    assert sorted(shipped) == found
