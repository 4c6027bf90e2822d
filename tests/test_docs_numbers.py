"""Speed figures have one source, docs/perf-results.json, which the README cannot drift from.

The documentation renders the file (docs/_ext/perfresults.py); the README
cannot run an extension, so its summary table is checked here against what
the file renders, and any time or ratio the README quotes must be one of
the file's.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXTENSION = ROOT / "docs" / "_ext" / "perfresults.py"
PERFORMANCE_PAGE = ROOT / "docs" / "performance.rst"

pytestmark = pytest.mark.skipif(
    not (README.is_file() and EXTENSION.is_file()), reason="not a source checkout"
)

# a measured figure: "306.0 ns", "18.5 us", "1.33 ms", "5.88x", "1,435 us"
FIGURE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:ns|us|µs|ms|x)\b")


def perfresults():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("perfresults", EXTENSION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prose(markdown: str) -> str:
    """The Markdown without its fenced code blocks."""
    return re.sub(r"```.*?```", "", markdown, flags=re.S)


def test_readme_summary_table_is_the_results_files():
    pr = perfresults()
    table = pr.markdown_summary(pr.load(), "readme")
    assert table in README.read_text(encoding="utf-8"), (
        "README's summary table differs from docs/perf-results.json; "
        "print it with: python docs/_ext/perfresults.py\n" + table
    )


def test_every_figure_the_readme_quotes_is_in_the_results_file():
    pr = perfresults()
    values = {v for t in pr.load()["tables"].values() for r in t["rows"] for v in r.values()}
    known = {f for v in values for f in FIGURE.findall(v)}
    quoted = FIGURE.findall(prose(README.read_text(encoding="utf-8")))
    assert quoted, "the README quotes no figure: is its summary table gone?"
    assert [f for f in quoted if f not in known] == []


def test_results_file_is_well_formed():
    pr = perfresults()
    results = pr.load()
    for name, table in results["tables"].items():
        for field in ("title", "command", "date", "version", "python", "machine", "conditions"):
            assert table.get(field), (name, field)
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table["date"]), name
        columns = {cid for cid, _ in table["columns"]}
        seen = set()
        for row in table["rows"]:
            assert row["python"] in table["python"], (name, row)
            assert set(row) - {"key", "python", "date", "version"} <= columns, (name, row)
            assert (row["key"], row["python"]) not in seen, (name, row)
            seen.add((row["key"], row["python"]))
    for name in results["summaries"]:
        assert pr.summary(results, name)  # every entry names an existing row


def test_every_table_is_on_the_performance_page():
    pr = perfresults()
    page = PERFORMANCE_PAGE.read_text(encoding="utf-8")
    shown = set(re.findall(r"^\.\. perf-table:: (\S+)$", page, re.M))
    assert shown == set(pr.load()["tables"])
