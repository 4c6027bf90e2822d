"""Argument errors worded alike in both implementations, naming the public class.

A call with a missing, extra or unknown argument raises CPython's
``TypeError`` in both implementations: "Heap.push() missing 1 required
positional argument: 'item'".

- The pure twins get it from CPython itself, which names a function by its
  ``__qualname__``: :func:`name_methods` gives every twin method reached
  through a public class that class's name ("DelayQueue.put", not the
  internal "DelayCore.put").
- The compiled cores' argument parsing (Cython's) words these errors its own
  way ("push() takes exactly 2 positional arguments (1 given)");
  ``src/include/dq_argerrors.h`` catches them on their way out, on the error
  path only, and asks :func:`message` for CPython's words.
"""

from __future__ import annotations

from typing import Any

__all__ = ["message", "name_methods", "public_class"]


def public_class(cls: type) -> type:
    """The class a user reached: the first in ``cls.__mro__`` defined in dq_core.

    A user's subclass is passed over, as CPython's message names the class
    that defines the method, not the instance's.
    """
    for klass in cls.__mro__:
        module = getattr(klass, "__module__", "")
        if module == "dq_core" or (isinstance(module, str) and module.startswith("dq_core.")):
            return klass
    return cls


def _params(target: Any, func: str, method: bool) -> list[str]:
    """The names of ``target``'s positional parameters, ``self`` left out of a method's."""
    import inspect  # on an error path only: import dq_core does not import inspect

    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return []
    if method and func not in ("__init__", "__cinit__"):  # a class's signature has no self
        params = params[1:]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in positional]


def _quoted(names: list[str]) -> str:
    q = [f"'{n}'" for n in names]
    if len(q) <= 2:
        return " and ".join(q)
    return ", ".join(q[:-1]) + ", and " + q[-1]


def message(kind: str, obj: Any, function: Any, func: str, *details: Any) -> str:
    """CPython's words for an argument error in the compiled ``func``.

    ``func`` is a method of ``obj``, or (``obj`` None) a function, which
    ``function`` is when it binds as a method (a Cython function object
    whose ``__qualname__`` names its class; else None or a module).
    ``kind`` is "arity" (details: fewest and most positional arguments, the
    number given, the keywords given: a tuple of names, a dict or None),
    "keyword" (details: the unexpected keyword) or "reword" (details:
    Cython's "func() got ..." text).  CPython counts self among a method's
    positional arguments, so a method's counts are one higher.
    """
    target: Any = None
    where = f"{func}()"
    if obj is not None:
        owner = public_class(type(obj))
        target = owner if func in ("__init__", "__cinit__") else getattr(owner, func, None)
        if target is None and kind == "reword":  # not obj's method: not its parser's words
            return details[0]  # type: ignore[no-any-return]
        where = f"{owner.__name__}.{func}()"
    elif getattr(function, "__name__", None) == func and hasattr(function, "__qualname__"):
        target, where = function, f"{function.__qualname__}()"
    if kind == "keyword":
        return f"{where} got an unexpected keyword argument '{details[0]}'"
    if kind == "reword":
        text: str = details[0]
        rest = text[text.index("() got ") + 3 :]
        rest = rest.replace("got multiple values for keyword argument", "got multiple values for argument", 1)
        return f"{where} {rest}"
    low, high, given, keywords = details
    shift = obj is not None
    if given > high:
        takes = f"from {low + shift} to {high + shift}" if low < high else f"{high + shift}"
        plural = "s" if low < high or high + shift != 1 else ""
        verb = "was" if given + shift == 1 else "were"
        return f"{where} takes {takes} positional argument{plural} but {given + shift} {verb} given"
    names = _params(target, func, shift) if target is not None else []
    missing = [n for n in names[given:low] if n not in (keywords or ())]
    if not missing:  # no signature to read the names from
        n = low - given
        return f"{where} missing {n} required positional argument{'s' * (n != 1)}"
    s = "s" if len(missing) != 1 else ""
    return f"{where} missing {len(missing)} required positional argument{s}: {_quoted(missing)}"


def name_methods(public: type, modules: tuple[str, ...]) -> None:
    """Name the functions of ``modules`` that ``public`` reaches after ``public``.

    CPython's argument errors name a function by its ``__qualname__``; a
    pure twin's method reached through a public class (``DelayQueue.put``,
    defined on the internal ``DelayCore``) then names the public class, as
    the compiled one does.  A function reached through two public classes
    keeps the first name given.
    """
    reached: dict[str, Any] = {}  # what public.name finds, no descriptor called
    for klass in reversed(public.__mro__):
        reached.update(vars(klass))
    for name, value in reached.items():
        f = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        if (
            type(f).__name__ in _FUNCTIONS
            and getattr(f, "__module__", None) in modules
            and id(f) not in _NAMED
        ):
            f.__qualname__ = f"{public.__name__}.{name}"
            _NAMED.add(id(f))


#: Python functions, and Cython's that bind as methods (binding=True).
_FUNCTIONS = ("function", "cython_function_or_method", "fused_cython_function")
#: The functions name_methods named, by id (they live as long as their modules).
_NAMED: set[int] = set()
