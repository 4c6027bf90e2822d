"""How payloads become the bytes a queue stores, and back.

A stored payload is one type byte (``b``: bytes, ``s``: str, as the caller
gave it) and the bytes themselves, or whatever a ``serializer`` made of it.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, TypeVar, Union

T = TypeVar("T")
#: What a queue without a serializer takes and gives back.
Payload = Union[bytes, str]


class Serializer(Protocol[T]):
    """What ``serializer=`` takes: ``dumps(obj) -> bytes | str``, ``loads(bytes) -> obj``."""

    def dumps(self, obj: T, /) -> Union[bytes, str]: ...

    def loads(self, data: bytes, /) -> T: ...


def check_serializer(serializer: object) -> None:
    """Refuse what has no ``dumps`` and ``loads`` methods."""
    if serializer is not None and not (
        callable(getattr(serializer, "dumps", None)) and callable(getattr(serializer, "loads", None))
    ):
        raise TypeError(f"serializer must have dumps and loads methods, not {type(serializer).__name__!r}")


def encode(serializer: Optional[Serializer[Any]], payload: object, name: str = "payload") -> bytes:
    """The stored bytes of ``payload``; ``name`` is what an error calls it."""
    if serializer is not None:
        payload = serializer.dumps(payload)
        name = "serializer.dumps()"
    if isinstance(payload, bytes):
        return b"b" + payload
    if isinstance(payload, str):
        return b"s" + payload.encode()
    what = "return" if serializer is not None else "be"
    raise TypeError(f"{name} must {what} bytes or str, not {type(payload).__name__!r}")


def decode(serializer: Optional[Serializer[Any]], data: bytes) -> Any:
    """The payload stored as ``data``; raises whatever the serializer raises."""
    body = data[1:]
    if serializer is not None:
        return serializer.loads(body)
    return body.decode() if data[:1] == b"s" else body
