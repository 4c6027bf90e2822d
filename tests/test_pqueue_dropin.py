"""PriorityQueue as a drop-in: what a queue.PriorityQueue user relies on besides put/get.

Truthiness and len(), isinstance, the stdlib's methods and hooks, the
``queue`` attribute (a live read-only view), ``peek``, copy and pickle, and
the twins' signatures and docs.
"""

from __future__ import annotations

import copy
import gc
import inspect
import pickle
import pydoc
import queue
import sys
from collections.abc import Sequence

import pytest

import dq_core

STDLIB_METHODS = sorted(
    name
    for cls in (queue.Queue, queue.PriorityQueue)
    for name, v in vars(cls).items()
    if callable(v) and name not in ("__class_getitem__",)
)


# -- 1. truthiness and len ------------------------------------------------------------


def test_empty_queue_is_truthy_and_has_no_len(impl):
    q, ref = impl.PriorityQueue(), queue.PriorityQueue()
    assert bool(q) is bool(ref) is True
    for x in (q, ref):
        with pytest.raises(TypeError):
            len(x)
    q.put((1, "a"))
    assert q  # and stays so with items
    assert not hasattr(q, "__len__") and not hasattr(q, "__bool__")


# -- 2. isinstance, and none of the stdlib's code runs ---------------------------------


def test_is_a_stdlib_priority_queue(impl):
    q = impl.PriorityQueue()
    assert isinstance(q, queue.PriorityQueue) and isinstance(q, queue.Queue)
    assert issubclass(impl.PriorityQueue, queue.PriorityQueue)
    assert isinstance(dq_core.PriorityQueue(), queue.PriorityQueue)


@pytest.mark.parametrize("name", STDLIB_METHODS)
def test_every_stdlib_method_is_overridden(impl, name):
    owner = next(k for k in impl.PriorityQueue.__mro__ if name in vars(k))
    assert owner not in (queue.Queue, queue.PriorityQueue), f"{name} is the stdlib's"


def test_stdlib_init_never_runs(impl):
    # No mutex or conditions: those the stdlib's __init__ would create.
    q = impl.PriorityQueue(3)
    for attr in ("mutex", "not_empty", "not_full", "all_tasks_done"):
        assert not hasattr(q, attr)
    assert (q.maxsize, q.unfinished_tasks, q.is_shutdown) == (3, 0, False)


@pytest.mark.parametrize("hook, args", [("_init", (0,)), ("_qsize", ()), ("_put", (1,)), ("_get", ())])
def test_stdlib_hooks_refuse_to_run(impl, hook, args):
    q = impl.PriorityQueue()
    with pytest.raises(TypeError, match=hook):
        getattr(q, hook)(*args)


# -- 4. a subclass overriding the stdlib's hooks is refused ------------------------------


@pytest.mark.parametrize("hook", ["_init", "_qsize", "_put", "_get"])
def test_subclass_overriding_a_hook_is_refused(impl, hook):
    with pytest.raises(TypeError, match=f"overrides {hook}\\(\\)"):
        type("Mine", (impl.PriorityQueue,), {hook: lambda self, *a: None})

    class Mixin:  # a hook that comes in through another base counts too
        pass

    setattr(Mixin, hook, lambda self, *a: None)
    with pytest.raises(TypeError, match=hook):
        type("Mine", (Mixin, impl.PriorityQueue), {})


def test_subclass_overriding_public_methods_works(impl):
    log = []

    class Logged(impl.PriorityQueue):
        def put(self, item, block=True, timeout=None):
            log.append(item)
            super().put(item, block, timeout)

    q = Logged()
    q.put((1, "a"))
    assert log == [(1, "a")] and q.get() == (1, "a")
    assert isinstance(q, queue.PriorityQueue)


# -- 3. q.queue: a live read-only view ---------------------------------------------------


def _both(impl, items):
    q, ref = impl.PriorityQueue(), queue.PriorityQueue()
    for x in items:
        q.put(x)
        ref.put(x)
    return q, ref


