"""TTLRing: every region of its state space, on both implementations."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test


def test_basics(impl):
    r = impl.TTLRing(10, segment_size=4, clock=lambda: 100.0)
    assert len(r) == 0 and r.next_expiry() is None and r.expire() == []
    r.push("a")  # created_at = clock()
    r.push("b", created_at=105)
    assert r.next_expiry() == 110.0
    assert repr(r) == "<TTLRing len=2 ttl=10.0 next_expiry=110.0>"
    assert r.expire(now=109.999) == []
    assert r.expire(now=110) == ["a"]
    assert r.popleft() == "b"
    with pytest.raises(IndexError):
        r.popleft()
    st_ = r.stats()
    assert st_["pushed"] == 2 and st_["expired"] == 2 and st_["length"] == 0
    r._check()


@pytest.mark.parametrize(
    "bad, exc, msg",
    [
        (float("nan"), ValueError, "ttl must not be NaN"),
        (-1, ValueError, "ttl must be non-negative"),
        ("10", TypeError, "ttl must be a real number"),
    ],
)
def test_bad_ttl(impl, bad, exc, msg):
    with pytest.raises(exc, match=msg):
        impl.TTLRing(bad)
    r = impl.TTLRing(5)
    with pytest.raises(exc, match=msg):
        r.ttl = bad
    assert r.ttl == 5.0


def test_bad_arguments_leave_the_ring_as_it_was(impl):
    with pytest.raises(ValueError, match="segment_size must be at least 1"):
        impl.TTLRing(1, segment_size=0)
    with pytest.raises(TypeError, match="segment_size"):
        impl.TTLRing(1, segment_size=2.5)
    r = impl.TTLRing(1, segment_size=2)
    r.push("a", 0.0)
    with pytest.raises(ValueError, match="created_at must not be NaN"):
        r.push("x", float("nan"))
    with pytest.raises(TypeError, match="now must be a real number"):
        r.expire("soon")
    assert len(r) == 1 and r.stats()["pushed"] == 1
    r._check()


@pytest.mark.parametrize(
    "bad", [2**20 + 1, 2**40, 2**63, 2**64, 10**400], ids=["2**20+1", "2**40", "2**63", "2**64", "10**400"]
)
def test_segment_size_has_an_upper_bound(impl, bad):
    # checked before any conversion to C and before anything is allocated
    with pytest.raises(ValueError, match=rf"^segment_size must be at most 1048576, got {bad}$"):
        impl.TTLRing(1, segment_size=bad)
    r = impl.TTLRing(1, segment_size=2**20)
    r.push("a", 0.0)
    assert r.expire(now=1.0) == ["a"] and r.stats()["segment_size"] == 2**20
    r._check()


@pytest.mark.parametrize("size", [1, 2, 1024])
def test_interleaved_push_expire(impl, size):
    r = impl.TTLRing(3, segment_size=size)
    out = []
    for t in range(2000):
        r.push(t, created_at=float(t))
        out += r.expire(now=float(t))
        r._check()
        assert len(r) <= 4
    assert out == list(range(1997))
    assert r.stats()["segments"] <= 3 // size + 3  # live ones, a partial one, one spare


@pytest.mark.parametrize("size", [1, 2, 16])
def test_backlog_of_hundreds_of_segments_drains_one_segment_per_expire(impl, size):
    # The region where the original design's shrink path crashed: a long
    # backlog drained slowly, so the outer index is compacted many times.
    r = impl.TTLRing(10, segment_size=size)
    n_segments = 500
    for i in range(n_segments * size):
        r.push(i, created_at=float(i))
    assert r.stats()["segments"] == n_segments
    taken = []
    index_sizes = set()
    for s in range(n_segments):
        got = r.expire(now=10.0 + (s + 1) * size - 1)  # exactly one segment due
        assert got == list(range(s * size, (s + 1) * size))
        taken += got
        r._check()
        stats = r.stats()
        assert stats["segments"] <= n_segments - s  # freed as the head passes
        index_sizes.add(stats["index_slots"])
    assert taken == list(range(n_segments * size))
    assert len(r) == 0 and r.stats()["segments"] <= 1
    assert min(index_sizes) < n_segments // 2  # the outer index was compacted
    for i in range(3 * size):  # and the ring still works
        r.push(i, created_at=1e6 + i)
    assert r.expire(now=2e6) == list(range(3 * size))
    r._check()


def test_half_a_million_entries_expire_at_once(impl):
    r = impl.TTLRing(60)
    n = 500_000
    for i in range(n):
        r.push(i, created_at=0.0)
    assert r.expire(now=59.9) == []
    out = r.expire(now=60.0)
    assert len(out) == n and out[0] == 0 and out[-1] == n - 1
    assert len(r) == 0 and r.stats()["segments"] <= 2  # the partly used tail and a spare
    r._check()


def test_ttl_shortened_and_lengthened_with_a_backlog(impl):
    r = impl.TTLRing(100, segment_size=8)
    for i in range(200):
        r.push(i, created_at=float(i))
    assert r.expire(now=150.0) == list(range(51))
    r.ttl = 10  # shortened: everything created up to 140 is now due
    assert r.expire(now=150.0) == list(range(51, 141))
    r.ttl = 1000  # lengthened: nothing more until 1000 after creation
    assert r.expire(now=1000.0) == []
    assert r.next_expiry() == 1141.0
    assert r.expire(now=1199.0) == list(range(141, 200))
    r._check()


def test_out_of_order_created_at_is_never_lost(impl):
    r = impl.TTLRing(10, segment_size=2)
    r.push("old", created_at=100.0)
    r.push("older", created_at=50.0)  # out of order: waits behind "old"
    r.push("new", created_at=101.0)
    assert r.expire(now=65.0) == []  # "older" is due but behind a live head
    assert r.expire(now=110.0) == ["old", "older"]
    assert r.expire(now=111.0) == ["new"]


def test_expired_keys_are_released_at_once(impl):
    class Key:
        pass

    r = impl.TTLRing(1, segment_size=4)
    keys = [Key() for _ in range(10)]
    refs = [weakref.ref(k) for k in keys]
    for i, k in enumerate(keys):
        r.push(k, created_at=float(i))
    del keys, k
    out = r.expire(now=5.5)
    assert len(out) == 5
    del out
    gc.collect()
    assert [ref() is None for ref in refs] == [True] * 5 + [False] * 5


@pytest.mark.parametrize("size", [1, 5, 1024])
def test_purge_counts_and_releases_in_batches(impl, size):
    from dq_core._ringstate import BATCH

    class Key:
        pass

    r = impl.TTLRing(1, segment_size=size)
    n = 3 * BATCH + 5
    keys = [Key() for _ in range(n + 10)]
    refs = [weakref.ref(k) for k in keys]
    for i, k in enumerate(keys):
        r.push(k, created_at=0.0 if i < n else 9.0)
    del keys, k
    assert r.purge(now=5.0) == n and r.purge(now=5.0) == 0
    gc.collect()
    assert [ref() is None for ref in refs] == [True] * n + [False] * 10
    assert len(r) == 10 and r.stats()["expired"] == n
    r._check()
    assert r.purge(now=10.0) == 10 and len(r) == 0 and r.next_expiry() is None
    r._check()


def test_a_key_purged_may_push_from_its_finaliser(impl):
    # keys are let go of once their batch has left the ring: a finaliser may push
    from ttl_helpers import PushOnDel

    r = impl.TTLRing(1, segment_size=4)
    log: list[str] = []
    r.push(PushOnDel(r, log), created_at=0.0)
    assert r.purge(now=0.5) == 0 and r.purge(now=1.5) == 1
    assert log == ["done"] and len(r) == 1  # pushed at 0.0: due, not purged by this call
    assert r.purge(now=1.5) == 1 and len(r) == 0
    r._check()


def test_expire_and_purge_with_nothing_due_change_nothing(impl):
    # one comparison, no change: the ring is left exactly as it was
    r = impl.TTLRing(10, segment_size=2, clock=lambda: 0.0)
    log = []

    class Key:
        def __del__(self):
            log.append((r.expire(), r.purge()))

    for i in range(50):
        r.push(i, created_at=float(i))
    r.push(Key(), created_at=100.0)
    r.popleft()  # 0 goes; nothing due at 0.0
    assert r.expire() == [] and r.purge() == 0 and len(r) == 50
    r._check()
    r.expire(now=1000.0)  # the Key's finaliser runs after its batch left: nothing due then
    assert log == [([], 0)] and len(r) == 0


def test_docstrings_identical(both):
    import inspect

    c, py = (m.TTLRing for m in both)
    for name in ["__doc__", "push", "expire", "purge", "popleft", "next_expiry", "stats", "ttl", "_check"]:
        a = c.__doc__ if name == "__doc__" else getattr(c, name).__doc__
        b = py.__doc__ if name == "__doc__" else getattr(py, name).__doc__
        assert inspect.cleandoc(a) == inspect.cleandoc(b), name


@pytest.mark.parametrize("size", [1, 2, 3, 1024])
def test_stateful_against_model(impl, size):
    class RingMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.ring = impl.TTLRing(5, segment_size=size)
            self.model: list[tuple[object, float]] = []
            self.ttl = 5.0
            self.t = 0.0
            self.n = 0

        @rule(k=st.integers(1, 40), gap=st.floats(0, 3, allow_nan=False), back=st.booleans())
        def push_many(self, k, gap, back):
            for _ in range(k):
                self.t += gap
                created = self.t - 20 if back and not self.n % 7 else self.t
                self.ring.push(self.n, created_at=created)
                self.model.append((self.n, created))
                self.n += 1

        @rule(ahead=st.floats(-5, 30, allow_nan=False), how=st.sampled_from(["expire", "purge"]))
        def expire(self, ahead, how):
            now = self.t + ahead
            expected = []
            while self.model and self.model[0][1] + self.ttl <= now:
                expected.append(self.model.pop(0)[0])
            if how == "expire":
                assert self.ring.expire(now=now) == expected
            else:
                assert self.ring.purge(now=now) == len(expected)

        @rule()
        def popleft(self):
            if self.model:
                assert self.ring.popleft() == self.model.pop(0)[0]

        @rule(ttl=st.sampled_from([0.0, 1.0, 5.0, 50.0]))
        def set_ttl(self, ttl):
            self.ring.ttl = ttl
            self.ttl = ttl

        @invariant()
        def consistent(self):
            self.ring._check()
            assert len(self.ring) == len(self.model)
            expected = self.model[0][1] + self.ttl if self.model else None
            assert self.ring.next_expiry() == expected

    run_state_machine_as_test(RingMachine, settings=settings(max_examples=60, stateful_step_count=40))


def test_subclassing_refused_as_heap_and_timing_wheel_refuse_it(impl):
    message = "^type 'TTLRing' is not an acceptable base type$"
    with pytest.raises(TypeError, match=message):
        type("Sub", (impl.TTLRing,), {})
    with pytest.raises(TypeError, match=message):

        class Sub(impl.TTLRing[int]):  # noqa: F841
            pass

    for cls, name in ((impl.Heap, "Heap"), (impl.TimingWheel, "TimingWheel")):
        with pytest.raises(TypeError, match=f"^type '{name}' is not an acceptable base type$"):
            type("Sub", (cls,), {})
    assert impl.TTLRing.__init_subclass__.__doc__ == (
        "Refuse subclassing: no method of TTLRing calls an overridable one."
    )
