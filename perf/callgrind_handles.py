"""Instructions per update, remove and cancel by handle (callgrind).

The rows of ``perf/bench_handles.py``, each run once under callgrind with
``--toggle-collect=consume_iterator``: only the operations, called from
``collections.deque(map(...), maxlen=0)``, are counted (the structure is
built outside it), so nothing needs subtracting.  The garbage collector is
off, so the counts repeat exactly.  Print every row's instructions per
operation, for the Python running this script or another one (an older
checkout's venv)::

    python perf/callgrind_handles.py [--python /path/to/venv/bin/python]

Run with ``ROW IMPL`` (the callgrind target) to run one row.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_handles import N, rows

ROWS = [
    "Heap.update",
    "Heap.remove",
    "Heap update all + remove all",
    "DelayQueue.cancel",
    "TimingWheel.cancel",
]


def count(python: str, row: str, impl: str) -> float:
    """Instructions per operation of ``row`` on ``impl`` ("cython" or "python")."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=consume_iterator",
                f"--callgrind-out-file={out}",
                python,
                __file__,
                row,
                impl,
            ],
            check=True,
            capture_output=True,
        )
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                ir = int(line.split()[1])
                break
        else:
            raise RuntimeError(f"no totals in {out}")
    return ir / (2 * N if row.startswith("Heap update all") else N)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ROWS:  # the target
        gc.disable()
        rows(sys.argv[2])[sys.argv[1]](1)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    for impl in ("cython", "python"):
        for row in ROWS:
            print(f"{row} ({impl}): {count(args.python, row, impl):.1f} instructions/op", flush=True)


if __name__ == "__main__":
    main()
