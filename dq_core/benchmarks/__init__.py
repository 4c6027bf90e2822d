"""The benchmark workloads of dq_core and their standard-library baselines.

``python -m dq_core.bench`` (``table``) times them side by side in one
process; the pyperf scripts in ``perf/`` run the same functions.  Every
timed workload has pyperf's time-function signature, ``f(loops, *args) ->
seconds`` for ``loops`` repetitions.  One module per area:

- ``common``: the implementations to compare, a fake clock, percentiles;
- ``heap``: ``Heap`` against heapq;
- ``queues``: ``PriorityQueue`` and ``DelayQueue`` against ``queue`` and a
  hand-made heapq delay queue, and a blocking ``get``'s lateness;
- ``ttl``: ``TTLRing`` and ``TTLDict`` against cachetools;
- ``timers``: ``TimingWheel`` against heapq and sched;
- ``aio``: ``dq_core.aio``'s queues against asyncio's;
- ``aiotimers``: ``aio.Timer`` against ``loop.call_later``;
- ``limit``: ``aio.RateLimiter`` against aiolimiter;
- ``table``: the quick comparison of ``python -m dq_core.bench``.

Nothing in the library imports this package.
"""
