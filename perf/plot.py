"""Turn pyperf JSON files into PNG charts: cost per operation against size.

    python perf/sweep.py --fast -o sweep.json
    python perf/plot.py sweep.json                 # docs/_static/perf-*.png
    python perf/plot.py sweep.json -d /tmp/charts  # somewhere else

Reads benchmarks named ``<family> N=<n> <who>`` (as perf/sweep.py writes
them; several files are merged) and draws, per family, the median time per
operation of each contender against N, both axes logarithmic, with the
pyperf values' min-max range as a band.  Writes one PNG per family
(``perf-heap.png``, ``perf-pqueue.png``, ``perf-timers.png``,
``perf-ttldict.png``) and ``perf-summary.png`` with the four side by side.
Needs matplotlib (not a dependency of dq_core).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyperf

OUT = Path(__file__).resolve().parents[1] / "docs" / "_static"

#: family -> (title, what one operation is, what N counts)
FAMILIES = {
    "heap": ("Heap vs heapq", "push N, then pop all; per push or pop", "items pushed"),
    "pqueue": (
        "PriorityQueue vs queue.PriorityQueue",
        "put N items (100 levels), get them all; per put or get",
        "items put",
    ),
    "timers": (
        "TimingWheel vs heapq vs sched",
        "N timers, half cancelled, advanced in N steps; per timer",
        "timers",
    ),
    "ttldict": ("TTLDict vs cachetools.TTLCache", "N sets, N gets, N expiries; per operation", "keys"),
}


def duration(ns: float) -> str:
    """A tick label: 300 ns, 1 µs, 20 µs, 1 ms."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("\u00b5s", 1e3)):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


#: contender -> (legend label, colour, line style, marker); dq_core first
CONTENDERS = {
    "dq_core-c": ("dq_core, compiled", "tab:blue", "-", "o"),
    "dq_core-py": ("dq_core, pure Python", "tab:blue", "--", "s"),
    "heapq": ("heapq (stdlib)", "tab:orange", "-", "^"),
    "queue.PriorityQueue": ("queue.PriorityQueue (stdlib)", "tab:orange", "-", "^"),
    "sched": ("sched (stdlib)", "tab:green", "-", "v"),
    "cachetools": ("cachetools.TTLCache", "tab:red", "-", "D"),
}

NAME = re.compile(r"^(?P<family>\S+) N=(?P<n>\d+) (?P<who>\S+)$")

Series = dict[str, dict[str, list[tuple[int, float, float, float]]]]


def load(paths: list[str]) -> tuple[Series, dict[str, Any]]:
    """family -> contender -> sorted [(N, median, min, max)] in seconds; and the metadata."""
    raw: dict[str, dict[str, dict[int, tuple[float, float, float]]]] = defaultdict(lambda: defaultdict(dict))
    meta: dict[str, Any] = {}
    loads: list[float] = []
    for path in paths:
        suite = pyperf.BenchmarkSuite.load(path)
        meta = meta or dict(suite.get_metadata())
        for bench in suite.get_benchmarks():
            loads += [
                run.get_metadata()["load_avg_1min"]
                for run in bench.get_runs()
                if "load_avg_1min" in run.get_metadata()
            ]
            m = NAME.match(bench.get_name())
            if m is None:
                continue
            values = bench.get_values()
            raw[m["family"]][m["who"]][int(m["n"])] = (bench.median(), min(values), max(values))
    if loads:  # a busy machine inflates every time; the footer says how busy
        meta["load_avg"] = sum(loads) / len(loads)
    series: Series = {
        fam: {who: sorted((n, *v) for n, v in points.items()) for who, points in per.items()}
        for fam, per in raw.items()
    }
    return series, meta


def draw(
    ax: Any, family: str, contenders: dict[str, list[tuple[int, float, float, float]]], subtitle: bool = True
) -> None:
    from matplotlib.ticker import FuncFormatter

    title, what, counted = FAMILIES.get(family, (family, "", "items"))
    order = [c for c in CONTENDERS if c in contenders] + sorted(set(contenders) - set(CONTENDERS))
    for who in order:
        label, colour, style, marker = CONTENDERS.get(who, (who, None, ":", "x"))
        pts = contenders[who]
        ns = [p[0] for p in pts]
        ax.plot(
            ns,
            [p[1] * 1e9 for p in pts],
            linestyle=style,
            marker=marker,
            color=colour,
            label=label,
            markersize=4,
        )
        ax.fill_between(
            ns, [p[2] * 1e9 for p in pts], [p[3] * 1e9 for p in pts], color=colour, alpha=0.15, linewidth=0
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"N ({counted}, log scale)")
    ax.set_ylabel("time per operation (log scale)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: duration(v)))
    low = min(p[2] for pts in contenders.values() for p in pts)
    high = max(p[3] for pts in contenders.values() for p in pts)
    few_decades = high / low < 100  # label 2x, 3x, 5x too when few powers of ten show

    def minor(v: float, _: object) -> str:
        mantissa = round(v / 10 ** math.floor(math.log10(v)))
        return duration(v) if few_decades and mantissa in (2, 3, 5) else ""

    ax.yaxis.set_minor_formatter(FuncFormatter(minor))
    ax.set_title(f"{title}\n{what}" if subtitle else title, fontsize=10)
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.1)
    ax.legend(fontsize=8)


def save(fig: Any, path: Path, dpi: int) -> None:
    """Save as a 256-colour PNG: a third of the size, for the repository and the sdist."""
    import io

    from PIL import Image  # matplotlib's own dependency

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    with Image.open(buf) as img:
        img.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def footer(meta: dict[str, Any]) -> str:
    parts = [
        meta.get("python_implementation", ""),
        meta.get("python_version", "").split(" ")[0],
        f"{meta.get('cpu_count', '?')} CPUs",
        meta.get("cpu_model_name", ""),
        meta.get("date", "")[:10],
    ]
    if "load_avg" in meta:
        parts.append(f"mean load average {meta['load_avg']:.1f}")
    return "pyperf medians, band = min-max of the values; " + ", ".join(p for p in parts if p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="pyperf JSON files (perf/sweep.py -o ...)")
    parser.add_argument(
        "-d", "--directory", type=Path, default=OUT, help="where the PNGs go (default: docs/_static)"
    )
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series, meta = load(args.json)
    families = [f for f in FAMILIES if f in series] + sorted(set(series) - set(FAMILIES))
    if not families:
        print("no benchmark named '<family> N=<n> <who>' in", args.json, file=sys.stderr)
        return 1
    args.directory.mkdir(parents=True, exist_ok=True)
    note = footer(meta)
    for family in families:
        fig, ax = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
        draw(ax, family, series[family])
        fig.text(0.01, 0.005, note, fontsize=6, color="grey", va="bottom")
        fig.get_layout_engine().set(h_pad=0.15)
        path = args.directory / f"perf-{family}.png"
        save(fig, path, dpi=110)
        plt.close(fig)
        print("wrote", path)

    cols = 2
    rows = (len(families) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 4.2 * rows), layout="constrained", squeeze=False)
    for ax, family in zip(axes.flat, families):
        draw(ax, family, series[family])
    for ax in list(axes.flat)[len(families) :]:
        ax.set_visible(False)
    fig.suptitle("dq_core: time per operation against size (lower is better)")
    fig.text(0.01, 0.002, note, fontsize=7, color="grey", va="bottom")
    fig.get_layout_engine().set(h_pad=0.12)
    path = args.directory / "perf-summary.png"
    save(fig, path, dpi=90)
    plt.close(fig)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
