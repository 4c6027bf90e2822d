"""``python -m dq_core.redis``: look at and tend a queue from the command line.

Commands: ``stats`` (counts and the stored policy), ``peek`` (the next
scheduled jobs, not claimed), ``dead`` (the dead jobs and why), ``requeue``
(dead jobs scheduled again), ``purge`` (dead jobs deleted).  Readable tables
by default, one JSON document with ``--json``.  Payloads are shown as stored
(bytes or str); nothing is deserialized.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO

import redis

from ._job import Job
from ._sync import RedisDelayQueue

#: Where the queue's server is when neither --url nor REDIS_URL says.
DEFAULT_URL = "redis://localhost:6379/0"
#: How long a command retries a lost connection by default (seconds).
RETRY_FOR = 2.0
_PREVIEW = 60


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dq_core.redis",
        description="Look at and tend a dq_core.redis queue.",
        epilog="Payloads are shown as stored (bytes or str): nothing is deserialized.",
    )
    p.add_argument(
        "--url",
        default=os.environ.get("REDIS_URL", DEFAULT_URL),
        help="the Redis server (default: $REDIS_URL, else %(default)s "
        "when unset); redis://, rediss:// or unix://",
    )
    p.add_argument("--cluster", action="store_true", help="the URL names a node of a Redis Cluster")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--retry-for",
        type=float,
        default=RETRY_FOR,
        metavar="SECONDS",
        help="how long to retry a lost connection (default %(default)s)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser("stats", help="job counts and the queue's stored policy")
    s.add_argument("name", nargs="+", help="queue name(s)")
    s = sub.add_parser("peek", help="the next scheduled jobs, without claiming them")
    s.add_argument("name", help="queue name")
    s.add_argument("-n", "--limit", type=int, default=10, help="how many (default 10, at most 1000)")
    s = sub.add_parser("dead", help="the dead jobs, oldest death first, and why they died")
    s.add_argument("name", help="queue name")
    s.add_argument("-n", "--limit", type=int, default=20, help="how many (default 20)")
    s.add_argument("--start", type=int, default=0, help="from this rank (default 0)")
    s = sub.add_parser("requeue", help="schedule dead jobs again (attempts back to 0)")
    s.add_argument("name", help="queue name")
    s.add_argument("ids", nargs="*", metavar="ID", help="the dead jobs' ids")
    s.add_argument("--all", action="store_true", help="every dead job")
    s.add_argument("--delay", type=float, default=0.0, help="due after this many seconds")
    s = sub.add_parser("purge", help="delete dead jobs")
    s.add_argument("name", help="queue name")
    s.add_argument(
        "--older-than",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="only those dead at least this long (default: all)",
    )
    return p


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def _payload_doc(payload: Any) -> Dict[str, Any]:
    if isinstance(payload, str):
        return {"payload": payload, "payload_type": "str"}
    if payload is None:
        return {"payload": None, "payload_type": "missing"}
    try:
        return {"payload": payload.decode("utf-8"), "payload_type": "bytes"}
    except UnicodeDecodeError:
        return {"payload": base64.b64encode(payload).decode(), "payload_type": "bytes-base64"}


def _preview(payload: Any) -> str:
    text = repr(payload)
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 3] + "..."


def _table(out: TextIO, header: Sequence[str], rows: List[Sequence[str]]) -> None:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    for row in [header, *rows]:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")


def _policy(q: RedisDelayQueue[Any]) -> Dict[str, Any]:
    client: Any = q.client
    maxa, dttl, dmax, retry, rate = client.hmget(q.keys[6], ["maxa", "dttl", "dmax", "retry", "rate"])
    doc: Dict[str, Any] = {
        "max_attempts": None if maxa is None else int(maxa),
        "dead_ttl": None if dttl is None else int(dttl) / 1e6,
        "dead_max": None if dmax is None else int(dmax),
        "retry": None,
        "rate": None,
    }
    if retry is not None:
        doc["retry"] = dict(
            zip(("base", "factor", "max_delay", "jitter"), map(float, retry.decode().split(",")))
        )
    if rate is not None:
        doc["rate"] = dict(zip(("rate", "burst"), map(float, rate.decode().split(","))))
    return doc


def _shown(policy: Optional[Dict[str, float]]) -> str:
    if policy is None:
        return "-"
    return "(" + ", ".join(f"{k}={v:g}" for k, v in policy.items()) + ")"


def _job_doc(job: Job[Any], **extra: Any) -> Dict[str, Any]:
    return {
        "id": job.id,
        "deadline": job.deadline,
        "attempts": job.attempts,
        **extra,
        **_payload_doc(job.payload),
    }


def _run(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    names = args.name if isinstance(args.name, list) else [args.name]
    queues = [RedisDelayQueue(n, client, retry_for=args.retry_for) for n in names]
    q = queues[0]
    if args.command == "stats":
        docs: List[Dict[str, Any]] = [{"queue": x.name, **x.stats(), "policy": _policy(x)} for x in queues]
        if args.json:
            json.dump(docs if len(docs) > 1 else docs[0], out, indent=2)
            out.write("\n")
            return 0
        for doc in docs:
            out.write(f"queue {doc['queue']}\n")
            for k in ("delayed", "due", "leased", "dead"):
                out.write(f"  {k:<8} {doc[k]}\n")
            pol = doc["policy"]
            retry = pol["retry"]
            shown = _shown(retry)
            out.write(
                f"  max_attempts {pol['max_attempts'] or '-'}, dead_ttl "
                f"{pol['dead_ttl'] or '-'}, dead_max {pol['dead_max'] or '-'}, "
                f"retry {shown}, rate {_shown(pol['rate'])}\n"
            )
        return 0
    if args.command == "peek":
        jobs, priorities = q._drive(q._peek_flow(args.limit))
        s, us = client.time()
        now = s + us / 1e6
        if args.json:
            json.dump(
                [_job_doc(j, priority=p, due=j.deadline <= now) for j, p in zip(jobs, priorities)],
                out,
                indent=2,
            )
            out.write("\n")
            return 0
        _table(
            out,
            ("ID", "DEADLINE (UTC)", "PRIORITY", "ATTEMPTS", "STATE", "PAYLOAD"),
            [
                (
                    j.id,
                    _when(j.deadline),
                    f"{p:g}",
                    str(j.attempts),
                    "due" if j.deadline <= now else "delayed",
                    _preview(j.payload),
                )
                for j, p in zip(jobs, priorities)
            ],
        )
        return 0
    if args.command == "dead":
        jobs = q.dead(args.limit, start=args.start)
        if args.json:
            json.dump([_job_doc(j, reason=j.reason) for j in jobs], out, indent=2)
            out.write("\n")
            return 0
        _table(
            out,
            ("ID", "DEADLINE (UTC)", "ATTEMPTS", "REASON", "PAYLOAD"),
            [(j.id, _when(j.deadline), str(j.attempts), j.reason or "", _preview(j.payload)) for j in jobs],
        )
        return 0
    if args.command == "requeue":
        if args.all == bool(args.ids):
            raise _Usage("requeue takes job ids or --all (one or the other)")
        ids = [j.id for j in q.dead()] if args.all else args.ids
        done = [i for i in ids if q.requeue_dead(i, args.delay)]
        missed = [i for i in ids if i not in set(done)]
        if args.json:
            json.dump({"requeued": done, "not_dead": missed}, out, indent=2)
            out.write("\n")
        else:
            out.write(f"requeued {len(done)} of {len(ids)} job(s)\n")
            for i in missed:
                out.write(f"not dead (unknown, or not in the dead set): {i}\n")
        return 1 if missed else 0
    assert args.command == "purge"
    n = q.purge_dead(args.older_than)
    if args.json:
        json.dump({"purged": n}, out)
        out.write("\n")
    else:
        out.write(f"purged {n} dead job(s)\n")
    return 0


class _Usage(Exception):
    pass


def main(argv: Optional[Sequence[str]] = None, out: Optional[TextIO] = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); the exit status.

    0: done; 1: a requeue found ids not dead, or Redis failed (the error
    goes to stderr); 2: bad usage."""
    parser = _parser()
    args = parser.parse_args(argv)
    out = sys.stdout if out is None else out
    try:
        if args.cluster:
            client: Any = redis.RedisCluster.from_url(args.url)
        else:
            client = redis.Redis.from_url(args.url)
    except ValueError as exc:
        parser.error(f"--url: {exc}")
    try:
        return _run(args, client, out)
    except _Usage as exc:
        parser.error(str(exc))
    except (ValueError, TypeError, OverflowError) as exc:
        parser.error(str(exc))
    except redis.RedisError as exc:
        sys.stderr.write(f"error: Redis at {args.url}: {type(exc).__name__}: {exc}\n")
        return 1
    finally:
        client.close()
    return 2  # pragma: no cover - parser.error exits
