"""Picks the implementation: the one place that reads DQ_CORE_NO_EXTENSIONS.

The compiled cores are used only if every one of them imports; otherwise
the package runs on the pure-Python twins, all of them, and says so with a
``RuntimeWarning`` that names the reason, unless DQ_CORE_NO_EXTENSIONS asked
for pure Python.
"""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType
from typing import Any

__all__ = ["USE_EXT", "implementation", "core", "restore", "COMPILED_MODULES"]

#: Compiled cores, each with a pure twin named ``<name>_py``.
COMPILED_MODULES = ("_heap", "_pqueue", "_ring", "_ttlmap", "_wheel")

NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))


def _load_compiled() -> dict[str, ModuleType] | None:
    if NO_EXTENSIONS:
        return None
    try:
        return {
            name: importlib.import_module(f"dq_core.{name}") for name in COMPILED_MODULES
        }
    except ImportError as exc:
        warnings.warn(
            f"dq_core: the compiled core could not be imported ({exc}); falling back "
            "to the pure-Python implementation, which is several times slower. "
            "Set DQ_CORE_NO_EXTENSIONS=1 to choose it deliberately.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


_compiled = _load_compiled()
USE_EXT = _compiled is not None
implementation = "cython" if USE_EXT else "python"


def core(name: str) -> ModuleType:
    """The module in use for the core ``name``: compiled, or its pure twin."""
    if _compiled is not None:
        return _compiled[name]
    return importlib.import_module(f"dq_core.{name}_py")


def restore(name: str, state: Any) -> Any:
    """Unpickling helper: rebuild a ``name`` on the implementation in use.

    Both implementations pickle to this, so a pickle made by one loads in
    the other.
    """
    import dq_core

    cls = getattr(dq_core, name)
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj
