"""Views on views refreshed in dependency order, freshness, and `ivm run`."""

import threading
import time

import pytest

import ivm
from ivm.runtime.commands import scheduler
from ivm.runtime.commands.scheduler import run, run_pass, watch
from ivm.runtime.spark.settings import session_settings
from ivm.testing.data import MERGES
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query

POSITIVE = "SELECT k, a FROM r WHERE a > 0"
PER_KEY = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM positive GROUP BY k"
NAMED = "SELECT p.k, p.total, s.name FROM per_key p JOIN s ON p.k = s.k"
NAMED_FROM_SOURCES = (
    "SELECT r.k, SUM(r.a) AS total, s.name FROM r JOIN s ON r.k = s.k "
    "WHERE r.a > 0 GROUP BY r.k, s.name"
)


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


@pytest.mark.slow
def test_a_pipeline_of_three_views_is_refreshed_upstream_first(spark, pipeline):
    check_pipeline(spark)
    for batch in (
        ["INSERT INTO r VALUES (1, 10), (3, 7), (2, 2)", "DELETE FROM s WHERE k = 2"],
        ["UPDATE r SET a = -a WHERE k = 1", "INSERT INTO s VALUES (1, 'uno')"],
        ["DELETE FROM r WHERE k = 3", "UPDATE r SET a = 4 WHERE a = -10"],
    ):
        for statement in batch:
            spark.sql(statement)
        results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
        order = [r.view.split(".")[1] for r in results]
        assert order == ["positive", "per_key", "named"]
        assert {r.mode for r in results} == {"incremental"}, results
        check_pipeline(spark)


NAMES = "SELECT k, name FROM s"


