"""A state machine drives sources and views: any interleaving of changes and refreshes.

Rules insert, delete and update source rows (each change one Delta commit, or a few for a
row that lives within one step), refresh every view incrementally or FULL, kill a refresh at
one of its write points, recompute one partition of a partitioned view, change or drop a
view's catalog view or delete its store's rows behind ivm's back, and VACUUM a source
(so that a later refresh finds its change data gone and must recompute), drop a source and
create it again under its name (with the rows it had or others; its versions count from 0
again, so may meet the version a view consumed), change a source's columns and change them
back, and change the session time zone. One view
reads another, by its name in another case; one keeps a state table, which a refresh may
die after. Views are refreshed one by one by their names in
the other case, or all at once with REFRESH ALL. After each complete refresh every view must
equal its query recomputed on the current sources under the settings of the CREATE, and a run
that ends with changes not yet refreshed gets a last refresh and check. Hypothesis prints a
failing run as the short program of steps that replays it.
"""

import sys

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

import ivm
from ivm.runtime.catalog.tables import catalog_view, qualified_name, store_name
from ivm.runtime.refresh import faults
from tests.property.harness import (
    check_views,
    create_sources,
    definition,
    example_database,
    pinned_settings,
    refresh_views,
)
from tests.property.strategies import SCHEMAS, ZONES, changes, table_rows
from tests.property.views import FAMILIES

# Eight minutes of the two workers' CPU: CI runs it with the other long tests, in
# make test-integration, so that make test stays within 20 minutes.
pytestmark = [pytest.mark.long, pytest.mark.slow]

VIEWS = {
    name: FAMILIES[family][name]
    for family, name in (
        ("aggregates", "ByKey"),
        ("joins", "join3_by_d"),
        ("rows", "distinct_join"),
        ("windows", "top_groups"),
    )
}
VIEWS["`order`"] = "SELECT n, COUNT(*) AS groups, SUM(sum_a) AS total FROM bykey GROUP BY n"
"""Refreshed in this order: ``order`` reads ``ByKey``. ``top_groups`` keeps its groups in a
state table (:mod:`ivm.passes.states`)."""

PARTITIONED = ("ByKey", "top_groups")
"""Views partitioned by ``k``."""

REFRESH_POINTS = sorted(p for p in faults.WRITE_POINTS if p.startswith("refresh."))

tables = st.sampled_from(sorted(SCHEMAS))


def dies_at(point: str, result) -> bool:
    """Whether the refresh that returned ``result`` would have died at the write point
    ``point`` had it been armed: a view with a state table passes the point after it; a
    refresh that wrote anything passes the others, but fails inside its write only where it
    computed a row of its view or its state tables, since the failure is in the reading of
    a source's rows (a change of no row, or a recompute of an empty source, reads none)."""
    parts = [result, *result.states]
    if point == "refresh.after_state":
        return bool(result.states)
    if point == "refresh.during_write":
        return any(p.rows_inserted or p.rows_updated or p.rows_deleted for p in parts)
    return any(p.mode != "noop" for p in parts)


