"""State tables: a global top-N over a join and an aggregate keeps the groups as a hidden
view of its own, refreshed before the view in a commit of its own, created, explained and
dropped with the view, and consistent whichever write a refresh dies at."""

from contextlib import ExitStack

import pytest

import ivm
from ivm.codegen.store import LOGGED
from ivm.errors import CatalogError, ViewExists, ViewInUse
from ivm.runtime.catalog.graph import materialized_views
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.refresh.upkeep import LOG_FOLD_AT
from ivm.runtime.spark.settings import STATE_LAYOUT, session_settings
from tests.support.cdf import CDF, vacuum_everything
from tests.support.helpers import assert_equals_query, history, ivm_commits, rows

TOP = (
    "SELECT r.k, s.d, SUM(r.a) AS total, COUNT(*) AS n FROM r JOIN s ON r.k = s.k "
    "GROUP BY r.k, s.d ORDER BY total DESC, r.k LIMIT 2"
)


def state(db: str) -> str:
    """The state table of the view ``top`` of the database ``db``: in its internal
    database."""
    return f"{db}__ivm.top__ivm_state1"


def create_sources(spark, r: str, s: str) -> None:
    """The sources r and s, holding the rows ``r`` and ``s`` (SQL VALUES lists)."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE s (k INT, d STRING) USING DELTA {CDF}")
    spark.sql(f"INSERT INTO r VALUES {r}")
    spark.sql(f"INSERT INTO s VALUES {s}")


@pytest.fixture
def top(spark, fresh_db):
    create_sources(
        spark, "(1, 10), (2, 20), (2, 5), (3, 7), (4, 1)", "(1, 'x'), (2, 'y'), (3, 'x'), (4, 'z')"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    return fresh_db


def change_sources(spark):
    spark.sql("INSERT INTO r VALUES (4, 100), (5, 3)")
    spark.sql("DELETE FROM r WHERE k = 2")
    spark.sql("UPDATE s SET d = 'w' WHERE k = 1")


def test_the_groups_under_a_top_n_are_a_state_table_that_the_view_reads(spark, top):
    assert [t for t, _ in ivm.compile(TOP, spark=spark, name="top").states] == [state(top)]
    assert state(top) not in materialized_views(spark), "a state table is no view"
    state_rows = spark.table(state(top)).count()
    assert (
        state_rows
        == spark.sql("SELECT r.k, s.d FROM r JOIN s ON r.k = s.k GROUP BY r.k, s.d").count()
    )
    change_sources(spark)
    result = refresh_view(spark, "top")
    assert result.mode == "incremental"
    assert list(result.consumed) == [state(top)], "the view reads its state table"
    assert_equals_query(spark, "top", TOP)
    assert [c.userMetadata is not None for c in ivm_commits(spark, state(top))] == [True, True], (
        "the state table took the change in one commit"
    )


def test_explain_and_describe_show_the_state_table(spark, top):
    plan = "\n".join(
        r.plan for r in ivm.sql(spark, f"EXPLAIN CREATE MATERIALIZED VIEW other AS {TOP}").collect()
    )
    assert f"state table {top}__ivm.other__ivm_state1" in plan
    assert f"reads state table {top}__ivm.other__ivm_state1 whole" in plan
    facts = dict(tuple(r) for r in ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW top").collect())
    assert facts[f"state table {state(top)}"].startswith("keyed by (k, d)")


def test_explain_create_says_the_state_tables_layout_or_why_a_create_refuses_it(spark, top):
    """``EXPLAIN CREATE`` reads ``spark.ivm.stateLayout`` as the CREATE does: the layout its
    state tables take (``log`` unless the session says ``merge``), or, for a name no layout
    has, that the CREATE fails and why."""

    def explained() -> list[str]:
        statement = f"EXPLAIN CREATE MATERIALIZED VIEW other AS {TOP}"
        return [r.plan for r in ivm.sql(spark, statement).collect()]

    logged = "state tables' layout: log: each refresh appends its change, reads fold it in"
    assert logged in explained()
    with session_settings(spark, {STATE_LAYOUT: "merge"}):
        assert "state tables' layout: merge: each refresh merges its change into the stored " in (
            "\n".join(explained())
        )
    with session_settings(spark, {STATE_LAYOUT: "bogus"}):
        refused = [line for line in explained() if line.startswith("state tables' layout")]
        assert refused == [
            "state tables' layout: CREATE fails: spark.ivm.stateLayout is 'bogus': no store "
            "layout has that name"
        ]
        with pytest.raises(CatalogError, match="spark.ivm.stateLayout is 'bogus'"):
            ivm.sql(spark, f"CREATE MATERIALIZED VIEW other AS {TOP}")


def test_drop_removes_the_state_tables_and_a_state_table_is_not_dropped_alone(spark, top):
    with pytest.raises(ViewInUse, match="state table of the materialized view"):
        ivm.sql(spark, f"DROP MATERIALIZED VIEW {state(top)}")
    ivm.sql(spark, "DROP MATERIALIZED VIEW top")
    assert not spark.catalog.tableExists(state(top))
    assert not spark.catalog.tableExists(store_name(state(top)))


def test_a_state_table_is_not_refreshed_or_redefined_alone_but_describes_itself(spark, top):
    for statement in [
        "REFRESH MATERIALIZED VIEW {}",
        "REFRESH MATERIALIZED VIEW {} FULL",
        "REFRESH MATERIALIZED VIEW {} PARTITION (k = 1)",
    ]:
        with pytest.raises(CatalogError) as caught:
            ivm.sql(spark, statement.format(state(top)))
        assert caught.value.message == (
            f"{state(top)} is a state table of the materialized "
            f"view {top}.top, not a view of its own"
        )
        assert (caught.value.hint or "").startswith(f"REFRESH MATERIALIZED VIEW {top}.top")
    for replace in ["", "OR REPLACE "]:
        with pytest.raises(
            ViewExists, match=f"is a state table of the materialized view {top}.top"
        ):
            ivm.sql(spark, f"CREATE {replace}MATERIALIZED VIEW {state(top)} AS SELECT k FROM r")
    assert [c.userMetadata is not None for c in ivm_commits(spark, state(top))] == [True], (
        "the state table was written by the view's CREATE alone"
    )
    facts = dict(
        tuple(r) for r in ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {state(top)}").collect()
    )
    assert facts["state table of"] == f"{top}.top"


def test_a_definition_without_the_state_replaces_it_and_drops_the_state(spark, top):
    ivm.sql(spark, "CREATE OR REPLACE MATERIALIZED VIEW top AS SELECT k, a FROM r")
    assert not spark.catalog.tableExists(store_name(state(top)))
    ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW top AS {TOP}")
    change_sources(spark)
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    assert_equals_query(spark, "top", TOP)


REFRESH_POINTS = [p for p in faults.WRITE_POINTS if p.startswith("refresh.")]


@pytest.mark.parametrize("point", REFRESH_POINTS)
def test_a_refresh_killed_at_any_write_of_the_view_or_its_state_is_completed(spark, top, point):
    """The fault fires in the view's own write, after its state table committed (at
    ``refresh.after_state``, between the two): the view is as it was, or refreshed, and the
    next refresh completes it, each table taking the change in one commit."""
    change_sources(spark)
    before = rows(spark, "top")
    commits = {t: len(ivm_commits(spark, t)) for t in ("top", state(top))}
    with pytest.raises(Exception, match=f"injected fault at {point}"), ExitStack() as armed:
        if point == "refresh.after_state":
            armed.enter_context(faults.inject(point))
        else:
            armed.enter_context(
                faults.inject(
                    "refresh.after_state", lambda: armed.enter_context(faults.inject(point))
                )
            )
        refresh_view(spark, "top")
    assert rows(spark, "top") in (before, sorted(tuple(r) for r in spark.sql(TOP).collect()))
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    assert_equals_query(spark, "top", TOP)
    assert {t: len(ivm_commits(spark, t)) for t in ("top", state(top))} == {
        t: n + 1 for t, n in commits.items()
    }


@pytest.mark.slow
def test_a_vacuumed_source_recomputes_the_state_and_the_view_follows(spark, top):
    change_sources(spark)
    vacuum_everything(spark, "r")
    result = refresh_view(spark, "top")
    latest = ivm.sql(spark, f"DESCRIBE HISTORY MATERIALIZED VIEW {state(top)}").first()
    assert latest.mode == "full" and "can no longer be read: files of version" in latest.reason
    # the state table's change is all its rows twice: the view is recomputed from it
    assert result.mode == "full" and result.reason == f"its state table {state(top)} was recomputed"
    assert_equals_query(spark, "top", TOP)


def test_a_partition_of_a_view_with_a_state_table_is_recomputed_from_it(spark, fresh_db):
    create_sources(spark, "(1, 10), (2, 20), (3, 7)", "(1, 'x'), (2, 'y'), (3, 'x')")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top PARTITIONED BY (d) AS {TOP}")
    spark.sql(f"DELETE FROM {store_name(f'{fresh_db}.top')} WHERE d = 'y'")  # damage a partition
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top PARTITION (d = 'y')")
    assert_equals_query(spark, "top", TOP)
    change_sources(spark)
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    assert_equals_query(spark, "top", TOP)


def test_state_tables_take_their_change_as_an_append(spark, fresh_db):
    """A state table's store is logged unless the session that creates the view sets
    ``spark.ivm.stateLayout = merge``: each refresh appends its change to it, the view reads
    it folded, and upkeep folds its log in; the view stays equal to its query throughout, the
    view's own store merged."""
    create_sources(
        spark, "(1, 10), (2, 20), (2, 5), (3, 7), (4, 1)", "(1, 'x'), (2, 'y'), (3, 'x'), (4, 'z')"
    )
    with session_settings(spark, {LOG_FOLD_AT: "2"}):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
        changes = [
            change_sources,
            lambda spark: spark.sql("INSERT INTO r VALUES (3, 50), (6, 1)"),
            lambda spark: spark.sql("UPDATE r SET a = a * 3 WHERE k = 4"),
        ]
        for change in changes:
            change(spark)
            result = refresh_view(spark, "top")
            assert result.mode == "incremental"
            assert [s.technique for s in result.states] == ["append"]
            assert_equals_query(spark, "top", TOP)
    assert LOGGED in spark.table(store_name(state(fresh_db))).columns
    assert LOGGED not in spark.table(store_name(f"{fresh_db}.top")).columns
    commits = history(spark, store_name(state(fresh_db)))
    folds = [c.operation for c in commits if not c.userMetadata]
    assert folds and set(folds) == {"MERGE"}, "upkeep folded the state table's log in"
