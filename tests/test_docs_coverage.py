"""The documentation covers the public API, and names nothing that does not exist.

Builds the site once (Sphinx, as CI does, plus ``-n`` to report every
reference it cannot resolve) and reads its inventory, ``objects.inv``:

- every name in ``dq_core.__all__`` and ``dq_core.aio.__all__`` has an entry,
  and so has every public method and attribute of each public class;
- no reference in the docs to a public ``dq_core`` or ``dq_core.aio`` name
  is left unresolved;
- every ``dq_core.X``, ``aio.X`` or ``X.member`` (X a public class) that the
  README names in backticks exists.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import dq_core

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

pytestmark = pytest.mark.skipif(not (DOCS / "conf.py").is_file(), reason="not a source checkout")

# the standard library's bases: their members are documented there, by the pages' text
FOREIGN = (
    "builtins",
    "abc",
    "collections.abc",
    "_collections_abc",
    "typing",
    "queue",
    "asyncio.queues",
    "asyncio.mixins",
    "concurrent.futures._base",
)
PUBLIC_REF = re.compile(r"target not found: ~?(dq_core(?:\.aio)?\.[A-Za-z]\w*(?:\.[a-z]\w*)?) ")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], str]:
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    pytest.importorskip("redis")  # the Redis API page imports dq_core.redis
    out = tmp_path_factory.mktemp("html")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-E", "-n", "-q", "-b", "html", str(DOCS), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return inventory(out / "objects.inv"), done.stderr


def inventory(path: Path) -> set[str]:
    """The object names of a Sphinx inventory (version 2)."""
    data = path.read_bytes()
    for _ in range(4):  # the four header lines
        data = data[data.index(b"\n") + 1 :]
    lines = zlib.decompress(data).decode("utf-8").splitlines()
    return {line.split(" ", 1)[0] for line in lines if line.startswith("dq_core")}


def public_classes() -> dict[str, type]:
    from dq_core import aio

    out = {f"dq_core.{n}": getattr(dq_core, n) for n in dq_core.__all__}
    out |= {f"dq_core.aio.{n}": getattr(aio, n) for n in aio.__all__}
    return {
        name: obj for name, obj in out.items() if inspect.isclass(obj) and not issubclass(obj, BaseException)
    }


def public_members(cls: type) -> set[str]:
    names = set()
    for klass in cls.__mro__:
        if klass.__module__ not in FOREIGN and klass is not object:
            names |= {n for n in vars(klass) if not n.startswith("_")}
    return names


def test_every_public_name_has_an_entry(site):
    from dq_core import aio

    names, _ = site
    expected = {f"dq_core.{n}" for n in dq_core.__all__} | {f"dq_core.aio.{n}" for n in aio.__all__}
    assert sorted(expected - names) == []


def test_every_public_member_has_an_entry(site):
    names, _ = site
    missing = [
        f"{name}.{member}"
        for name, cls in public_classes().items()
        for member in sorted(public_members(cls))
        if f"{name}.{member}" not in names
    ]
    assert missing == []


def test_the_docs_name_no_public_object_that_is_not_documented(site):
    _, warnings = site
    assert sorted(set(PUBLIC_REF.findall(warnings))) == []


def exists(dotted: str) -> bool:
    """Whether ``dotted`` (a module, then attributes) can be imported and looked up."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def test_the_readme_names_only_what_exists():
    if not README.is_file():
        pytest.skip("not a source checkout")
    pytest.importorskip("redis")  # for dq_core.redis
    text = README.read_text(encoding="utf-8")
    classes = {n for n in dq_core.__all__ if inspect.isclass(getattr(dq_core, n))}
    missing = []
    for token in set(re.findall(r"`([A-Za-z_][\w.]*)(?:\(\))?`", text)):
        head, _, attr = token.partition(".")
        if head in ("dq_core", "aio"):
            if not exists(token if head == "dq_core" else "dq_core." + token):
                missing.append(token)
        elif head in classes and attr and not exists(f"dq_core.{token}"):
            missing.append(token)
    assert sorted(missing) == []
