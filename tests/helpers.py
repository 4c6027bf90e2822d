"""What the test modules of several structures share.

Twin comparisons (signatures and docstrings), a leak measurement, a
collector that runs on nearly every allocation, and threads started
together.  Fixtures live in conftest.py; these are plain functions.
"""

from __future__ import annotations

import gc
import inspect
import pydoc
import re
import threading
import tracemalloc
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

import pytest


def bare(sig: inspect.Signature) -> str:
    """The signature without annotations (compiled text signatures have none)."""
    params = [p.replace(annotation=p.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=sig.empty))


def help_text(cls: type) -> str:
    """pydoc's plain text for ``cls``, every signature shown without annotations.

    Annotations are the pure twin's type information; a compiled slot wrapper
    (``__contains__``, ``__len__``) cannot carry any.  They are dropped where
    pydoc reads them (``inspect.signature``), not from the rendered text: from
    3.14 pydoc shows them unquoted and wraps long signatures over lines.
    """
    real = inspect.signature

    def signature(obj: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        sig = real(obj, *args, **kwargs)
        params = [p.replace(annotation=p.empty) for p in sig.parameters.values()]
        return sig.replace(parameters=params, return_annotation=sig.empty)

    inspect.signature = signature  # type: ignore[assignment]
    try:
        return pydoc.render_doc(cls, renderer=pydoc.plaintext)
    finally:
        inspect.signature = real


def assert_same_methods(c: type, py: type, names: Iterable[str]) -> None:
    """Each method of ``names`` has the same bare signature and docstring in both twins."""
    for name in names:
        sc, sp = (bare(inspect.signature(getattr(cls, name))) for cls in (c, py))
        assert sc == sp, name
        assert inspect.getdoc(getattr(c, name)) == inspect.getdoc(getattr(py, name)), name


def traced_growth(churn: Callable[[], Any], rounds: int = 1) -> int:
    """Bytes of traced memory still held after ``rounds`` calls of ``churn``.

    One call first warms caches, free lists and slabs; the collector runs
    before both readings.
    """
    churn()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            churn()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


@contextmanager
def collecting_constantly(callback: Callable[[], Any]) -> Iterator[None]:
    """Collect on (nearly) every allocation; call ``callback`` at each start."""
    old = gc.get_threshold()

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            callback()

    gc.collect()
    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(on_gc)
    try:
        yield
    finally:
        gc.callbacks.remove(on_gc)
        gc.set_threshold(*old)


def recorded(change: Callable[[], Any], done: str, outcomes: list[str]) -> Callable[[], None]:
    """``change`` as a callback that appends ``done`` to ``outcomes``, or the RuntimeError it raised."""

    def run() -> None:
        try:
            change()
            outcomes.append(done)
        except RuntimeError as exc:
            outcomes.append(str(exc))

    return run


def check_the_run_s_head(
    dq: Any, put: Callable[[int, float], Any], set_now: Callable[[float], None], empty: type[BaseException]
) -> None:
    """A DelayQueue fed 1..5 due at 1..5 (a sorted run): at 2, exactly 1 and 2 come out.

    Both DelayQueues, threaded and asyncio, keep puts in deadline order as a
    sorted run whose start advances on pop: the head is there, not at index 0.
    """
    for i in range(1, 6):
        put(i, float(i))
    set_now(2.0)
    assert dq.get_nowait() == 1 and dq.get_nowait() == 2
    assert dq.next_deadline() == 3.0
    with pytest.raises(empty):
        dq.get_nowait()  # 3 is not due: never early
    assert dq.get_many() == []


def take_first_without_waiting(dq: Any, how: str, handle: Any) -> None:
    """Take the one item held, "first", from a DelayQueue by ``how``: get_nowait, get_many or cancel."""
    if how == "get_nowait":
        assert dq.get_nowait() == "first"
    elif how == "get_many":
        assert dq.get_many() == ["first"]
    else:
        assert how == "cancel" and dq.cancel(handle)


def run_together(targets: Iterable[Callable[[], Any]], timeout: float) -> None:
    """Run every target in its own thread, released at once; re-raise the first failure.

    A thread still alive after ``timeout`` seconds fails the test (a hang
    fails, it never slows the suite).
    """
    fns = list(targets)
    barrier = threading.Barrier(len(fns))
    errors: list[BaseException] = []

    def runner(fn: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            fn()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(fn,), daemon=True) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


class Bounded:
    """Calls run on one worker thread, each given ``limit`` seconds to return.

    For code that must never deadlock (a queue re-entered under its lock
    must raise): a call still running after ``limit`` fails the test at
    once instead of hanging it, and every later call fails at once too,
    since the worker is stuck.  Exceptions come back as raised.  The worker
    is a daemon thread: a stuck one does not hold the interpreter's exit.
    """

    def __init__(self, limit: float = 10.0) -> None:
        import queue

        self.limit = limit
        self.stuck: str | None = None
        self.calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.worker: threading.Thread | None = None
        self.result: tuple[bool, Any] | None = None

    def _serve(self) -> None:
        # The worker keeps no reference to a call's result or exception once
        # it is handed over: what they hold dies where the caller drops it,
        # on the caller's thread, as it would have without the worker.
        while True:
            fn, done = self.calls.get()
            try:
                result: tuple[bool, Any] = (True, fn())
            except BaseException as exc:  # noqa: BLE001 -- handed back to the caller
                result = (False, exc)
            del fn
            self.result = result
            del result
            done.set()

    def __call__(self, fn: Callable[[], Any]) -> Any:
        if self.stuck:
            raise AssertionError(self.stuck)
        if self.worker is None:
            self.worker = threading.Thread(target=self._serve, name="bounded", daemon=True)
            self.worker.start()
        done = threading.Event()
        self.calls.put((fn, done))
        del fn
        if not done.wait(self.limit):
            self.stuck = f"a call never returned within {self.limit} s: deadlocked?"
            raise AssertionError(self.stuck)
        (ok, value), self.result = self.result, None
        if ok:
            return value
        try:
            raise value
        finally:
            del value


def bounded(fn: Callable[[], Any], limit: float = 10.0) -> Any:
    """``fn()`` on another thread, failing the test if it has not returned within ``limit`` s."""
    return Bounded(limit)(fn)


# -- handles: compact cid << 44 | gen << 24 | slot, or wide cid << 64 | gen << 32 | slot --

_STALE_NUMBER = re.compile(r"handle -?\d+")


def cid_of(handle: int) -> int:
    """The id of the container that issued ``handle`` (either form)."""
    from dq_core._handles import parts

    return parts(handle)[0]


def local_handle(handle: int) -> tuple[int, int]:
    """``handle``'s generation and slot, without its container id: what twins fed alike issue alike."""
    from dq_core._handles import parts

    return parts(handle)[1:]


def comparable_tags(tags: list[int], copied: Iterable[int] = ()) -> list[tuple[object, int]]:
    """A state's slot tags with the holder's own id named "own".

    Two twins fed alike hold the same tags but for their own ids, which the
    process gives out one by one; ``copied``: the ids of a state they both
    loaded, kept as they are.
    """
    kept = set(copied) | {0}
    return [(t >> 32 if t >> 32 in kept else "own", t & 0xFFFFFFFF) for t in tags]


def comparable_state(state: tuple[Any, ...], tags_at: int, copied: Iterable[int] = ()) -> tuple[Any, ...]:
    """``state`` with its tags (field ``tags_at``) made comparable between twins."""
    return state[:tags_at] + (comparable_tags(state[tags_at], copied),) + state[tags_at + 1 :]


def comparable_error(exc: BaseException) -> tuple[type, tuple[object, ...]]:
    """An exception's type and args, a handle's number in a message made ``handle N``."""
    return type(exc), tuple(_STALE_NUMBER.sub("handle N", a) if isinstance(a, str) else a for a in exc.args)


@contextmanager
def twin_ids() -> Iterator[None]:
    """Within the block, each implementation gives container ids from its own counter.

    Both counters start at the same id, so twins made in the same order get
    the same ids, and so issue the very same handles: a lockstep test can
    compare them as they are.  Ids stay unique within each implementation,
    and the process's own counter moves past every id given here.
    """
    import importlib

    from dq_core import _handles

    base = _handles.new_cid()
    top = [base]
    saved = []
    for impl in ("", "_py"):
        last = [base]

        def fake(above: int = 0, last: list[int] = last) -> int:
            last[0] = max(last[0], above) + 1
            top[0] = max(top[0], last[0])
            return last[0]

        for core in ("_heapcore", "_wheelcore"):
            try:
                module = importlib.import_module(f"dq_core.{core}{impl}")
            except ImportError:
                continue
            saved.append((module, module.new_cid))
            module.new_cid = fake
    try:
        yield
    finally:
        for module, original in saved:
            module.new_cid = original
        _handles.new_cid(above=top[0])


class IdMatch:
    """Pairs the container ids of two twins fed alike: an id of one stands for one of the other.

    Twins issue the same handles but for the ids in them, which the process
    gives out one by one (and a pickle loads on the implementation in use,
    whichever twin made it): results match if one consistent pairing of ids
    explains them.
    """

    def __init__(self) -> None:
        self.fwd = {0: 0}
        self.back = {0: 0}

    def pair(self, a: int, b: int) -> bool:
        """Pair id ``a`` (first twin) with ``b``; False if either has another partner."""
        if self.fwd.get(a, b) != b or self.back.get(b, a) != a:
            return False
        self.fwd[a] = b
        self.back[b] = a
        return True

    def same_handles(self, a: int, b: int) -> bool:
        return local_handle(a) == local_handle(b) and self.pair(cid_of(a), cid_of(b))

    def same_tags(self, a: list[int], b: list[int]) -> bool:
        return len(a) == len(b) and all(
            x & 0xFFFFFFFF == y & 0xFFFFFFFF and self.pair(x >> 32, y >> 32) for x, y in zip(a, b)
        )

    def for_second(self, handle: object) -> object:
        """The second twin's handle for the first twin's ``handle`` (anything else as it is)."""
        from dq_core._handles import handle_of, parts

        if type(handle) is not int or handle < 0:
            return handle
        cid, gen, slot = parts(handle)
        if self.fwd.get(cid, cid) == cid:
            return handle
        return handle_of(self.fwd[cid], gen, slot)
