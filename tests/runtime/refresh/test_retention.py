"""A view is warned, ahead of its refresh, when its sources may remove the change it has not
consumed: the retentions, their deadline, and what DESCRIBE and ``ivm status`` say."""

import re
import time

import pytest
from pyspark.sql import DataFrame

import ivm
from ivm import cli
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.read_estimate import read_estimate
from ivm.runtime.refresh.retention import (
    AT_RISK,
    DELETED_FILE_RETENTION,
    EXPIRED,
    LOG_RETENTION,
    Unconsumed,
    assess,
    classify,
    interval_seconds,
    retentions,
    unreadable_change,
)
from tests.support.cdf import CDF, vacuum_everything

DAY, WEEK = 86400, 7 * 86400
DAY_MS = DAY * 1000
NOW_MS = 100 * DAY_MS


def change(
    oldest_ms: int | None = NOW_MS - DAY_MS,
    properties=None,
    *,
    latest=5,
    lost=False,
    replaced=False,
    gone_from=None,
) -> Unconsumed:
    """The change of ``d.t`` after version 4, its oldest commit at ``oldest_ms``."""
    return Unconsumed(
        "d.t",
        "d.t",
        4,
        latest,
        replaced,
        oldest_ms,
        lost,
        retentions(properties or {}),
        gone_from=gone_from,
    )


def utc(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


# Interval values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("interval 1 week", WEEK),
        ("interval 7 days", WEEK),
        ("30 days", 30 * DAY),
        ("interval 2 hours", 7200),
        ("1 week", WEEK),
        ("INTERVAL 1 Week", WEEK),
        ("interval 1 day", DAY),
        ("  interval 90 minutes ", 5400),
        ("interval 1 day 12 hours", 1.5 * DAY),
        ("interval 0 seconds", 0),
        ("interval 500 milliseconds", 0.5),
    ],
)
def test_delta_interval_values_are_read_in_seconds(value, seconds):
    assert interval_seconds(value) == seconds


@pytest.mark.parametrize(
    "value",
    [
        "",
        "interval",
        "1 month",
        "interval 1 year",
        "soon",
        "7",
        "days 7",
        "-1 day",
        "nan days",
        "1 fortnight",
    ],
)
def test_a_value_that_is_no_interval_is_not_understood(value):
    assert interval_seconds(value) is None


def test_unset_retentions_are_deltas_defaults():
    deleted, log = retentions({})
    assert (deleted.property, deleted.seconds, deleted.default) == (
        DELETED_FILE_RETENTION,
        WEEK,
        True,
    )
    assert (log.property, log.seconds, log.default) == (LOG_RETENTION, 30 * DAY, True)
    deleted, log = retentions({DELETED_FILE_RETENTION: "interval 2 hours"})
    assert (deleted.seconds, deleted.default, str(deleted)) == (
        7200,
        False,
        f"{DELETED_FILE_RETENTION} interval 2 hours",
    )


# The decision -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "now_days, freshness, expected",
    [
        (10, None, EXPIRED),  # the deadline itself: nothing is left
        (11, None, EXPIRED),
        (8.5, None, AT_RISK),  # 1.5 days left, under a quarter of a week
        (8, None, None),  # 2 days left
        (8, 3 * DAY, AT_RISK),  # ... under the view's freshness of 3 days
        (3, None, None),
    ],
)
def test_a_deadline_is_expired_at_risk_or_safe(now_days, freshness, expected):
    assert classify(10 * DAY_MS, WEEK, freshness, int(now_days * DAY_MS)) == expected


def test_nothing_pending_is_neither_kept_nor_warned_about():
    assessed = assess("d.v", change(None, latest=4), 3600, NOW_MS)
    assert (assessed.kept_until, assessed.warnings) == (None, ())


