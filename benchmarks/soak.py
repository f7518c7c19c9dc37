"""Soak: what thousands of refreshes do to refresh time, store files, log size and the
driver's heap, and whether ``ivm run`` keeps 50 views within their freshness.

    python -m benchmarks.soak                   # 1,000 refreshes, then 50 views for 6
                                                # minutes: under 30 minutes here
    python -m benchmarks.soak --rounds 500      # 2,000 refreshes: about 45 minutes here
    python -m benchmarks.soak --setting quick   # 200 refreshes, 12 views for 2 minutes
    python -m benchmarks.soak --store-layout log    # every store logged, folded in upkeep

Two sources, ``events`` (appended to, some rows updated or deleted) and ``customers`` (a
dimension, now and then updated), take a steady trickle of changes.

1. **Many refreshes.** Four views (a filter, an aggregate, a join aggregate and a "latest
   row per key" dedup) are refreshed after every change, round after round. Each refresh
   records its time, and the store's file count and log size; every 25 rounds the JVM heap
   is measured after a garbage collection.
2. **Many views.** ``ivm run``'s loop keeps 50 views over the same sources (filters,
   aggregates, joins and dedups, freshness 60 to 240 seconds) fresh while another thread
   writes a change every few seconds. Each view's lag is read back from its history
   afterwards: for every source commit, the time until a refresh consumed it.

At the end every view is compared with its query (``ivm.verify``). The sources are the
user's: the benchmark turns Delta's auto compaction on for them, as a user should for
tables written in small commits. Writes ``benchmarks/results/soak[_quick]/``: ``refreshes.csv``,
``heap.csv``, ``lags.csv``, ``results.md`` and ``soak.png``.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sys
import threading
import time
from pathlib import Path
from statistics import mean, median

import ivm
from benchmarks import report
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.commands.scheduler import run
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.observation.describe import refresh_history
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.refresh.phases import PHASES
from ivm.runtime.refresh.upkeep import COMPACT_AT
from ivm.runtime.spark.settings import STORE_LAYOUT

RESULTS = Path(__file__).parent / "results"
DATABASE = "soak"
SETTINGS: dict[str, dict] = {
    "soak": dict(rounds=250, many_views=50, many_minutes=6.0),
    "quick": dict(rounds=50, many_views=12, many_minutes=2.0),
}
WARM_UP_ROUNDS = 25
"""Rounds left out of the first window of refresh times: the JVM compiles and caches."""
WINDOW = 100
"""Refreshes compared at the start (after the warm-up) and at the end."""
HEAP_EVERY = 25
"""Rounds between heap measurements."""
CUSTOMERS = 2_000
FIRST_EVENTS = 200_000
EVENTS_PER_ROUND = 20

SOURCES = {
    "events": "id BIGINT, cust INT, kind STRING, amount DECIMAL(12,2), ts TIMESTAMP",
    "customers": "cust INT, region STRING, tier INT",
}
FEW_VIEWS = {
    "open_events": "SELECT id, cust, amount FROM events WHERE kind <> 'void'",
    "by_customer": "SELECT cust, COUNT(*) AS n, SUM(amount) AS total FROM events GROUP BY cust",
    "by_region": "SELECT c.region, COUNT(*) AS n, SUM(e.amount) AS total FROM events e "
    "JOIN customers c ON e.cust = c.cust GROUP BY c.region",
    "latest_event": "SELECT cust, id, amount FROM (SELECT cust, id, amount, ROW_NUMBER() OVER "
    "(PARTITION BY cust ORDER BY ts DESC, id DESC) AS rn FROM events) "
    "WHERE rn = 1",
}


def many_views(count: int) -> dict[str, tuple[str, int]]:
    """``count`` views over the two sources: name → (query, freshness seconds), four
    shapes with different constants, freshness 60, 120 or 240 seconds."""
    shapes = [
        "SELECT id, cust, amount FROM events WHERE cust % {m} = {r} AND kind <> 'void'",
        "SELECT cust % {m} AS bucket, COUNT(*) AS n, SUM(amount) AS total FROM events "
        "WHERE kind <> 'k{r}' GROUP BY cust % {m}",
        "SELECT c.region, c.tier, COUNT(*) AS n FROM events e JOIN customers c "
        "ON e.cust = c.cust WHERE c.tier % {m} = {r} GROUP BY c.region, c.tier",
        "SELECT cust, id FROM (SELECT cust, id, ROW_NUMBER() OVER (PARTITION BY cust "
        "ORDER BY amount DESC, id) AS rn FROM events WHERE cust % {m} = {r}) WHERE rn = 1",
    ]
    views = {}
    for i in range(count):
        m = 3 + i // len(shapes) % 5
        sql = shapes[i % len(shapes)].format(m=m, r=i % m)
        views[f"many_{i:02d}"] = (sql, (60, 120, 240)[i % 3])
    return views


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


class Trickle:
    """The sources' steady change: each :meth:`step` is one commit to a source."""

    def __init__(self, spark, seed: int = 7):
        self.spark, self.random, self.next_id, self.steps = (
            spark,
            random.Random(seed),
            FIRST_EVENTS,
            0,
        )

    def step(self) -> None:
        """Insert events; every 5th step update some, every 10th delete some, every 25th
        move a customer to another region."""
        self.steps += 1
        r, sql = self.random, self.spark.sql
        if self.steps % 25 == 0:
            sql(
                f"UPDATE customers SET region = 'r{r.randrange(7)}', tier = tier + 1 "
                f"WHERE cust = {r.randrange(CUSTOMERS)}"
            )
        elif self.steps % 10 == 0:
            sql(
                f"DELETE FROM events WHERE id % 997 = {r.randrange(997)} "
                f"AND id < {self.next_id - 1000}"
            )
        elif self.steps % 5 == 0:
            sql(
                f"UPDATE events SET amount = amount + 1, kind = 'k{r.randrange(4)}' "
                f"WHERE id % 991 = {r.randrange(991)}"
            )
        else:
            first, self.next_id = self.next_id, self.next_id + EVENTS_PER_ROUND
            sql(
                f"INSERT INTO events SELECT id, CAST(hash(id) % {CUSTOMERS} + {CUSTOMERS} AS "
                f"INT) % {CUSTOMERS}, CASE WHEN id % 13 = 0 THEN 'void' ELSE "
                f"concat('k', id % 4) END, CAST(id % 1000 AS DECIMAL(12,2)) / 4, "
                f"current_timestamp() FROM range({first}, {self.next_id})"
            )


