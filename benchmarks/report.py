"""Tables and plots from a benchmark run's ``measurements.csv``.

Every figure is the median of the repetitions. ``ratio`` is full recompute time over
incremental refresh time; the geometric mean is taken over views. A view on a view is
charged with the refreshes of the views it reads (:func:`charge_upstream`). Writes
``results.md``, ``summary.csv``, ``batch_size.png`` (refresh time against batch size at one
scale factor) and ``scale.png`` (refresh time against scale factor at one batch size).
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

from benchmarks.workload import SINGLE_TABLE_AGGREGATES, views

#: The batch fraction the scale-factor curve is drawn at.
SCALE_CURVE_FRACTION = 0.001

#: The measurements that refresh a view through ivm: a view on a view is charged with the
#: same measurement of each view it reads. (``full`` runs the query with those views written
#: out, so it does their work itself.)
REFRESH_KINDS = ("incremental", "auto", "recompute", "noop", "one_row")

#: The figures of a pipeline's refreshes that add up; the heap peak is their largest.
ADDITIVE_FIGURES = (
    "seconds",
    "rows_read",
    "bytes_read",
    "bytes_shuffled",
    "files_written",
    "bytes_written",
    "classes_compiled",
)

#: The modes forced on the copies the refresh planner is judged against; their spread over
#: the repetitions is the slack of its judge.
FORCED_MODES = ("incremental", "recompute")


def machine() -> dict[str, str]:
    """The machine and software a run measured."""
    memory = (
        next(
            (
                line.split()[1]
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")
            ),
            None,
        )
        if Path("/proc/meminfo").exists()
        else None
    )
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


def source_commit() -> dict[str, str | bool | None]:
    """The commit of the code that measures (``git rev-parse HEAD``) and whether the work
    tree differed from it, results directories aside; outside a git work tree, an empty
    commit."""
    root = Path(__file__).parent.parent
    head = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    if head.returncode != 0:
        return {"commit": "", "dirty": None}
    status = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "status",
            "--porcelain",
            "--",
            ".",
            ":(exclude)benchmarks/results",
        ],
        capture_output=True,
        text=True,
    )
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def provenance(command: str | None, commit: str | None, dirty: bool | None) -> str:
    """Which command measured a run, at which commit (``None``: a run recorded before runs
    recorded it; empty: outside a git work tree).

    >>> provenance("python -m benchmarks.run", "0123456789abcdef", True)
    'Measured by `python -m benchmarks.run` at commit 0123456789ab, with changes not committed.'
    >>> provenance("python -m benchmarks.run", None, None)
    'Measured by `python -m benchmarks.run`; recorded before runs recorded their commit.'
    """
    by = f"Measured by `{command}`" if command else "Measured"
    if commit is None:
        return f"{by}; recorded before runs recorded their commit."
    if not commit:
        return f"{by} outside a git work tree: no commit."
    return f"{by} at commit {commit[:12]}{', with changes not committed' if dirty else ''}."


def _number(value: str | float) -> float:
    return float(value) if value else 0.0


def charge_upstream(
    rows: list[dict], reads: dict[str, tuple[str, ...]] | None = None
) -> list[dict]:
    """``rows`` with each refresh of a view on a view charged with the same measurement (scale,
    batch, repetition, kind) of every view it reads, as a pipeline refreshes: seconds, reads
    and writes added, the heap peak the largest, phases added by name. ``reads``: view →
    the views it reads (default: the benchmark's views).

    >>> rows = [{"scale": "1", "fraction": "0.001", "repetition": "1", "view": v,
    ...          "kind": "incremental", "seconds": s, "heap_peak_bytes": "9",
    ...          "phases": "write=1.000/4"} for v, s in (("up", "2.0"), ("down", "0.5"))]
    >>> down = charge_upstream(rows, {"down": ("up",)})[1]
    >>> down["seconds"], down["phases"], down["charged_with"]
    (2.5, 'write=2.000/8', 'up')
    """
    reads = reads if reads is not None else {v.name: v.reads for v in views() if v.reads}
    measured = {_measurement(row): row for row in rows}

    def charged(row: dict) -> dict:
        upstream = reads.get(row["view"], ()) if row["kind"] in REFRESH_KINDS else ()
        if not upstream:
            return row
        parts = [row]
        for name in upstream:
            key = (*_measurement(row)[:3], name, row["kind"])
            if key not in measured:
                raise ValueError(
                    f"{row['view']} reads {name}, which has no {row['kind']} "
                    f"measurement at SF {row['scale']}, batch {row['fraction']}, "
                    f"repetition {row['repetition']} to charge it with"
                )
            parts.append(charged(measured[key]))
        return (
            row
            | {f: sum(_number(p.get(f, "")) for p in parts) for f in ADDITIVE_FIGURES}
            | {
                "heap_peak_bytes": max(_number(p.get("heap_peak_bytes", "")) for p in parts),
                "phases": _phase_text(_phases(p.get("phases") or "") for p in parts),
                "charged_with": " + ".join(
                    n for p in parts[1:] for n in [p["view"], p.get("charged_with", "")] if n
                ),
            }
        )

    return [charged(row) for row in rows]


def _measurement(row: dict) -> tuple:
    return (row["scale"], float(row["fraction"]), row["repetition"], row["view"], row["kind"])


def _phase_text(parts) -> str:
    """Phases added by name, written as ``measurements.csv`` keeps them."""
    total: dict[str, tuple[float, int]] = {}
    for phases in parts:
        for name, (seconds, jobs) in phases.items():
            before = total.get(name, (0.0, 0))
            total[name] = (before[0] + seconds, before[1] + jobs)
    return " ".join(f"{name}={seconds:.3f}/{jobs}" for name, (seconds, jobs) in total.items())


def medians(rows: list[dict]) -> dict[tuple, dict]:
    """``(scale, fraction, view, kind)`` → the median of every measured figure, the modes
    the repetitions ran and the views a pipeline's figures include."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["scale"], float(row["fraction"]), row["view"], row["kind"])].append(row)
    figures = [
        "seconds",
        "rows_read",
        "bytes_read",
        "bytes_shuffled",
        "files_written",
        "bytes_written",
        "heap_peak_bytes",
        "jobs",
    ]
    result = {}
    for key, group in groups.items():
        result[key] = {f: median(_number(r.get(f, "")) for r in group) for f in figures}
        result[key]["modes"] = "/".join(sorted({r["mode"] for r in group}))
        result[key]["charged_with"] = group[0].get("charged_with", "")
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


def _label(summary, view: str) -> str:
    """A view's name, and for a view on a view the views whose refreshes its figures
    include."""
    upstream = next(
        (f["charged_with"] for key, f in summary.items() if key[2] == view and f["charged_with"]),
        "",
    )
    return f"{view} + {upstream}" if upstream else view


def same_changes(summary) -> list[tuple[tuple[str, float], tuple[str, float]]]:
    """Pairs of (scale, batch fraction), smaller scale first, whose batches change the same
    number of line items (scale × fraction equal), the smallest and largest scale of each
    such number.

    >>> summary = {("1", 0.0001, "q1", "incremental"): {}, ("10", 0.00001, "q1", "incremental"): {},
    ...            ("10", 0.001, "q1", "incremental"): {}}
    >>> same_changes(summary)
    [(('1', 0.0001), ('10', 1e-05))]
    """
    by_change: dict[float, set[tuple[str, float]]] = defaultdict(set)
    for scale, fraction, _, kind in summary:
        if fraction > 0 and kind == "incremental":
            by_change[round(float(scale) * fraction, 12)].add((scale, fraction))
    pairs = []
    for _, found in sorted(by_change.items()):
        ordered = sorted(found, key=lambda s: float(s[0]))
        if len(ordered) > 1:
            pairs.append((ordered[0], ordered[-1]))
    return pairs


def _same_change_growth(summary, views: list[str]) -> list[str]:
    """The headline of a run over scale factors with the same change: per view, how many
    times its incremental refresh grew from the smaller scale to the larger, beside the
    full recompute's growth and the larger scale's full / incremental."""
    lines = []
    for (small, small_fraction), (large, large_fraction) in same_changes(summary):
        lines += [
            f"## Growth with the scale factor, the same change: SF {small} ({small_fraction:.3%}"
            f" batches) → SF {large} ({large_fraction:.3%})",
            "",
            f"| view | incremental s, SF {small} | SF {large} | growth | full s, SF {small} "
            f"| SF {large} | growth | full / incremental, SF {large} |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        growths, ratios = [], []
        for view in views:
            cells = [
                summary.get((scale, fraction, view, kind))
                for kind in ("incremental", "full")
                for scale, fraction in ((small, small_fraction), (large, large_fraction))
            ]
            if not all(cells):
                continue
            incr_small, incr_large, full_small, full_large = (c["seconds"] for c in cells)
            growths.append(incr_large / incr_small)
            ratios.append(full_large / incr_large)
            lines.append(
                f"| {_label(summary, view)} | {incr_small:.2f} | {incr_large:.2f} "
                f"| {incr_large / incr_small:.2f}× | {full_small:.2f} | {full_large:.2f} "
                f"| {full_large / full_small:.1f}× | {full_large / incr_large:.1f}× |"
            )
        lines += [
            "",
            f"Incremental growth over {len(growths)} views: at most **{max(growths):.2f}×**; "
            f"geometric mean of full / incremental at SF {large}: **{_geomean(ratios):.1f}×**."
            if growths
            else "No view was measured at both.",
            "",
        ]
    return lines


def _ratio_table(summary, scale: str, fraction: float, views: list[str]) -> list[str]:
    lines = [
        f"### SF {scale}, batches of {fraction:.2%} of lineitem",
        "",
        "| view | incremental s | full s | full / incremental | rows read (incr / full) "
        "| MB shuffled (incr / full) | files, MB written (incr / full) "
        "| heap peak MB (incr / full) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
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
            f"| {_label(summary, view)}{mode} | {incr['seconds']:.2f} | {full['seconds']:.2f} "
            f"| {ratio:.1f}× "
            f"| {incr['rows_read']:,.0f} / {full['rows_read']:,.0f} "
            f"| {_mb(incr['bytes_shuffled'])} / {_mb(full['bytes_shuffled'])} "
            f"| {incr['files_written']:.0f}, {_mb(incr['bytes_written'])} / "
            f"{full['files_written']:.0f}, {_mb(full['bytes_written'])} "
            f"| {_mb(incr['heap_peak_bytes'])} / {_mb(full['heap_peak_bytes'])} |"
        )
    lines += [
        "",
        f"Geometric mean of full / incremental over {len(ratios)} views: "
        f"**{_geomean(ratios):.2f}×**"
        + (
            f"; single-table aggregates ({', '.join(SINGLE_TABLE_AGGREGATES)}): "
            f"**{_geomean(single):.2f}×**."
            if single
            else "."
        ),
        "",
    ]
    return lines


def _pipelines_note(summary) -> list[str]:
    """What the figures of a view on a view include, where the run has one."""
    if not any(f["charged_with"] for f in summary.values()):
        return []
    return [
        "A view on a view (`view + the views it reads`) is charged throughout with the "
        "refreshes of the views it reads, each measured on the same batch and repetition: "
        "their seconds, reads and writes added. Its full recompute runs its query with "
        "those views written out, so it does their work itself.",
        "",
    ]


def _curve_table(
    title: str, columns: list[str], cell, views: list[str], labels: dict[str, str]
) -> list[str]:
    lines = [title, "", "| view | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for view in views:
        cells = [cell(view, c) for c in columns]
        if any(c != "" for c in cells):
            lines.append(f"| {labels[view]} | " + " | ".join(cells) + " |")
    return lines + [""]


def _compiled_table(rows: list[dict], views: list[str], labels: dict[str, str]) -> list[str]:
    """The classes Spark compiled for each incremental refresh, by batch and repetition;
    nothing for a run that did not count them.

    >>> rows = [{"scale": "1", "fraction": "0.001", "repetition": str(n), "view": "q",
    ...          "kind": "incremental", "classes_compiled": c}
    ...         for n, c in ((1, "80"), (2, "3"))]
    >>> print("\\n".join(_compiled_table(rows, ["q"], {"q": "q"})[2:5]))
    | view | SF 1 0.10% #1 | SF 1 0.10% #2 |
    |---|---:|---:|
    | q | 80 | 3 |
    """
    refreshes = [r for r in rows if r["kind"] == "incremental" and float(r["fraction"]) > 0]
    if not refreshes or "classes_compiled" not in refreshes[0]:
        return []
    compiled = {
        (
            r["view"],
            f"SF {r['scale']} {float(r['fraction']):.2%} #{r['repetition']}",
        ): f"{_number(r['classes_compiled']):.0f}"
        for r in refreshes
    }
    return _curve_table(
        "## Classes compiled by each incremental refresh\n\nSpark compiles the code it "
        "generates for a query (Janino) and caches the classes by the code's text: a "
        "refresh that finds an earlier one's code in the cache compiles none of it, and one "
        "that reads less than `spark.ivm.interpretedMaxBytes` compiles none at all. By "
        "batch and repetition:",
        list(dict.fromkeys(column for _, column in compiled)),
        lambda view, column: compiled.get((view, column), ""),
        views,
        labels,
    )


def _plot(path: Path, title: str, xlabel: str, series: dict[str, list[tuple[float, float]]]):
    series = {view: points for view, points in series.items() if len(points) > 1}
    if not series:  # a single point per view draws no curve
        return
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(9, 6))
    colours = pyplot.get_cmap("tab20").colors  # one colour a view, for up to 20 views
    markers = "osD^v<>"
    for i, (view, points) in enumerate(sorted(series.items())):
        xs, ys = zip(*sorted(points), strict=True)
        axes.plot(
            xs, ys, marker=markers[i % len(markers)], label=view, color=colours[i % len(colours)]
        )
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


def write(
    out: Path,
    machine: dict[str, str],
    minutes: float | None = None,
    command: str | None = None,
    commit: str | None = None,
    dirty: bool | None = None,
) -> None:
    """Write the report of ``out/measurements.csv`` into ``out``; ``command`` is the one
    that measured them, ``commit`` the code's commit (``dirty``: with changes not committed).
    The run's facts are kept in ``out/run.json`` for a later report."""
    (out / "run.json").write_text(
        json.dumps(
            {
                "machine": machine,
                "minutes": minutes,
                "command": command,
                "commit": commit,
                "dirty": dirty,
            },
            indent=1,
        )
        + "\n"
    )
    with open(out / "measurements.csv", newline="") as file:
        rows = charge_upstream(list(csv.DictReader(file)))
    summary = medians(rows)
    views = list(dict.fromkeys(r["view"] for r in rows if r["kind"] != "floor"))
    labels = {view: _label(summary, view) for view in views}
    scales = sorted({r["scale"] for r in rows}, key=float)
    with open(out / "summary.csv", "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(
            [
                "scale",
                "fraction",
                "view",
                "kind",
                "modes",
                "seconds",
                "rows_read",
                "bytes_read",
                "bytes_shuffled",
                "files_written",
                "bytes_written",
                "heap_peak_bytes",
                "charged_with",
            ]
        )
        for (scale, fraction, view, kind), f in sorted(summary.items()):
            writer.writerow(
                [
                    scale,
                    fraction,
                    view,
                    kind,
                    f["modes"],
                    f"{f['seconds']:.3f}",
                    *(
                        int(f[k])
                        for k in (
                            "rows_read",
                            "bytes_read",
                            "bytes_shuffled",
                            "files_written",
                            "bytes_written",
                            "heap_peak_bytes",
                        )
                    ),
                    f["charged_with"],
                ]
            )

    repetitions = max(int(r["repetition"]) for r in rows)
    lines = [
        "# Incremental refresh against full recompute",
        "",
        (f"Medians of {repetitions} repetitions" if repetitions > 1 else "One repetition")
        + (f"; the run took {minutes:.0f} minutes." if minutes is not None else "."),
        "",
        provenance(command, commit, dirty),
        "",
        *_spread_line(rows),
        *_comparison_line(rows),
        *_pipelines_note(summary),
        "| machine | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in machine.items()),
        "",
    ]
    lines += _same_change_growth(summary, views)
    lines += ["## Full recompute / incremental refresh", ""]
    for scale in scales:
        fractions = sorted({k[1] for k in summary if k[0] == scale and k[3] == "incremental"})
        for fraction in fractions:
            lines += _ratio_table(summary, scale, fraction, views)

    lines += _planner_table(rows)

    lines += [
        "## Fixed overhead",
        "",
        "A refresh with no source change (`noop`) and of a one-row change (`one_row`: "
        "the discount of one line item; under `--setting appends`, one order inserted "
        "with its line items), seconds. Where the change is not in a view's sources, "
        "its one-row refresh has nothing to do and is marked a no-op.",
        "",
    ]
    lines += _curve_table(
        "",
        [f"SF {s} {k}" for s in scales for k in FIXED_COLUMNS],
        lambda view, column: _fixed_cell(
            summary, column.split()[1], view, column.split(maxsplit=2)[2]
        ),
        views,
        labels,
    )
    lines += _floor_lines(summary, scales)

    lines += _phase_tables(summary, scales, views, labels)
    lines += _compiled_table(rows, views, labels)

    batch_scale = max(scales, key=lambda s: len({k[1] for k in summary if k[0] == s}))
    fractions = sorted({k[1] for k in summary if k[0] == batch_scale and k[1] > 0})
    if fractions:
        lines += _curve_table(
            f"## Refresh time against batch size, SF {batch_scale}",
            [f"{f:.2%}" for f in fractions],
            lambda view, c: _cell(
                summary, batch_scale, fractions[[f"{f:.2%}" for f in fractions].index(c)], view
            ),
            views,
            labels,
        )
        _plot(
            out / "batch_size.png",
            f"Incremental refresh against batch size, SF {batch_scale}",
            "batch, fraction of lineitem",
            {
                labels[v]: [
                    (f, summary[(batch_scale, f, v, "incremental")]["seconds"])
                    for f in fractions
                    if (batch_scale, f, v, "incremental") in summary
                ]
                for v in views
            },
        )
    curve_scales = [
        s for s in scales if any(k[0] == s and k[1] == SCALE_CURVE_FRACTION for k in summary)
    ]
    if len(curve_scales) > 1:
        lines += _curve_table(
            f"## Refresh time against scale factor, batches of {SCALE_CURVE_FRACTION:.2%}",
            [f"SF {s}" for s in curve_scales] + [f"SF {curve_scales[-2]} → {curve_scales[-1]}"],
            lambda view, c: (
                _growth(summary, curve_scales, view)
                if "→" in c
                else _cell(summary, c.split()[1], SCALE_CURVE_FRACTION, view)
            ),
            views,
            labels,
        )
        _plot(
            out / "scale.png",
            f"Incremental refresh against scale factor, batches of {SCALE_CURVE_FRACTION:.2%}",
            "TPC-H scale factor",
            {
                labels[v]: [
                    (float(s), summary[(s, SCALE_CURVE_FRACTION, v, "incremental")]["seconds"])
                    for s in curve_scales
                    if (s, SCALE_CURVE_FRACTION, v, "incremental") in summary
                ]
                for v in views
            },
        )
    (out / "results.md").write_text("\n".join(lines))


def spread(rows: list[dict], kinds: tuple[str, ...]) -> list[float]:
    """For each view, kind (of ``kinds``) and batch measured in more than one repetition,
    the seconds of its slowest repetition over its fastest's.

    >>> rows = [{"scale": "1", "fraction": "0.001", "view": "q", "kind": "full",
    ...          "seconds": s} for s in ("2.0", "2.5", "2.2")]
    >>> spread(rows, ("full",)), spread(rows[:1], ("full",))
    ([1.25], [])
    """
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        if row["kind"] in kinds:
            groups[(row["scale"], float(row["fraction"]), row["view"], row["kind"])].append(
                float(row["seconds"])
            )
    return [max(times) / min(times) for times in groups.values() if len(times) > 1]


def _spread_line(rows: list[dict]) -> list[str]:
    """How much the repetitions of one measurement differ in this run."""
    kinds = tuple(dict.fromkeys(r["kind"] for r in rows if r["kind"] != "create"))
    spreads = spread(rows, kinds)
    if not spreads:
        return ["One repetition: the run measured no spread between repetitions.", ""]
    return [
        f"Spread between repetitions: of each view, kind and batch measured more than "
        f"once, the slowest repetition over the fastest, {median(spreads):.2f}× at the "
        f"median and {max(spreads):.2f}× at most ({len(spreads)} measured).",
        "",
    ]


def _comparison_line(rows: list[dict]) -> list[str]:
    """Which refreshes the run compared with their query afterwards (a difference stops a
    run, so every one compared was equal)."""
    if "compared" not in rows[0]:
        return [
            "The measurements do not say which refreshes were compared with their query: "
            "recorded before runs recorded it.",
            "",
        ]
    refreshes = [r for r in rows if r["kind"] in REFRESH_KINDS]
    compared = {
        kind: sum(r["compared"] == "equal" for r in refreshes if r["kind"] == kind)
        for kind in dict.fromkeys(r["kind"] for r in refreshes)
    }
    counts = ", ".join(
        f"{compared[kind]} of {sum(r['kind'] == kind for r in refreshes)} {kind}"
        for kind in compared
    )
    return [
        f"Refreshes compared with their query afterwards (EXCEPT ALL both ways) and "
        f"equal: {counts}.",
        "",
    ]


def _planner_table(rows: list[dict]) -> list[str]:
    """Each batch's refreshes under ``REFRESH POLICY AUTO`` judged against the faster of the
    two modes, each timed on a copy of the view refreshing the same batch (``--setting
    planner``); nothing without such copies.

    AUTO is judged by its own time, whatever it chose: the median over the repetitions,
    against the faster of the two copies' medians. A choice is good when it took at most
    the slack times that: the median spread of the copies' times over the repetitions
    (:func:`spread`), or no slack when the run has one repetition and so measured none.
    """
    times: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    chosen: dict[tuple, set[str]] = defaultdict(set)
    for row in rows:
        if row["kind"] in ("auto", *FORCED_MODES) and float(row["fraction"]) > 0:
            key = (float(row["scale"]), float(row["fraction"]), row["view"])
            times[key][row["kind"]].append(float(row["seconds"]))
            if row["kind"] == "auto":
                chosen[key].add(row["mode"])
    order = list(dict.fromkeys(r["view"] for r in rows))
    judged = [
        (key, kinds)
        for key, kinds in sorted(
            times.items(), key=lambda item: (*item[0][:2], order.index(item[0][2]))
        )
        if len(kinds) == 3
    ]
    if not judged:
        return []
    spreads = spread(rows, FORCED_MODES)
    slack = median(spreads) if spreads else 1.0
    repetitions = max(len(t) for _, kinds in judged for t in kinds.values())
    how = (
        f"the median spread between the repetitions of the two copies, the slowest over "
        f"the fastest ({len(spreads)} measured)"
        if spreads
        else "none: the run has one repetition, so it measured no spread between repetitions"
    )
    lines = [
        "## The refresh planner",
        "",
        "Each batch refreshed by three copies of each view: `REFRESH POLICY INCREMENTAL` "
        "(applies the change), `FULL` (ivm's recompute) and `AUTO` (the planner's "
        f"choice). AUTO is judged by its own time, median of {repetitions} "
        f"repetition{'s' if repetitions > 1 else ''}, against the faster of the two "
        f"copies' medians. A choice is good when it took at most {slack:.2f}× that; the "
        f"slack is {how}.",
        "",
        "| SF | batch | view | incremental s | recompute s | AUTO chose | AUTO s "
        "| AUTO / faster | good |",
        "|---|---:|---|---:|---:|---|---:|---:|---|",
    ]
    good = 0
    for (scale, fraction, view), kinds in judged:
        incremental, recompute, auto = (median(kinds[k]) for k in (*FORCED_MODES, "auto"))
        against = auto / min(incremental, recompute)
        ok = against <= slack
        good += ok
        lines.append(
            f"| {scale:g} | {fraction:.2%} | {view} | {incremental:.2f} | "
            f"{recompute:.2f} | {'/'.join(sorted(chosen[(scale, fraction, view)]))} "
            f"| {auto:.2f} | {against:.2f}× | {'yes' if ok else 'no'} |"
        )
    lines += [
        "",
        f"Choices within {slack:.2f}× of the faster mode: **{good} of "
        f"{len(judged)}** ({good / len(judged):.0%}).",
        "",
    ]
    return lines


def _phase_tables(
    summary, scales: list[str], views: list[str], labels: dict[str, str]
) -> list[str]:
    """Where the time of a one-row refresh goes: each phase's median seconds (and Spark
    jobs), per scale factor (see ``ivm.runtime.refresh.phases``)."""
    lines = []
    for scale in scales:
        measured = {v: summary.get((scale, 0.0, v, "one_row")) for v in views}
        names = list(
            dict.fromkeys(
                key.split(" ", 1)[1]
                for m in measured.values()
                if m
                for key in m
                if key.startswith("phase ")
            )
        )
        if not names:
            continue
        lines += [
            f"### Where a one-row refresh's time goes, SF {scale}",
            "",
            "Median seconds of each phase, and in parentheses its Spark jobs; a "
            "one-row refresh that was a no-op is left out.",
            "",
            "| view | " + " | ".join(names) + " | total |",
            "|---|" + "---:|" * (len(names) + 1),
        ]
        for view, m in measured.items():
            if m and m["modes"] != "noop":
                lines.append(
                    f"| {labels[view]} | "
                    + " | ".join(
                        f"{m.get(f'phase {n}', 0):.2f} ({m.get(f'jobs {n}', 0):.0f})" for n in names
                    )
                    + f" | {m['seconds']:.2f} |"
                )
        lines.append("")
    return lines


def _cell(summary, scale: str, fraction: float, view: str, kind: str = "incremental") -> str:
    found = summary.get((scale, fraction, view, kind))
    return f"{found['seconds']:.2f}" if found else ""


FIXED_COLUMNS = ("noop", "noop jobs", "one_row", "one_row jobs", "one_row / floor")
"""The fixed overhead's columns for each scale factor: medians of seconds and Spark jobs, and
a one-row refresh's seconds over those of its floor (see ``benchmarks.run.Run.floor``)."""


def _fixed_cell(summary, scale: str, view: str, column: str) -> str:
    """A no-op or one-row refresh's median seconds or Spark jobs (``column``: one of
    :data:`FIXED_COLUMNS`), or a one-row refresh's seconds over its floor's; a one-row
    refresh that found no change in its view's sources is marked a no-op."""
    kind, _, figure = column.partition(" ")
    found = summary.get((scale, 0.0, view, kind))
    if not found:
        return ""
    if figure == "jobs":
        return f"{found['jobs']:.0f}"
    if figure:
        floor = summary.get((scale, 0.0, "floor", "floor"))
        return f"{found['seconds'] / floor['seconds']:.1f}×" if floor else ""
    return f"{found['seconds']:.2f}" + (
        " (no-op)" if kind == "one_row" and found["modes"] == "noop" else ""
    )


def _floor_lines(summary, scales: list[str]) -> list[str]:
    """What the floor of a one-row refresh cost at each scale factor, where it was measured."""
    lines = []
    for scale in scales:
        floor = summary.get((scale, 0.0, "floor", "floor"))
        if floor:
            lines.append(
                f"The floor at SF {scale} (read the one-row change from `lineitem`'s change "
                f"data feed and append one row to a Delta table): {floor['seconds']:.2f} s, "
                f"{floor['jobs']:.0f} Spark jobs."
            )
    return [*lines, ""] if lines else []


def _growth(summary, scales: list[str], view: str) -> str:
    """How many times the refresh time grew between the two largest scale factors."""
    small, large = (
        summary.get((s, SCALE_CURVE_FRACTION, view, "incremental")) for s in scales[-2:]
    )
    return f"{large['seconds'] / small['seconds']:.1f}×" if small and large else ""


if __name__ == "__main__":  # the report of a run's directory, written again
    run = json.loads((Path(sys.argv[1]) / "run.json").read_text())
    write(Path(sys.argv[1]), **run)
