"""A typed user program that must FAIL ``mypy --strict`` (see tests/test_typing.py).

Each line marked ``# E: <code>`` must get an error with that code, and no
other line may get one.
"""

from __future__ import annotations

from dq_core import PriorityExecutor, PriorityQueue, Timer, TTLDict


def wrong_return(q: PriorityQueue[tuple[int, str]]) -> str:
    return q.get()  # E: return-value


def wrong_item(q: PriorityQueue[int]) -> None:
    q.put("one")  # E: arg-type


def no_len(q: PriorityQueue[int]) -> int:
    return len(q)  # E: arg-type


def takes_int(n: int) -> None:
    pass


def wrong_timer_argument(t: Timer) -> None:
    t.call_later(1.0, takes_int, "wrong")  # E: arg-type


def wrong_executor_argument() -> None:
    PriorityExecutor().submit(takes_int, "wrong")  # E: arg-type


def wrong_ttl_dict_value(d: TTLDict[str, int]) -> None:
    d["k"] = "str"  # E: assignment
