"""Copying and pickling, for the structures that carry their own state.

A leaf module: the cores and faces import it, it imports nothing of
dq_core.  ``restore`` rebuilds a pickled object on the implementation in
use, from the public classes that ``dq_core/__init__`` hands it with
``publish``, so a pickle made by either implementation loads in the other.
``Uncopyable`` refuses copying and pickling, for the classes that own
locks and waiting threads.
"""

from __future__ import annotations

from typing import Any, Mapping, NoReturn

__all__ = ["Uncopyable", "publish", "restore"]

_NO_STATE: Any = object()

#: dq_core's public classes of the implementation in use, by name (``publish``).
_public: dict[str, Any] = {}


def publish(classes: Mapping[str, Any]) -> None:
    """Name the classes ``restore`` rebuilds: dq_core's public ones, of the implementation in use."""
    _public.update(classes)


def restore(name: str, state: Any = _NO_STATE) -> Any:
    """Unpickling helper: rebuild a ``name`` on the implementation in use.

    Both implementations pickle to this, so a pickle made by one loads in
    the other.  Without ``state`` the object is left empty, for pickle to
    give it its state (which may then refer to the object itself).
    """
    try:
        cls = _public[name]
    except KeyError:
        raise AttributeError(f"module 'dq_core' has no attribute {name!r}") from None
    obj = cls.__new__(cls)
    if state is not _NO_STATE:
        obj.__setstate__(state)
    return obj


class Uncopyable:
    """Refuses copy.copy, copy.deepcopy and pickle: the object owns locks and waiting threads."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns a lock and the threads waiting on it")