def prepare(spark) -> None:
    """The two sources, loaded anew, with change data feed and auto compaction on."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    spark.sql(f"USE {DATABASE}")
    for row in spark.sql(f"SHOW VIEWS IN {DATABASE}").collect():
        ivm.sql(spark, f"DROP MATERIALIZED VIEW IF EXISTS {DATABASE}.{row.viewName}")
    for table, columns in SOURCES.items():
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(
            f"CREATE TABLE {table} ({columns}) USING DELTA TBLPROPERTIES "
            f"(delta.enableChangeDataFeed = true, "
            f"delta.autoOptimize.autoCompact = true)"
        )
    spark.sql(
        f"INSERT INTO customers SELECT id, concat('r', id % 7), id % 5 FROM range({CUSTOMERS})"
    )
    spark.sql(
        f"INSERT INTO events SELECT id, id % {CUSTOMERS}, concat('k', id % 4), "
        f"CAST(id % 1000 AS DECIMAL(12,2)) / 4, "
        f"timestamp'2026-01-01' + make_interval(0, 0, 0, 0, 0, 0, id) "
        f"FROM range({FIRST_EVENTS})"
    )


def log_bytes(log: DeltaLogReader) -> int:
    """The size of a table's ``_delta_log`` directory on this machine's disk."""
    location = (log.location() or "").removeprefix("file:")
    folder = Path(location) / "_delta_log"
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def heap_after_gc(spark) -> int:
    """The JVM's used heap after a full garbage collection, in bytes."""
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    spark.sparkContext._jvm.java.lang.System.gc()
    return int(runtime.totalMemory() - runtime.freeMemory())


