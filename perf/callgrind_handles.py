"""Instructions per update, remove and cancel by handle (callgrind).

The rows of ``perf/bench_handles.py``, each run once under callgrind with
``--toggle-collect=consume_iterator``: only the operations, called from
``collections.deque(map(...), maxlen=0)``, are counted (the structure is
built outside it), so nothing needs subtracting.  The garbage collector is
off, so the counts repeat exactly.  Print every row's instructions per
operation, for the Python running this script or another one (an older
checkout's venv)::

    python perf/callgrind_handles.py [--python /path/to/venv/bin/python]

``--cache-sim`` also simulates the data caches and prints the misses per
operation of the first level (D1) and of a last level the size of this
machine's L2 (read from /sys, else 1 MiB, 8-way): a row whose instructions
fall while its time rises is paying for memory, as TimingWheel.cancel did
once handles grew to 128 bits (their ints from 32 to 48 bytes, the slot
table from 8 to 16 bytes a slot: N = 10,000 timers then outgrow a 1 MiB L2)::

    python perf/callgrind_handles.py --cache-sim --row TimingWheel.cancel

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


def l2_option() -> str:
    """valgrind's ``--LL=size,assoc,line`` for this machine's L2 (1 MiB, 8-way if unknown)."""
    size, ways = 1 << 20, 8
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "2":
                text = (index / "size").read_text().strip()
                size = int(text[:-1]) << 10 if text.endswith("K") else int(text)
                ways = int((index / "ways_of_associativity").read_text())
        except (OSError, ValueError):
            pass
    return f"--LL={size},{ways},64"


def count(python: str, row: str, impl: str, cache_sim: bool = False) -> dict[str, float]:
    """Events per operation of ``row`` on ``impl`` ("cython" or "python").

    ``Ir`` (instructions), and with ``cache_sim`` also ``D1`` and ``L2``
    (data misses, reads and writes, of the first level and of an L2-sized last level).
    """
    cache = ["--cache-sim=yes", l2_option()] if cache_sim else []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                *cache,
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
        events: list[str] = []
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                # trailing zero counts are left off
                totals = dict(zip(events, map(int, line.split()[1:])))
                break
        else:
            raise RuntimeError(f"no totals in {out}")
    ops = 2 * N if row.startswith("Heap update all") else N
    got = {"Ir": totals["Ir"] / ops}
    if cache_sim:
        got["D1"] = (totals.get("D1mr", 0) + totals.get("D1mw", 0)) / ops
        got["L2"] = (totals.get("DLmr", 0) + totals.get("DLmw", 0)) / ops
    return got


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] in ROWS:  # the target
        gc.disable()
        rows(sys.argv[2])[sys.argv[1]](1)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--row", choices=ROWS, action="append", help="only this row (repeatable)")
    p.add_argument("--cache-sim", action="store_true", help="also D1 and L2 misses per operation")
    args = p.parse_args()
    for impl in ("cython", "python"):
        for row in args.row or ROWS:
            got = count(args.python, row, impl, args.cache_sim)
            text = f"{row} ({impl}): {got['Ir']:.1f} instructions/op"
            if args.cache_sim:
                text += f", {got['D1']:.2f} D1 misses/op, {got['L2']:.2f} L2 misses/op"
            print(text, flush=True)


if __name__ == "__main__":
    main()