class RefreshMachine(RuleBasedStateMachine):
    """Sources r, s, t and the views of :data:`VIEWS`, in a database of their own."""

    spark = None  # set by the test before the machine runs

    def __init__(self):
        super().__init__()
        self.database = None
        self.created: dict[str, str] = {}  # the pinned settings at CREATE
        self.known: dict[str, list[tuple]] = {}
        self.refreshes = 0
        self.pending = False  # changes since the last refresh

    @initialize(r=table_rows("r"), s=table_rows("s"), t=table_rows("t"))
    def create(self, r, s, t):
        self.database = example_database(self.spark)
        self.database.__enter__()
        self.created = pinned_settings(self.spark)
        initial = {"r": r, "s": s, "t": t}
        self.known = {name: list(rows) for name, rows in initial.items()}
        create_sources(self.spark, initial)
        for name, query in VIEWS.items():
            partitioned = " PARTITIONED BY (k)" if name in PARTITIONED else ""
            ivm.sql(
                self.spark, f"CREATE MATERIALIZED VIEW {name}{partitioned} AS {definition(query)}"
            )

    def _change(self, table, data, kinds):
        for statement in data.draw(changes(table, self.known[table], kinds), label="DML"):
            self.spark.sql(statement)
        self.pending = True

    @rule(table=tables, data=st.data())
    def insert(self, table, data):
        self._change(table, data, ("insert", "repeat", "transient"))

    @rule(table=tables, data=st.data())
    def delete(self, table, data):
        self._change(table, data, ("delete", "clear"))

    @rule(table=tables, data=st.data())
    def update(self, table, data):
        self._change(table, data, ("update",))

    @rule(table=tables, data=st.data())
    def recreate(self, table, data):
        """DROP TABLE and CREATE TABLE ``table`` again, with rows (see ``strategies.recreate``)."""
        self._change(table, data, ("recreate",))

    @rule(table=tables, data=st.data())
    def alter(self, table, data):
        """Change ``table``'s columns and change them back (see ``ivm.testing.data.alter``):
        a column dropped and added back, renamed and renamed back, widened, column mapping
        turned on or off."""
        self._change(table, data, ("alter",))

    @rule(zone=st.sampled_from(ZONES))
    def set_time_zone(self, zone):
        """Later refreshes run in a session of another time zone."""
        self.spark.conf.set("spark.sql.session.timeZone", zone)

    def _refresh(self, full: bool, all_at_once: bool = False):
        if all_at_once:
            ivm.sql(self.spark, "REFRESH ALL MATERIALIZED VIEWS")
        else:
            refresh_views(self.spark, VIEWS, full=full)
        self.refreshes += 1
        self.pending = False
        kind = "full" if full else "REFRESH ALL" if all_at_once else "incremental"
        check_views(self.spark, VIEWS, f"after {kind} refresh #{self.refreshes}", self.created)

    @rule(all_at_once=st.booleans())
    def refresh(self, all_at_once):
        self._refresh(full=False, all_at_once=all_at_once)

    @rule()
    def refresh_full(self):
        self._refresh(full=True)

    @rule(
        view=st.sampled_from(sorted(VIEWS)),
        point=st.sampled_from(REFRESH_POINTS),
        full=st.booleans(),
    )
    def crash(self, view, point, full):
        """A refresh of ``view`` dies at ``point`` (or, where :func:`dies_at` says it
        cannot, completes); the next refresh must complete it."""
        try:
            with faults.inject(point, must_fire=False):
                result = ivm.sql(self.spark, f"REFRESH MATERIALIZED VIEW {view}{' FULL' * full}")
        except Exception as error:  # the injected fault, as Python or as Spark raised it
            assert "injected fault" in str(error), error
        else:
            assert not dies_at(point, result), f"the refresh did not die at {point}: {result}"
        self.pending = True

    @rule(view=st.sampled_from(PARTITIONED), k=st.integers(0, 2))
    def refresh_partition(self, view, k):
        """Recompute one partition of ``view`` at the source versions it reflects."""
        ivm.sql(self.spark, f"REFRESH MATERIALIZED VIEW {view.upper()} PARTITION (k = {k})")
        self.pending = True

    @rule(
        view=st.sampled_from(sorted(VIEWS)),
        how=st.sampled_from(("ALTER VIEW", "DROP VIEW", "DELETE FROM its store")),
    )
    def behind_ivms_back(self, view, how):
        """Spark's own statement on a view's names run with ``spark.sql``, which ivm does not
        see: its catalog view made to read nothing (with the same columns) or dropped, or
        its store's rows deleted. The next refresh must find it and mend it. (A view that
        another reads keeps its catalog view: the reader's definition names it.)"""
        name = qualified_name(self.spark, view)
        if how == "ALTER VIEW":
            text = catalog_view(self.spark, name).text
            self.spark.sql(f"ALTER VIEW {name} AS SELECT * FROM ({text}) WHERE FALSE")
        elif how == "DROP VIEW" and view != "ByKey":
            self.spark.sql(f"DROP VIEW {name}")
        elif how == "DELETE FROM its store":
            self.spark.sql(f"DELETE FROM {store_name(name)}")
        self.pending = True

    @rule(table=tables)
    def vacuum(self, table):
        """Remove every file the latest version does not need, change data included."""
        self.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        try:
            self.spark.sql(f"VACUUM {table} RETAIN 0 HOURS")
        finally:
            self.spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")

    def teardown(self):
        if self.database is None:
            return
        try:
            if self.pending and sys.exc_info()[0] is None:  # the run passed so far
                self._refresh(full=False)
        finally:
            for key, value in self.created.items():  # the time zone of the CREATE again
                self.spark.conf.set(key, value)
            self.database.__exit__(None, None, None)


def test_any_interleaving_of_changes_and_refreshes(spark):
    RefreshMachine.spark = spark
    run_state_machine_as_test(
        RefreshMachine,
        settings=settings(
            settings(), max_examples=max(1, settings().max_examples // 5), stateful_step_count=8
        ),
    )
