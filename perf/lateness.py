"""How late does a blocking DelayQueue.get return, against a bare timed lock wait?

    python perf/lateness.py [--items 1500] [--max-delay 0.3] [--rounds 5]

One consumer takes ``--items`` items put with random delays in
[0, max-delay); lateness is the time ``get`` returned minus the item's
deadline.  The baseline, in the same run, sleeps to the same deadlines with
``threading.Lock().acquire(timeout=...)``: the floor set by the kernel's
timer slack.  Prints p50/p99/max in microseconds for each implementation.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

from dq_core import bench


def percentiles(xs: list[float]) -> tuple[float, float, float]:
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=100)
    return q[49] * 1e6, q[98] * 1e6, xs[-1] * 1e6


# Deadlines start this long after "now", so filling the queue first does not
# make early items late before the consumer begins.
HEAD_START = 0.05


def delay_queue_lateness(dq_cls, delays: list[float]) -> list[float]:
    dq = dq_cls()
    now = time.monotonic() + HEAD_START
    deadlines = {}
    for i, d in enumerate(delays):
        deadlines[i] = now + d
        dq.put_at(i, now + d)
    late = []
    for _ in delays:
        i = dq.get()
        late.append(time.monotonic() - deadlines[i])
    return late


def lock_lateness(delays: list[float]) -> list[float]:
    lock = threading.Lock()
    lock.acquire()
    now = time.monotonic() + HEAD_START
    late = []
    for deadline in sorted(now + d for d in delays):
        remaining = deadline - time.monotonic()
        if remaining > 0:
            lock.acquire(timeout=remaining)
        while time.monotonic() < deadline:  # acquire may return a hair early
            pass
        late.append(time.monotonic() - deadline)
    return late


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--max-delay", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    contenders = [("Lock.acquire(timeout)", None)]
    for label, impl in bench.implementations():
        contenders.append((f"DelayQueue ({label.rpartition('-')[2]})", impl.DelayQueue))
    pooled: dict[str, list[float]] = {label: [] for label, _ in contenders}
    # Rounds interleave the contenders so a hiccup of the machine hits all alike.
    for _ in range(args.rounds):
        delays = [rng.random() * args.max_delay for _ in range(args.items)]
        for label, cls in contenders:
            late = lock_lateness(delays) if cls is None else delay_queue_lateness(cls, delays)
            pooled[label].extend(late)
    rows = list(pooled.items())
    base_p99 = percentiles(rows[0][1])[1]
    print(f"{args.rounds} rounds of {args.items} items, delays uniform in "
          f"[0, {args.max_delay}) s; lateness in us")
    print(f"{'':<24}{'p50':>9}{'p99':>9}{'max':>9}  p99 vs lock")
    for label, late in rows:
        p50, p99, mx = percentiles(late)
        print(f"{label:<24}{p50:>9.0f}{p99:>9.0f}{mx:>9.0f}  {p99 / base_p99:5.2f}x")


if __name__ == "__main__":
    main()
