"""Print each pyperf benchmark's median and its ratio to the baseline of its group.

    python perf/compare.py heap.json

Benchmarks are grouped by name without the last word (the contender); the
baseline is the contender that is not dq_core.
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
        base_name = next((k for k in results if not k.startswith("dq_core")), None)
        print(group)
        for who, med in results.items():
            if base_name is None:
                print(f"  {who:<14} {med * 1e9:10.1f} ns")
            else:
                base = results[base_name]
                print(f"  {who:<14} {med * 1e9:10.1f} ns   {base / med:6.2f}x vs {base_name}")


if __name__ == "__main__":
    main(sys.argv[1])
