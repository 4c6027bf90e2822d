# cython: language_level=3, cdivision=True, embedsignature=True, embedsignature.format=clinic, binding=False
# boundscheck and wraparound come from setup.py: off, or on in a DQ_CORE_DEBUG=1 build.
"""The hot paths of ``aio.Timer`` (twin of ``_aiotimercore_py``): its handle, scheduling, firing.

``TimerHandle`` is the handle ``aio.Timer.call_later``/``call_at`` return;
``schedule`` makes one and puts it on the Timer's wheel, ``take_due`` moves
what the wheel hands out into the Timer's batch in deadline order, and
``run_batch`` runs that batch.  The Timer (``dq_core.aio._timer``) keeps
what faces asyncio: binding to the loop, arming its one loop timer, close.

A callback may do anything (schedule, cancel others of its batch, close
the Timer, raise): the batch is a deque read afresh after every callback,
and each handle is held by a reference of our own while it runs.

The cyclic GC and a million pending timers: a pending handle is held by the
Timer's wheel (or batch), and the Timer by the loop, through its armed loop
timer; walking a million live handles on every full collection is most of
what scheduling costs.  So a pending handle is taken off the GC's lists
(``Pending``, one per Timer, holds them) and put back on as it leaves
pending: run, cancelled, unrun by ``close()``, or given back all at once
(``Pending.release``) when the loop drops the Timer's loop timer without
running it (the loop was closed: ``_Armed`` watches the loop's handle
through a weak reference).  Until then no pending handle can be garbage:
the loop holds the Timer.  (What stays uncollected: the cycles through
pending timers of a loop dropped unclosed, whose callbacks hold that loop.)
Neither happens where the shortcut is off (``SHORTCUTS["untrack_pending"]``:
a free-threaded build, or a CPython newer than the suite has run on).
"""

# argument errors in CPython's words, as the pure twin raises them
cdef extern from "dq_argerrors.h":
    pass
cimport cython

cdef extern from "Python.h":
    object PyContext_CopyCurrent()
    object PyContext_Copy(object ctx)
    int PyContext_Enter(object ctx) except -1
    int PyContext_Exit(object ctx) except -1

cdef extern from "Python.h":
    int PyObject_GC_IsTracked(object)
    void PyObject_GC_Track(object)
    void PyObject_GC_UnTrack(object)
    ctypedef struct PyObject
    void _decref "Py_DECREF"(PyObject*)
    void _incref "Py_INCREF"(PyObject*)

from _shortcuts cimport DQ_SC_CONTEXT_SNAPSHOT, DQ_SC_UNTRACK_PENDING, dq_shortcut_switches

cdef extern from "dq_context_snapshot.h":
    # the context snapshot timers share (DQ_SC_CONTEXT_SNAPSHOT): see the header
    bint dq_snap_prove(object ctx, object before_vars)
    object dq_snap_vars(object ctx)
    object dq_context_snapshot(int* shared)

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.math cimport INFINITY, fmin

import asyncio
import contextvars
import inspect
import operator
import types
import weakref

from dq_core._aiowaiting import MAX_ARM
from dq_core._convert import to_real

__all__ = [
    "MAX_ARM", "Pending", "TimerHandle", "arm", "call_at", "call_later", "on_timer", "pending",
    "run_batch", "schedule", "take_due", "unrun",
]

cdef object _get_running_loop = asyncio.get_running_loop
cdef object Context = contextvars.Context
# deadline order, first-in first-out among equal deadlines (see the pure twin)
cdef object _order = operator.attrgetter("_when", "_seq")
cdef object _by_when = operator.attrgetter("_when")
cdef unsigned long long _seqs = 0
cdef object _weakref = weakref.ref

def _prove_context_snapshot():
    # inside Context.run: set a variable, then ask the shortcut what it reads
    before = dq_snap_vars(_probe_ctx)
    _probe_var.set(True)
    return dq_snap_prove(_probe_ctx, before)


