"""Exactly-once: a refresh that dies at any write point leaves the view as it was or fully
refreshed, and the next statement completes it with nothing lost or applied twice; refreshes
that race each other apply each change once."""

import json
import threading

import pytest

import ivm
from ivm.codegen.store import LOGGED
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.refresh.upkeep import LOG_FOLD_AT, compact
from ivm.runtime.spark.settings import STORE_LAYOUT, session_settings
from tests.support.cdf import CDF
from tests.support.helpers import TOTALS, assert_equals_query, ivm_commits, rows

REFRESH_POINTS = [
    p for p in faults.WRITE_POINTS if p.startswith("refresh.") and p != "refresh.after_state"
]
"""The points of a view's own write (``totals`` has no state table: see
tests/runtime/commands/test_state_tables.py)."""

CHANGES = {
    "rows": "INSERT INTO r VALUES (1, 1), (4, 4)",
    # rewritten as it was: a change of no row, which commits the refresh's record alone
    "record only": "UPDATE r SET a = a WHERE k = 1",
}


@pytest.mark.parametrize("point", REFRESH_POINTS)
@pytest.mark.parametrize("full", [False, True], ids=["incremental", "full"])
def test_a_refresh_killed_at_any_point_is_completed_by_the_next(spark, totals, point, full):
    spark.sql("INSERT INTO r VALUES (1, 1), (3, 3)")
    spark.sql("UPDATE r SET a = a + 100 WHERE k = 2")
    before = rows(spark, "totals")
    commits = len(ivm_commits(spark, "totals"))
    with pytest.raises(Exception, match=f"injected fault at {point}"), faults.inject(point):
        refresh_view(spark, "totals", full=full)
    after_crash = rows(spark, "totals")
    assert after_crash == before or after_crash == sorted(
        tuple(r) for r in spark.sql(TOTALS).collect()
    ), "the view is half refreshed"
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert_equals_query(spark, "totals", TOTALS)
    assert len(ivm_commits(spark, "totals")) == commits + 1, "one commit applies the change"


@pytest.mark.parametrize("point", ["refresh.before_write", "refresh.after_commit"])
def test_a_record_alone_killed_at_any_point_is_completed_by_the_next(spark, totals, point):
    """A change of no row commits the refresh's record alone, through Delta's transaction
    API (a commit of no file: no job to die in): killed before it, nothing is recorded;
    after it, the next refresh has nothing to do."""
    spark.sql(CHANGES["record only"])
    commits = len(ivm_commits(spark, "totals"))
    with pytest.raises(Exception, match=f"injected fault at {point}"), faults.inject(point):
        refresh_view(spark, "totals")
    recorded = len(ivm_commits(spark, "totals")) - commits
    assert recorded == (point == "refresh.after_commit")
    result = refresh_view(spark, "totals")
    assert result.mode == ("noop" if recorded else "incremental")
    assert result.mode == "noop" or result.technique == "record only"
    assert_equals_query(spark, "totals", TOTALS)
    assert len(ivm_commits(spark, "totals")) == commits + 1, "one commit records the change"


