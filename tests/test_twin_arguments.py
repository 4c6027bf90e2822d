"""A call with a missing, extra or unknown argument fails alike in both implementations.

Every public class of ``dq_core`` and ``dq_core.aio``, its constructor and
each public method, is called with too few positional arguments, one too
many, and an unknown keyword; the compiled core's ``TypeError`` must say
word for word what the pure twin's says, in CPython's words, and name the
public class ("Heap.push() missing 1 required positional argument:
'item'"), never an internal one (``DelayCore``, ``QueueCore``, ...).
Methods dq_core inherits from the standard library (``Mapping.get``,
``Executor.map``) keep the standard library's names in both.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest

import dq_core
from dq_core._assemble import AioClasses, Classes

P = inspect.Parameter
POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)


def _cases(sig: inspect.Signature) -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """The wrong calls of a callable with signature ``sig``: (case, args, kwargs)."""
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in POSITIONAL]
    required = [p for p in positional if p.default is P.empty]
    if required:
        yield "none", (), {}
        if len(required) > 1:
            yield "one fewer", (None,) * (len(required) - 1), {}
            yield "last by keyword only", (), {required[-1].name: None}
            yield "first twice", (None,), {required[0].name: None}
    if not any(p.kind is P.VAR_POSITIONAL for p in params):
        yield "too many", (None,) * (len(positional) + 1), {}
    if not any(p.kind is P.VAR_KEYWORD for p in params):
        yield "unknown keyword", (None,) * len(required), {"bogus": 1}


def _error(f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    try:
        result = f(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    if inspect.iscoroutine(result):
        result.close()
    return f"no TypeError: returned {type(result).__name__}"


def _methods(obj: object) -> Iterator[tuple[str, Any]]:
    for name in sorted(dir(type(obj))):
        static = inspect.getattr_static(type(obj), name)
        if name.startswith("_") or isinstance(static, (property, type)):
            continue
        value = getattr(obj, name)
        if callable(value) and getattr(value, "__self__", None) is obj:  # a method, not a clock
            yield name, value


def _probe(label: str, f: Callable[..., Any], sig: inspect.Signature, out: dict[str, str]) -> None:
    for case, args, kwargs in _cases(sig):
        out[f"{label} ({case})"] = _error(f, args, kwargs)


def _probe_class(label: str, cls: type, obj: object, out: dict[str, str]) -> None:
    _probe(f"{label}()", cls, inspect.signature(cls), out)
    for name, method in _methods(obj):
        _probe(f"{label}.{name}()", method, inspect.signature(method), out)


def _messages(ns: SimpleNamespace) -> dict[str, str]:
    """What each wrong call of each public callable of one implementation raises."""
    out: dict[str, str] = {}
    queue = ns.PriorityQueue()
    queue.put(1)  # a get the test would wrongly let through returns at once
    delay = ns.DelayQueue()
    delay.put(1)
    objects = [
        ("Heap", ns.Heap()),
        ("PriorityQueue", queue),
        ("DelayQueue", delay),
        ("TimingWheel", ns.TimingWheel()),
        ("TTLRing", ns.TTLRing(1.0)),
        ("TTLDict", ns.TTLDict(1.0)),
        ("WheelTTLDict", ns.WheelTTLDict(1.0)),
        ("RateLimiter", dq_core.RateLimiter(1.0)),  # one pure class in both
    ]
    timer, executor = ns.Timer(), ns.PriorityExecutor(1)
    try:
        objects += [
            ("Timer", timer),
            ("TimerHandle", timer.call_later(3600, print)),
            ("PriorityExecutor", executor),
        ]
        for label, obj in objects:
            _probe_class(label, type(obj), obj, out)
        _probe("cached()", ns.cached, inspect.signature(ns.cached), out)
    finally:
        timer.stop()
        executor.shutdown()

    async def aio() -> None:
        a = ns.aio
        timer = a.Timer()
        pool = a.PriorityTaskPool(1)
        try:
            for label, obj in [
                ("PriorityQueue", a.PriorityQueue()),
                ("DelayQueue", a.DelayQueue()),
                ("Timer", timer),
                ("TimerHandle", timer.call_later(3600, print)),
                ("RateLimiter", a.RateLimiter(1.0)),
                ("PriorityTaskPool", pool),
            ]:
                _probe_class(f"aio.{label}", type(obj), obj, out)
        finally:
            timer.close()
            pool.close()

    asyncio.run(aio())
    return out


@pytest.fixture(scope="module")
def messages(both):
    return tuple(_messages(ns) for ns in both)


def test_every_public_class_is_probed(messages):
    c, _ = messages
    probed = {key.split("(")[0].split(".")[0] for key in c if not key.startswith("aio.")}
    probed |= {"aio." + key.split("(")[0].split(".")[1] for key in c if key.startswith("aio.")}
    assert {name for name in Classes._fields} <= probed
    assert {f"aio.{name}" for name in AioClasses._fields} <= probed
    assert len(c) > 250


def test_wrong_arguments_raise_one_message_in_both(messages):
    c, py = messages
    assert c.keys() == py.keys()
    differ = [f"{key}:\n  c:  {c[key]}\n  py: {py[key]}" for key in c if c[key] != py[key]]
    assert not differ, f"{len(differ)} of {len(c)} differ:\n" + "\n".join(differ)


#: The standard library's classes whose inherited methods keep their names.
STDLIB_OWNERS = {"Mapping", "MutableMapping", "Executor"}
WORDS = re.compile(
    r"(?:(?P<owner>\w+)\.)?(?P<method>\w+)\(\) (missing \d+ required positional arguments?: '.+'"
    r"|takes (from \d+ to )?\d+ positional arguments? but \d+ (was|were) given"
    r"|got an unexpected keyword argument 'bogus'|got multiple values for argument '\w+')$"
)


@pytest.mark.parametrize("kind", ["c", "py"])
def test_messages_name_the_public_class_in_cpythons_words(messages, kind):
    out = messages[kind == "py"]
    wrong = []
    for key, text in out.items():
        label = key.split("(")[0].removeprefix("aio.")
        cls, _, method = label.partition(".")
        m = WORDS.fullmatch(text)
        if m and m["owner"] is None:  # a function (cached): named as it is public
            if m["method"] != cls or method:
                wrong.append(f"{key}: {text}")
            continue
        if (
            not m
            or (m["owner"], m["method"]) not in {(cls, method or "__init__")}
            and (m["owner"] not in STDLIB_OWNERS or m["method"] != method)
        ):
            wrong.append(f"{key}: {text}")
    assert not wrong, "\n".join(wrong)