def test_queue_view_reads_as_the_stdlib_list(impl):
    items = [(5, "e"), (1, "a"), (4, "d"), (2, "b"), (3, "c"), (1, "z")]
    q, ref = _both(impl, items)
    view = q.queue
    assert view[0] == ref.queue[0] == (1, "a")  # the head
    assert [view[i] for i in range(len(view))] == ref.queue  # heapq's list order
    assert view[-1] == ref.queue[-1] and view[1:3] == ref.queue[1:3]
    assert type(view[1:3]) is list
    assert list(view) == ref.queue and list(reversed(view)) == ref.queue[::-1]
    assert len(view) == 6 and bool(view)
    assert (4, "d") in view and (9, "x") not in view
    assert view == ref.queue and ref.queue == view and not view != ref.queue
    assert view != [] and view != ref.queue[:-1]
    assert repr(view) == repr(ref.queue)
    assert view.index((4, "d")) == ref.queue.index((4, "d"))
    assert view.count((1, "a")) == 1
    assert view.copy() == ref.queue and type(view.copy()) is list
    assert sorted(view) == sorted(items)
    assert isinstance(view, Sequence)
    # + and * make new lists, as with the stdlib's list
    assert view + [(0, "x")] == ref.queue + [(0, "x")] and type(view + []) is list
    assert [(0, "x")] + view == [(0, "x")] + ref.queue
    assert view * 2 == ref.queue * 2 and 2 * view == 2 * ref.queue
    assert view == ref.queue  # unchanged by them
    with pytest.raises(TypeError):
        view + ((0, "x"),)  # list + tuple refuses, as the stdlib's does
    with pytest.raises(IndexError, match="list index out of range"):
        view[6]
    with pytest.raises(TypeError):
        hash(view)


def test_queue_view_is_live_and_o1(impl):
    q = impl.PriorityQueue()
    view = q.queue
    assert not view and len(view) == 0
    with pytest.raises(IndexError):
        view[0]
    q.put((2, "b"))
    assert view[0] == (2, "b")
    q.put((1, "a"))
    assert view[0] == (1, "a") and len(view) == 2  # the same view object sees it
    q.get()
    assert view[0] == (2, "b")
    # q.queue[0] does not copy the heap: a view is made, nothing else
    big = impl.PriorityQueue()
    big.put_many((i, i) for i in range(20000))
    assert big.queue[0] == (0, 0)
    if impl.name == "c":
        assert sys.getsizeof(big.queue) < 100


@pytest.mark.parametrize(
    "mutate",
    [
        lambda v: v.append((0, "x")),
        lambda v: v.extend([(0, "x")]),
        lambda v: v.insert(0, (0, "x")),
        lambda v: v.pop(),
        lambda v: v.pop(0),
        lambda v: v.remove((1, "a")),
        lambda v: v.sort(),
        lambda v: v.sort(reverse=True),
        lambda v: v.reverse(),
        lambda v: v.__setitem__(0, (0, "x")),
        lambda v: v.__setitem__(slice(0, 1), [(0, "x")]),
        lambda v: v.__delitem__(0),
        lambda v: v.__iadd__([(0, "x")]),
        lambda v: v.__imul__(2),
    ],
    ids=[
        "append",
        "extend",
        "insert",
        "pop",
        "pop0",
        "remove",
        "sort",
        "sort-reverse",
        "reverse",
        "setitem",
        "setslice",
        "delitem",
        "iadd",
        "imul",
    ],
)
def test_queue_view_refuses_mutation(impl, mutate):
    q, _ = _both(impl, [(2, "b"), (1, "a"), (3, "c")])
    before = q.queue.copy()
    with pytest.raises(TypeError, match="read-only"):
        mutate(q.queue)
    assert q.queue == before and q.qsize() == 3 and q.unfinished_tasks == 3


def test_queue_view_statement_forms_refused(impl):
    q, _ = _both(impl, [(2, "b"), (1, "a")])
    with pytest.raises(TypeError, match="read-only"):
        q.queue[0] = (0, "x")
    with pytest.raises(TypeError, match="read-only"):
        del q.queue[0]
    with pytest.raises(TypeError, match="read-only"):
        q.queue += [(0, "x")]
    with pytest.raises(AttributeError):
        q.queue = []
    assert q.queue == [(1, "a"), (2, "b")]


def test_queue_view_clear_matches_the_stdlib(impl):
    # The stdlib's q.queue.clear() empties the list and nothing else:
    # unfinished_tasks stays, join() still waits, nobody is woken.
    q, ref = _both(impl, [(2, "b"), (1, "a"), (3, "c")])
    ref.get()
    q.get()
    q.queue.clear()
    ref.queue.clear()
    assert q.qsize() == ref.qsize() == 0
    assert q.unfinished_tasks == ref.unfinished_tasks == 3
    assert q.empty() and ref.empty()
    with pytest.raises(queue.Empty):
        q.get_nowait()
    q.put((7, "g"))
    assert q.get() == (7, "g") and q.unfinished_tasks == 4


