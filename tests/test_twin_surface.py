"""Every public class looks the same from outside in both implementations.

For each public class of ``dq_core`` and ``dq_core.aio``: the class's
signature (``inspect.signature(cls)``), and for each method both twins
have, its signature, annotations included (a compiled text signature holds
none, so the pure twins' run-time signatures carry none either:
``dq_core._signature.strip_annotations``), and its docstring.  A compiled
``__init__`` is a slot wrapper whose signature says ``(self, /, *args,
**kwargs)``: the class's own signature is the one to compare, and it is.
"""

from __future__ import annotations

import inspect

from dq_core._assemble import AioClasses, Classes

#: dunders whose text the twins keep identical (the rest are object's or the ABCs')
DUNDERS = ("__len__", "__contains__", "__getitem__", "__iter__", "__bool__", "__repr__")


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError) as exc:
        return f"<no signature: {type(exc).__name__}>"


def _methods(c: type, py: type) -> list[str]:
    names = []
    for name in sorted(set(dir(c)) & set(dir(py))):
        if name.startswith("__") and name not in DUNDERS:
            continue
        a = inspect.getattr_static(c, name)
        if isinstance(a, (staticmethod, classmethod, property, type)) or not callable(getattr(c, name)):
            continue
        names.append(name)
    return names


def _pairs(both):
    c, py = both
    out = [(name, getattr(c, name), getattr(py, name)) for name in Classes._fields]
    out += [(f"aio.{name}", getattr(c.aio, name), getattr(py.aio, name)) for name in AioClasses._fields]
    return out


def test_every_public_class_has_one_signature(both):
    for name, c, py in _pairs(both):
        assert _signature(c) == _signature(py), name


def test_every_method_has_one_signature_and_docstring(both):
    differ = []
    for name, c, py in _pairs(both):
        for m in _methods(c, py):
            a, b = getattr(c, m), getattr(py, m)
            if _signature(a) != _signature(b):
                differ.append(f"{name}.{m}: {_signature(a)} != {_signature(b)}")
            if inspect.getdoc(a) != inspect.getdoc(b):
                differ.append(f"{name}.{m}: docstrings differ")
    assert not differ, "\n".join(differ)
