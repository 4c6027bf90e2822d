"""Class signatures for ``inspect``, where a class cannot give its own.

A compiled class's text signature holds only literals, so one whose
``clock`` defaults to ``time.monotonic`` carries a ``__signature__`` made by
:func:`signature`; a pure class whose ``__new__`` takes any arguments gets
its ``__init__``'s from :class:`InitSignature`.  A compiled method's text
signature cannot hold annotations at all, so :func:`strip_annotations`
gives the pure twins' methods, at run time, the same signatures without
them (the annotations stay in the source for type checkers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import inspect

__all__ = ["NO_DEFAULT", "InitSignature", "signature", "strip_annotations", "STRIPPED"]

#: A parameter without a default, for :func:`signature`.
NO_DEFAULT: Any = object()


def signature(*params: tuple[str, Any]) -> inspect.Signature:
    """The Signature of a compiled class: ``(name, default)`` pairs, NO_DEFAULT for none.

    A default of time.monotonic cannot be written in a docstring's text
    signature, so the compiled class carries this one for inspect.  A
    ``("*", None)`` pair makes the parameters after it keyword-only.
    """
    import inspect

    P = inspect.Parameter
    kind: Any = P.POSITIONAL_OR_KEYWORD
    out = []
    for name, default in params:
        if name == "*":
            kind = P.KEYWORD_ONLY
            continue
        out.append(P(name, kind, default=P.empty if default is NO_DEFAULT else default))
    return inspect.Signature(out)


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


#: The functions whose run-time signature :func:`strip_annotations` set (the
#: documentation, which shows the pure twins' types, gives theirs back).
STRIPPED: list[Any] = []


def strip_annotations(cls: type, modules: tuple[str, ...]) -> None:
    """Give the functions of ``cls`` defined in ``modules`` their signatures without annotations.

    ``inspect.signature`` and ``help()`` then show a pure twin's methods as
    they show the compiled ones, whose text signatures hold no annotations;
    ``__annotations__`` (what ``typing.get_type_hints`` reads) is untouched.
    """
    import inspect
    from types import FunctionType

    for value in vars(cls).values():
        f = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        if not isinstance(f, FunctionType) or f.__module__ not in modules or "__signature__" in vars(f):
            continue
        sig = inspect.signature(f)
        f.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
            return_annotation=sig.empty,
        )
        STRIPPED.append(f)
