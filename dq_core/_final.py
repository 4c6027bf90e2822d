"""Classes that refuse subclassing, in both implementations alike.

A compiled class marked final is refused by CPython with a message naming
its module (``dq_core._ring.TTLRing``), and a pure class is not refused at
all; so the cores that no subclass could safely extend (their methods call
no overridable one) are left open and refuse subclasses in
``__init_subclass__`` instead, with one message in both twins.
"""

from __future__ import annotations

from typing import Any

__all__ = ["refuse_subclassing"]


def refuse_subclassing(name: str) -> Any:
    """An ``__init_subclass__`` (a classmethod) refusing every subclass of the class ``name``.

    The TypeError says what CPython says for a final type.
    """

    def __init_subclass__(cls: type, /, **kwargs: object) -> None:
        raise TypeError(f"type {name!r} is not an acceptable base type")

    __init_subclass__.__doc__ = f"Refuse subclassing: no method of {name} calls an overridable one."
    return classmethod(__init_subclass__)
