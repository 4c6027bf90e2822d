"""The speed figures, from one file: ``docs/perf-results.json``.

Every measured number the documentation shows lives in that file, once.
This extension renders it:

- ``.. perf-table:: heap`` -- one table of the file, with when, where and
  how it was measured and the command that reproduces it;
- ``.. perf-summary:: choosing`` -- a summary (a list in ``summaries``) of
  chosen rows: workload, Python, dq_core, baseline, ratio;
- ``:perf:`heap/push-pop-1e6/3.13/c``` -- one cell (table, row key, Python
  version, column) inline in prose.

The README cannot run an extension, so ``python docs/_ext/perfresults.py
readme`` prints its summary table as Markdown, and
``tests/test_docs_numbers.py`` fails when the README's table is not exactly
that, or when the README quotes a time or ratio the file does not hold.

The file's format: ``tables`` maps an id to ``title``, ``command``, ``date``,
``version`` (of dq_core), ``python`` (the versions measured), ``machine``,
``conditions``, optional ``unit``, ``columns`` (``[id, heading]`` pairs) and
``rows``: objects with a ``key`` (shared by the same workload on each
Python), a ``python`` version and a value per column id (a missing value is
shown blank).  A new Python version is new rows with the same keys, its
version added to ``python``; rows measured later than the rest of their
table carry their own ``date`` and ``version``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "perf-results.json"


def load(path: Path = RESULTS) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def version_key(python: str) -> tuple[int, ...]:
    return tuple(int(part) for part in python.rstrip("t").split("."))


def row(results: dict[str, Any], table: str, key: str, python: str) -> dict[str, str]:
    """The row ``key`` of ``table`` measured on ``python``; KeyError naming what is missing."""
    try:
        rows = results["tables"][table]["rows"]
    except KeyError:
        raise KeyError(f"no table {table!r} in {RESULTS.name}") from None
    for r in rows:
        if r["key"] == key and r["python"] == python:
            return r
    raise KeyError(f"no row {key!r} for Python {python} in table {table!r} of {RESULTS.name}")


def cell(results: dict[str, Any], ref: str) -> str:
    """The value at ``table/key/python/column``."""
    table, key, python, column = ref.split("/")
    value = row(results, table, key, python).get(column)
    if value is None:
        raise KeyError(f"no value {column!r} in {ref!r}")
    return value


def sorted_rows(table: dict[str, Any]) -> list[dict[str, str]]:
    """The rows grouped by workload (in the file's order), each group by Python version."""
    order: dict[str, int] = {}
    for r in table["rows"]:
        order.setdefault(r["key"], len(order))
    return sorted(table["rows"], key=lambda r: (order[r["key"]], version_key(r["python"])))


def summary(results: dict[str, Any], name: str) -> list[tuple[str, str, str, str, str, str, str]]:
    """(workload, Python, dq_core, baseline, ratio, peer, ratio to the peer) for
    each row of summary ``name``.

    An entry reads its row's ``c``, ``base`` and ``c_x`` columns, or the
    columns it names (``base_column``, ``ratio_column``); with no
    ``baseline`` (nothing in the standard library does the work), dashes.  Its ``peer``, when
    given, is the strongest peer on the package index measured like for like
    (``{"name", "time": "table/key/python/column", "ratio": ...}``, refs as
    ``cell`` reads them, often another table's row); without one, a dash.
    """
    out = []
    for s in results["summaries"][name]:
        r = row(results, s["table"], s["key"], s["python"])
        dash = "\u2014"
        base, ratio = dash, dash  # no baseline in the standard library
        if s.get("baseline"):
            base = f"{r[s.get('base_column', 'base')]} ({s['baseline']})"
            ratio = r[s.get("ratio_column", "c_x")]
        peer, peer_x = dash, dash
        if "peer" in s:
            p = s["peer"]
            peer, peer_x = f"{cell(results, p['time'])} ({p['name']})", cell(results, p["ratio"])
        out.append((s["label"], s["python"], r["c"], base, ratio, peer, peer_x))
    return out


SUMMARY_HEADINGS = (
    "workload",
    "Python",
    "dq_core (compiled)",
    "baseline",
    "speed-up",
    "strongest peer",
    "vs peer",
)


def markdown_summary(results: dict[str, Any], name: str = "readme") -> str:
    """Summary ``name`` as a Markdown table (the README's)."""
    lines = ["| " + " | ".join(SUMMARY_HEADINGS) + " |", "|" + "---|" * len(SUMMARY_HEADINGS)]
    lines += ["| " + " | ".join(cells) + " |" for cells in summary(results, name)]
    return "\n".join(lines) + "\n"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def measured_on(table: dict[str, Any]) -> str:
    """When, with what and where: the table's ``date`` and ``version``, and
    those of rows that carry their own (rows added later, for a newer Python)."""
    later: dict[tuple[str, str], list[str]] = {}
    for r in table["rows"]:
        when = (r.get("date", table["date"]), r.get("version", table["version"]))
        if when != (table["date"], table["version"]) and r["python"] not in later.get(when, []):
            later.setdefault(when, []).append(r["python"])
    text = (
        f"Measured {table['date']} with dq_core {table['version']} on CPython "
        f"{_and(table['python'])}, on a {table['machine']}: {table['conditions']}."
    )
    for (date, version), pythons in later.items():
        text += f"  The CPython {_and(pythons)} rows: {date}, dq_core {version}."
    return text


def _literal(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|").replace("`", "\\`")


def rst_table(headings: list[str], rows: list[list[str]], widths: str = "") -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append(f"   :widths: {widths}")
    lines.append("")
    for i, cells in enumerate([headings, *rows]):
        for j, c in enumerate(cells):
            lines.append(("   * - " if j == 0 else "     - ") + (_literal(c) if c else " "))
    return lines


try:
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective, SphinxRole
except ImportError:  # run as a script, or from the tests: no Sphinx needed
    pass
else:

    class _Rendering(SphinxDirective):
        required_arguments = 1

        def render(self, lines: list[str]) -> list[nodes.Node]:
            self.env.note_dependency(str(RESULTS))
            container = nodes.container()
            self.state.nested_parse(StringList(lines, source=str(RESULTS)), self.content_offset, container)
            return container.children

    class PerfTable(_Rendering):
        """``.. perf-table:: <table id>``."""

        def run(self) -> list[nodes.Node]:
            table = load()["tables"][self.arguments[0]]
            columns = table["columns"]
            unit = f"  Times are {table['unit']}." if "unit" in table else ""
            lines = [
                _literal(measured_on(table)) + unit,
                "",
                ".. code-block:: sh",
                "",
                "   " + table["command"],
                "",
            ]
            rest = max(1, 64 // (len(columns) - 1))  # the first column (the workload) widest
            lines += rst_table(
                [heading for _, heading in columns],
                [[r.get(cid, "") for cid, _ in columns] for r in sorted_rows(table)],
                " ".join(["36"] + [str(rest)] * (len(columns) - 1)),
            )
            return self.render(lines)

    class PerfSummary(_Rendering):
        """``.. perf-summary:: <summary name>``."""

        def run(self) -> list[nodes.Node]:
            rows = [list(cells) for cells in summary(load(), self.arguments[0])]
            return self.render(rst_table(list(SUMMARY_HEADINGS), rows, "26 6 12 22 8 18 8"))

    class PerfCell(SphinxRole):
        """``:perf:`table/key/python/column```."""

        def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
            self.env.note_dependency(str(RESULTS))
            try:
                value = cell(load(), self.text)
            except (KeyError, ValueError) as e:
                msg = self.inliner.reporter.error(f"perf: {e}", line=self.lineno)
                return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
            return [nodes.Text(value)], []

    def setup(app):  # type: ignore[no-untyped-def]
        app.add_directive("perf-table", PerfTable)
        app.add_directive("perf-summary", PerfSummary)
        app.add_role("perf", PerfCell())
        return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    # python docs/_ext/perfresults.py [summary name]: that summary as Markdown
    sys.stdout.write(markdown_summary(load(), sys.argv[1] if len(sys.argv) > 1 else "readme"))
