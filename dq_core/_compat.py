"""Picks the implementation: the one place that reads DQ_CORE_NO_EXTENSIONS.

The compiled cores are used only if every one of them imports; otherwise
the package runs on the pure-Python twins, all of them, and says so with a
``RuntimeWarning`` that names the reason, unless pure Python was asked for:
by DQ_CORE_NO_EXTENSIONS now, or at build time (setup.py then leaves the
marker file ``PURE_BUILD`` in the package).
"""

from __future__ import annotations

import os
import sys
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
            f"dq_core: the compiled core could not be imported ({exc}); {_why()}falling back "
            "to the pure-Python implementation, which is several times slower. "
            "Set DQ_CORE_NO_EXTENSIONS=1 to choose it deliberately.",
            RuntimeWarning,
            stacklevel=2,
        )
        return "python"
    return "cython"


def _why() -> str:
    """What a failed import means when this dq_core is a source checkout's, and what to run."""
    package = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(package)
    if not os.path.isfile(os.path.join(root, "setup.py")):
        return ""  # an installed package: the reason above says it all
    built = [
        os.path.join(entry, "dq_core")
        for entry in sys.path
        if os.path.abspath(entry or os.curdir) != root and _has_cores(os.path.join(entry, "dq_core"))
    ]
    if _has_cores(package):
        where = (
            f"the compiled cores in this source tree ({package}) do not match its sources "
            "(built from older sources, or for another Python)"
        )
    elif built:
        where = (
            f"this source tree ({package}) shadows the installed build in {built[0]}, "
            "because the source tree's root comes first on sys.path"
        )
    else:
        where = f"this source tree ({package}) has no compiled cores built"
    return (
        f"{where}: build the compiled cores in place with 'pip install -e .' (or 'python "
        f"setup.py build_ext --inplace') in {root}, or run Python from another directory; "
    )


def _has_cores(directory: str) -> bool:
    try:
        return any(
            name.startswith("_heapcore.") and not name.endswith(".py") for name in os.listdir(directory)
        )
    except OSError:
        return False


implementation = _pick()
USE_EXT = implementation == "cython"
