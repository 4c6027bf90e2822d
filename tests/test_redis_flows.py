"""dq_core.redis's flows without a server: each method's steps, the keys and
arguments of its script calls, and how it reads each script's reply.

A flow (``dq_core/redis/_flows.py``) is a generator of steps; here it is
driven by hand, with plain data standing for the scripts' replies, as the
driver (``_protocol``) would send them.  What the scripts do with these
arguments is tested against real servers in the other tests/test_redis_*.py.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from dq_core.redis import Cron, Job, RetryPolicy, _flows
from dq_core.redis._flows import _TAKE_IDLE, _Flows, _Listen, _Register, _Run, _Subscribe, _Wait

US = 1_000_000


def flows(name: str = "q", lease: float = 30.0, **kw: Any) -> _Flows[Any]:
    return _Flows(name, lease, kw.pop("max_attempts", None), kw.pop("serializer", None), **kw)


def drive(flow: Any, replies: List[Any]) -> Tuple[List[Any], Any]:
    """Run ``flow``, answering its steps with ``replies`` in turn: (its steps, its result)."""
    steps = []
    reply: Any = None
    try:
        while True:
            steps.append(flow.send(reply))
            reply = replies.pop(0)
    except StopIteration as stop:
        assert replies == [], "the flow ended before taking every reply"
        return steps, stop.value


def calls(steps: List[Any]) -> List[Tuple[str, List[Any]]]:
    assert all(type(s) is _Run for s in steps), steps
    return [(s.op, s.args) for s in steps]


def claim_reply(now: int, nxt: int, role: bytes, *jobs: Tuple[str, Any, int, int, str]) -> List[Any]:
    """A claim script's reply: its three heads, then id, data, deadline (us), attempts, token a job."""
    out: List[Any] = [now, nxt, role]
    for job_id, data, deadline, attempts, token in jobs:
        out += [job_id.encode(), data, str(deadline).encode(), attempts, token.encode()]
    return out


class Json:
    def dumps(self, obj: Any) -> str:
        return json.dumps(obj)

    def loads(self, data: bytes) -> Any:
        return json.loads(data)


# -- the module's rule


