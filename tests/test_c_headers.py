"""The C the compiled cores include (src/include/*.h), checked by the C compiler.

Each header must compile on its own (it includes what it needs) with every
warning of ``-Wall -Wextra`` an error, against the running interpreter's
Python.h; once as built, and once with every shortcut of dq_shortcuts.h
that can be switched off switched off, so that the public-API fallbacks
are checked as well.  (The debug build compiles the cores themselves with
the same flags: setup.py, DQ_CORE_DEBUG=1.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

INCLUDE = Path(__file__).resolve().parent.parent / "src" / "include"
HEADERS = sorted(INCLUDE.glob("*.h"))
FLAGS = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c"]


def _forceable() -> list[str]:
    # the switches dq_shortcuts.h lets a build force (#ifndef DQ_SC_<NAME>)
    text = (INCLUDE / "dq_shortcuts.h").read_text()
    return sorted(set(re.findall(r"^#ifndef (DQ_SC_\w+)$", text, re.M)))


def _compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    python_h = Path(sysconfig.get_paths()["include"], "Python.h")
    if cc is None or not python_h.exists():
        pytest.skip("no C compiler or no Python.h: the compiled core cannot be built here either")
    return cc


def test_the_headers_are_there():
    assert INCLUDE.is_dir() or not (INCLUDE.parent / "_heapcore.pyx").exists()
    if INCLUDE.is_dir():
        assert "dq_shortcuts.h" in {h.name for h in HEADERS}
        assert len(_forceable()) >= 10


@pytest.mark.parametrize("shortcuts", ["on", "off"])
@pytest.mark.parametrize("header", HEADERS, ids=[h.name for h in HEADERS])
def test_header_compiles_alone_without_warnings(header, shortcuts):
    cc = _compiler()
    paths = sysconfig.get_paths()
    includes = [f"-I{d}" for d in dict.fromkeys([paths["include"], paths["platinclude"]])]
    off = [f"-D{name}=0" for name in _forceable()] if shortcuts == "off" else []
    proc = subprocess.run(
        [cc, *FLAGS, f"-I{INCLUDE}", *includes, *off, str(header)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