@pytest.fixture
def logged_totals(spark, fresh_db):
    """``totals`` with a logged store, its log folded after two appends."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5)")
    with session_settings(spark, {STORE_LAYOUT: "log", LOG_FOLD_AT: "2"}):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
        yield fresh_db


def test_a_logged_refresh_killed_at_any_point_is_completed_by_the_next(spark, logged_totals):
    """The append of a logged store is a committed write as the MERGE is; the log is folded
    in between some of the crashes."""
    for i, point in enumerate(REFRESH_POINTS):
        spark.sql(f"INSERT INTO r VALUES ({i}, {i + 1})")
        spark.sql("UPDATE r SET a = a + 100 WHERE k = 2")
        before = rows(spark, "totals")
        commits = len(ivm_commits(spark, "totals"))
        with pytest.raises(Exception, match=f"injected fault at {point}"), faults.inject(point):
            refresh_view(spark, "totals")
        after_crash = rows(spark, "totals")
        assert after_crash == before or after_crash == sorted(
            tuple(r) for r in spark.sql(TOTALS).collect()
        ), f"the view is half refreshed at {point}"
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
        assert_equals_query(spark, "totals", TOTALS)
        assert len(ivm_commits(spark, "totals")) == commits + 1, "one commit applies the change"


def test_a_fold_between_a_refreshs_read_and_its_append_keeps_both(spark, logged_totals):
    """Upkeep folds the log while a refresh, its change computed, is about to append it: the
    append does not depend on the stored rows, and the fold removed only what it read."""
    spark.sql("INSERT INTO r VALUES (1, 1), (3, 3)")
    with session_settings(spark, {LOG_FOLD_AT: "100"}):  # appended, not folded
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    spark.sql("DELETE FROM r WHERE k = 1")
    folds = []

    def fold():
        with session_settings(spark, {LOG_FOLD_AT: "1"}):
            folds.append(compact(spark, f"{logged_totals}.totals"))

    with faults.inject("refresh.before_write", fold):
        result = refresh_view(spark, "totals")
    assert folds[0] is not None and folds[0].action == "fold"
    assert result.technique == "append"
    assert_equals_query(spark, "totals", TOTALS)
    store = spark.table(store_name(f"{logged_totals}.totals"))
    assert store.where(LOGGED).count() > 0, "the append came after the fold"


@pytest.mark.parametrize("point", [p for p in faults.WRITE_POINTS if p.startswith("create.")])
def test_a_create_killed_at_any_point_is_completed_by_running_it_again(spark, fresh_db, point):
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20)")
    with pytest.raises(Exception, match=f"injected fault at {point}"), faults.inject(point):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    if point == "create.after_write":
        assert_equals_query(spark, "totals", TOTALS)
    else:
        assert not spark.catalog.tableExists(f"{fresh_db}.totals")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW IF NOT EXISTS totals AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (2, 1)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert_equals_query(spark, "totals", TOTALS)


def test_a_refresh_repairs_the_catalog_view_of_a_create_that_died(spark, fresh_db):
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10)")
    with pytest.raises(faults.InjectedFault), faults.inject("create.after_commit"):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (1, 5)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").mode == "incremental"
    assert_equals_query(spark, "totals", TOTALS)


def test_a_drop_killed_half_way_is_completed_by_dropping_again(spark, totals):
    with pytest.raises(faults.InjectedFault), faults.inject("drop.after_view"):
        ivm.sql(spark, "DROP MATERIALIZED VIEW totals")
    ivm.sql(spark, "DROP MATERIALIZED VIEW totals")
    assert not spark.catalog.tableExists(store_name(f"{totals}.totals"))


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_refresh_that_loses_a_race_applies_nothing_twice(spark, totals, change):
    """A competing refresh commits between this refresh's reads and its write: Delta's
    idempotent transaction skips this write (the record alone, committed through Delta's
    transaction API, finds the competitor's), and the refresh starts again."""
    spark.sql(change)
    competitor = []
    with faults.inject(
        "refresh.before_write", lambda: competitor.append(refresh_view(spark, "totals"))
    ):
        result = refresh_view(spark, "totals")
    assert competitor[0].mode == "incremental" and result.mode == "noop"
    assert (competitor[0].technique == "record only") == (change == CHANGES["record only"])
    assert_equals_query(spark, "totals", TOTALS)
    versions = [c.userMetadata for c in ivm_commits(spark, "totals")]
    assert len(versions) == len(set(versions)) == 2


def test_concurrent_refreshes_of_one_view_while_sources_change(spark, totals):
    errors = []

    def refresh_repeatedly():
        try:
            for _ in range(3):
                refresh_view(spark, "totals")
        except Exception as error:  # reported below, with the other thread's
            errors.append(error)

    workers = [threading.Thread(target=refresh_repeatedly) for _ in range(2)]
    for worker in workers:
        worker.start()
    for i in range(4):
        spark.sql(f"INSERT INTO r VALUES ({i % 3}, {i})")
        spark.sql(f"DELETE FROM r WHERE a = {i - 1}")
    for worker in workers:
        worker.join()
    assert all(isinstance(e, ivm.ConcurrentRefresh) for e in errors), errors
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert_equals_query(spark, "totals", TOTALS)
    consumed = [
        json.loads(c.userMetadata)["ivm"]["sources"][f"{totals}.r"]
        for c in ivm_commits(spark, f"{totals}.totals")
    ]
    assert consumed == sorted(set(consumed)), "a source version was applied twice"
