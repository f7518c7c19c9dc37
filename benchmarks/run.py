"""Incremental refresh against full recompute, TPC-H views under change batches.

    python -m benchmarks.run --setting quick        # SF 0.1, three views: under 10 minutes
    python -m benchmarks.run --setting core         # SF 0.1, the core views: half an hour
    python -m benchmarks.run --setting every        # SF 0.1, every view: about an hour
    python -m benchmarks.run --setting full         # SF 0.1, 1 and 10, the core views: hours
    python -m benchmarks.run --setting fixed        # SF 0.1: no-op and one-row refreshes only
    python -m benchmarks.run --setting small        # SF 1, 0.01 % batches, the core views
    python -m benchmarks.run --setting planner      # SF 1, 0.01-10 %: what AUTO chose
    python -m benchmarks.run --setting appends      # SF 1, batches that insert rows only

For each scale factor: generate TPC-H (cached), load it into Delta tables with change data
feed on (cached: later runs RESTORE the tables to their loaded version), create the views,
then for each batch fraction and repetition apply one change batch
(:class:`benchmarks.workload.Batches`) and, per view, time

* ``incremental``: ``REFRESH MATERIALIZED VIEW`` (ivm's delta query and MERGE; the views are
  created with ``REFRESH POLICY INCREMENTAL``, so that this measures the delta rules also
  where ivm's default policy would predict a recompute cheaper and run that; ``--policy
  AUTO`` measures what that policy does instead, and the report marks each view it
  recomputed),
* ``full``: ``CREATE OR REPLACE TABLE … AS <query>``, what a user without ivm runs,

and compare the two tables (EXCEPT ALL both ways): a difference stops the benchmark. Then the
fixed overhead: a refresh without source change (``noop``) and of a one-row change
(``one_row``), each view compared with its query after each, and beside them the floor of a
one-row refresh (``floor``): read the one commit's change of ``lineitem`` and append one row
to a Delta table, what no refresh of a one-row change can do without. The ``planner`` setting also
refreshes two copies of each view, under ``REFRESH POLICY AUTO`` (``auto``) and ``FULL``
(``recompute``), for each batch, and the report judges each choice of AUTO against the
faster of the two modes. Every measurement is a row of ``measurements.csv`` (a refresh's
once it was compared with its query, marked so); :mod:`benchmarks.report` turns them into
the tables and plots, and ``run.json`` keeps the command and the commit that measured them.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import sys
import time
from functools import partial
from pathlib import Path

import ivm
from benchmarks import report, tpch_data
from benchmarks.measure import Meter, written
from benchmarks.workload import APPEND_VIEWS, CORE, Batches, View, views
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.refresh.gather import INSERTS_ONLY_RULES
from ivm.runtime.spark.settings import STATE_LAYOUT, STORE_LAYOUT, session_settings

RESULTS = Path(__file__).parent / "results"
FLOOR = "floor"
"""The name of the floor of a one-row refresh: its measurement's view and kind, and the table
it appends to (see :meth:`Run.floor`)."""

#: scale factor → the batch fractions run at it; views (None: all); repetitions.
SETTINGS = {
    "quick": dict(scales={"0.1": [0.001, 0.01]}, views=["q1", "q3", "latest_order"], repetitions=2),
    "core": dict(
        scales={"0.1": [0.001, 0.01]}, views=[*CORE, "latest_order", "revenue_bands"], repetitions=3
    ),
    "every": dict(scales={"0.1": [0.001, 0.01]}, views=None, repetitions=2),
    "full": dict(
        scales={"0.1": [0.001], "1": [0.0001, 0.001, 0.01, 0.1], "10": [0.001]},
        views=[*CORE, "latest_order", "revenue_bands"],
        repetitions=2,
    ),
    # the same change (600 line items) at SF 1 and SF 10: what a refresh's time owes to the
    # tables' size rather than the change's; three repetitions, as a view's first refresh
    # after its CREATE costs about twice a later one and the median leaves it out
    "growth": dict(
        scales={"1": [0.0001], "10": [0.00001]},
        views=[*CORE, "latest_order", "revenue_bands"],
        repetitions=3,
    ),
    # the fixed cost of a refresh, to check a change of the refresh path in minutes
    "fixed": dict(
        scales={"0.1": []}, views=[*CORE, "latest_order", "revenue_bands"], repetitions=3
    ),
    # small batches over data that takes seconds to recompute: what the fixed cost leaves
    "small": dict(scales={"1": [0.0001]}, views=CORE, repetitions=3),
    # the refresh planner: each batch refreshed incrementally, recomputed, and as AUTO chose
    "planner": dict(
        scales={"1": [0.0001, 0.001, 0.01, 0.1]}, views=CORE, repetitions=3, planner=True
    ),
    # an append table's batches (RF1 alone), under views that fold inserted rows
    "appends": dict(
        scales={"1": [0.0001, 0.001, 0.01]},
        views=[*APPEND_VIEWS, "q1", "q3"],
        repetitions=2,
        appends=True,
    ),
}

#: With ``planner``, each view also has two copies: refreshed under REFRESH POLICY AUTO, and
#: FULL (ivm's own recompute, the alternative AUTO chooses between).
PLANNER_COPIES = {"auto": "AUTO", "recompute": "FULL"}

#: Shuffle partitions per scale factor (ivm's local default of 4 suits small data only).
SHUFFLE_PARTITIONS = {"0.1": 4, "1": 8, "10": 32}

FIELDS = [
    "scale",
    "fraction",
    "repetition",
    "view",
    "kind",
    "mode",
    "seconds",
    "rows_read",
    "bytes_read",
    "bytes_shuffled",
    "files_written",
    "bytes_written",
    "heap_peak_bytes",
    "classes_compiled",
    "jobs",
    "phases",
    "compared",
]


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def database(scale: str) -> str:
    return f"tpch_sf{scale.replace('.', '_')}"


def prepare(spark, scale: str) -> None:
    """The TPC-H tables of ``scale``, as loaded and without views, in the current database."""
    parquet = tpch_data.generate(scale)
    db = database(scale)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
    spark.sql(f"USE {db}")
    spark.conf.set("spark.sql.shuffle.partitions", SHUFFLE_PARTITIONS[scale])
    for row in spark.sql(f"SHOW TABLES IN {db}").collect():
        if row.tableName.startswith("full_"):
            spark.sql(f"DROP TABLE {db}.{row.tableName}")
    for view in reversed(views()):
        for name in [view.name, *(f"{view.name}_{copy}" for copy in PLANNER_COPIES)]:
            ivm.sql(spark, f"DROP MATERIALIZED VIEW IF EXISTS {name}")
    existing = {row.tableName for row in spark.sql(f"SHOW TABLES IN {db}").collect()}
    if set(tpch_data.SCHEMA) <= existing:
        for table in tpch_data.SCHEMA:
            spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF 0")
        log(f"SF {scale}: tables restored to their loaded version")
    else:
        started = time.perf_counter()
        tpch_data.load(spark, parquet)
        log(f"SF {scale}: loaded into Delta in {time.perf_counter() - started:.1f}s")


def check(spark, name: str, expected, what: str) -> None:
    """The view ``name`` equals ``expected``, a DataFrame (``what``: what it holds), as
    multisets (EXCEPT ALL both ways); a difference stops the run."""
    actual = spark.table(name)
    extra, missing = actual.exceptAll(expected).count(), expected.exceptAll(actual).count()
    if (extra, missing) != (0, 0):
        raise SystemExit(
            f"wrong result: view {name} has {extra} rows {what} lacks and lacks "
            f"{missing} of its rows"
        )


class Run:
    """One scale factor's measurements, appended to ``writer``; a refresh's once the view
    was compared with its query."""

    def __init__(
        self,
        spark,
        scale: str,
        chosen: list[View],
        writer,
        policy: str,
        planner: bool = False,
        appends: bool = False,
    ):
        self.spark, self.scale, self.views, self.writer = spark, scale, chosen, writer
        self.policy, self.planner, self.appends = policy, planner, appends
        self.meter = Meter(spark)
        self.uncompared: list[dict] = []  # refreshes not yet compared with their query

    def record(self, fraction, repetition, view, kind, mode, cost, files=0, size=0, phases=None):
        row = {
            "scale": self.scale,
            "fraction": fraction,
            "repetition": repetition,
            "view": view if isinstance(view, str) else view.name,
            "kind": kind,
            "mode": mode,
            "files_written": files,
            "bytes_written": size,
            **dataclasses.asdict(cost),
            "phases": " ".join(
                f"{name}={p.seconds:.3f}/{p.jobs}" for name, p in (phases or {}).items()
            ),
        }
        if kind in ("create", "full", FLOOR):
            self.writer.writerow(row)
        else:
            self.uncompared.append(row)

    def compared(self) -> None:
        """Write the refreshes held until their views were compared with the query: each
        equal, as a difference stops the run."""
        for row in self.uncompared:
            self.writer.writerow(row | {"compared": "equal"})
        self.uncompared.clear()

    def refresh(self, fraction, repetition, kind) -> None:
        """Refresh each view, and with ``planner`` its copies, in an order that turns with the
        repetition: the first refresh after a batch reads the change from disk and the others
        from the page cache, and no mode should always be the first."""
        copies = PLANNER_COPIES if self.planner and kind == "incremental" else {}
        for view in self.views:
            turns = [(kind, view.name), *((copy, f"{view.name}_{copy}") for copy in copies)]
            shift = (repetition - 1) % len(turns)
            for measured, name in turns[shift:] + turns[:shift]:
                self.refresh_one(fraction, repetition, measured, view, name)

    def refresh_one(self, fraction, repetition, kind, view: View, name: str) -> None:
        """Refresh the view ``name``, a copy of ``view``, as a measurement of ``kind``."""
        cost, result = self.meter.cost(
            lambda: ivm.sql(self.spark, f"REFRESH MATERIALIZED VIEW {name}")
        )
        files, size = (
            (0, 0)
            if result.mode == "noop"
            else written(self.spark, store_name(f"{database(self.scale)}.{name}"))
        )
        phases = {
            f"state{i}.{phase_name}": phase
            for i, state in enumerate(result.states, 1)
            for phase_name, phase in state.phases.items()
        } | result.phases
        states = {state.mode for state in result.states} - {"noop"}
        mode = (
            result.mode
            if states <= {result.mode}
            else f"{result.mode}, state tables {'/'.join(sorted(states))}"
        )
        self.record(fraction, repetition, view, kind, mode, cost, files, size, phases)
        if kind == "incremental" and result.mode != "incremental":
            log(f"  {name}: {result}")

    def floor(self, repetition) -> None:
        """Time the floor of a one-row refresh: read the change of ``lineitem``'s latest
        commit (the one-row change) from its change data feed, and append one row to a Delta
        table."""
        version = self.spark.sql("DESCRIBE HISTORY lineitem LIMIT 1").first().version
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {FLOOR} (changed BIGINT) USING DELTA")

        def read_and_append():
            change = self.spark.sql(
                f"SELECT * FROM table_changes('lineitem', {version}, {version})"
            )
            self.spark.sql(f"INSERT INTO {FLOOR} VALUES ({len(change.collect())})")

        if repetition == 1:  # as warm as the refreshes: its code compiled, its table known
            read_and_append()
        cost, _ = self.meter.cost(read_and_append)
        self.record(0, repetition, FLOOR, FLOOR, FLOOR, cost)

    def recompute(self, fraction, repetition) -> None:
        """Time each view's full recompute, and compare the view (and its copies) with it."""
        for view in self.views:
            cost, _ = self.meter.cost(
                partial(
                    self.spark.sql,
                    f"CREATE OR REPLACE TABLE full_{view.name} USING DELTA AS {view.full_sql}",
                )
            )
            files, size = written(self.spark, f"full_{view.name}")
            self.record(fraction, repetition, view, "full", "full", cost, files, size)
            for name in [
                view.name,
                *(f"{view.name}_{copy}" for copy in (PLANNER_COPIES if self.planner else {})),
            ]:
                check(self.spark, name, self.spark.table(f"full_{view.name}"), "its full recompute")
        self.compared()

    def compare_with_queries(self) -> None:
        """Compare each view with its query, run once (untimed) and held in memory."""
        for view in self.views:
            check(
                self.spark, view.name, self.spark.sql(view.full_sql).localCheckpoint(), "its query"
            )
        self.compared()

    def run(self, fractions: list[float], repetitions: int) -> None:
        for view in self.views:
            cost, result = self.meter.cost(
                partial(
                    ivm.sql,
                    self.spark,
                    f"CREATE MATERIALIZED VIEW {view.name} REFRESH POLICY "
                    f"{self.policy} AS {view.sql}",
                )
            )
            self.record(0, 0, view, "create", result.mode, cost)
            for copy, policy in (PLANNER_COPIES if self.planner else {}).items():
                ivm.sql(
                    self.spark,
                    f"CREATE MATERIALIZED VIEW {view.name}_{copy} REFRESH "
                    f"POLICY {policy} AS {view.sql}",
                )
        log(f"SF {self.scale}: {len(self.views)} views created")
        batches = Batches(self.spark)
        for fraction in fractions:
            for repetition in range(1, repetitions + 1):
                started = time.perf_counter()
                for statement in batches.next(fraction, self.appends):
                    self.spark.sql(statement)
                log(
                    f"SF {self.scale}, batch {fraction:.2%} #{repetition}: applied in "
                    f"{time.perf_counter() - started:.1f}s"
                )
                self.refresh(fraction, repetition, "incremental")
                self.recompute(fraction, repetition)
        for repetition in range(1, repetitions + 1):
            self.refresh(0, repetition, "noop")
            self.compare_with_queries()
            for statement in batches.one_row(self.spark, self.appends):
                self.spark.sql(statement)
            self.floor(repetition)
            self.refresh(0, repetition, "one_row")
            self.compare_with_queries()
        log(f"SF {self.scale}: done")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="quick")
    parser.add_argument("--scales", nargs="+", help="only these scale factors of the setting")
    parser.add_argument("--views", nargs="+", help="these views instead of the setting's")
    parser.add_argument("--repetitions", type=int, help="instead of the setting's")
    parser.add_argument(
        "--policy",
        choices=["INCREMENTAL", "AUTO"],
        default="INCREMENTAL",
        help="the views' REFRESH POLICY (default: INCREMENTAL)",
    )
    parser.add_argument(
        "--out", type=Path, help="results directory (default: benchmarks/results/<setting>)"
    )
    parser.add_argument(
        "--without-inserts-only-rules",
        action="store_true",
        help="refresh by the rules for any change also where every source's "
        "change inserts rows only (spark.ivm.refresh.insertsOnlyRules)",
    )
    parser.add_argument(
        "--time-zone",
        help="the session time zone the views are created and refreshed under (default: "
        "the session's); Delta rebuilds a table's state at each commit outside UTC",
    )
    parser.add_argument(
        "--store-layout",
        choices=["merge", "log"],
        help="the layout of the views' stores (spark.ivm.storeLayout; default: merge): log "
        "appends each change and folds it in on read",
    )
    parser.add_argument(
        "--state-layout",
        choices=["merge", "log"],
        help="the layout of the views' state tables (spark.ivm.stateLayout; default: log)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting the views are created and refreshed under (not the data's "
        "load), e.g. spark.databricks.delta.properties.defaults.enableDeletionVectors=true",
    )
    parser.add_argument(
        "--load-only",
        action="store_true",
        help="generate and load the setting's data, measure nothing",
    )
    args = parser.parse_args(argv)
    if importlib.util.find_spec("matplotlib") is None:  # found missing after the run, not before
        raise SystemExit(
            "matplotlib, which draws the report's plots, is not installed: "
            "pip install -e '.[bench]' (make bench-quick installs it too)"
        )
    setting = SETTINGS[args.setting]
    out = args.out or RESULTS / args.setting
    repetitions = args.repetitions or setting["repetitions"]
    chosen = views(args.views or setting["views"])
    scales = {s: f for s, f in setting["scales"].items() if not args.scales or s in args.scales}
    started, measured_at = time.perf_counter(), report.source_commit()
    spark = ivm.spark_session(tpch_data.cache_root() / "ivm_home", app_name="ivm benchmark")
    if args.without_inserts_only_rules:
        spark.conf.set(INSERTS_ONLY_RULES, "false")
    if args.time_zone:
        spark.conf.set("spark.sql.session.timeZone", args.time_zone)
    measured_settings = dict(conf.split("=", 1) for conf in args.conf)
    if args.store_layout:
        measured_settings[STORE_LAYOUT] = args.store_layout
    if args.state_layout:
        measured_settings[STATE_LAYOUT] = args.state_layout
    if args.load_only:
        for scale in scales:
            prepare(spark, scale)
        return 0
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "measurements.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS)
        writer.writeheader()
        for scale, fractions in scales.items():
            prepare(spark, scale)
            with session_settings(spark, measured_settings):
                Run(
                    spark,
                    scale,
                    chosen,
                    writer,
                    args.policy,
                    setting.get("planner", False),
                    setting.get("appends", False),
                ).run(fractions, repetitions)
            file.flush()
    report.write(
        out,
        machine=report.machine(),
        minutes=(time.perf_counter() - started) / 60,
        command=" ".join(["python -m benchmarks.run", *(argv or sys.argv[1:])]),
        **measured_at,
    )
    log(f"results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