def test_a_pending_change_is_kept_until_its_oldest_commit_plus_the_retention():
    assessed = assess("d.v", change(), None, NOW_MS)
    assert (
        assessed.kept_until == f"until {utc(NOW_MS + 6 * DAY_MS)} "
        f"({DELETED_FILE_RETENTION} interval 1 week, Delta's default)"
    )
    assert assessed.warnings == ()


def test_the_shorter_retention_governs():
    hours = 3600 * 1000
    assessed = assess(
        "d.v", change(NOW_MS - 42 * hours, {LOG_RETENTION: "interval 2 days"}), None, NOW_MS
    )
    assert (
        assessed.kept_until == f"until {utc(NOW_MS + 6 * hours)} ({LOG_RETENTION} interval 2 days)"
    )
    [warning] = assessed.warnings  # 6 hours left of 2 days: under a quarter
    assert f"may be removed from {utc(NOW_MS + 6 * hours)} on, in 6 hours" in warning
    assert "REFRESH MATERIALIZED VIEW d.v" in warning
    assert warning.endswith(  # twice the 2 days; the week of the other retention is longer
        f"ALTER TABLE d.t SET TBLPROPERTIES ('{LOG_RETENTION}' = 'interval 4 days')"
    )


def test_a_passed_deadline_says_the_next_refresh_may_recompute():
    assessed = assess("d.v", change(NOW_MS - 8 * DAY_MS), None, NOW_MS)
    [warning] = assessed.warnings
    assert warning.startswith(
        "the change of d.t after version 4 may already be removed: "
        f"it was kept until {utc(NOW_MS - DAY_MS)} "
        f"({DELETED_FILE_RETENTION} interval 1 week, Delta's default)"
    )
    assert "recompute it in full" in warning and "REFRESH MATERIALIZED VIEW d.v" in warning
    assert warning.endswith(
        f"ALTER TABLE d.t SET TBLPROPERTIES ('{DELETED_FILE_RETENTION}' = 'interval 14 days')"
    )


def test_a_freshness_longer_than_a_retention_is_a_hazard_with_nothing_pending():
    assessed = assess("d.v", change(None, latest=4), 10 * DAY, NOW_MS)
    [warning] = assessed.warnings
    assert warning.startswith(
        "the view's FRESHNESS (10 days) is longer than d.t keeps its "
        f"change ({DELETED_FILE_RETENTION} interval 1 week"
    )
    assert (
        f"ALTER TABLE d.t SET TBLPROPERTIES ('{DELETED_FILE_RETENTION}' = "
        f"'interval 20 days')" in warning
    )
    assert assess("d.v", change(None, latest=4), WEEK, NOW_MS).warnings == ()


def test_a_change_no_longer_in_the_log_will_be_recomputed():
    assessed = assess("d.v", change(None, lost=True), None, NOW_MS)
    assert assessed.kept_until is not None and assessed.kept_until.startswith("no longer")
    [warning] = assessed.warnings
    assert "no longer holds every commit after version 4" in warning
    assert "recomputes it in full" in warning


def test_a_change_whose_files_are_gone_is_no_longer_kept_whatever_its_deadline():
    gone = change(NOW_MS - DAY_MS, gone_from=5)
    assessed = assess("d.v", gone, None, NOW_MS)
    assert assessed.kept_until == "no longer (files of version 5 of d.t are gone)"
    unreadable = unreadable_change(gone)
    assert unreadable == (
        "the change of d.t after version 4 can no longer be read: files of "
        "version 5 that its change data feed reads are gone"
    )
    [warning] = assessed.warnings
    assert warning.startswith(unreadable)
    assert (
        "run REFRESH MATERIALIZED VIEW d.v (or REFRESH MATERIALIZED VIEW d.v FULL where "
        "its REFRESH POLICY is INCREMENTAL STRICT" in warning
    )


