"""Print each pyperf benchmark's median and its ratio to the baseline of its group.

    python perf/compare.py heap.json

Benchmarks are grouped by name without the last word (the contender); each
dq_core contender gets its ratio to every baseline of its group (the
contenders that are not dq_core: the standard library, a peer).
"""

from __future__ import annotations

import sys
from collections import defaultdict

import pyperf


def main(path: str) -> None:
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for b in pyperf.BenchmarkSuite.load(path).get_benchmarks():
        group, _, who = b.get_name().rpartition(" ")
        groups[group][who] = b.median()
    for group, results in groups.items():
        bases = [k for k in results if not k.startswith("dq_core")]
        print(group)
        for who, med in results.items():
            ratios = "" if who in bases else "   ".join(f"{results[b] / med:6.2f}x vs {b}" for b in bases)
            print(f"  {who:<14} {med * 1e9:10.1f} ns   {ratios}".rstrip())


if __name__ == "__main__":
    main(sys.argv[1])
