"""Tables and plots from a benchmark run's ``measurements.csv``.

Every figure is the median of the repetitions. ``ratio`` is full recompute time over
incremental refresh time; the geometric mean is taken over views. Writes ``results.md``,
``summary.csv``, ``batch_size.png`` (refresh time against batch size at one scale factor)
and ``scale.png`` (refresh time against scale factor at one batch size).
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from statistics import median

from benchmarks.workload import SINGLE_TABLE_AGGREGATES

#: The batch fraction the scale-factor curve is drawn at.
SCALE_CURVE_FRACTION = 0.001

#: A choice of the refresh planner is good when the mode it chose took at most this many
#: times the faster of the two modes.
PLANNER_SLACK = 1.2


def machine() -> dict[str, str]:
    """The machine and software a run measured."""
    memory = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal")), None) if Path("/proc/meminfo").exists() \
        else None
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cores": str(os.cpu_count()),
        "memory": f"{int(memory) / 2**20:.1f} GiB" if memory else "unknown",
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "java": java.splitlines()[0] if java else "unknown",
        "pyspark": version("pyspark"),
        "delta-spark": version("delta-spark"),
        "driver memory": "4g (ivm's local default); driver and executors share one JVM",
    }


def _number(value: str) -> float:
    return float(value) if value else 0.0


def medians(rows: list[dict]) -> dict[tuple, dict[str, float]]:
    """``(scale, fraction, view, kind)`` → the median of every measured figure."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["scale"], float(row["fraction"]), row["view"], row["kind"])].append(row)
    figures = ["seconds", "rows_read", "bytes_read", "bytes_shuffled", "files_written",
               "bytes_written", "heap_peak_bytes"]
    result = {}
    for key, group in groups.items():
        result[key] = {f: median(_number(r[f]) for r in group) for f in figures}
        result[key]["modes"] = "/".join(sorted({r["mode"] for r in group}))
        phases = [_phases(r.get("phases") or "") for r in group]
        for name in dict.fromkeys(n for p in phases for n in p):
            result[key][f"phase {name}"] = median(p.get(name, (0.0, 0))[0] for p in phases)
            result[key][f"jobs {name}"] = median(p.get(name, (0.0, 0))[1] for p in phases)
    return result


def _phases(text: str) -> dict[str, tuple[float, int]]:
    """A refresh's phases as ``measurements.csv`` keeps them: ``name=seconds/jobs ...``.

    >>> _phases("plan=0.050/0 write=0.700/6")
    {'plan': (0.05, 0), 'write': (0.7, 6)}
    """
    found = {}
    for item in text.split():
        name, figures = item.split("=")
        seconds, jobs = figures.split("/")
        found[name] = (float(seconds), int(jobs) if jobs != "None" else 0)
    return found


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else math.nan


def _mb(n: float) -> str:
    return f"{n / 2**20:.1f}"


