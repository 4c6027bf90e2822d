"""Picks the implementation: the one place that reads DQ_CORE_NO_EXTENSIONS.

The compiled cores are used only if every one of them imports; otherwise
the package runs on the pure-Python twins, all of them, and says so with a
``RuntimeWarning`` that names the reason, unless pure Python was asked for:
by DQ_CORE_NO_EXTENSIONS now, or at build time (setup.py then leaves the
marker file ``PURE_BUILD`` in the package).
"""

from __future__ import annotations

import os
import warnings

__all__ = ["USE_EXT", "implementation"]

NO_EXTENSIONS = bool(os.environ.get("DQ_CORE_NO_EXTENSIONS"))
#: A deliberately pure install: built with DQ_CORE_NO_EXTENSIONS set.
BUILT_PURE = os.path.exists(os.path.join(os.path.dirname(__file__), "PURE_BUILD"))


def _pick() -> str:
    if NO_EXTENSIONS:
        return "python"
    from ._assemble import THREADED_CORE_MODULES, cores

    try:
        cores("cython", THREADED_CORE_MODULES)  # the asyncio cores on first use of dq_core.aio
    except ImportError as exc:
        if BUILT_PURE:
            return "python"
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
