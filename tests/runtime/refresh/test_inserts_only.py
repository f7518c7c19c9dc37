"""Changes that only insert rows: a top-N, a dedup and a MIN/MAX view fold them into their own
rows (ivm.rules.append), found from the sources' logs, and any other change takes the rules
that read the source."""

import pytest

import ivm
from ivm.runtime.catalog.history import INSERTS_ONLY
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.refresh.gather import INSERTS_ONLY_RULES
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query

LATEST = """SELECT k, ts, v FROM (
  SELECT k, ts, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM events)
WHERE rn = 1"""
TOP = "SELECT k, v FROM events ORDER BY v DESC, k LIMIT 3"
RANKED = """SELECT k, ts, v FROM (
  SELECT k, ts, v, DENSE_RANK() OVER (PARTITION BY k ORDER BY v) AS r FROM events
  WHERE v IS NOT NULL)
WHERE r <= 2"""
SPAN = """SELECT k, MIN(ts) AS first, MAX(v) AS top, COUNT(*) AS n, COUNT(v) AS counted,
  SUM(v) AS total, MAX(tag) AS last_tag FROM events WHERE tag <> 'skip' GROUP BY k"""
HIGH_WATER = "SELECT MAX(ts) AS seen, MIN(v) AS low FROM events"
VIEWS = {"latest": LATEST, "top": TOP, "ranked": RANKED, "span": SPAN, "high": HIGH_WATER}


@pytest.fixture
def events(spark, fresh_db):
    spark.sql(f"CREATE TABLE events (k INT, ts INT, v BIGINT, tag STRING) USING DELTA {CDF}")
    spark.sql(
        "INSERT INTO events VALUES (1, 1, 10, 'a'), (1, 2, 10, 'b'), (2, 1, NULL, 'a'), "
        "(3, 5, 7, 'skip'), (NULL, 3, 4, 'n')"
    )
    for name, sql in VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    return fresh_db


def refresh_each(spark, names=tuple(VIEWS)) -> dict[str, str | None]:
    """Refresh the views ``names``, check each against its query, and give the rules each
    took."""
    rules = {}
    for name in names:
        result = refresh_view(spark, name)
        assert result.mode == "incremental", result
        assert_equals_query(spark, name, VIEWS[name])
        rules[name] = result.rules
    return rules


def test_inserted_rows_fold_into_the_views_own_rows(spark, events):
    # new keys, new bests, ties, duplicates of stored rows, NULL keys and values, and rows
    # that lose to the stored ones
    spark.sql(
        "INSERT INTO events VALUES (1, 3, 5, 'c'), (1, 3, 5, 'c'), (2, 0, 1, 'z'), "
        "(4, 1, 99, 'a'), (NULL, 9, NULL, 'n'), (3, 1, 100, 'skip'), (1, 0, 10, 'a')"
    )
    assert refresh_each(spark) == dict.fromkeys(VIEWS, INSERTS_ONLY)
    spark.sql("INSERT INTO events VALUES (2, 7, 50, 'y')")  # a second commit of one row
    spark.sql("INSERT INTO events VALUES (5, 1, 1, 'q')")
    assert refresh_each(spark) == dict.fromkeys(VIEWS, INSERTS_ONLY)


def test_a_change_that_removes_rows_reads_the_source(spark, events):
    for change in (
        "DELETE FROM events WHERE k = 1 AND ts = 2",
        "UPDATE events SET v = v - 100 WHERE k = 1",
        "MERGE INTO events USING (SELECT 2 AS k) AS s ON events.k = s.k "
        "WHEN MATCHED THEN UPDATE SET v = 0",
    ):
        spark.sql("INSERT INTO events VALUES (1, 9, 1, 'x')")
        spark.sql(change)
        # the rules are chosen per refresh from the sources' logs: a window and a GROUP BY
        # are enough to see which
        assert refresh_each(spark, ("latest", "span")) == dict.fromkeys(("latest", "span")), change


def test_the_history_says_which_rules_a_refresh_took(spark, events):
    spark.sql("INSERT INTO events VALUES (1, 9, 1, 'x')")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW latest")
    spark.sql("DELETE FROM events WHERE ts = 9")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW latest")
    spark.sql("INSERT INTO events VALUES (1, 10, 1, 'x')")
    spark.conf.set(INSERTS_ONLY_RULES, "false")  # turned off: the rules for any change
    try:
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW latest")
    finally:
        spark.conf.unset(INSERTS_ONLY_RULES)
    assert_equals_query(spark, "latest", LATEST)
    rules = [
        r.rules
        for r in ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW latest").collect()
        if r.mode == "incremental"
    ]
    assert rules == [None, None, INSERTS_ONLY]  # newest first
