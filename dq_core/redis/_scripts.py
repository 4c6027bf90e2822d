"""The queue's Lua scripts, read from the ``lua/`` files shipped with the package.

Each script is the prelude (``lua/prelude.lua``: keys, policy, helpers,
``TIME``, the reclaim of ended leases) followed by its own body
(``lua/<op>.lua``), after a line that sets the constants both sides share.
A script keeps only the prelude's helpers it calls (``local function``
blocks named, however indirectly, by its body or the prelude's statements):
Lua makes a closure of each helper at every call, which cost more than the
work of a small call (callgrind on redis-server 7.0).  The helpers off the
common paths (marked ``-- lazy``) are made only when the call may need them
(NEED): a claim then makes 15 closures fewer (a closure costs about 500
server instructions for each local of the prelude it captures).
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Dict, FrozenSet, List, Set, Tuple

#: The queue's keys, in the order the scripts name them (KEYS[1..12]).
KEY_NAMES = ("q", "state", "pay", "lease", "dead", "seq", "meta", "idle", "qp", "rdy", "pri", "rec")
#: Lua's unpack takes a few thousand values at most; scripts work in chunks.
CHUNK = 1000
#: How long a state-changing call's reply is kept for a replay (milliseconds).
REPLAY_MS = 60_000
#: Every script, by the name of its ``lua/`` file.
OPS = (
    "put",
    "claim",
    "ack",
    "bury",
    "nack",
    "extend",
    "cancel",
    "reschedule",
    "requeue_dead",
    "purge_dead",
    "stats",
    "dead",
    "clear",
    "policy",
    "peek",
    "recur",
    "unrecur",
)
#: The scripts that only read (and reclaim, which a replay may repeat), or
#: whose writes a replay may repeat (policy): no replay record.
READ_ONLY = frozenset({"stats", "dead", "clear", "policy", "peek"})


def lua_files() -> Dict[str, str]:
    """The text of each ``lua/`` file the scripts are made of, by file name."""
    folder = resources.files(__package__).joinpath("lua")
    names = ["prelude.lua"] + [f"{op}.lua" for op in OPS]
    return {name: folder.joinpath(name).read_text(encoding="utf-8") for name in names}


_HELPER = re.compile(r"local function ([A-Za-z_][A-Za-z0-9_]*)\(")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _units(prelude: str) -> List[Tuple[str, str]]:
    """The prelude cut into units: (name, text) for each top-level helper (a
    ``local function`` block, to the ``end`` that closes it at column 0), and
    ('', text) for each run of other lines (statements, comments: kept)."""
    units: List[Tuple[str, str]] = []
    lines = prelude.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        found = _HELPER.match(lines[i])
        if found:
            j = i
            while lines[j].rstrip("\n") != "end":
                j += 1
            units.append((found.group(1), "".join(lines[i : j + 1])))
            i = j + 1
        else:
            if units and units[-1][0] == "":
                units[-1] = ("", units[-1][1] + lines[i])
            else:
                units.append(("", lines[i]))
            i += 1
    return units


def _code_names(text: str) -> Set[str]:
    """The names a piece of Lua mentions outside its comments."""
    return set(_NAME.findall(re.sub(r"--[^\n]*", "", text)))


def _shaken(prelude: str, body: str) -> str:
    """The prelude without the helpers that neither ``body`` nor the
    prelude's statements call, directly or through other helpers."""
    units = _units(prelude)
    helpers = {name: _code_names(text) for name, text in units if name}
    wanted = _code_names(body).union(*(_code_names(text) for name, text in units if not name))
    todo = [n for n in wanted if n in helpers]
    keep: Set[str] = set()
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo += [n for n in helpers[name] if n in helpers and n not in keep]
    return "".join(text for name, text in units if not name or name in keep)


#: A helper whose ``local function`` line ends so is off the common paths:
#: made only when the call may need it (see _deferred)
_LAZY = "  -- lazy"


#: When a script makes its lazy helpers: a Lua condition on what the prelude
#: knows before them (a script not named here: always).  A claim or an ack
#: needs them for ended leases (retries), priorities, recurring jobs and dead
#: jobs' retention; a put only to replace or keep ids.
NEED = {
    "put": "ARGV[4] ~= 'new' or dttl > 0 or dmax > 0",
    "claim": "#ended > 0 or prio or recur or dttl > 0 or dmax > 0",
    "ack": "#ended > 0 or dttl > 0 or dmax > 0",
}
#: Marked helpers a script makes with the others all the same (a claim buries
#: a job whose payload was lost, which no condition above foretells).
EAGER = {"claim": frozenset({"bury"})}


def _deferred(text: str, need: str, eager: FrozenSet[str] = frozenset()) -> str:
    """``text`` (a shaken prelude) with its lazy helpers made only if
    ``need`` holds: declared where the first of them was (``local a, b, ...``:
    the helpers after it see the names), made where the last was (all they
    call is made by then), in one ``if`` block.  A closure is made each call,
    and each of its upvalues found by a walk of the open ones (about 500
    server instructions for a local declared early): a block, unlike a
    function making them on demand, captures nothing."""
    units = _units(text)
    lazy = [
        i
        for i, (name, body) in enumerate(units)
        if name and name not in eager and body.split("\n", 1)[0].endswith(_LAZY)
    ]
    if not lazy:
        return text
    names = ", ".join(units[i][0] for i in lazy)
    out = []
    for i, (name, body) in enumerate(units):
        if i == lazy[0]:
            out.append(f"local {names}  -- made below if this call may need them\n")
        if i in lazy:
            if i == lazy[-1]:
                made = "".join(units[j][1].replace("local function ", "function ", 1) for j in lazy)
                out.append(
                    "-- the helpers off the common paths, made only if this call may need one\n"
                    f"if {need} then\n" + made + "end  -- lazy helpers\n"
                )
            continue
        out.append(body)
    return "".join(out)


#: The scripts that do not reclaim ended leases first: nothing a put does
#: depends on them (claims, acks and the others still reclaim).
NO_RECLAIM = frozenset({"put"})
_RECLAIM = "\nreclaim(now)\n"
#: A put reads no ended leases (the reclaim's list is empty).
_ENDED = (
    "local ended = redis.call('ZRANGEBYSCORE', lease, '-inf', now_s, 'WITHSCORES', 'LIMIT', '0', CHUNK_S)\n"
)
#: The scripts that look for their replay record themselves (put: see put.lua).
NO_PRIOR = frozenset({"put"})
_PRIOR = "\nif nonce ~= '' then prior = redis.call('GET', rkey) end\n"


def _sources() -> Dict[str, str]:
    files = lua_files()
    head = f"local CHUNK, REPLAY_MS, CHUNK_S, REPLAY_PX = {CHUNK}, {REPLAY_MS}, '{CHUNK}', '{REPLAY_MS}'\n"
    prelude = files["prelude.lua"]
    assert prelude.count(_RECLAIM) == 1 and prelude.count(_PRIOR) == 1 and prelude.count(_ENDED) == 1
    out = {}
    for op in OPS:
        text = prelude
        if op in NO_RECLAIM:
            text = text.replace(_RECLAIM, "\n").replace(_ENDED, "local ended = {}\n")
        text = text.replace(_PRIOR, "\n") if op in NO_PRIOR else text
        body = files[f"{op}.lua"]
        out[op] = (
            head + _deferred(_shaken(text, body), NEED.get(op, "true"), EAGER.get(op, frozenset())) + body
        )
    return out


#: Each script's source, by operation.
SOURCES = _sources()
