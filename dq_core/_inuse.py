"""The public classes of the implementation in use, handed down to the modules below the assembly.

A leaf module: it imports nothing of dq_core.  Imports only go down, so a
face that must make one of the public classes (``aio.default_timer`` makes
an ``aio.Timer``) cannot import the package that assembles them; that
package hands a maker down with ``provide``, and the face calls
``in_use``.  Nobody sets another module's attributes.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["in_use", "provide"]

#: What makes (or looks up) each public class, by its public name ("aio.Timer").
_makers: dict[str, Callable[[], Any]] = {}


def provide(name: str, maker: Callable[[], Any]) -> None:
    """Hand down the public class ``name``: ``maker()`` returns it (built on first use)."""
    _makers[name] = maker


def in_use(name: str) -> Any:
    """The public class ``name`` of the implementation in use."""
    try:
        maker = _makers[name]
    except KeyError:
        package = name.rpartition(".")[0] or "dq_core"
        raise RuntimeError(f"dq_core.{package} is not imported: it provides {name}") from None
    return maker()
