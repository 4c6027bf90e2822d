"""Pickles name ``dq_core._pickling.restore``, a leaf module, whichever implementation made them.

They load on either implementation, as the classes of the one in use.
"""

from __future__ import annotations

import pickle

import pytest

import dq_core


def _structures(impl):
    heap = impl.Heap()
    heap.push(2, "b")
    heap.push(1, "a")
    wheel = impl.TimingWheel(tick=1.0, wheel_size=4, clock=float)  # float() == 0.0: picklable
    wheel.schedule_at("x", 5.0)
    ring = impl.TTLRing(10.0, clock=float)
    ring.push("k", 0.0)
    ttl = impl.TTLDict(10.0, clock=float)
    ttl["k"] = "v"
    return {"Heap": heap, "TimingWheel": wheel, "TTLRing": ring, "TTLDict": ttl}


@pytest.mark.parametrize("name", ["Heap", "TimingWheel", "TTLRing", "TTLDict"])
def test_a_pickle_names_the_leaf_module(impl, name):
    obj = _structures(impl)[name]
    data = pickle.dumps(obj, protocol=0)  # names its globals as text
    assert b"dq_core._pickling\nrestore" in data
    loaded = pickle.loads(data)
    assert type(loaded) is getattr(dq_core, name)
    assert loaded.__getstate__() == obj.__getstate__()


def test_restore_names_only_public_classes():
    from dq_core._pickling import restore

    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        restore("Nothing")
