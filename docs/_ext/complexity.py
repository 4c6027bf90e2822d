"""``.. complexity:: dq_core.Heap``: a table of a class's public methods and their cost.

The cost comes from the docstrings: the first ``O(...)`` sentence of each
(the summary line ends with it where the cost is one figure; otherwise the
body states it).  A member whose docstring names no cost gets the text of
the directive's ``:costs:`` option (lines ``name: cost`` or
``name: cost | summary``), or O(1) for an attribute, or an em dash;
``:costs:`` also overrides.  So the table cannot drift from the docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import re

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

COST = re.compile(r"O\([^)]*\)(?:[^.]|\.(?=\S))*")
DUNDERS = ("__len__", "__contains__", "__iter__", "__getitem__", "__setitem__", "__delitem__")
DUNDER_SUMMARY = {
    "__len__": "``len(x)``: how many are held",
    "__contains__": "``key in x``",
    "__iter__": "``iter(x)``",
    "__getitem__": "``x[key]``",
    "__setitem__": "``x[key] = value``",
    "__delitem__": "``del x[key]``",
    "__aiter__": "``async for item in x``",
}
FOREIGN = (
    "builtins",
    "abc",
    "collections.abc",
    "typing",
    "queue",
    "asyncio.queues",
    "asyncio.mixins",
    "concurrent.futures._base",
)
DUNDERS += ("__aiter__",)


def public_members(cls: type) -> list[tuple[str, object]]:
    out, seen = [], set()
    for klass in cls.__mro__:
        if klass.__module__ in FOREIGN or klass is object:
            continue
        for name in vars(klass):
            if name in seen or (name.startswith("_") and name not in DUNDERS):
                continue
            seen.add(name)
            out.append((name, inspect.getattr_static(cls, name)))
    return out


def summary_and_cost(obj: object) -> tuple[str, str]:
    target = obj.fget if isinstance(obj, property) else obj
    target = getattr(target, "__func__", target)
    doc = inspect.getdoc(target) or ""
    if not doc or doc.startswith(("Return len(self)", "Return key in self", "Initialize self")):
        return "", ""
    first = doc.split("\n\n")[0].replace("\n", " ")
    m = COST.search(doc.replace("\n", " "))
    summary = first[: first.index("O(")].rstrip() if "O(" in first else first
    return summary, (m.group(0).rstrip(". ") if m else "")


class Complexity(SphinxDirective):
    required_arguments = 1
    option_spec = {"costs": directives.unchanged, "skip": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        modname, _, clsname = self.arguments[0].rpartition(".")
        cls = getattr(importlib.import_module(modname), clsname)
        given = dict(
            (k.strip(), v.strip())
            for k, _, v in (line.partition(":") for line in self.options.get("costs", "").splitlines())
            if k.strip()
        )
        skip = set(self.options.get("skip", "").split())
        rows = []
        for name, obj in public_members(cls):
            if name in skip:
                continue
            summary, cost = summary_and_cost(obj)
            kind = "attribute" if isinstance(obj, property) or not callable(obj) else "method"
            if kind == "attribute" and not cost:
                cost = "O(1)"
            override, _, text = given.get(name, "").partition("|")
            cost = override.strip() or cost or "\u2014"
            summary = text.strip() or summary or DUNDER_SUMMARY.get(name, "")
            ref = (
                f":attr:`~{self.arguments[0]}.{name}`"
                if kind == "attribute"
                else f":meth:`~{self.arguments[0]}.{name}`"
            )
            if name in DUNDERS:
                ref = f"``{name}``"
            rows.append((ref, cost, summary))
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 22 22 56",
            "",
            "   * - member",
            "     - cost",
            "     - what it does",
        ]
        for ref, cost, summary in rows:
            lines += [f"   * - {ref}", f"     - {cost}", f"     - {summary or ' '}"]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="complexity"), self.content_offset, container)
        return container.children


def setup(app):  # type: ignore[no-untyped-def]
    app.add_directive("complexity", Complexity)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
