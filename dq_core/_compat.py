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

__all__ = ["USE_EXT", "implementation", "cores", "restore", "CORE_MODULES", "IMPLEMENTATIONS"]

#: The cores, each a compiled module ``dq_core.<name>`` with a pure twin ``dq_core.<name>_py``.
CORE_MODULES = ("_heap", "_pqueue", "_ring", "_ttlmap", "_wheel")

#: The implementations, by the name ``dq_core.implementation`` gives them.
IMPLEMENTATIONS = ("cython", "python")

NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))


def cores(implementation: str) -> dict[str, ModuleType]:
    """The core modules of ``implementation`` ("cython" or "python"), by core name.

    Raises ImportError if the compiled cores are asked for and not built.
    """
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    suffix = "" if implementation == "cython" else "_py"
    return {name: importlib.import_module(f"dq_core.{name.replace('_ttlmap', '_ring')}{suffix}") for name in CORE_MODULES}  # TEMP until _ttlmap lands


def _pick() -> str:
    if NO_EXTENSIONS:
        return "python"
    try:
        cores("cython")
    except ImportError as exc:
        warnings.warn(
            f"dq_core: the compiled core could not be imported ({exc}); falling back "
            "to the pure-Python implementation, which is several times slower. "
            "Set DQ_CORE_NO_EXTENSIONS=1 to choose it deliberately.",
            RuntimeWarning,
            stacklevel=3,
        )
        return "python"
    return "cython"


implementation = _pick()
USE_EXT = implementation == "cython"


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
