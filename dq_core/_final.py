"""What a subclass may not do, refused alike in both implementations.

A compiled class marked final is refused by CPython with a message naming
its module (``dq_core._ringcore.TTLRing``), and a pure class is not refused at
all; so the cores that no subclass could safely extend (their methods call
no overridable one) are left open and refuse subclasses in
``__init_subclass__`` instead, with one message in both twins.

The drop-in queues never call the storage hooks of the standard library's
queue classes (``_init``, ``_qsize``, ``_put``, ``_get``): a subclass
overriding one would see its override ignored, so it is refused when it is
defined, and the hooks themselves raise if called.
"""

from __future__ import annotations

from typing import Any, Callable, NoReturn, TypeVar

__all__ = ["refuse_storage_hooks", "refuse_subclassing"]

C = TypeVar("C", bound=type)


def refuse_subclassing(name: str) -> Any:
    """An ``__init_subclass__`` (a classmethod) refusing every subclass of the class ``name``.

    The TypeError says what CPython says for a final type.
    """

    def __init_subclass__(cls: type, /, **kwargs: object) -> None:
        raise TypeError(f"type {name!r} is not an acceptable base type")

    __init_subclass__.__doc__ = f"Refuse subclassing: no method of {name} calls an overridable one."
    return classmethod(__init_subclass__)


def refuse_storage_hooks(face: str, base: str, hooks: tuple[str, ...], instead: str) -> Callable[[C], C]:
    """A class decorator for ``face``, a drop-in for ``base`` that never calls its storage ``hooks``.

    Each hook raises ``TypeError`` naming it; a subclass overriding one,
    itself or through another base, is refused with a ``TypeError`` that
    names the methods to override ``instead``.  An ``__init_subclass__``
    the class defines itself runs after that check, for subclasses it lets
    through.
    """

    def refused(cls: type, name: str) -> Callable[..., NoReturn]:
        def hook(self: Any, *args: object) -> NoReturn:
            raise TypeError(f"{face} does not use {base}'s {name}() hook")

        hook.__name__ = name
        hook.__qualname__ = f"{cls.__qualname__}.{name}"
        hook.__module__ = cls.__module__
        return hook

    def decorate(cls: C) -> C:
        owner: Any = cls  # the decorated class, for super() (typed Any: mypy refuses the TypeVar)
        own: Any = vars(cls).get("__init_subclass__")  # a classmethod, or None
        for name in hooks:
            setattr(cls, name, refused(cls, name))

        def __init_subclass__(sub: Any, /, **kwargs: Any) -> None:
            for name in hooks:
                if getattr(sub, name) is not getattr(owner, name):
                    raise TypeError(
                        f"{sub.__name__} overrides {name}(), which {face} never calls; "
                        f"override {instead} instead"
                    )
            if own is None:
                super(owner, sub).__init_subclass__(**kwargs)
            else:
                own.__get__(None, sub)(**kwargs)

        setattr(cls, "__init_subclass__", classmethod(__init_subclass__))
        return cls

    return decorate