def test_refresh_all_refreshes_every_view_it_can_and_names_those_it_could_not(spark, pipeline):
    """``r`` dropped: ``positive`` fails, and ``per_key`` and ``named``, which read it, are
    skipped (they would join ``s`` as it is with ``r`` as it was); ``names``, over ``s``
    alone and last in the order, is refreshed. The error names each view not refreshed with
    why, one line each, and carries the refreshes done."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW names AS {NAMES}")
    spark.sql("INSERT INTO s VALUES (4, 'four')")
    spark.sql("DROP TABLE r")
    with pytest.raises(ivm.ViewsNotRefreshed) as caught:
        ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    failed = caught.value
    assert [(r.view, r.mode) for r in failed.results] == [(f"{pipeline}.names", "incremental")]
    assert_equals_query(spark, "names", NAMES)
    positive, per_key, named = (f"{pipeline}.{v}" for v in ("positive", "per_key", "named"))
    assert list(failed.failures) == [positive, per_key, named]
    assert f"{pipeline}.r" in failed.failures[positive] and "\n" not in failed.failures[positive]
    assert failed.failures[per_key] == f"skipped: it reads {positive}, which failed"
    assert failed.failures[named] == f"skipped: it reads {positive}, which failed"
    assert str(failed).splitlines()[:4] == [
        "3 of 4 materialized views were not refreshed:",
        f"  {positive}: {failed.failures[positive]}",
        f"  {per_key}: skipped: it reads {positive}, which failed",
        f"  {named}: skipped: it reads {positive}, which failed",
    ]


def test_a_view_may_not_read_itself_through_others(spark, pipeline):
    with pytest.raises(ivm.DependencyCycle, match="would read itself") as caught:
        ivm.sql(
            spark, "CREATE OR REPLACE MATERIALIZED VIEW positive AS SELECT k, total AS a FROM named"
        )
    path = " → ".join(f"{pipeline}.{v}" for v in ("positive", "per_key", "named", "positive"))
    assert path in str(caught.value)
    assert_equals_query(spark, "positive", POSITIVE)


def test_a_view_that_others_read_is_not_dropped(spark, pipeline):
    with pytest.raises(ivm.ViewInUse) as caught:
        ivm.sql(spark, "DROP MATERIALIZED VIEW positive")
    assert caught.value.message == (
        f"materialized view {pipeline}.positive is read by {pipeline}.per_key"
    )
    ivm.sql(spark, "DROP MATERIALIZED VIEW named")
    ivm.sql(spark, "DROP MATERIALIZED VIEW per_key")
    ivm.sql(spark, "DROP MATERIALIZED VIEW positive")
    assert not spark.catalog.tableExists("positive")


def test_freshness_is_declared_altered_suspended_and_resumed(spark, pipeline):
    ivm.sql(
        spark, "CREATE MATERIALIZED VIEW fresh FRESHNESS = INTERVAL '30' SECONDS AS SELECT k FROM r"
    )

    def facts():
        return dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW fresh").collect())

    assert facts()["freshness seconds"] == "30"
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SET FRESHNESS = INTERVAL '2' MINUTE")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SUSPEND")
    assert (facts()["freshness seconds"], facts()["refreshed by ivm run"]) == ("120", "suspended")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh RESUME")
    assert facts()["refreshed by ivm run"] == "yes"
    with pytest.raises(ivm.SqlSyntaxError, match="positive number and a unit"):
        ivm.sql(spark, "ALTER MATERIALIZED VIEW fresh SET FRESHNESS = INTERVAL '0' WEEKS")


def test_ivm_run_keeps_views_within_their_freshness_on_a_live_stream(spark, pipeline):
    ivm.sql(spark, "ALTER MATERIALIZED VIEW named SET FRESHNESS = INTERVAL '2' SECONDS")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW idle AS SELECT k FROM r")  # no FRESHNESS
    lines, stop = [], threading.Event()
    loop = threading.Thread(
        target=run, kwargs=dict(spark=spark, tick=0.5, stop=stop, report=lines.append)
    )
    loop.start()
    try:
        for i in range(6):
            spark.sql(f"INSERT INTO r VALUES ({i % 3}, {i + 1})")
            time.sleep(1)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if (
                ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW named")
                .where("property = 'lag seconds'")
                .first()
                .value
                == "0.0"
            ):
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


URGENT = "SELECT k, n FROM per_key WHERE n > 1"
LATER = 7200.0
"""Seconds after now at which a pass runs to find every lagging view due (FRESHNESS ≤ 1 h)."""


def refreshed(done):
    return [result.view.split(".")[1] for result in done.refreshed]


def test_ivm_run_refreshes_the_most_urgent_view_first_after_what_it_reads(spark, pipeline):
    """``named`` and ``urgent`` both read ``per_key``: whichever has less slack (freshness −
    lag) goes first, each after the lagging views it reads; a view kept fresh that reads a
    view refreshed in the pass follows it, due or not."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW urgent FRESHNESS = INTERVAL '1' MINUTE AS {URGENT}")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW named SET FRESHNESS = INTERVAL '1' HOUR")
    views = [f"{pipeline}.named", f"{pipeline}.urgent"]
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 7)")
    done = run_pass(spark, watch(spark, views), now=time.time() + LATER)
    assert refreshed(done) == ["positive", "per_key", "urgent", "named"]

    ivm.sql(spark, "ALTER MATERIALIZED VIEW named SET FRESHNESS = INTERVAL '1' MINUTE")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW urgent SET FRESHNESS = INTERVAL '1' HOUR")
    spark.sql("INSERT INTO r VALUES (3, 1), (3, 2)")
    done = run_pass(spark, watch(spark, views), now=time.time() + LATER)  # sees the ALTERs
    assert refreshed(done) == ["positive", "per_key", "named", "urgent"]

    spark.sql("INSERT INTO r VALUES (4, 4), (4, 4)")
    watched = watch(spark, views)
    assert run_pass(spark, watched).outcomes == []  # lags of a second or so: nothing is due
    done = run_pass(spark, watched, now=time.time() + 40)  # named is due, urgent not (yet)
    assert refreshed(done) == ["positive", "per_key", "named", "urgent"]
    check_pipeline(spark)
    assert_equals_query(spark, "urgent", URGENT)


@pytest.fixture
def two_views(spark, fresh_db):
    """``on_a`` reads ``a``; ``on_b``, more urgent, reads ``b``; both lag."""
    for table in ("a", "b"):
        spark.sql(f"CREATE TABLE {table} (k INT) USING DELTA {CDF}")
    ivm.sql(
        spark, "CREATE MATERIALIZED VIEW on_a FRESHNESS = INTERVAL '1' MINUTE AS SELECT k FROM a"
    )
    ivm.sql(
        spark, "CREATE MATERIALIZED VIEW on_b FRESHNESS = INTERVAL '30' SECONDS AS SELECT k FROM b"
    )
    spark.sql("INSERT INTO a VALUES (1), (2)")
    spark.sql("INSERT INTO b VALUES (3)")
    return [f"{fresh_db}.on_a", f"{fresh_db}.on_b"]