_probe_var = contextvars.ContextVar("dq_core._aiotimercore probe")
_probe_ctx = contextvars.Context()
_snapshot_proved = _probe_ctx.run(_prove_context_snapshot)
del _probe_var, _probe_ctx, _prove_context_snapshot

_switches = dq_shortcut_switches()
#: The interpreter shortcuts (src/include/dq_shortcuts.h) this core takes, name -> on.
SHORTCUTS = types.MappingProxyType({
    "context_snapshot": _switches["context_snapshot"] and bool(_snapshot_proved),
    "untrack_pending": _switches["untrack_pending"],
})
del _switches

cdef double _MAX_ARM = MAX_ARM  # dq_core._aiowaiting's

# TimerHandle states
cdef str PENDING = "pending"      # in the wheel, or handed out and waiting its turn in the batch
cdef str DONE = "done"            # started (and perhaps finished)
cdef str CANCELLED = "cancelled"
cdef str UNRUN = "unrun"          # returned by close()


cdef class TimerHandle


@cython.final
cdef class Pending:
    """The pending handles of one Timer, kept off the cyclic GC's lists (see the module doc)."""

    # owned references, a handle's _pos its index; a free place holds the next free
    # place, tagged (odd: (next + 1) << 1 | 1, 1 ends the list), so leaving touches
    # no other handle (a million of them are mostly out of the cache)
    cdef PyObject** _h
    cdef Py_ssize_t _n, _used, _cap, _free

    def __cinit__(self):
        self._free = -1

    def __len__(self):
        return self._n

    def release(self):
        """Put every handle back on the GC's lists and let go of them."""
        self._release()

    def __dealloc__(self):
        self._release()  # (empty: each handle here holds this set)

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle or copy 'Pending' object: it belongs to a Timer")

    cdef int _add(self, TimerHandle h) except -1:
        cdef PyObject** a
        cdef Py_ssize_t cap, i
        if not DQ_SC_UNTRACK_PENDING:
            return 0
        if self._free >= 0:
            i = self._free
            self._free = <Py_ssize_t>(<size_t>self._h[i] >> 1) - 1
        else:
            if self._used == self._cap:
                cap = 2 * self._cap if self._cap else 64
                a = <PyObject**>PyMem_Realloc(self._h, cap * sizeof(PyObject*))
                if a is NULL:
                    raise MemoryError()
                self._h = a
                self._cap = cap
            i = self._used
            self._used += 1
        _incref(<PyObject*>h)
        self._h[i] = <PyObject*>h
        h._pos = i
        h._pend = self
        self._n += 1
        if PyObject_GC_IsTracked(h):
            PyObject_GC_UnTrack(h)
        return 0

    cdef void _remove(self, TimerHandle h) noexcept:
        # h is here (h._pos >= 0) and the caller holds a reference: no code runs
        cdef Py_ssize_t i = h._pos
        self._h[i] = <PyObject*>(<size_t>(self._free + 1) << 1 | 1)
        self._free = i
        self._n -= 1
        h._pos = -1
        if not PyObject_GC_IsTracked(h):
            PyObject_GC_Track(h)
        _decref(<PyObject*>h)

    cdef void _release(self) noexcept:
        # detached first: letting go of a handle may run code (its callback's __del__)
        cdef PyObject** a = self._h
        cdef Py_ssize_t used = self._used, i
        self._h = NULL
        self._n = self._used = self._cap = 0
        self._free = -1
        for i in range(used):
            if <size_t>a[i] & 1:
                a[i] = NULL
                continue
            (<TimerHandle>a[i])._pos = -1
            if not PyObject_GC_IsTracked(<TimerHandle>a[i]):
                PyObject_GC_Track(<TimerHandle>a[i])
        for i in range(used):
            if a[i] is not NULL:
                _decref(a[i])
        PyMem_Free(a)


cdef inline void _leave(TimerHandle h) noexcept:
    # h leaves pending: back on the GC's lists
    if h._pos >= 0:
        h._pend._remove(h)


