"""Picks the implementation: the one place that reads DQ_CORE_NO_EXTENSIONS.

The compiled cores are used only if every one of them imports; otherwise
the package runs on the pure-Python twins, all of them, and says so with a
``RuntimeWarning`` that names the reason, unless DQ_CORE_NO_EXTENSIONS asked
for pure Python.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

__all__ = ["USE_EXT", "implementation", "restore"]

NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))


def _pick() -> str:
    if NO_EXTENSIONS:
        return "python"
    from ._assemble import cores

    try:
        cores("cython")
    except ImportError as exc:
        warnings.warn(
            f"dq_core: the compiled core could not be imported ({exc}); falling back "
            "to the pure-Python implementation, which is several times slower. "
            "Set DQ_CORE_NO_EXTENSIONS=1 to choose it deliberately.",
            RuntimeWarning,
            stacklevel=2,
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