def test_queue_view_clear_drops_items_outside_the_lock(impl):
    q = impl.PriorityQueue()
    seen = []

    class Finalised:
        def __lt__(self, other):
            return id(self) < id(other)

        def __del__(self):
            q.put_nowait((0, "from __del__"))  # the lock is free by then
            seen.append(True)

    q.put(Finalised())
    gc.collect()
    q.queue.clear()
    assert seen == [True] and q.queue == [(0, "from __del__")]


def test_queue_view_copies_and_pickles_as_a_list(impl):
    q, ref = _both(impl, [(2, "b"), (1, "a")])
    for dup in (copy.copy(q.queue), copy.deepcopy(q.queue), pickle.loads(pickle.dumps(q.queue))):
        assert type(dup) is list and dup == ref.queue
    assert q.qsize() == 2


def test_queue_view_needs_a_queue(impl):
    with pytest.raises(TypeError, match="queue must be a PriorityQueue, not 'list'"):
        impl.queuecore.QueueView([])


# -- peek ------------------------------------------------------------------------------


def test_peek(impl):
    q = impl.PriorityQueue()
    with pytest.raises(queue.Empty):
        q.peek()
    q.put((2, "b"))
    q.put((1, "a"))
    assert q.peek() == (1, "a") and q.qsize() == 2 and q.unfinished_tasks == 2
    q.shutdown()
    assert q.peek() == (1, "a")


# -- 6. copy and pickle refused ---------------------------------------------------------


@pytest.mark.parametrize(
    "dup",
    [copy.copy, copy.deepcopy, pickle.dumps, lambda q: pickle.dumps(q, 0), lambda q: q.__reduce__()],
    ids=["copy", "deepcopy", "pickle", "pickle0", "reduce"],
)
def test_copy_and_pickle_are_refused(impl, dup):
    q = impl.PriorityQueue()
    q.put((1, "a"))
    with pytest.raises(TypeError, match="^cannot pickle or copy 'PriorityQueue' object: "):
        dup(q)
    assert q.get_nowait() == (1, "a")  # untouched


@pytest.mark.parametrize("bad", ["10", None, 1j, [1]])
def test_a_maxsize_that_is_no_number_is_refused_with_one_message_everywhere(impl, bad):
    # The stdlib accepts any maxsize and fails at the first put, with
    # "'>' not supported between instances of 'str' and 'int'"; every dq_core
    # queue refuses it at once, in the same words, and the setter too.
    message = f"^maxsize must be an int, not {type(bad).__name__!r}$"
    for make in (impl.PriorityQueue, impl.DelayQueue, impl.aio.PriorityQueue, impl.aio.DelayQueue):
        with pytest.raises(TypeError, match=message):
            make(maxsize=bad)
    for q in (impl.PriorityQueue(3), impl.DelayQueue(3)):
        with pytest.raises(TypeError, match=message):
            q.maxsize = bad
        assert q.maxsize == 3  # left as it was


def test_a_maxsize_that_is_a_number_is_kept_as_the_stdlib_keeps_it(impl):
    for value, room in ((2.5, 3), (True, 1), (-1, None), (0, None)):
        ours, ref = impl.PriorityQueue(value), queue.PriorityQueue(value)
        assert ours.maxsize is value and ref.maxsize is value
        for i in range(room or 5):
            ours.put_nowait(i)
            ref.put_nowait(i)
        assert ours.full() == ref.full() == (room is not None)
        q = impl.PriorityQueue()
        q.maxsize = value
        assert q.maxsize is value


def test_item_heap_refuses_pickle_in_both(impl):
    h = impl.ItemHeap()
    h.push(1)
    for dup in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot pickle 'ItemHeap' object"):
            dup(h)


# -- get_many and raising comparisons: nothing lost ----------------------------------------


class Touchy:
    """Refuses to compare while ``armed`` is set on either side."""

    def __init__(self, key):
        self.key = key
        self.armed = False

    def __lt__(self, other):
        if self.armed or other.armed:
            raise ArithmeticError("touchy")
        return self.key < other.key


def test_get_many_returns_what_it_took_before_a_raising_comparison(impl):
    partial = 0
    for armed in range(8):
        q = impl.PriorityQueue()
        items = [Touchy(k) for k in range(8)]
        for x in items:
            q.put(x)
        before = q.queue.copy()
        items[armed].armed = True
        try:
            got = q.get_many()
        except ArithmeticError:  # the very first step failed: nothing moved
            assert q.queue.copy() == before
            continue
        rest = q.queue.copy()
        assert [t.key for t in got] == list(range(len(got)))
        assert sorted(t.key for t in got + rest) == list(range(8))  # nothing lost
        assert q.unfinished_tasks == 8
        if rest:
            partial += 1
            with pytest.raises(ArithmeticError):  # the failing step again, at once
                q.get_many()
            assert q.queue.copy() == rest
            items[armed].armed = False
            assert [t.key for t in q.get_many()] == sorted(t.key for t in rest)
    assert partial  # the region this is about was reached