@cython.final
@cython.freelist(64)
cdef class TimerHandle:
    """A callback scheduled on an ``aio.Timer``: asyncio ``TimerHandle``'s ``cancel()``,
    ``cancelled()`` and ``when()``.

    Not thread-safe, like asyncio's: cancel it in the loop's thread (from
    another thread, ``loop.call_soon_threadsafe(handle.cancel)``)."""

    __signature__ = inspect.Signature()  # made by aio.Timer only, as the pure twin's

    cdef readonly double _when
    cdef readonly unsigned long long _seq  # the order of scheduling
    cdef object _callback
    cdef tuple _args
    cdef object _context
    cdef object _timer
    cdef object _key
    cdef str _state
    cdef bint _shared  # _context is the shared snapshot: run in a copy of it
    cdef Py_ssize_t _pos  # in _pend (off the GC's lists), or -1
    cdef Pending _pend
    cdef object __weakref__

    def __cinit__(self):
        self._state = PENDING
        self._key = -1
        self._pos = -1

    def __init__(self):
        # refuses arguments, as the pure twin's (aio.Timer makes handles with __new__)
        pass

    def when(self):
        """The deadline, on the loop's clock (``loop.time()``)."""
        return self._when

    def cancelled(self):
        """True once ``cancel()`` has stopped the callback from running."""
        return self._state is CANCELLED

    def cancel(self):
        """Stop the callback from running; False if it already ran, was cancelled or unrun.  O(1).

        A timer cancelled by a callback of the same batch (due together) does
        not run.  Call it from the Timer's loop (as asyncio's handles).
        """
        if self._state is not PENDING:
            return False
        self._state = CANCELLED
        _leave(self)
        # False when it already left the wheel for the batch: it is skipped there
        self._timer._wheel.cancel(self._key)
        self._callback = self._args = None  # as asyncio: a cancelled handle keeps nothing alive
        return True

    def __repr__(self):
        return f"<TimerHandle {self._state} when={self._when!r} {_describe(self)}>"

    def __reduce_ex__(self, protocol):
        # a copy would be a second handle on the same timer
        raise TypeError("cannot pickle or copy 'TimerHandle' object: it belongs to a Timer")


cdef str _describe(TimerHandle h):
    cb = h._callback
    if cb is None:
        return "None"
    name = getattr(cb, "__qualname__", None) or repr(cb)
    args = ", ".join(map(repr, h._args or ()))
    return f"{name}({args})"


# bound as methods of aio.Timer (its face takes them from here)
@cython.binding(True)
def call_later(self, delay, callback, *args, context=None):
    """Run ``callback(*args)`` ``delay`` seconds from now, in the loop; return its handle.  O(1)."""
    if type(delay) is not float or delay != delay:
        delay = to_real(delay, "delay")
    loop = _get_running_loop()
    if loop is not self._loop:
        self._bind(loop)
    return _schedule(self, <double>loop.time() + <double>delay, callback, args, context)


@cython.binding(True)
def call_at(self, when, callback, *args, context=None):
    """Run ``callback(*args)`` at ``when`` (on ``loop.time()``), in the loop; return its handle.  O(1)."""
    if type(when) is not float or when != when:
        when = to_real(when, "when")
    loop = _get_running_loop()
    if loop is not self._loop:
        self._bind(loop)
    return _schedule(self, when, callback, args, context)


def schedule(timer, when, callback, args, context):
    """Put ``callback(*args)`` on ``timer``'s wheel at ``when``; arm its loop timer if sooner."""
    return _schedule(timer, when, callback, args, context)