def test_the_flows_import_no_redis_and_do_no_io():
    tree = ast.parse(Path(_flows.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(("." * node.level) + (node.module or ""))
    assert not imported & {"redis", "socket", "asyncio", "threading", "select"}, imported
    assert not imported & {"._errors", "._protocol", "._pubsub", "._sync", "._asyncio"}, imported


# -- the queue's keys and each call's head


def test_the_keys_and_the_head_of_every_call():
    q = flows("orders", max_attempts=3, dead_ttl=1.5, dead_max=7)
    names = ("q", "state", "pay", "lease", "dead", "seq", "meta", "idle", "qp", "rdy", "pri", "rec")
    assert q.keys == [f"dq:{{orders}}:{k}" for k in names]
    assert q.channel == "dq:{orders}:wake"
    keys, args = q._call_line(["a", 1], "n0nce")
    assert keys == ["dq:{orders}:"]  # the prefix: the scripts name the keys from it
    assert args == ["3,1500000,7", "n0nce", "a", 1]
    # a policy left to the queue's stored one is sent empty
    assert flows("orders")._call_line([], "")[1] == ["", ""]
    assert flows("orders", dead_max=7)._call_line([], "")[1] == [",,7", ""]


def test_the_constructor_validates_without_a_client():
    with pytest.raises(ValueError, match="must not contain"):
        flows("a{b}")
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        flows("")
    with pytest.raises(ValueError, match="lease must be a positive finite"):
        flows(lease=0)
    with pytest.raises(ValueError, match="retry_for must be from 0 to 50"):
        flows(retry_for=51)
    with pytest.raises(ValueError, match="conflicts with retry.max_attempts"):
        flows(max_attempts=2, retry=RetryPolicy(max_attempts=3))
    q = flows(retry=RetryPolicy(base=2.0, max_attempts=4), rate=5, burst=2)
    assert q.max_attempts == 4 and q._retry_wire == "2.0,2.0,300.0,0.1" and q._rate_wire == "5.0,2.0"
    assert repr(q) == (
        "_Flows('q', lease=30.0, max_attempts=4, retry=RetryPolicy(base=2.0, factor=2.0, "
        "max_delay=300.0, jitter=0.1, max_attempts=4), rate=5.0, burst=2.0)"
    )


# -- put


def test_put_one_call_with_its_head_and_triple():
    q = flows()
    steps, out = drive(q._put_one(b"x", 1.5, "delay", False, "id1", "replace", 2), [1])
    assert out == "id1"
    assert calls(steps) == [("put", ["0", "replace", "2.0", "id1", b"bx", 1_500_000])]
    steps, out = drive(q._put_one("é", 1e9 + 0.5, "when", True, "id2", "keep", 0), [1])
    assert calls(steps) == [("put", ["1", "keep", "0", "id2", "sé".encode(), 1_000_000_000_500_000])]


def test_put_without_an_id_draws_one_and_tells_the_script_it_is_new():
    q = flows(serializer=Json())
    steps, out = drive(q._put_one({"a": 1}, 0.0, "delay", False, None, "replace"), [1])
    ((op, args),) = calls(steps)
    assert op == "put" and args[:3] == ["0", "new", "0"]
    assert args[3] == out and len(out) == 32 and int(out, 16) >= 0
    assert args[4:] == [b's{"a": 1}', 0]


def test_put_many_goes_in_batches_of_500():
    q = flows()
    n = 1001
    ids = [f"j{i}" for i in range(n)]
    steps, out = drive(q._put_many([b"p"] * n, [0.25] * n, ids, "replace", -1), [1, 1, 1])
    assert out == ids
    got = calls(steps)
    assert [op for op, _ in got] == ["put"] * 3
    assert [len(args) for _, args in got] == [3 + 1500, 3 + 1500, 3 + 3]
    assert all(args[:3] == ["0", "replace", "-1.0"] for _, args in got)
    assert got[2][1][3:] == ["j1000", b"bp", 250_000]


def test_put_refuses_bad_arguments_before_any_call():
    q = flows()
    with pytest.raises(ValueError, match="if_exists must be 'replace' or 'keep'"):
        next(q._put_one(b"x", 0, "delay", False, None, "merge"))
    with pytest.raises(ValueError, match=r"payloads and delays differ in length: 2 != 1"):
        next(q._put_many([b"a", b"b"], [0], None, "replace"))
    with pytest.raises(TypeError, match=r"job_ids\[1\] must be a str, not 'int'"):
        next(q._put_many([b"a", b"b"], None, ["x", 2], "replace"))
    with pytest.raises(TypeError, match=r"payload\[1\] must be bytes or str, not 'int'"):
        next(q._put_many([b"a", 3], None, None, "replace"))
    with pytest.raises(OverflowError, match="delay is too far in the future"):
        next(q._put_one(b"x", 2.0**60, "delay", False, None, "replace"))
    with pytest.raises(ValueError, match="priority must be a finite number"):
        next(q._put_one(b"x", 0, "delay", False, None, "replace", math.inf))
    # a delay in the past is due now
    steps, _ = drive(q._put_one(b"x", -5, "delay", False, "i", "replace"), [1])
    assert steps[0].args[-1] == 0


# -- claim


def test_a_claim_without_waiting_reads_its_reply():
    q = flows(lease=2.5)
    reply = claim_reply(10 * US, -1, b"", ("a", b"bone", 9 * US, 1, "t1"), ("b", b"stwo", 9_500_000, 3, "t2"))
    steps, jobs = drive(q._claim_flow(2, 0), [reply])
    assert calls(steps) == [("claim", [2, 2_500_000, "", ""])]
    assert jobs == [Job("a", b"one", 9.0, 1, "t1"), Job("b", "two", 9.5, 3, "t2")]
    assert q._wake.offset is not None and not q._wake.must  # the server's clock, learnt


def test_a_claim_buries_what_it_cannot_decode_and_delivers_the_others():
    q = flows(serializer=Json())
    reply = claim_reply(US, -1, b"", ("a", b"b[1]", US, 1, "t1"), ("b", b"b{", US, 1, "t2"))
    reply += [b"c", None, b"1000000", 2, b"t3"]  # a replayed claim whose payload went
    steps, jobs = drive(q._claim_flow(5, 0), [reply, 2])
    assert jobs == [Job("a", [1], 1.0, 1, "t1")]
    (claim, claim_args), (bury, bury_args) = calls(steps)
    assert (claim, bury) == ("claim", "bury")
    assert bury_args[:2] == ["b", "t2"] and bury_args[2].startswith("payload undecodable: JSONDecodeError")
    assert bury_args[3:] == ["c", "t3", "payload missing"]


def test_a_full_batch_claims_again_and_an_empty_reply_ends():
    q = flows()
    full = claim_reply(US, 0, b"", *[(f"j{i}", b"bx", US, 1, "t") for i in range(500)])
    steps, jobs = drive(q._claim_flow(600, 0), [full, claim_reply(US, -1, b"")])
    assert [s.args[0] for s in steps] == [500, 100]
    assert len(jobs) == 500
    with pytest.raises(ValueError, match="max_items must be at least 1, got -1"):
        next(q._claim_flow(-1, 0))


def test_a_waiting_get_listens_registers_waits_and_ends_when_the_server_stays_away():
    q = flows()
    flow = q._get_flow(5.0)
    assert flow.send(None) == _TAKE_IDLE
    look = flow.send(False)  # no idle subscription: it looks first, not as the listener
    assert type(look) is _Run and look.op == "claim" and look.args[2:] == ["", ""]
    listen = flow.send(claim_reply(US, -1, b""))
    assert type(listen) is _Listen and 0 < listen.seconds <= 5.0
    register = flow.send(True)  # the listener now: among the idle ones
    assert type(register) is _Register and register.until == listen.until
    q._wake.registered = True  # as the driver does once registered
    wait = flow.send(None)
    assert type(wait) is _Wait and 0 < wait.seconds <= 5.0
    assert type(flow.send(False)) is _Subscribe  # the subscription broke
    with pytest.raises(StopIteration) as stop:
        flow.throw(q._away("the server stayed away"))
    assert stop.value.value is None  # the wait ends with what it has


def test_the_listener_s_look_names_it_and_takes_its_flags():
    q = flows()
    flow = q._claim_flow(1, 5.0)
    assert flow.send(None) == _TAKE_IDLE
    look = flow.send(True)  # an idle subscription taken: the listener looks at once
    assert look.op == "claim" and look.args == [1, 30 * US, q._me, "w"]
    with pytest.raises(StopIteration) as stop:  # a job came: the flow returns it
        flow.send(claim_reply(US, -1, b"i", ("a", b"bx", US, 1, "t")))
    assert stop.value.value == [Job("a", b"x", 1.0, 1, "t")]
    assert q._wake.registered  # the script counted it among the idle ones (role i)


def test_get_with_ack_sends_it_at_once_with_the_claim_or_alone():
    q = flows()
    done = Job("a", b"", 0.0, 1, "tok")
    # a look: the ack pairs ride on the claim, whose reply ends with their outcome
    steps, job = drive(
        q._get_flow(0, ack=done), [claim_reply(US, -1, b"", ("b", b"bx", US, 1, "t")) + [b"1"]]
    )
    assert calls(steps) == [("claim", [1, 30 * US, "", "", "a", "tok"])]
    assert job == Job("b", b"x", 1.0, 1, "t")
    # the listener, idle with nothing heard due: the ack alone, then the wait
    q = flows()
    flow = q._claim_flow(1, 5.0)
    assert flow.send(None) == _TAKE_IDLE
    assert flow.send(True).op == "claim"
    assert type(flow.send(claim_reply(US, -1, b"i"))) is _Wait
    flow.close()
    flow = q._get_flow(5.0, ack="c")
    assert flow.send(None) == _TAKE_IDLE
    ack = flow.send(True)
    assert type(ack) is _Run and (ack.op, ack.args) == ("ack", ["c", ""])
    assert type(flow.send(b"1")) is _Wait
    with pytest.raises(StopIteration) as stop:
        flow.throw(q._away("the server stayed away"))
    assert stop.value.value is None


# -- ack, nack, extend, by id


def test_ack_sends_id_and_token_pairs_and_reads_one_byte_each():
    q = flows()
    steps, out = drive(q._ack_flow([Job("a", b"", 0.0, 1, "tok"), "b"]), [b"10"])
    assert calls(steps) == [("ack", ["a", "tok", "b", ""])]
    assert out == [True, False]
    steps, out = drive(q._ack_flow([f"j{i}" for i in range(501)]), [b"1" * 500, b"0"])
    assert [len(args) for _, args in calls(steps)] == [1000, 2]
    assert out == [True] * 500 + [False]
    with pytest.raises(TypeError, match="job_or_id must be a str, not 'int'"):
        next(q._ack_one(3))


def test_nack_with_a_delay_or_the_queue_s_backoff():
    q = flows(retry=RetryPolicy(base=0.5))
    steps, out = drive(q._nack_flow(Job("a", b"", 0.0, 1, "t"), 2), [1])
    assert calls(steps) == [("nack", ["a", "t", 2_000_000, "", ""])] and out is True
    steps, out = drive(q._nack_flow("b", None), [0])
    ((op, args),) = calls(steps)
    assert args[:3] == ["b", "", ""] and 0.0 <= float(args[3]) < 1.0
    assert args[4] == "0.5,2.0,300.0,0.1" and out is False


def test_extend_takes_the_queue_s_lease_or_its_own_and_a_deadline():
    q = flows(lease=4)
    steps, out = drive(q._extend_flow("a", None), [1])
    assert calls(steps) == [("extend", ["a", "", 4_000_000])] and out is True
    steps, _ = drive(q._extend_flow(Job("a", b"", 0.0, 1, "t"), 0.25, until=12.0), [0])
    assert steps[0].args == ["a", "t", 250_000] and steps[0].until == 12.0
    with pytest.raises(ValueError, match="lease must be a positive number of seconds, got 0.0"):
        next(q._extend_flow("a", 0))


def test_the_calls_by_id():
    q = flows()
    steps, out = drive(q._by_id_flow("cancel", "x"), [1])
    assert calls(steps) == [("cancel", ["x"])] and out is True
    steps, out = drive(q._by_id_flow("reschedule", "x", 5), [0])
    assert calls(steps) == [("reschedule", ["x", 5])] and out is False
    with pytest.raises(TypeError, match="job_id must be a str, not 'bytes'"):
        next(q._by_id_flow("cancel", b"x"))


# -- recurring


def test_put_recurring_every_or_cron():
    q = flows()
    steps, out = drive(q._recur_flow(b"tick", 2, None, "r1", 0), [1])
    assert out == "r1" and calls(steps) == [("recur", ["r1", "e2000000", "0", b"btick"])]
    steps, out = drive(q._recur_flow("t", None, "*/5 * * * *", None, 1.5), [1])
    ((_, args),) = calls(steps)
    assert args == [out, "c" + Cron("*/5 * * * *")._wire(), "1.5", b"st"] and len(out) == 32
    with pytest.raises(TypeError, match="takes every= or cron="):
        next(q._recur_flow(b"x", 1, "* * * * *", None, 0))
    with pytest.raises(ValueError, match="every must be a finite number of seconds of at least 0.001"):
        next(q._recur_flow(b"x", 0.0001, None, None, 0))


# -- the reading calls


def test_stats_and_qsize():
    q = flows()
    steps, out = drive(q._stats_flow(), [[1, 2, 3, 4]])
    assert calls(steps) == [("stats", [])]
    assert out == {"delayed": 1, "due": 2, "leased": 3, "dead": 4}
    assert drive(q._qsize_flow(), [[b"1", b"2", b"3", b"4"]])[1] == 6


def dead_rows(n: int, first: int = 0) -> List[Any]:
    out: List[Any] = []
    for i in range(first, first + n):
        out += [f"d{i}".encode(), b"bp", b"2000000", 3, b"too many attempts"]
    return out


def test_dead_pages_by_500_and_reads_reasons():
    q = flows()
    steps, jobs = drive(q._dead_flow(None, 2), [dead_rows(500), dead_rows(3, 500)])
    assert calls(steps) == [("dead", [2, 501]), ("dead", [502, 1001])]
    assert len(jobs) == 503 and jobs[0] == Job("d0", b"p", 2.0, 3, reason="too many attempts")
    steps, jobs = drive(q._dead_flow(2, 0), [dead_rows(2)])
    assert calls(steps) == [("dead", [0, 1])] and len(jobs) == 2
    with pytest.raises(ValueError, match="start must be non-negative, got -1"):
        next(q._dead_flow(None, -1))
    # a payload the serializer cannot read comes back raw, never raising
    q = flows(serializer=Json())
    _, jobs = drive(q._dead_flow(1, 0), [[b"x", b"b{", b"0", 1, b"r"]])
    assert jobs[0].payload == b"{"


def test_peek_reads_jobs_and_priorities():
    q = flows()
    reply = [b"a", b"sx", b"1500000", 0, b"2.5", b"b", None, b"0", 1, b"0"]
    steps, (jobs, priorities) = drive(q._peek_flow(2), [reply])
    assert calls(steps) == [("peek", [2])]
    assert jobs == [Job("a", "x", 1.5, 0), Job("b", None, 0.0, 1)]
    assert priorities == [2.5, 0.0]
    with pytest.raises(ValueError, match="limit must be from 0 to 1000"):
        next(q._peek_flow(1001))


def test_purge_dead_goes_on_while_chunks_come_back_full():
    q = flows()
    steps, out = drive(q._purge_flow(1.5), [1000, 1000, 7])
    assert calls(steps) == [("purge_dead", [1_500_000])] * 3 and out == 2007
    with pytest.raises(ValueError, match="older_than must be a non-negative number"):
        next(q._purge_flow(-1))


# -- a script's refusal of a conflicting policy


def test_a_policy_refusal_becomes_a_value_error():
    assert _flows._policy_error(Exception("ERR something else")) is None
    err = _flows._policy_error(Exception("DQPOLICY max_attempts 3 5"))
    assert str(err) == (
        "max_attempts=5 conflicts with the queue's stored max_attempts=3: a queue's policy is set "
        "by the first client that states it (pass max_attempts=None to use the stored one, or "
        "clear() the queue)"
    )
    err = _flows._policy_error(Exception("DQPOLICY dead_ttl 1500000 2000000"))
    assert "dead_ttl=2.0 conflicts with the queue's stored dead_ttl=1.5" in str(err)
    err = _flows._policy_error(Exception("DQPOLICY rate 5.0,1.0 2.0,3.0"))
    assert str(err).startswith("rate=2.0, burst=3.0 conflicts with the queue's stored rate=5.0, burst=1.0")