# -- the list under ItemHeap changed behind its back ---------------------------------------


def _heap_list(h):
    lists = [r for r in gc.get_referents(h) if type(r) is list]
    assert len(lists) == 1
    return lists[0]


@pytest.mark.parametrize("change", ["grow", "shrink", "clear"])
def test_item_heap_survives_its_list_changing_under_a_comparison(impl, change):
    h = impl.ItemHeap()
    for k in range(40):
        h.push((k, "x"))
    lst = _heap_list(h) if impl.name == "c" else h._items

    class Saboteur:
        def __init__(self, key):
            self.key = key
            self.fired = False

        def __lt__(self, other):
            if not self.fired:
                self.fired = True
                if change == "grow":
                    lst.extend([(99, "y")] * 1000)  # moves ob_item
                elif change == "shrink":
                    del lst[5:]
                else:
                    lst.clear()
            return False

        def __gt__(self, other):
            return True

    with pytest.raises(RuntimeError, match="changed size"):
        h.push(Saboteur(-1))
    # whatever the list holds now, the heap works on it without crashing
    n = len(h)
    assert n == len(lst)
    out = []
    while True:
        try:
            out.append(h.pop())
        except IndexError:
            break
        except TypeError:  # Saboteur against a tuple, once the list was changed
            break
    h.push((0, "z"))
    assert h.peek() is not None


def test_item_heap_rebuilds_its_key_cache_when_its_list_grew(impl):
    h = impl.ItemHeap()
    for k in (5, 3, 8):
        h.push((k, "x"))
    lst = _heap_list(h) if impl.name == "c" else h._items
    lst.extend([(100 + i, "y") for i in range(100)])  # a valid heap still
    h.push((1, "a"))
    assert h.pop() == (1, "a") and h.pop() == (3, "x")
    h._check()


# -- the twins agree on signatures and documentation -----------------------------------------


def _sig(obj):
    try:
        sig = inspect.signature(obj)
    except ValueError as exc:
        return f"no signature: {exc}"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _members(cls):
    return sorted(
        n
        for n in dir(cls)
        if not n.startswith("_")
        or n
        in (
            "__init__",
            "__getitem__",
            "__len__",
            "__iter__",
            "__contains__",
            "__eq__",
            "__reduce__",
            "__reduce_ex__",
            "__repr__",
            "__reversed__",
            "_check",
            "_lock",
            "_unlock",
            "_init",
            "_qsize",
            "_put",
            "_get",
        )
    )


@pytest.mark.parametrize("name", ["PriorityQueue", "QueueView", "ItemHeap"])
def test_twins_have_the_same_signatures_and_docs(both, name):
    def make(ns):
        if name == "PriorityQueue":
            return ns.PriorityQueue, ns.PriorityQueue()
        cls = ns.ItemHeap if name == "ItemHeap" else ns.queuecore.QueueView
        return cls, (ns.PriorityQueue().queue if name == "QueueView" else cls())

    (c, c_obj), (py, py_obj) = make(both[0]), make(both[1])
    assert _sig(c) == _sig(py)
    assert inspect.getdoc(c) == inspect.getdoc(py)
    assert _members(c) == _members(py)
    for m in _members(c):
        a, b = getattr(c_obj, m), getattr(py_obj, m)
        if callable(a) and not m.startswith("__"):  # slot wrappers have fixed signatures
            assert _sig(a) == _sig(b), m
            assert inspect.getdoc(a) == inspect.getdoc(b), m


def test_help_text_names_the_drop_in(impl):
    text = pydoc.render_doc(impl.PriorityQueue, renderer=pydoc.plaintext)
    assert "queue.PriorityQueue" in text and "peek" in text


# -- garbage collection -------------------------------------------------------------------


def test_cycles_through_tuples_views_and_waiters_are_collected(impl):
    import weakref

    q = impl.PriorityQueue()
    q.put((1, (q,)))  # tuples cannot be cleared by the collector: the list can
    q.put((2, q.queue))  # a view holds its queue
    q.put((3, [q.queue, q]))
    q.tag = (q,)  # the subclass of queue.PriorityQueue has a __dict__
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None