cdef TimerHandle _schedule(timer, double when, callback, tuple args, context):
    global _seqs
    if timer._closed:
        raise RuntimeError("cannot schedule new timers after close()")
    if not callable(callback):
        raise TypeError(f"callback must be callable, not {type(callback).__name__!r}")
    cdef int shared = 0
    if context is None:
        context = dq_context_snapshot(&shared)
    elif type(context) is not Context:
        raise TypeError(f"context must be a contextvars.Context, not {type(context).__name__!r}")
    cdef TimerHandle h = TimerHandle.__new__(TimerHandle)
    h._shared = shared
    h._timer = timer
    h._when = when
    h._seq = _seqs
    _seqs += 1
    h._callback = callback
    h._args = args
    h._context = context
    cdef Pending pend = <Pending?>timer._pending
    wheel = timer._wheel
    # a ``when`` the wheel's time has reached goes to its list of due timers,
    # which the next take_due merges into the batch in deadline order
    h._key = wheel.schedule_at(h, when)
    try:
        pend._add(h)
    except BaseException:  # MemoryError: the wheel gives it back
        wheel.cancel(h._key)
        raise
    if when < <double>timer._armed and not timer._firing:
        timer._arm()
    return h


def take_due(wheel, double now, batch):
    """Hand out to ``batch``, in deadline order, what the wheel holds for the next two ticks.

    ``batch`` then holds every timer due by ``now`` (those scheduled at or
    before the wheel's time included: they come out first) and those due
    within about two ticks, which wait there for their own deadline.
    """
    cdef list due = wheel.advance(now + 2.0 * <double>wheel.tick), merged
    cdef TimerHandle a, b
    if due:
        if len(due) > 1:
            _sort(due)
        if batch:
            a = <TimerHandle?>due[0]
            b = <TimerHandle?>batch[len(batch) - 1]
            if a._when < b._when or (a._when == b._when and a._seq < b._seq):
                merged = list(batch)
                merged += due
                _sort(merged)
                batch.clear()
                batch.extend(merged)
                return
        batch.extend(due)


cdef int _sort(list hs) except -1:
    # hs.sort(key=_order) without a tuple per handle: by deadline, then the
    # (rare) runs of equal deadlines by _seq
    cdef Py_ssize_t i, j
    cdef TimerHandle h, g
    hs.sort(key=_by_when)
    for i in range(1, len(hs)):
        h = <TimerHandle>hs[i]
        g = <TimerHandle>hs[i - 1]
        if g._when == h._when and g._seq > h._seq:
            j = i
            while j > 0:
                g = <TimerHandle>hs[j - 1]
                if g._when != h._when or g._seq < h._seq:
                    break
                hs[j] = g
                j -= 1
            hs[j] = h
    return 0


@cython.binding(True)
def arm(self):
    """Arm the loop timer for what comes next, if that is earlier than it is armed for.

    What comes next: the first timer of the batch at its deadline, or one tick
    before the wheel's next deadline (``take_due`` hands its timers out then); but
    no sooner than one tick after the last firing that ran a callback, so that a
    dense schedule costs one loop timer per tick, not one per deadline.
    """
    cdef double nxt, at, tick
    loop = self._loop
    wheel = self._wheel
    batch = self._batch
    nxt = (<TimerHandle?>batch[0])._when if batch else INFINITY
    deadline = wheel.next_deadline()
    tick = wheel.tick
    if deadline is not None:
        if <double>deadline - tick < nxt:  # its tick starts: take_due takes it
            nxt = <double>deadline - tick
    elif nxt == INFINITY:
        return
    if nxt < <double>self._ran + tick:
        nxt = <double>self._ran + tick
    if nxt >= <double>self._armed:
        return
    handle = self._handle
    if handle is not None:
        handle.cancel()
    at = fmin(nxt, <double>loop.time() + _MAX_ARM)
    cdef _Armed armed = _Armed.__new__(_Armed)
    armed._timer = self
    armed._pend = <Pending?>self._pending
    try:
        armed._watch(loop.call_at(at, armed))
    except BaseException:  # no loop timer: nothing would release the handles
        armed._pend._release()
        raise
    self._handle = armed
    self._armed = at


