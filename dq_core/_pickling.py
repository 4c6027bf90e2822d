"""Copying and pickling, for the structures that carry their own state.

A leaf module: the cores and faces import it, it imports nothing of
dq_core.  ``restore`` rebuilds a pickled object on the implementation in
use, from the public classes that ``dq_core/__init__`` hands it with
``publish``, so a pickle made by either implementation loads in the other.
``copied_by_state`` writes ``__reduce__``, ``__copy__`` and
``__deepcopy__`` once for every pure class that pickles through
``__getstate__``/``__setstate__``; ``Uncopyable`` refuses all three, for
the classes that own locks and waiting threads.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, NoReturn, Optional, TypeVar

__all__ = ["Uncopyable", "copied_by_state", "publish", "restore"]

C = TypeVar("C", bound=type)

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


def copied_by_state(copy_doc: Optional[str] = None, deepcopy_doc: Optional[str] = None) -> Callable[[C], C]:
    """A class decorator: copy, deepcopy and pickle through ``__getstate__``/``__setstate__``.

    Pickles name the public class (the decorated class's name) and load
    with ``restore``; a copy is a new object of the same class given the
    state, a deep copy one given a deep copy of it (registered in ``memo``
    first: an item may refer back to the object).  A method the class
    defines itself is kept.  The methods are the class's own, as the
    compiled twins' are (``help()`` shows them alike), with the docstrings
    given.
    """

    def decorate(cls: C) -> C:
        name = cls.__name__

        def __reduce__(self: Any, /) -> tuple[Any, ...]:
            return restore, (name, self.__getstate__())

        def __copy__(self: Any, /) -> Any:
            new = self.__class__.__new__(self.__class__)
            new.__setstate__(self.__getstate__())
            return new

        def __deepcopy__(self: Any, /, memo: dict[int, Any]) -> Any:
            new = self.__class__.__new__(self.__class__)
            memo[id(self)] = new
            new.__setstate__(copy.deepcopy(self.__getstate__(), memo))
            return new

        __copy__.__doc__ = copy_doc
        __deepcopy__.__doc__ = deepcopy_doc
        for method in (__reduce__, __copy__, __deepcopy__):
            if method.__name__ not in vars(cls):
                method.__module__ = cls.__module__
                method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
                setattr(cls, method.__name__, method)
        return cls

    return decorate


class Uncopyable:
    """Refuses copy.copy, copy.deepcopy and pickle: the object owns locks and waiting threads."""

    __slots__ = ()

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError(
            f"cannot pickle or copy {type(self).__name__!r} object: "
            "it owns a lock and the threads waiting on it"
        )