def test_a_value_not_understood_leaves_the_other_retention_to_bound_the_change():
    assessed = assess("d.v", change(properties={LOG_RETENTION: "forever"}), None, NOW_MS)
    assert (
        assessed.kept_until == f"until {utc(NOW_MS + 6 * DAY_MS)} "
        f"({DELETED_FILE_RETENTION} interval 1 week, Delta's "
        f"default; {LOG_RETENTION} 'forever', not understood)"
    )
    expired = assess("d.v", change(NOW_MS - 8 * DAY_MS, {LOG_RETENTION: "forever"}), None, NOW_MS)
    assert expired.warnings[0].endswith(  # the value not understood is set too
        f"('{DELETED_FILE_RETENTION}' = 'interval 14 days', '{LOG_RETENTION}' = 'interval 14 days')"
    )


def test_a_view_read_by_the_view_keeps_its_change_as_long_as_its_retention_says():
    upstream = Unconsumed(
        "d.u",
        "d__ivm.u__ivm_store",
        4,
        4,
        False,
        None,
        False,
        retentions(
            {
                DELETED_FILE_RETENTION: "interval 3600 seconds",
                LOG_RETENTION: "interval 3600 seconds",
            }
        ),
        "d.u",
    )
    [warning] = assess("d.v", upstream, 2 * 3600, NOW_MS).warnings
    assert (
        "than d.u keeps its change (delta.deletedFileRetentionDuration interval 3600 "
        "seconds)" in warning
    )
    assert (
        "Keep d.u's change longer: ALTER MATERIALIZED VIEW d.u SET RETENTION = "
        "INTERVAL '4' HOURS," in warning
    )  # named by the view, not by its store
    assert "__ivm" not in warning


def test_a_replaced_source_is_recomputed_anyway_and_not_warned_about():
    assert assess("d.v", change(NOW_MS - 8 * DAY_MS, replaced=True), None, NOW_MS).warnings == ()


# DESCRIBE and ivm status ------------------------------------------------------------------


def facts(spark, view):
    described = ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {view}")
    assert isinstance(described, DataFrame)
    return described.collect()


def warnings(spark, view):
    return [value for fact, value in facts(spark, view) if fact == "warning"]


def commit_ms(spark, table, version) -> int:
    committed = DeltaLogReader(spark, table).commit_info(version)[1]
    assert committed is not None
    return committed