def _ratio_table(summary, scale: str, fraction: float, views: list[str]) -> list[str]:
    lines = [f"### SF {scale}, batches of {fraction:.2%} of lineitem", "",
             "| view | incremental s | full s | full / incremental | rows read (incr / full) "
             "| MB shuffled (incr / full) | files, MB written (incr / full) "
             "| heap peak MB (incr / full) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    ratios, single = [], []
    for view in views:
        incr = summary.get((scale, fraction, view, "incremental"))
        full = summary.get((scale, fraction, view, "full"))
        if not incr or not full:
            continue
        ratio = full["seconds"] / incr["seconds"]
        ratios.append(ratio)
        if view in SINGLE_TABLE_AGGREGATES:
            single.append(ratio)
        mode = "" if incr["modes"] == "incremental" else f" ({incr['modes']})"
        lines.append(
            f"| {view}{mode} | {incr['seconds']:.2f} | {full['seconds']:.2f} | {ratio:.1f}× "
            f"| {incr['rows_read']:,.0f} / {full['rows_read']:,.0f} "
            f"| {_mb(incr['bytes_shuffled'])} / {_mb(full['bytes_shuffled'])} "
            f"| {incr['files_written']:.0f}, {_mb(incr['bytes_written'])} / "
            f"{full['files_written']:.0f}, {_mb(full['bytes_written'])} "
            f"| {_mb(incr['heap_peak_bytes'])} / {_mb(full['heap_peak_bytes'])} |")
    lines += ["", f"Geometric mean of full / incremental over {len(ratios)} views: "
                  f"**{_geomean(ratios):.1f}×**; single-table aggregates "
                  f"({', '.join(SINGLE_TABLE_AGGREGATES)}): **{_geomean(single):.1f}×**.", ""]
    return lines


def _curve_table(title: str, columns: list[str], cell, views: list[str]) -> list[str]:
    lines = [title, "", "| view | " + " | ".join(columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for view in views:
        cells = [cell(view, c) for c in columns]
        if any(c != "" for c in cells):
            lines.append(f"| {view} | " + " | ".join(cells) + " |")
    return lines + [""]


def _plot(path: Path, title: str, xlabel: str, series: dict[str, list[tuple[float, float]]]):
    series = {view: points for view, points in series.items() if len(points) > 1}
    if not series:      # a single point per view draws no curve
        return
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(9, 6))
    colours = pyplot.get_cmap("tab20").colors   # one colour a view, for up to 20 views
    markers = "osD^v<>"
    for i, (view, points) in enumerate(sorted(series.items())):
        xs, ys = zip(*sorted(points))
        axes.plot(xs, ys, marker=markers[i % len(markers)], label=view,
                  color=colours[i % len(colours)])
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("incremental refresh, seconds (median)")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def write(out: Path, machine: dict[str, str], minutes: float | None = None,
          command: str | None = None) -> None:
    """Write the report of ``out/measurements.csv`` into ``out``; ``command`` is the one
    that measured them. The run's facts are kept in ``out/run.json`` for a later report."""
    (out / "run.json").write_text(json.dumps(
        {"machine": machine, "minutes": minutes, "command": command}, indent=1) + "\n")
    with open(out / "measurements.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    summary = medians(rows)
    views = list(dict.fromkeys(r["view"] for r in rows))
    scales = sorted({r["scale"] for r in rows}, key=float)
    with open(out / "summary.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["scale", "fraction", "view", "kind", "modes", "seconds", "rows_read",
                         "bytes_read", "bytes_shuffled", "files_written", "bytes_written",
                         "heap_peak_bytes"])
        for (scale, fraction, view, kind), f in sorted(summary.items()):
            writer.writerow([scale, fraction, view, kind, f["modes"], f"{f['seconds']:.3f}",
                             *(int(f[k]) for k in ("rows_read", "bytes_read", "bytes_shuffled",
                                                   "files_written", "bytes_written",
                                                   "heap_peak_bytes"))])

    repetitions = max(int(r["repetition"]) for r in rows)
    lines = ["# Incremental refresh against full recompute", "",
             f"Medians of {repetitions} repetitions"
             + (f"; the run took {minutes:.0f} minutes." if minutes is not None else "."), "",
             *([f"Measured by `{command}`.", ""] if command else []),
             "| machine | |", "|---|---|", *(f"| {k} | {v} |" for k, v in machine.items()), ""]
    lines += ["## Full recompute / incremental refresh", ""]
    for scale in scales:
        fractions = sorted({k[1] for k in summary if k[0] == scale and k[3] == "incremental"})
        for fraction in fractions:
            lines += _ratio_table(summary, scale, fraction, views)

    lines += _planner_table(rows)

    lines += ["## Fixed overhead", "",
              "A refresh with no source change (`noop`) and of a one-row change (`one_row`: "
              "the discount of one line item; under `--setting appends`, one order inserted "
              "with its line items), seconds.", ""]
    lines += _curve_table("", [f"SF {s} {k}" for s in scales for k in ("noop", "one_row")],
                          lambda view, column: _cell(summary, column.split()[1], 0.0, view,
                                                     column.split()[2]), views)

    lines += _phase_tables(summary, scales, views)

    batch_scale = max(scales, key=lambda s: len({k[1] for k in summary if k[0] == s}))
    fractions = sorted({k[1] for k in summary if k[0] == batch_scale and k[1] > 0})
    if fractions:
        lines += _curve_table(f"## Refresh time against batch size, SF {batch_scale}",
                              [f"{f:.2%}" for f in fractions],
                              lambda view, c: _cell(summary, batch_scale,
                                                    fractions[[f"{f:.2%}" for f in fractions]
                                                              .index(c)], view), views)
        _plot(out / "batch_size.png", f"Incremental refresh against batch size, SF {batch_scale}",
              "batch, fraction of lineitem",
              {v: [(f, summary[(batch_scale, f, v, "incremental")]["seconds"])
                   for f in fractions if (batch_scale, f, v, "incremental") in summary]
               for v in views})
    curve_scales = [s for s in scales if any(k[0] == s and k[1] == SCALE_CURVE_FRACTION
                                             for k in summary)]
    if len(curve_scales) > 1:
        lines += _curve_table(
            f"## Refresh time against scale factor, batches of {SCALE_CURVE_FRACTION:.2%}",
            [f"SF {s}" for s in curve_scales] + [f"SF {curve_scales[-2]} → "
                                                 f"{curve_scales[-1]}"],
            lambda view, c: _growth(summary, curve_scales, view) if "→" in c else
            _cell(summary, c.split()[1], SCALE_CURVE_FRACTION, view), views)
        _plot(out / "scale.png",
              f"Incremental refresh against scale factor, batches of "
              f"{SCALE_CURVE_FRACTION:.2%}", "TPC-H scale factor",
              {v: [(float(s), summary[(s, SCALE_CURVE_FRACTION, v, "incremental")]["seconds"])
                   for s in curve_scales
                   if (s, SCALE_CURVE_FRACTION, v, "incremental") in summary]
               for v in views})
    (out / "results.md").write_text("\n".join(lines))


def _planner_table(rows: list[dict]) -> list[str]:
    """Each refresh under ``REFRESH POLICY AUTO`` judged against the faster of the two
    modes, each timed on a copy of the view refreshing the same batch (``--setting
    planner``); nothing without such copies."""
    refreshes: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for row in rows:
        if row["kind"] in ("incremental", "recompute", "auto") and float(row["fraction"]) > 0:
            key = (float(row["scale"]), float(row["fraction"]), int(row["repetition"]),
                   row["view"])
            refreshes[key][row["kind"]] = row
    judged = [(key, kinds) for key, kinds in sorted(refreshes.items()) if len(kinds) == 3]
    if not judged:
        return []
    lines = ["## The refresh planner", "",
             "Each batch refreshed by three copies of each view: `REFRESH POLICY INCREMENTAL` "
             "(applies the change), `FULL` (ivm's recompute) and `AUTO` (the planner's "
             "choice). A choice is good when the mode chosen took at most "
             f"{PLANNER_SLACK}× the faster of the two, as the copies timed them (a view "
             "recomputed and its state tables not, or the other way round, and a recompute "
             "chosen after reading the change, as AUTO's own refresh took).", "",
             "| SF | batch | view | incremental s | recompute s | AUTO chose | AUTO s | good |",
             "|---|---:|---|---:|---:|---|---:|---|"]
    good = 0
    for (scale, fraction, _, view), kinds in judged:
        incremental = float(kinds["incremental"]["seconds"])
        recompute = float(kinds["recompute"]["seconds"])
        chose = kinds["auto"]["mode"]
        took = {"full": recompute, "incremental": incremental}.get(
            chose, float(kinds["auto"]["seconds"]))   # mixed: a view and its state tables
        if chose == "full" and "delta=" in kinds["auto"]["phases"]:
            took = float(kinds["auto"]["seconds"])   # it read the change before it chose
        ok = took <= PLANNER_SLACK * min(incremental, recompute)
        good += ok
        lines.append(f"| {scale:g} | {fraction:.2%} | {view} | {incremental:.2f} | "
                     f"{recompute:.2f} | {chose} | {float(kinds['auto']['seconds']):.2f} | "
                     f"{'yes' if ok else 'no'} |")
    lines += ["", f"Choices within {PLANNER_SLACK}× of the faster mode: **{good} of "
                  f"{len(judged)}** ({good / len(judged):.0%}).", ""]
    return lines


def _phase_tables(summary, scales: list[str], views: list[str]) -> list[str]:
    """Where the time of a one-row refresh goes: each phase's median seconds (and Spark
    jobs), per scale factor (see ``ivm.runtime.phases``)."""
    lines = []
    for scale in scales:
        measured = {v: summary.get((scale, 0.0, v, "one_row")) for v in views}
        names = list(dict.fromkeys(key.split(" ", 1)[1] for m in measured.values() if m
                                   for key in m if key.startswith("phase ")))
        if not names:
            continue
        lines += [f"### Where a one-row refresh's time goes, SF {scale}", "",
                  "Median seconds of each phase, and in parentheses its Spark jobs.", "",
                  "| view | " + " | ".join(names) + " | total |",
                  "|---|" + "---:|" * (len(names) + 1)]
        for view, m in measured.items():
            if m:
                lines.append(f"| {view} | " + " | ".join(
                    f"{m.get(f'phase {n}', 0):.2f} ({m.get(f'jobs {n}', 0):.0f})"
                    for n in names) + f" | {m['seconds']:.2f} |")
        lines.append("")
    return lines


def _cell(summary, scale: str, fraction: float, view: str, kind: str = "incremental") -> str:
    found = summary.get((scale, fraction, view, kind))
    return f"{found['seconds']:.2f}" if found else ""


def _growth(summary, scales: list[str], view: str) -> str:
    """How many times the refresh time grew between the two largest scale factors."""
    small, large = (summary.get((s, SCALE_CURVE_FRACTION, view, "incremental"))
                    for s in scales[-2:])
    return f"{large['seconds'] / small['seconds']:.1f}×" if small and large else ""


if __name__ == "__main__":     # the report of a run's directory, written again
    run = json.loads((Path(sys.argv[1]) / "run.json").read_text())
    write(Path(sys.argv[1]), **run)
