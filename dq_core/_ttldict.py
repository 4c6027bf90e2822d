"""TTLDict: a mapping whose entries all live ``ttl`` seconds, on a FIFO ring of its entries.

The hot paths (``[]``, ``get``, ``in``, ``del``, setting, ``len``,
iteration, ``expire``, ``purge``, ``popitem``) live in ``TTLDictCore``,
compiled or pure; this module makes it a MutableMapping and adds what is
shared by both implementations: views, ``pop``, copying and pickling.
"""

from __future__ import annotations

import copyreg
import types
from collections.abc import ItemsView, ValuesView
from typing import TYPE_CHECKING, Any, Callable, Generic, MutableMapping, Optional, TypeVar, Union

from ._pickling import copied_by_state
from ._ttldictstate import LiveItems, LiveValues

__all__ = ["TTLDict"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

if TYPE_CHECKING:
    from ._ttldictcore_py import TTLDictCore

    class _Base(TTLDictCore[K, V], MutableMapping[K, V]):
        pass
else:
    _Base = Generic  # dq_core._assemble adds an implementation's TTLDictCore and MutableMapping

_MISSING: Any = object()


@copied_by_state()  # its own __reduce__ keeps a subclass's class
class TTLDict(_Base[K, V]):
    """A mapping whose entries all live ``ttl`` seconds from when they were set.

    Setting a key (new or existing) restarts its life and moves it to the
    end: iteration, ``popitem()`` and ``expire()`` go oldest set first,
    which is also expiry order.  An expired key is absent from every read
    (``in``, ``[]``, ``get``, ``len``, iteration) even before ``expire()``
    runs.  Memory follows the live entries without any call: each set
    drops up to 8 expired entries (one comparison when none is due), and
    ``len()``, iteration and ``popitem()`` purge expired entries first.
    ``expire()`` removes the expired entries still held and returns them;
    ``purge()`` removes them and returns only how many.  Iteration walks
    the keys live when it began (it never raises because time passed, and
    may yield a key that expired meanwhile); ``items()``/``values()``/``==``
    skip an entry that expires while they run (``dict(d)`` looks every
    listed key up again and may raise ``KeyError``; ``dict(d.items())``
    does not).  ``maxsize`` (an int >= 1, or None for no limit) evicts the
    oldest entry when a new key would exceed it, expired entries first;
    lowering ``maxsize`` evicts at once.  ``on_expire(key, value)`` is
    called once for every entry removed because it expired or was evicted
    (by a set, ``expire()``, ``purge()``, ``len()``, iteration,
    ``popitem()`` or ``maxsize``; not for ``del``, ``pop``, ``popitem``'s
    own entry, ``clear`` or overwrite), once the mapping is consistent; the
    first exception it raises propagates after all calls are made.  Setting
    a key whose entry has expired is an insert: that entry goes to
    ``on_expire`` then (the new value set), and never to ``expire()``.
    Overwriting a live key keeps the key object first stored, as a dict
    does.  Setters validate as the constructor does.

    ``lru=True`` (keyword-only, fixed at construction) makes ``maxsize``
    evict the least recently used key instead of the oldest set, in O(1):
    a read (``[]``, ``get``, ``setdefault``) or a set makes a key the most
    recently used (``in``, iteration and the views do not), and iteration
    and ``popitem()`` go from the least to the most recently used.  Expiry
    is unchanged: every entry still lives ``ttl`` seconds from its set
    (a read does not extend it), expired entries go before a live key is
    evicted, and ``expire()`` returns them oldest set first.

    ``clock`` must be callable; a reading that is NaN or not a number raises
    an error naming ``clock()``.  ``copy.copy`` shares the keys, values,
    clock and ``on_expire``; ``copy.deepcopy`` copies them; ``pickle``
    stores them all, so a lambda clock or callback makes pickling fail
    (``pickle.PicklingError``).  A pickle made by either implementation
    loads in the other.  Copies and pickles of a subclass keep its class
    and its instance attributes, as a dict subclass's do.

    Each operation is atomic: changes from several threads take turns
    (the compiled core runs each whole, the pure one takes a lock), but a
    sequence of them (``if k not in d: d[k] = v``) needs the caller's lock.
    A change made from user code (a key's ``__eq__``/``__hash__``, a
    finaliser) while another change is under way raises ``RuntimeError``.

    >>> now = [0.0]
    >>> d = TTLDict(10, clock=lambda: now[0])
    >>> d["session"] = "alice"
    >>> now[0] = 9.0; d["session"]
    'alice'
    >>> now[0] = 10.0; "session" in d
    False
    >>> d.expire()
    [('session', 'alice')]
    """

    if not TYPE_CHECKING:  # as the cores: a plain alias, also on classes built from this mixin
        __class_getitem__ = classmethod(types.GenericAlias)

    if TYPE_CHECKING:
        _ttl: float
        on_expire: Optional[Callable[[K, V], object]]
        maxsize: Optional[int]
        lru: bool

        def _held(self) -> int: ...
        def _take(self, key: K) -> V: ...
        def __getstate__(self) -> tuple[Any, ...]: ...
        def __setstate__(self, state: tuple[Any, ...]) -> None: ...

    def items(self) -> ItemsView[K, V]:
        """A view of the live ``(key, value)`` pairs (one expiring meanwhile is skipped)."""
        return LiveItems(self)

    def values(self) -> ValuesView[V]:
        """A view of the live values (one expiring meanwhile is skipped)."""
        return LiveValues(self)

    def pop(self, key: K, default: Union[V, T] = _MISSING) -> Union[V, T]:
        """Remove ``key`` and return its value, else ``default`` (KeyError if not given)."""
        try:
            return self._take(key)
        except KeyError:
            if default is _MISSING:
                raise
            return default

    def __repr__(self) -> str:
        lru = " lru=True" if getattr(self, "lru", False) else ""  # shown when not the default
        return (
            f"<{type(self).__name__} held={self._held()} ttl={self._ttl!r} "
            f"maxsize={getattr(self, 'maxsize', None)!r}{lru}>"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        cls = type(self)
        if cls.__module__ == "dq_core" and cls.__qualname__ == "TTLDict":
            from ._pickling import restore

            # the public class of either implementation: loads in the one in use
            return restore, ("TTLDict",), self.__getstate__()
        # a subclass, as dict's are: its class, and its attributes in the state
        return copyreg.__newobj__, (cls,), self.__getstate__()  # type: ignore[attr-defined]