@pytest.fixture
def short(spark, fresh_db):
    """A source ``r`` whose change data is kept 2 hours (its log 3)."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql(
        f"ALTER TABLE r SET TBLPROPERTIES ('{DELETED_FILE_RETENTION}' = "
        f"'interval 2 hours', '{LOG_RETENTION}' = 'interval 3 hours')"
    )
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20)")
    return fresh_db


def test_describe_says_until_when_the_pending_change_is_kept_and_warns(spark, short):
    # its freshness is the retention: whatever time has passed, less is left than that
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW totals FRESHNESS = INTERVAL '2' HOURS AS "
        "SELECT k, SUM(a) AS total FROM r GROUP BY k",
    )
    r = f"{short}.r"
    assert f"change data of {r} kept" not in dict(facts(spark, "totals"))
    assert warnings(spark, "totals") == []
    spark.sql("INSERT INTO r VALUES (3, 30)")  # version 3, not consumed
    spark.sql("INSERT INTO r VALUES (4, 40)")
    described = facts(spark, "totals")
    deadline = commit_ms(spark, r, 3) + 2 * 3600 * 1000
    assert (
        dict(described)[f"change data of {r} kept"]
        == f"until {utc(deadline)} ({DELETED_FILE_RETENTION} interval 2 hours)"
    )
    [warning] = [value for fact, value in described if fact == "warning"]
    assert warning.startswith(
        f"the change of {r} after version 2 may be removed from {utc(deadline)} on"
    )
    assert f"REFRESH MATERIALIZED VIEW {short}.totals" in warning
    assert (
        f"ALTER TABLE {r} SET TBLPROPERTIES ('{DELETED_FILE_RETENTION}' = "
        f"'interval 4 hours', '{LOG_RETENTION}' = 'interval 4 hours')" in warning
    )

    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert f"change data of {r} kept" not in dict(facts(spark, "totals"))
    assert warnings(spark, "totals") == []


def test_a_freshness_longer_than_the_log_retention_is_warned_until_the_retention_is_raised(
    spark, fresh_db, monkeypatch, capsys
):
    spark.sql(f"CREATE TABLE s (k INT) USING DELTA {CDF}")
    spark.sql(f"ALTER TABLE s SET TBLPROPERTIES ('{LOG_RETENTION}' = '1 hour')")
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW counts FRESHNESS = INTERVAL '1' DAY AS "
        "SELECT k, COUNT(*) AS n FROM s GROUP BY k",
    )
    [warning] = warnings(spark, "counts")
    assert warning.startswith(
        f"the view's FRESHNESS (1 day) is longer than {fresh_db}.s keeps "
        f"its change ({LOG_RETENTION} 1 hour)"
    )

    monkeypatch.setattr(cli, "_session", lambda args: spark)
    assert cli.main(["status", "counts"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[1].startswith(f"{fresh_db}.counts ") and shown[2:] == [
        f"warning: {fresh_db}.counts: {warning}"
    ], shown

    alter = re.search(r"ALTER TABLE [^)]*\)", warning)
    assert alter is not None, warning
    spark.sql(alter.group(0))
    assert DeltaLogReader(spark, f"{fresh_db}.s").properties()[LOG_RETENTION] == "interval 2 days"
    assert warnings(spark, "counts") == []


TOTALS_BY_K = "SELECT k, SUM(a) AS total FROM r GROUP BY k"


def test_describe_finds_the_change_files_a_vacuum_removed_before_their_time(
    spark, short, monkeypatch, capsys
):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS_BY_K}")
    spark.sql("INSERT INTO r VALUES (3, 30)")  # version 3: a data file, kept
    spark.sql("UPDATE r SET a = a + 1 WHERE k = 2")  # version 4: change data files
    r = f"{short}.r"
    assert dict(facts(spark, "totals"))[f"change data of {r} kept"].startswith("until ")
    vacuum_everything(spark, "r", lite=True)
    described = facts(spark, "totals")
    assert (
        dict(described)[f"change data of {r} kept"]
        == f"no longer (files of version 4 of {r} are gone)"
    )
    unreadable = f"the change of {r} after version 2 can no longer be read: files of version 4"
    [warning] = [value for fact, value in described if fact == "warning"]
    assert warning.startswith(unreadable)
    assert dict(described)["next refresh"].startswith(f"a full recompute: {unreadable}")
    explained = read_estimate(spark, ivm.compile(TOTALS_BY_K, spark=spark), f"{short}.totals")
    assert explained.splitlines()[-1].endswith(dict(described)["next refresh"])
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    assert cli.main(["status", "totals"]) == 0
    row, shown = capsys.readouterr().out.splitlines()[1:]
    assert (
        f"a full recompute: {unreadable}" in row and shown == f"warning: {short}.totals: {warning}"
    )
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").mode == "full"
    assert warnings(spark, "totals") == []


def test_the_sources_of_a_state_table_are_the_views(spark, short):
    """A top-N over groups reads a state table, which reads ``r``: a refresh of the view
    refreshes the state table first, so ``r``'s retention bounds the view's change too."""
    top = "SELECT k, SUM(a) AS total FROM r GROUP BY k ORDER BY total DESC, k LIMIT 2"
    assert ivm.compile(top, spark=spark, name="top").states, "the groups are a state table"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top FRESHNESS = INTERVAL '2' HOURS AS {top}")
    spark.sql("INSERT INTO r VALUES (5, 50)")
    described = dict(facts(spark, "top"))
    r = f"{short}.r"
    assert f"source {r}" not in described, "the view reads its state table, not r"
    assert described[f"change data of {r} kept"].startswith("until ")
    assert any(
        w.startswith(f"the change of {r} after version 2 may be removed")
        for w in warnings(spark, "top")
    )
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    assert warnings(spark, "top") == []
