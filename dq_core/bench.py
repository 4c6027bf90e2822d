"""``python -m dq_core.bench``: a quick comparison of dq_core against the standard library.

It takes about 20 s of CPU, ``--quick`` about 3 s (2-core x86-64, CPython
3.11).  The workloads and the table live in
``dq_core.benchmarks``; this module is the entry point the README names.
"""

from __future__ import annotations

from dq_core.benchmarks.table import main, rows

__all__ = ["main", "rows"]

if __name__ == "__main__":
    raise SystemExit(main())
