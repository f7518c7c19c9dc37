"""`ivm explain`, `ivm status` and DESCRIBE say what the next refresh does, under every
refresh policy and whatever stands in its way: they show the plan the refresh makes, made by
the same function from the same facts (:mod:`ivm.runtime.decision.decide`)."""

import pytest

import ivm
from ivm import cli
from ivm.errors import IvmError
from ivm.runtime.decision.decide import MIN_BYTES, RATIO
from ivm.runtime.refresh.gather import predict
from ivm.runtime.refresh.read_estimate import read_estimate
from tests.support.helpers import assert_equals_query, explain

TOTALS = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM r GROUP BY k"
POLICIES = ("AUTO", "INCREMENTAL", "INCREMENTAL STRICT", "FULL")
MAPPED = "TBLPROPERTIES (delta.enableChangeDataFeed = true, 'delta.columnMapping.mode' = 'name')"


def cdf_off(spark):
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")
    spark.sql("DELETE FROM r WHERE k = 1")
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")


def column_dropped_and_added_back(spark):
    spark.sql("ALTER TABLE r DROP COLUMN a")
    spark.sql("ALTER TABLE r ADD COLUMNS (a INT)")


def large_change(spark):
    spark.conf.set(RATIO, "0")
    spark.conf.set(MIN_BYTES, "0")
    spark.sql("INSERT INTO r VALUES (3, 30)")


def small_change(spark):
    spark.conf.unset(RATIO)
    spark.conf.unset(MIN_BYTES)
    spark.sql("INSERT INTO r VALUES (4, 40)")


def replaced(spark):
    spark.sql("DROP TABLE r")
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {MAPPED}")
    spark.sql("INSERT INTO r VALUES (7, 70)")


OBSTACLES = [
    ("none", lambda spark: None, dict.fromkeys(POLICIES, "noop")),
    (
        "a change over the threshold",
        large_change,
        {
            "AUTO": "full",
            "INCREMENTAL": "incremental",
            "INCREMENTAL STRICT": "incremental",
            "FULL": "full",
        },
    ),
    (
        "a small change",
        small_change,
        {
            "AUTO": "incremental",
            "INCREMENTAL": "incremental",
            "INCREMENTAL STRICT": "incremental",
            "FULL": "full",
        },
    ),
    (
        "change data feed off",
        cdf_off,
        {"AUTO": "full", "INCREMENTAL": "full", "INCREMENTAL STRICT": "fails", "FULL": "full"},
    ),
    (
        "a column dropped and added back",
        column_dropped_and_added_back,
        dict.fromkeys(POLICIES, "full"),
    ),
    ("a source replaced", replaced, dict.fromkeys(POLICIES, "full")),
]
"""Each obstacle, in the order the test makes them: its name, how to make it, and what a
refresh does for it under each policy."""


@pytest.fixture
def views(spark, fresh_db):
    """``r`` and one view of TOTALS under each policy."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {MAPPED}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5)")
    names = {}
    for policy in POLICIES:
        names[policy] = "v_" + policy.replace(" ", "_").lower()
        ivm.sql(
            spark, f"CREATE MATERIALIZED VIEW {names[policy]} REFRESH POLICY {policy} AS {TOTALS}"
        )
    yield names
    spark.conf.unset(RATIO)
    spark.conf.unset(MIN_BYTES)


def test_the_prediction_is_what_the_refresh_does(spark, views):
    """After each obstacle, every view's next refresh as predicted, and as DESCRIBE and
    explain show it, is the refresh that follows; a view whose refresh fails is then
    refreshed FULL, so that every view meets the next obstacle up to date."""
    for obstacle, make, expected in OBSTACLES:
        make(spark)
        for policy, view in views.items():
            qualified = f"{spark.catalog.currentDatabase()}.{view}"
            plan = predict(spark, qualified)
            described = dict(ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {view}").collect())
            explained = read_estimate(spark, ivm.compile(TOTALS, spark=spark), qualified)
            assert ("fails" if plan.fails else plan.mode) == expected[policy], (obstacle, str(plan))
            assert described["next refresh"] == str(plan)
            assert explained.endswith(f"the next refresh of {qualified}: {plan}")
            if plan.fails:
                with pytest.raises(IvmError) as failed:
                    ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
                assert plan.obstacle is not None and plan.obstacle.reason in str(failed.value)
                ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view} FULL")
                continue
            result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
            assert result.mode == plan.mode, (obstacle, policy, str(plan), str(result))
            if plan.mode == "full":
                assert plan.obstacle is not None and result.reason == plan.obstacle.reason
            # the refresh records the ways the prediction weighed, and DESCRIBE shows them
            weighed = "; ".join(map(str, plan.alternatives))
            described = dict(ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {view}").collect())
            assert described["last refresh alternatives"] == weighed, (obstacle, policy)
            assert_equals_query(spark, view, TOTALS)


def test_status_shows_one_line_per_view_with_its_next_refresh(spark, views, monkeypatch, capsys):
    cdf_off(spark)
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    assert cli.main(["status", *views.values()]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["view", "freshness", "lag", "last", "refresh", "next", "refresh"]
    rows = {line.split()[0].split(".")[-1]: line for line in lines[1:]}
    assert set(rows) == set(views.values()), lines
    strict = rows[views["INCREMENTAL STRICT"]]
    assert "create" in strict and "fails: the change data feed of" in strict, strict
    assert "a full recompute: REFRESH POLICY FULL" in rows[views["FULL"]]
    assert "a full recompute: the change data feed of" in rows[views["AUTO"]]


def test_explain_says_a_view_under_policy_full_is_recomputed(
    spark, fresh_db, monkeypatch, capsys, tmp_path
):
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {MAPPED}")
    spark.sql("INSERT INTO r VALUES (1, 10)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v REFRESH POLICY FULL AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (2, 20)")
    explained = explain(spark, monkeypatch, capsys, tmp_path, "v", TOTALS)
    assert f"the next refresh of {fresh_db}.v: a full recompute: REFRESH POLICY FULL" in explained
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW v")
    assert (result.mode, result.reason) == ("full", "REFRESH POLICY FULL")