def python_rss() -> int:
    """The driver's Python process's resident memory, in bytes."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def where_the_time_went(result, seconds: float) -> dict[str, float]:
    """A refresh's ``seconds`` by phase (:data:`PHASES`, of the view's own refresh), its
    state tables' refreshes, and the rest (reading the definition, compaction's check)."""
    phases = {
        f"{phase}_s": round(result.phases[phase].seconds, 4) if phase in result.phases else 0.0
        for phase in PHASES
    }
    states = sum(s.phases[p].seconds for s in result.states for p in s.phases)
    return {
        **phases,
        "states_s": round(states, 4),
        "rest_s": round(seconds - states - sum(phases.values()), 4),
    }


def many_refreshes(spark, rounds: int, out: Path) -> tuple[list[dict], list[dict]]:
    """Part 1: a change then a refresh of each of the few views, ``rounds`` times."""
    for name, sql in FEW_VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    trickle, rows, heap = Trickle(spark), [], []
    started = time.perf_counter()
    with open(out / "refreshes.csv", "w", newline="") as file:
        writer = None
        for index in range(rounds):
            trickle.step()
            for name in FEW_VIEWS:
                begin = time.perf_counter()
                result = refresh_view(spark, name)
                seconds = time.perf_counter() - begin
                store = DeltaLogReader(spark, store_name(f"{DATABASE}.{name}"))
                row = dict(
                    round=index,
                    refresh=len(rows),
                    view=name,
                    mode=result.mode,
                    seconds=round(seconds, 4),
                    **where_the_time_went(result, seconds),
                    compacted=int(any(s.action == "compact" for s in result.upkeep)),
                    folded=int(any(s.action == "fold" for s in result.upkeep)),
                    store_files=store.file_count(),
                    store_version=store.version(),
                    log_bytes=log_bytes(store),
                    elapsed=round(time.perf_counter() - started, 1),
                )
                rows.append(row)
                if writer is None:
                    writer = csv.DictWriter(file, list(row))
                    writer.writeheader()
                writer.writerow(row)
            if index % HEAP_EVERY == 0 or index == rounds - 1:
                heap.append(
                    dict(
                        part="refreshes",
                        round=index,
                        refreshes=len(rows),
                        elapsed=round(time.perf_counter() - started, 1),
                        heap_bytes=heap_after_gc(spark),
                        rss_bytes=python_rss(),
                    )
                )
                file.flush()
                last = ", ".join(f"{r['view']} {r['seconds']:.2f}s" for r in rows[-4:])
                log(
                    f"round {index + 1}/{rounds}: last refreshes {last}; "
                    f"store files {max(r['store_files'] for r in rows[-4:])}; heap "
                    f"{heap[-1]['heap_bytes'] / 2**20:.0f} MiB"
                )
    return rows, heap


def many_views_under_run(spark, count: int, minutes: float, heap: list[dict]) -> dict:
    """Part 2: ``ivm run``'s loop over ``count`` views for ``minutes`` while a thread writes
    a change every few seconds; name → freshness."""
    views = many_views(count)
    for name, (sql, freshness) in views.items():
        ivm.sql(
            spark,
            f"CREATE MATERIALIZED VIEW {name} FRESHNESS = INTERVAL '{freshness}' SECONDS AS {sql}",
        )
    log(f"created {count} views; ivm run for {minutes} minutes")
    stop, trickle = threading.Event(), Trickle(spark, seed=11)
    started = time.perf_counter()

    def write_changes():
        while not stop.wait(3.0):
            trickle.step()

    def measure_heap():
        while not stop.wait(30.0):
            heap.append(
                dict(
                    part="run",
                    round="",
                    refreshes="",
                    elapsed=round(time.perf_counter() - started, 1),
                    heap_bytes=heap_after_gc(spark),
                    rss_bytes=python_rss(),
                )
            )

    threads = [threading.Thread(target=write_changes), threading.Thread(target=measure_heap)]
    for thread in threads:
        thread.start()
    timer = threading.Timer(minutes * 60, stop.set)
    timer.start()
    refreshed = []
    run(
        spark,
        tick=1.0,
        stop=stop,
        views=[f"{DATABASE}.{v}" for v in views],
        report=lambda line: refreshed.append(line),
        vacuum_every=minutes * 60,
    )
    for thread in threads:
        thread.join()
    log(f"ivm run stopped after {len(refreshed)} report lines")
    return {name: freshness for name, (_, freshness) in views.items()}


def lags(spark, views: dict[str, int], ended_ms: int) -> list[dict]:
    """For each view, the longest time a source commit waited until a refresh consumed it
    (or until ``ended_ms``, if none did), from the sources' and the store's histories."""
    commits = {}
    for table in SOURCES:
        history = (
            spark.sql(f"DESCRIBE HISTORY {DATABASE}.{table}")
            .select("version", "timestamp")
            .collect()
        )
        commits[f"{DATABASE}.{table}"] = sorted(
            (r.version, int(r.timestamp.timestamp() * 1000)) for r in history
        )
    found = []
    for name, freshness in views.items():
        records = refresh_history(spark, name).select("timestamp", "sources").collect()
        refreshes = sorted((int(r.timestamp.timestamp() * 1000), r.sources) for r in records)
        created_ms = refreshes[0][0]
        worst = 0.0
        for table, versions in commits.items():
            if table not in refreshes[-1][1]:  # a source the view does not read
                continue
            for version, committed_ms in versions:
                if committed_ms < created_ms:
                    continue
                consumed_ms = next(
                    (at for at, sources in refreshes if sources.get(table, -1) >= version), ended_ms
                )
                worst = max(worst, (consumed_ms - committed_ms) / 1000)
        found.append(
            dict(
                view=name,
                freshness=freshness,
                refreshes=len(refreshes) - 1,
                max_lag=round(worst, 1),
                ratio=round(worst / freshness, 2),
            )
        )
    return found


def write_report(
    out: Path,
    setting: str,
    rows: list[dict],
    heap: list[dict],
    lag_rows: list[dict],
    verdicts: list,
    minutes: float,
    measured_by: str,
) -> None:
    """``results.md`` and ``soak.png`` from the measurements; ``measured_by``: the command
    and commit (:func:`benchmarks.report.provenance`)."""
    with open(out / "heap.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, list(heap[0]))
        writer.writeheader()
        writer.writerows(heap)
    with open(out / "lags.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, list(lag_rows[0]))
        writer.writeheader()
        writer.writerows(lag_rows)
    per_round = len(FEW_VIEWS)
    first_rows, last_rows = rows[WARM_UP_ROUNDS * per_round :][:WINDOW], rows[-WINDOW:]
    first, last = [r["seconds"] for r in first_rows], [r["seconds"] for r in last_rows]
    compactions = sum(r["compacted"] for r in rows)
    files_after_first_compaction = [
        r["store_files"]
        for r in rows[next((i for i, r in enumerate(rows) if r["compacted"]), len(rows)) :]
    ]
    part1_heap = [h for h in heap if h["part"] == "refreshes"]
    slope = _slope([(h["refreshes"], h["heap_bytes"] / 2**20) for h in part1_heap])
    run_heap = [h["heap_bytes"] / 2**20 for h in heap if h["part"] == "run"]
    worst = max(lag_rows, key=lambda r: r["ratio"])
    lines = [
        f"# Soak ({setting})",
        "",
        f"{measured_by} The run took {minutes:.1f} minutes.",
        "",
        *[f"- {key}: {value}" for key, value in report.machine().items()],
        "",
        "## Targets",
        "",
        "| measure | figure | target |",
        "|---|---:|---:|",
        f"| refresh time, last {WINDOW} / first {WINDOW} after {WARM_UP_ROUNDS * per_round} "
        f"warm-up refreshes (median) | {median(last) / median(first):.2f}× "
        f"({median(first):.3f} s → {median(last):.3f} s) | ≤ 1.2× |",
        f"| the same, mean (compactions included) | {mean(last) / mean(first):.2f}× "
        f"({mean(first):.3f} s → {mean(last):.3f} s) | ≤ 1.2× |",
        f"| logged stores' folds of their logs (in the refreshes' upkeep, their time "
        f"counted in the refresh's) | {sum(r['folded'] for r in rows)} | - |",
        f"| store files: the most any store held, and after its first compaction | "
        f"{max(r['store_files'] for r in rows)}, "
        f"{max(files_after_first_compaction, default=0)} (compaction at {COMPACT_AT} more "
        f"than its size needs; {compactions} compactions) | bounded |",
        f"| JVM heap after GC, trend over {len(rows)} refreshes | {slope * 1000:+.1f} MiB per "
        f"1,000 refreshes (from {part1_heap[0]['heap_bytes'] / 2**20:.0f} to "
        f"{part1_heap[-1]['heap_bytes'] / 2**20:.0f} MiB; driver's Python process "
        f"{part1_heap[0]['rss_bytes'] / 2**20:.0f} → {part1_heap[-1]['rss_bytes'] / 2**20:.0f} "
        f"MiB resident) | flat |",
        f"| {len(lag_rows)} views under `ivm run`: longest lag / freshness | "
        f"{worst['ratio']:.2f} ({worst['view']}: {worst['max_lag']} s of "
        f"{worst['freshness']} s) | ≤ 1.5 (freshness + one refresh interval, half of it) |",
        f"| views equal to their query at the end | "
        f"{sum(v.equal for v in verdicts)} of {len(verdicts)} | all |",
        "",
        "## Refreshes",
        "",
        "| view | refreshes | median s, first window | median s, last window | most store "
        "files | log MiB at the end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in FEW_VIEWS:
        mine = [r for r in rows if r["view"] == name]
        start = mine[WARM_UP_ROUNDS : WARM_UP_ROUNDS + WINDOW // per_round]
        end = mine[-(WINDOW // per_round) :]
        lines.append(
            f"| {name} | {len(mine)} | {median(r['seconds'] for r in start):.3f} | "
            f"{median(r['seconds'] for r in end):.3f} | "
            f"{max(r['store_files'] for r in mine)} | "
            f"{mine[-1]['log_bytes'] / 2**20:.2f} |"
        )
    parts = [key for key in rows[0] if key.endswith("_s")]
    lines += [
        "",
        "Where the time went (seconds, median over all views' refreshes in the "
        "window; `rest`: the definition read and compaction's check):",
        "",
        "| | " + " | ".join(k.removesuffix("_s") for k in parts) + " |",
        "|---|" + "---:|" * len(parts),
    ]
    lines += [
        f"| {label} | " + " | ".join(f"{median(r[k] for r in window):.3f}" for k in parts) + " |"
        for label, window in (("first window", first_rows), ("last window", last_rows))
    ]
    lines += [
        "",
        "## `ivm run` over many views",
        "",
        f"JVM heap after GC during the run: {', '.join(f'{h:.0f}' for h in run_heap)} MiB.",
        "",
        "| view | freshness s | refreshes | longest lag s | lag / freshness |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['view']} | {r['freshness']} | {r['refreshes']} | {r['max_lag']} | {r['ratio']} |"
        for r in sorted(lag_rows, key=lambda r: -r["ratio"])
    ]
    lines += ["", "## Verification", ""]
    lines += [f"- {v}" for v in verdicts if not v.equal] or [
        f"Every view ({len(verdicts)}) equals its query at the source versions it reflects."
    ]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    _plot(out / "soak.png", rows, heap)


def _slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``points``."""
    if len(points) < 2:
        return 0.0
    mx, my = mean(x for x, _ in points), mean(y for _, y in points)
    denominator = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / denominator if denominator else 0.0


