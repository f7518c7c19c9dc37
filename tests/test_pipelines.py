"""Views on views refreshed in dependency order, freshness, and `ivm run`."""

import threading
import time

import pytest

import ivm
from ivm.runtime.scheduler import run
from cdf import CDF
from test_views import assert_equals_query

POSITIVE = "SELECT k, a FROM r WHERE a > 0"
PER_KEY = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM positive GROUP BY k"
NAMED = "SELECT p.k, p.total, s.name FROM per_key p JOIN s ON p.k = s.k"
NAMED_FROM_SOURCES = ("SELECT r.k, SUM(r.a) AS total, s.name FROM r JOIN s ON r.k = s.k "
                      "WHERE r.a > 0 GROUP BY r.k, s.name")


@pytest.fixture
def pipeline(spark, fresh_db):
    """Three levels: a filter keeping duplicates, an aggregate over it, a join over that."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE s (k INT, name STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (1, 10), (2, -1), (2, 5), (NULL, 3)")
    spark.sql("INSERT INTO s VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW positive AS {POSITIVE}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW per_key AS {PER_KEY}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW named AS {NAMED}")
    return fresh_db


def check_pipeline(spark):
    assert_equals_query(spark, "positive", POSITIVE)
    assert_equals_query(spark, "per_key", PER_KEY)
    assert_equals_query(spark, "named", NAMED)
    assert_equals_query(spark, "named", NAMED_FROM_SOURCES)


def test_a_pipeline_of_three_views_is_refreshed_upstream_first(spark, pipeline):
    check_pipeline(spark)
    for batch in (["INSERT INTO r VALUES (1, 10), (3, 7), (2, 2)", "DELETE FROM s WHERE k = 2"],
                  ["UPDATE r SET a = -a WHERE k = 1", "INSERT INTO s VALUES (1, 'uno')"],
                  ["DELETE FROM r WHERE k = 3", "UPDATE r SET a = 4 WHERE a = -10"]):
        for statement in batch:
            spark.sql(statement)
        results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
        order = [r.view.split(".")[1] for r in results]
        assert order == ["positive", "per_key", "named"]
        assert {r.mode for r in results} == {"incremental"}, results
        check_pipeline(spark)


def test_a_view_may_not_read_itself_through_others(spark, pipeline):
    with pytest.raises(ivm.DependencyCycle, match="would read itself") as caught:
        ivm.sql(spark, "CREATE OR REPLACE MATERIALIZED VIEW positive AS "
                       "SELECT k, total AS a FROM named")
    path = " → ".join(f"{pipeline}.{v}" for v in ("positive", "per_key", "named", "positive"))
    assert path in str(caught.value)
    assert_equals_query(spark, "positive", POSITIVE)


def test_a_view_that_others_read_is_not_dropped(spark, pipeline):
    with pytest.raises(ivm.ViewInUse) as caught:
        ivm.sql(spark, "DROP MATERIALIZED VIEW positive")
    assert caught.value.message == (f"materialized view {pipeline}.positive "
                                    f"is read by {pipeline}.per_key")
    ivm.sql(spark, "DROP MATERIALIZED VIEW named")
    ivm.sql(spark, "DROP MATERIALIZED VIEW per_key")
    ivm.sql(spark, "DROP MATERIALIZED VIEW positive")
    assert not spark.catalog.tableExists("positive")


def test_freshness_is_declared_altered_suspended_and_resumed(spark, pipeline):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW fresh FRESHNESS = INTERVAL '30' SECONDS "
                   "AS SELECT k FROM r")

    def facts():
        return dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW fresh").collect())

    assert facts()["freshness seconds"] == "30"
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SET FRESHNESS = INTERVAL '2' MINUTE")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SUSPEND")
    assert (facts()["freshness seconds"], facts()["refreshed by ivm run"]) == ("120",
                                                                             "suspended")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh RESUME")
    assert facts()["refreshed by ivm run"] == "yes"
    with pytest.raises(ivm.SqlSyntaxError, match="positive number and a unit"):
        ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SET FRESHNESS = INTERVAL '0' WEEKS")


def test_ivm_run_keeps_views_within_their_freshness_on_a_live_stream(spark, pipeline):
    ivm.sql(spark, "ALTER MATERIALIZED VIEW named SET FRESHNESS = INTERVAL '2' SECONDS")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW idle AS SELECT k FROM r")     # no FRESHNESS
    lines, stop = [], threading.Event()
    loop = threading.Thread(target=run, kwargs=dict(spark=spark, tick=0.5, stop=stop,
                                                    report=lines.append))
    loop.start()
    try:
        for i in range(6):
            spark.sql(f"INSERT INTO r VALUES ({i % 3}, {i + 1})")
            time.sleep(1)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW named").where(
                    "property = 'lag seconds'").first().value == "0.0":
                break
            time.sleep(1)
    finally:
        stop.set()
        loop.join()
    check_pipeline(spark)
    refreshes = [line for line in lines if "refresh of" in line]
    assert any("named" in line for line in refreshes[:-1]), lines
    assert not any(".idle" in line for line in refreshes), "a view without FRESHNESS waits"
    assert lines[-1] == "stopped"


def test_a_views_changelog_shows_an_aggregate_update_as_an_update(spark, pipeline):
    spark.sql("INSERT INTO r VALUES (1, 1), (4, 4)")     # group 1 changes, group 4 appears
    spark.sql("DELETE FROM r WHERE k = 2")                # group 2 disappears
    version = {view: ivm.sql(spark, f"DESCRIBE HISTORY MATERIALIZED VIEW {view}").first().version
               for view in ("per_key", "positive")}
    ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    changes = [tuple(r)[:4]
               for r in ivm.view_changes(spark, "per_key", version["per_key"] + 1).collect()]
    retractions, additions = sorted(changes[:2]), sorted(changes[2:], key=repr)
    assert retractions == [(1, 2, 20, "-U"), (2, 1, 5, "-D")]
    assert sorted(additions, key=repr) == [(1, 3, 21, "+U"), (4, 1, 4, "+I")]
    copies = ivm.view_changes(spark, "positive", version["positive"] + 1).where("k = 4").collect()
    assert [(r.k, r.a, r._op) for r in copies] == [(4, 4, "+I")]
