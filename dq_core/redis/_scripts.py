"""The queue's Lua scripts, read from the ``lua/`` files shipped with the package.

Each script is the prelude (``lua/prelude.lua``: keys, policy, helpers,
``TIME``, the reclaim of ended leases) followed by its own body
(``lua/<op>.lua``), after a line that sets the constants both sides share.
"""

from __future__ import annotations

from importlib import resources
from typing import Dict

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


def _sources() -> Dict[str, str]:
    files = lua_files()
    head = (
        f"local CHUNK, REPLAY_MS, CHUNK_S, REPLAY_PX = {CHUNK}, {REPLAY_MS}, "
        f"'{CHUNK}', '{REPLAY_MS}'\n" + files["prelude.lua"]
    )
    return {op: head + files[f"{op}.lua"] for op in OPS}


#: Each script's source, by operation.
SOURCES = _sources()
