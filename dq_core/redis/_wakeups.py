"""What one listener knows of a queue's wake-ups: whether to look now, and until when to wait.

No I/O: the driver hands it what a subscription heard and what each look
found; the claim flow asks it whether to look, with which flags, and how
long it may wait.  The wake-ups themselves are described in
``lua/prelude.lua``: whoever makes a job due names the one listener that
looks for it (an idle one for a job due now, the watcher for a job due
later); every listener hears the names, and one that is not named looks
itself if no look is heard a while after the job fell due (``GRACE``), so a
listener that died or stopped waiting costs one late job.
"""

from __future__ import annotations

import math
import random
import threading
from typing import List, Optional

_US = 1_000_000
#: Seconds after a job fell due, past which a listener not named for it looks
#: itself unless a look was heard; plus up to ``JITTER`` more, drawn afresh
#: each time, so that the listeners that stand by do not all look at once.
GRACE = 2.0
JITTER = 1.0


class Wakeups:
    """One listener's (one queue object's) view of the wake-ups; thread-safe.

    Times: ``duty``, ``weak`` and ``backup`` are on this process's monotonic
    clock (``inf``: none); ``seen``, ``weak_at`` and ``backup_at`` are the
    server's, in microseconds.
    """

    __slots__ = (
        "me",
        "offset",
        "seen",
        "covered",
        "duty",
        "weak",
        "weak_at",
        "backup",
        "backup_at",
        "must",
        "registered",
        "_lock",
    )

    def __init__(self, me: str) -> None:
        self.me = me.encode()
        #: this process's monotonic clock minus the server's, as the latest
        #: look found it (taken when its reply came: a due time is reached
        #: late, never early); None before the first look
        self.offset: Optional[float] = None
        self.seen = -1  # the server's time of this listener's latest look
        self.covered = -1  # ... of the latest look by any thread of its queue object
        self.duty = math.inf  # look then: told to (named), or the watcher
        self.weak = math.inf  # look then: every listener was told to ('*') ...
        self.weak_at = -1  # ... for jobs due then, unless a look after it is heard
        self.backup = math.inf  # look then, unless a look after backup_at is heard
        self.backup_at = -1
        #: look at once: a job may be due that nobody was told of (a new
        #: subscription, wake-ups dropped, jobs left due by a look)
        self.must = True
        #: the server counts this listener among the idle ones or as the watcher
        self.registered = False
        self._lock = threading.Lock()

    def _local(self, at: int) -> float:
        assert self.offset is not None
        return at / _US + self.offset

    def _stand_by(self, at: int) -> None:
        """Look at ``at`` plus the grace unless a look after ``at`` is heard."""
        t = self._local(at) + GRACE + random.random() * JITTER
        if t < self.backup:
            self.backup, self.backup_at = t, at

    def hear(self, wakeups: List[bytes]) -> None:
        """Take in the wake-ups a subscription heard, oldest first."""
        with self._lock:
            for data in wakeups:
                parts = data.split(b":")
                if len(parts) != 4 or parts[0] not in (b"P", b"L") or self.offset is None:
                    self.must = True  # not understood (another version?): look
                    continue
                kind, due, who, sent = parts[0], int(parts[1]), parts[2], int(parts[3])
                if sent < self.seen:
                    continue  # a look of this listener came later: it saw what this tells
                if sent < self.covered and due <= self.covered:
                    continue  # a look came later: it saw the jobs due by then
                if kind == b"L":  # a look at `sent`: it took what was due by then
                    if self.weak_at <= sent:
                        self.weak, self.weak_at = math.inf, -1
                    if self.backup_at <= sent:
                        self.backup, self.backup_at = math.inf, -1
                if due < 0:
                    continue
                # '*': every listener looks at due; so too when a look says that
                # nobody watches the job due next (an earlier '*' for it may have
                # been taken for one of an earlier job, which this look cleared)
                if who == b"*" or (kind == b"L" and not who and due > sent):
                    t = self._local(due)
                    if t < self.weak:
                        self.weak, self.weak_at = t, due
                elif self.me in who.split(b","):
                    self.duty = min(self.duty, self._local(due))
                    if kind == b"P" and due <= sent:
                        self.registered = False  # taken out of idle to look now
                else:
                    self._stand_by(due)

    def looked(self, now: int, nxt: int, role: bytes, got: int, came: float, listener: bool) -> None:
        """Take in what a look found: the server's time ``now``, when a job may
        next be due (``nxt``, -1: never), this listener's ``role`` (b"w" the
        watcher, b"i" idle, b"" neither), how many jobs it claimed, and the
        monotonic time its reply ``came``; ``listener``: whether the look was
        this listener's (a thread of the same queue object waiting for the
        listener's role only learns the clock and whether jobs are left due)."""
        with self._lock:
            self.offset = came - now / _US
            self.must = got > 0 and 0 <= nxt <= now  # jobs left due: look again
            self.covered = max(self.covered, now)
            if not listener:
                return
            self.seen = max(self.seen, now)
            self.registered = role != b""
            self.weak, self.weak_at = math.inf, -1
            self.backup, self.backup_at = math.inf, -1
            self.duty = self._local(nxt) if role == b"w" else math.inf
            if nxt >= 0 and role != b"w":
                self._stand_by(nxt)

    def should_look(self, now: float, listener: bool) -> bool:
        """Whether to look at ``now``: the listener when it must or is due to;
        another thread of the same queue object only when jobs may be due
        (it leaves the listener's looks to the listener)."""
        return self.must or self.offset is None or (listener and now >= self.next_time())

    def flags(self, now: float) -> str:
        """The claim flags of a look by this listener at ``now`` (see lua/claim.lua)."""
        out = "w"
        if now >= min(self.duty, self.weak, self.backup):
            out += "o"
            if now >= self.backup and now < min(self.duty, self.weak):
                out += "b"
        return out

    def next_time(self) -> float:
        """When this listener must look next (monotonic; inf: when told)."""
        return min(self.duty, self.weak, self.backup)
