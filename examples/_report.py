"""The summary both poller examples print at the end (poller.py, poller_aio.py)."""

from __future__ import annotations


def report(polls: list[float], jobs: int, elapsed: float, rate: float, late_start: str) -> None:
    """Print the calls per second and how many polls ran out of start-time order."""
    inversions = sum(1 for a, b in zip(polls, polls[1:]) if b < a)
    print(
        f"{len(polls)} polls of {jobs} jobs in {elapsed:.2f} s: "
        f"{len(polls) / elapsed:.1f} calls/s (limit {rate:g}/s)"
    )
    print(f"polls out of start-time order: {inversions} of {len(polls)} ({late_start})")