def test_a_failing_view_is_reported_and_retried_later_while_the_others_go_on(spark, two_views):
    on_a, on_b = two_views
    spark.sql("DROP TABLE b")
    spark.sql(f"CREATE TABLE b (x INT) USING DELTA {CDF}")  # k is gone: on_b cannot refresh
    watched, now = watch(spark, two_views), time.time() + LATER
    done = run_pass(spark, watched, tick=1.0, now=now)
    (failure,) = done.failed
    assert (failure.view, failure.failures, failure.retry_in) == (on_b, 1, 1.0)
    assert "\n" not in str(failure) and str(failure).startswith(f"refresh of {on_b} failed: ")
    assert [r.view for r in done.outcomes[1:]] == [on_a]  # after on_b, the more urgent
    assert_equals_query(spark, "on_a", "SELECT k FROM a")

    assert run_pass(spark, watched, tick=1.0, now=now + 0.5).outcomes == []  # on_b waits
    (again,) = run_pass(spark, watched, tick=1.0, now=now + 1).failed
    assert (again.failures, again.retry_in) == (2, 2.0)
    assert "2 times in a row" in str(again) and "trying again in 2s" in str(again)

    spark.sql("DROP TABLE b")
    spark.sql(f"CREATE TABLE b (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO b VALUES (5)")
    assert run_pass(spark, watched, tick=1.0, now=now + 2).outcomes == []  # still waiting
    done = run_pass(spark, watched, tick=1.0, now=now + 3)
    assert [(r.view, r.mode) for r in done.outcomes] == [(on_b, "full")]
    assert watched.failing == {}
    assert_equals_query(spark, "on_b", "SELECT k FROM b")


def test_ivm_run_goes_on_past_a_view_whose_source_was_dropped(spark, two_views):
    """Its lag cannot be read: it is due, its refresh fails each time after a longer wait,
    and the loop keeps the other view fresh meanwhile."""
    on_a, on_b = two_views
    ivm.sql(spark, "ALTER MATERIALIZED VIEW on_a SET FRESHNESS = INTERVAL '1' SECOND")
    spark.sql("DROP TABLE b")
    lines, stop = [], threading.Event()

    def report(line):
        lines.append(line)
        if (
            any(f" refresh of {on_a} in " in line for line in lines)
            and sum(f"refresh of {on_b} failed" in line for line in lines) >= 2
        ):
            stop.set()

    timeout = threading.Timer(180, stop.set)
    timeout.start()
    try:
        run(spark, tick=0.2, stop=stop, report=report, views=two_views)
    finally:
        timeout.cancel()
    failures = [line for line in lines if f"refresh of {on_b} failed" in line]
    assert len(failures) >= 2, lines
    assert "2 times in a row" in failures[1] and "trying again in 0.4s" in failures[1], lines
    assert any(line.startswith(f"incremental refresh of {on_a} in ") for line in lines), lines
    assert lines[-1] == "stopped"
    assert_equals_query(spark, "on_a", "SELECT k FROM a")


def test_ctrl_c_during_a_refresh_stops_ivm_run(spark, two_views, monkeypatch):
    spark.sql("DROP TABLE b")  # on_b is due at once
    calls, stop = [], threading.Event()

    def interrupted(spark, view):
        calls.append(view)
        raise KeyboardInterrupt

    monkeypatch.setattr(scheduler, "refresh_view", interrupted)
    lines = []
    timeout = threading.Timer(120, stop.set)  # should the loop go on, the test fails
    timeout.start()
    try:
        run(spark, tick=0.1, stop=stop, report=lines.append, views=two_views)
    finally:
        timeout.cancel()
    assert calls == [two_views[1]] and not stop.is_set()
    assert lines[-1] == "stopped" and not any("failed" in line for line in lines)


@pytest.mark.parametrize("written", ["rewritten", "merged"])
def test_a_views_changelog_shows_an_aggregate_update_as_an_update(spark, pipeline, written):
    """Whether the refresh rewrote the small stores (every row deleted and inserted again in
    their change data feed) or MERGEd into them, the changelog is the same."""
    spark.sql("INSERT INTO r VALUES (1, 1), (4, 4)")  # group 1 changes, group 4 appears
    spark.sql("DELETE FROM r WHERE k = 2")  # group 2 disappears
    version = {
        view: ivm.sql(spark, f"DESCRIBE HISTORY MATERIALIZED VIEW {view}").first().version
        for view in ("per_key", "positive")
    }
    with session_settings(spark, MERGES if written == "merged" else {}):
        ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    changes = [
        tuple(r)[:4] for r in ivm.view_changes(spark, "per_key", version["per_key"] + 1).collect()
    ]
    retractions, additions = sorted(changes[:2]), sorted(changes[2:], key=repr)
    assert retractions == [(1, 2, 20, "-U"), (2, 1, 5, "-D")]
    assert sorted(additions, key=repr) == [(1, 3, 21, "+U"), (4, 1, 4, "+I")]
    copies = ivm.view_changes(spark, "positive", version["positive"] + 1).where("k = 4").collect()
    assert [(r.k, r.a, r._op) for r in copies] == [(4, 4, "+I")]
