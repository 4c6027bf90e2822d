"""Class signatures for ``inspect``, where a class cannot give its own.

A compiled class's text signature holds only literals, so one whose
``clock`` defaults to ``time.monotonic`` carries a ``__signature__`` made by
:func:`signature`; a pure class whose ``__new__`` takes any arguments gets
its ``__init__``'s from :class:`InitSignature`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import inspect

__all__ = ["NO_DEFAULT", "InitSignature", "signature"]

#: A parameter without a default, for :func:`signature`.
NO_DEFAULT: Any = object()


def signature(*params: tuple[str, Any]) -> inspect.Signature:
    """The Signature of a compiled class: ``(name, default)`` pairs, NO_DEFAULT for none.

    A default of time.monotonic cannot be written in a docstring's text
    signature, so the compiled class carries this one for inspect.
    """
    import inspect

    P = inspect.Parameter
    return inspect.Signature([
        P(name, P.POSITIONAL_OR_KEYWORD, default=P.empty if default is NO_DEFAULT else default)
        for name, default in params])


class InitSignature:
    """A class's signature for inspect: its ``__init__``'s without ``self``.

    For the pure classes whose ``__new__`` takes any arguments (to make a
    usable object even if ``__init__`` never runs, as the compiled twins do)
    and leaves refusing them to ``__init__``.
    """

    def __get__(self, obj: object, cls: type) -> Any:
        from inspect import signature

        sig = signature(vars(cls)["__init__"])
        return sig.replace(parameters=list(sig.parameters.values())[1:])