@cython.final
cdef class _Armed:
    """The Timer's loop timer: the callback of its ``loop.call_at``, and its ``cancel()``.

    If the loop lets go of that loop timer without running or cancelling it
    (``loop.close()``), the Timer's pending handles go back on the GC's lists.
    """

    cdef object _timer
    cdef Pending _pend
    cdef object _ref  # a weak reference to the loop's handle (or the handle, if it takes none)
    cdef bint _live, _weak

    cdef int _watch(self, handle) except -1:
        try:
            self._ref = _weakref(handle, self._dropped)
            self._weak = True
        except TypeError:  # a loop whose handles take no weak reference
            self._ref = handle
        self._live = True
        return 0

    def __call__(self):
        self._live = False
        self._ref = None  # (the weak reference holds self._dropped: no cycle left behind)
        _fire(self._timer)

    @property
    def __self__(self):
        """The Timer (as for the bound method ``Timer._on_timer`` it stands for)."""
        return self._timer

    def cancel(self):
        """Cancel the loop timer."""
        self._live = False
        ref = self._ref
        self._ref = None
        handle = ref() if self._weak and ref is not None else ref
        if handle is not None:
            handle.cancel()

    def _dropped(self, ref):
        if self._live:
            self._live = False
            self._pend._release()

    def __reduce_ex__(self, protocol):
        raise TypeError("cannot pickle or copy '_Armed' object: it belongs to a Timer")


@cython.binding(True)
def on_timer(self):
    """The loop timer: run what is due, then arm for what comes next."""
    _fire(self)


cdef int _fire(self) except -1:
    cdef double now
    self._handle = None
    self._armed = INFINITY
    loop = self._loop
    batch = self._batch
    now = loop.time()  # read again: never early
    take_due(self._wheel, now, batch)
    self._firing = True
    try:
        if _run_batch(batch, loop, now):
            self._ran = now
    finally:
        self._firing = False
        if not self._closed:
            self._arm()
    return 0


def run_batch(batch, loop, double now):
    """Run the callbacks of ``batch`` due by ``now``, in order, taking each out first; skip the cancelled.

    Returns whether one ran.  An exception goes to ``loop.call_exception_handler``;
    SystemExit and KeyboardInterrupt propagate, the rest of the batch left in it.
    """
    return _run_batch(batch, loop, now)


cdef bint _run_batch(batch, loop, double now) except -1:
    cdef TimerHandle h
    cdef bint ran = False
    popleft = batch.popleft
    while batch:
        h = <TimerHandle?>batch[0]
        if h._state is not PENDING:  # cancelled by a callback before it
            popleft()
            continue
        if h._when > now:
            break
        popleft()  # (h: our own reference while it runs)
        h._state = DONE
        ran = True
        _leave(h)
        try:
            _run(h)
        except (SystemExit, KeyboardInterrupt):
            raise  # as asyncio; the rest of the batch runs on the next loop step
        except BaseException as exc:
            loop.call_exception_handler({
                "message": f"Exception in callback {_describe(h)}",
                "exception": exc,
                "handle": h,
            })
    return ran


cdef int _run(TimerHandle h) except -1:
    # Context.run(callback, *args), without the bound method and the argument tuple
    context = PyContext_Copy(h._context) if h._shared else h._context
    callback = h._callback
    args = h._args
    PyContext_Enter(context)
    try:
        callback(*args)
    finally:
        PyContext_Exit(context)
    return 0


def pending(batch):
    """How many handles of ``batch`` are still to run (not cancelled, not started).

    >>> from collections import deque
    >>> pending(deque())
    0
    """
    cdef Py_ssize_t n = 0
    cdef TimerHandle h
    for h in list(batch):
        if h._state is PENDING:
            n += 1
    return n


def unrun(batch, list drained):
    """The handles of ``batch`` still to run and ``drained``, in deadline order, marked unrun.

    ``batch`` is emptied.
    """
    cdef TimerHandle h
    cdef list out = [h for h in list(batch) if h._state is PENDING]
    batch.clear()
    out += drained
    out.sort(key=_order)
    for h in out:
        h._state = UNRUN
        _leave(h)
    return out
