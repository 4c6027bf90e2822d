"""Idle timeouts for many connections with one Timer thread.

Each simulated connection gets an idle timeout; activity cancels it and
starts a new one (O(1) either way).  Connections that go quiet are closed
by the timer thread, never before their deadline.

    python examples/timeouts.py [--connections 10000] [--idle 0.2]
"""

from __future__ import annotations

import argparse
import random
import threading
import time

from dq_core import Timer, TimerHandle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=0.2, help="idle timeout, seconds")
    args = parser.parse_args()

    rng = random.Random(2)
    lock = threading.Lock()
    closed: dict[int, float] = {}  # connection -> how late its close ran
    all_closed = threading.Event()

    def close(conn: int, deadline: float) -> None:
        late = time.monotonic() - deadline
        assert late >= 0, "closed before its deadline"
        with lock:
            closed[conn] = late
            if len(closed) == args.connections:
                all_closed.set()

    with Timer(tick=0.005) as timer:

        def arm(conn: int) -> TimerHandle:
            deadline = time.monotonic() + args.idle
            return timer.call_at(deadline, close, conn, deadline)

        handles = {conn: arm(conn) for conn in range(args.connections)}
        # a burst of activity: a third of the connections are busy, so their
        # timeouts restart
        renewed = 0
        for conn in rng.sample(range(args.connections), args.connections // 3):
            if handles[conn].cancel():
                handles[conn] = arm(conn)
                renewed += 1
        all_closed.wait(60)
    lates = sorted(closed.values())
    print(
        f"{len(closed)} of {args.connections} connections closed on idle; "
        f"{renewed} timeouts restarted by activity"
    )
    print(
        f"close lateness: median {lates[len(lates) // 2] * 1e3:.1f} ms, "
        f"max {lates[-1] * 1e3:.1f} ms (tick 5 ms; callbacks run one at a time)"
    )


if __name__ == "__main__":
    main()
