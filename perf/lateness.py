"""How late does a blocking DelayQueue.get return, against a bare timed lock wait?

    python perf/lateness.py [--items 1500] [--max-delay 0.3] [--rounds 5]

One consumer takes ``--items`` items put with random delays in
[0, max-delay); lateness is the time ``get`` returned minus the item's
deadline.  The baseline, in the same run, sleeps to the same deadlines with
``threading.Lock().acquire(timeout=...)``: the floor set by the kernel's
timer slack.  Prints p50/p99/max in microseconds for each implementation.
The measurements live in dq_core.benchmarks.queues.
"""

from __future__ import annotations

import argparse
import random

from dq_core.benchmarks.common import implementations, percentiles_us
from dq_core.benchmarks.queues import delay_lateness, lock_lateness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--max-delay", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    contenders = [("Lock.acquire(timeout)", None)]
    for label, impl in implementations():
        contenders.append((f"DelayQueue ({label.rpartition('-')[2]})", impl.DelayQueue))
    pooled: dict[str, list[float]] = {label: [] for label, _ in contenders}
    # Rounds interleave the contenders so a hiccup of the machine hits all alike.
    for _ in range(args.rounds):
        delays = [rng.random() * args.max_delay for _ in range(args.items)]
        for label, cls in contenders:
            late = lock_lateness(delays) if cls is None else delay_lateness(cls, delays)
            pooled[label].extend(late)
    rows = list(pooled.items())
    base_p99 = percentiles_us(rows[0][1])[1]
    print(f"{args.rounds} rounds of {args.items} items, delays uniform in "
          f"[0, {args.max_delay}) s; lateness in us")
    print(f"{'':<24}{'p50':>9}{'p99':>9}{'max':>9}  p99 vs lock")
    for label, late in rows:
        p50, p99, mx = percentiles_us(late)
        print(f"{label:<24}{p50:>9.0f}{p99:>9.0f}{mx:>9.0f}  {p99 / base_p99:5.2f}x")


if __name__ == "__main__":
    main()
