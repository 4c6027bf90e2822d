"""Typing as a user sees it: mypy --strict over small programs that use dq_core.

``typing_cases/typed_ok.py`` must pass (one case per ``check_*`` function,
with ``assert_type`` catching ``Any`` leaks); every ``# E: <code>`` line of
``typing_cases/typed_errors.py`` must be reported with that code, and no
other line.  One mypy run, with the repository's configuration, serves
every case.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dq_core

CASES = Path(__file__).parent / "typing_cases"
OK, ERRORS = CASES / "typed_ok.py", CASES / "typed_errors.py"
PACKAGE_PARENT = Path(dq_core.__file__).resolve().parents[1]
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)\s+\[(?P<code>[\w-]+)\]$")


def _ok_cases() -> dict[str, range]:
    tree = ast.parse(OK.read_text())
    return {
        node.name: range(node.lineno, node.end_lineno + 1)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("check_")
    }


def _expected_errors() -> list[tuple[int, str]]:
    return [
        (n, m.group(1))
        for n, line in enumerate(ERRORS.read_text().splitlines(), 1)
        if (m := re.search(r"# E: ([\w-]+)$", line))
    ]


MYPY_OUTPUT: list[str] = []  # the fixture's mypy run, line by line


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory) -> dict[str, dict[int, list[str]]]:
    """{file name: {line: ["message [code]", ...]}} from one mypy --strict run."""
    pytest.importorskip("mypy")
    work = tmp_path_factory.mktemp("typing")
    for case in (OK, ERRORS):
        shutil.copy(case, work / case.name)
    env = dict(os.environ)
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
        str(work / ".mypy_cache"),
    ]
    config = PACKAGE_PARENT / "pyproject.toml"
    if config.is_file():  # a source checkout: its configuration
        args += ["--config-file", str(config)]
    # No MYPYPATH: mypy finds dq_core as a user's mypy does, where pip put it
    # (an editable install too: a .pth line, see pyproject.toml's package-dir).
    env.pop("MYPYPATH", None)
    out = subprocess.run(
        args + [OK.name, ERRORS.name], cwd=str(work), env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode in (0, 1), out.stdout + out.stderr  # 2: mypy itself failed
    MYPY_OUTPUT[:] = out.stdout.splitlines()
    errors: dict[str, dict[int, list[str]]] = {OK.name: {}, ERRORS.name: {}}
    for line in out.stdout.splitlines():
        m = ERROR_LINE.match(line)
        if m and m["file"] in errors:
            errors[m["file"]].setdefault(int(m["line"]), []).append(f"{m['msg']} [{m['code']}]")
    return errors


@pytest.mark.parametrize("case", sorted(_ok_cases()))
def test_typed_program_passes(mypy_errors, case):
    lines = _ok_cases()[case]
    found = {n: e for n, e in mypy_errors[OK.name].items() if n in lines}
    assert not found, "\n".join(f"typed_ok.py:{n}: {e}" for n, e in sorted(found.items()))


def test_mypy_finds_dq_core_where_pip_installed_it(mypy_errors):
    # After the README's `pip install -e .`, mypy --strict run from outside
    # the checkout found no dq_core: setuptools' editable install was an
    # import hook, which mypy cannot follow.  (An environment installed
    # before that changed needs `pip install -e .` again.)
    missing = [line for line in MYPY_OUTPUT if "import-not-found" in line or "import-untyped" in line]
    assert not missing, "\n".join(missing)


def test_typed_program_has_no_error_outside_the_cases(mypy_errors):
    cases = _ok_cases().values()
    stray = {n: e for n, e in mypy_errors[OK.name].items() if not any(n in r for r in cases)}
    assert not stray


@pytest.mark.parametrize("line, code", _expected_errors(), ids=[f"{n}-{c}" for n, c in _expected_errors()])
def test_wrong_program_gets_the_expected_error(mypy_errors, line, code):
    got = mypy_errors[ERRORS.name].get(line, [])
    source = ERRORS.read_text().splitlines()[line - 1].strip()
    assert any(e.endswith(f"[{code}]") for e in got), f"no [{code}] error for: {source}; got {got}"


def test_wrong_program_has_no_unexpected_errors(mypy_errors):
    expected = {n for n, _ in _expected_errors()}
    assert not {n: e for n, e in mypy_errors[ERRORS.name].items() if n not in expected}