def _plot(path: Path, rows: list[dict], heap: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(2, 2, figsize=(12, 8))
    for name in FEW_VIEWS:
        mine = [r for r in rows if r["view"] == name]
        window = 25
        smooth = [
            median(r["seconds"] for r in mine[max(0, i - window) : i + 1]) for i in range(len(mine))
        ]
        axes[0][0].plot([r["refresh"] for r in mine], smooth, label=name)
        axes[0][1].plot([r["refresh"] for r in mine], [r["store_files"] for r in mine], label=name)
        axes[1][0].plot(
            [r["refresh"] for r in mine], [r["log_bytes"] / 2**20 for r in mine], label=name
        )
    part1 = [h for h in heap if h["part"] == "refreshes"]
    axes[1][1].plot(
        [h["elapsed"] for h in part1],
        [h["heap_bytes"] / 2**20 for h in part1],
        marker="o",
        label="JVM heap after GC, refreshes",
    )
    run_heap = [h for h in heap if h["part"] == "run"]
    if run_heap:
        offset = part1[-1]["elapsed"] if part1 else 0
        axes[1][1].plot(
            [offset + h["elapsed"] for h in run_heap],
            [h["heap_bytes"] / 2**20 for h in run_heap],
            marker="s",
            label="JVM heap after GC, ivm run over many views",
        )
    titles = [
        ["refresh seconds (running median of 25)", "store files"],
        ["store log MiB on disk", "driver heap MiB"],
    ]
    xlabels = [["refresh", "refresh"], ["refresh", "seconds into the soak"]]
    for i in range(2):
        for j in range(2):
            axes[i][j].set_title(titles[i][j])
            axes[i][j].set_xlabel(xlabels[i][j])
            axes[i][j].grid(True, alpha=0.3)
            axes[i][j].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="soak")
    parser.add_argument(
        "--rounds",
        type=int,
        help="rounds of part 1, each a change and a "
        "refresh of each of its four views (default: the setting's)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="results directory (default: benchmarks/results/soak or soak_quick)",
    )
    parser.add_argument(
        "--store-layout",
        choices=["merge", "log"],
        help="the layout of every view's store (spark.ivm.storeLayout; default: merge): log "
        "appends each change, and upkeep folds the log in every spark.ivm.logFoldAt appends",
    )
    args = parser.parse_args(argv)
    setting = SETTINGS[args.setting]
    out = args.out or RESULTS / ("soak" if args.setting == "soak" else f"soak_{args.setting}")
    out.mkdir(parents=True, exist_ok=True)
    started, measured_at = time.perf_counter(), report.source_commit()
    command = " ".join(["python -m benchmarks.soak", *(argv or sys.argv[1:])])
    home = Path(os.environ.get("IVM_SOAK_HOME", Path.home() / ".cache" / "ivm" / "soak"))
    spark = ivm.spark_session(home, app_name="ivm soak")
    if args.store_layout:
        spark.conf.set(STORE_LAYOUT, args.store_layout)
    prepare(spark)
    log(
        f"sources loaded; {(args.rounds or setting['rounds']) * len(FEW_VIEWS)} refreshes of "
        f"{len(FEW_VIEWS)} views"
    )
    rows, heap = many_refreshes(spark, args.rounds or setting["rounds"], out)
    views = many_views_under_run(spark, setting["many_views"], setting["many_minutes"], heap)
    lag_rows = lags(spark, views, int(time.time() * 1000))
    log("verifying every view")
    verdicts = [ivm.verify(spark, f"{DATABASE}.{name}") for name in [*FEW_VIEWS, *views]]
    minutes = (time.perf_counter() - started) / 60
    write_report(
        out,
        args.setting,
        rows,
        heap,
        lag_rows,
        verdicts,
        minutes,
        report.provenance(command, **measured_at),
    )
    log(f"results in {out}")
    return 0 if all(v.equal for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
