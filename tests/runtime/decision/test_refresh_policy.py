"""REFRESH POLICY and the cost model: a refresh goes the way its view's policy says, AUTO
recomputes where that is predicted cheaper, and EXPLAIN CREATE says so before anything is
created."""

import importlib
import json

import pytest

import ivm
from ivm.errors import SqlSyntaxError
from ivm.frontend.statements import AlterView, CreateView, ExplainCreate, parse_statement
from ivm.runtime.catalog.tables import qualified_name, store_name
from ivm.runtime.decision.cost import KEPT, REMEASURE_AFTER, CostModel
from ivm.runtime.decision.decide import MIN_BYTES, RATIO, NotIncrementalizable
from ivm.runtime.log.delta_log import DeltaLogReader
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query, explain

TOTALS = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM r GROUP BY k"
TOP = "SELECT k, a FROM r ORDER BY a DESC, k LIMIT 2"
FLOAT_SUMS = "SELECT k, SUM(CAST(a AS DOUBLE)) AS total FROM r GROUP BY k"


@pytest.fixture
def r(spark, fresh_db):
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5)")
    return fresh_db


@pytest.fixture
def float_sums_folded(monkeypatch):
    """Typing takes DOUBLE for exact, so that FLOAT_SUMS keeps its sum as a DOUBLE
    accumulator: a view no refresh can fold a change into (the guard of
    test_exact_numbers.test_a_float_accumulator_is_recomputed_not_folded)."""
    lowering = importlib.import_module("ivm.frontend.lower")
    monkeypatch.setattr(lowering, "EXACT_TYPES", lowering.EXACT_TYPES | {"DOUBLE"})


@pytest.fixture
def every_size_predicted(spark):
    """The cost model predicts for sources of any size, not only from 64 MiB."""
    spark.conf.set(MIN_BYTES, "0")
    yield
    spark.conf.unset(MIN_BYTES)


def records(spark, view):
    """The refresh records of ``view``'s store, oldest first, each with its commit's own time
    in ms (:meth:`~ivm.runtime.log.delta_log.DeltaLogReader.commit_info`, as the cost model
    reads it). The history's time is another: the commit file's, written some milliseconds
    later, over 50 on a busy machine."""
    log = DeltaLogReader(spark, store_name(qualified_name(spark, view)))
    commits = (log.commit_info(version) for version in range(log.version() + 1))
    return [(at, json.loads(text)["ivm"]) for text, at in commits if text]


def refresh(spark, view, query):
    result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    assert_equals_query(spark, view, query)
    return result


# The statements -------------------------------------------------------------------------


@pytest.mark.fast
@pytest.mark.parametrize("policy", ["AUTO", "INCREMENTAL", "INCREMENTAL STRICT", "FULL"])
def test_every_policy_is_spelled_on_create_alter_and_explain(policy):
    create = parse_statement(
        f"CREATE MATERIALIZED VIEW v FRESHNESS = INTERVAL '1' MINUTE "
        f"REFRESH POLICY {policy} AS SELECT 1 AS x"
    )
    assert isinstance(create, CreateView) and (create.policy, create.freshness) == (policy, 60)
    alter = parse_statement(f"ALTER MATERIALIZED VIEW v SET REFRESH POLICY {policy}")
    assert alter == AlterView("v", policy=policy)
    explain = parse_statement(
        f"explain CREATE MATERIALIZED VIEW v REFRESH POLICY {policy} AS SELECT 1 AS x"
    )
    assert isinstance(explain, ExplainCreate)
    assert (explain.create.policy, explain.create.query.strip()) == (policy, "SELECT 1 AS x")


@pytest.mark.fast
def test_an_unknown_policy_is_refused_where_it_is_written():
    with pytest.raises(
        SqlSyntaxError,
        match="expected AUTO, INCREMENTAL, INCREMENTAL STRICT "
        "or FULL after REFRESH POLICY, found 'SOMETIMES'",
    ):
        parse_statement("CREATE MATERIALIZED VIEW v REFRESH POLICY SOMETIMES AS SELECT 1")
    assert parse_statement("EXPLAIN SELECT 1") is None  # Spark's own EXPLAIN


# The cost model -------------------------------------------------------------------------


@pytest.mark.fast
def test_the_cost_model_learns_the_rate_of_full_refreshes_and_keeps_the_incremental_ones():
    model = CostModel().observed("create", 8_000_000, None, 2.0)
    assert model.bytes_per_second == 4_000_000
    model = model.observed("full", 8_000_000, None, 1.0)  # half-way to the new rate
    assert model.bytes_per_second == 6_000_000 and model.full_seconds(3_000_000) == 0.5
    for change in range(KEPT + 2):
        model = model.observed("incremental", 123, change, 0.1)
    assert [c for c, _ in model.incremental] == list(range(KEPT + 1, 1, -1))  # newest first
    assert model.observed("incremental", 123, None, 3.0) == model  # nothing to learn from
    assert CostModel.from_record(json.loads(json.dumps(model.to_record()))) == model


@pytest.mark.fast
def test_recomputing_is_chosen_only_on_evidence():
    model = CostModel(1e6)  # a recompute of 2 MB: 2 s
    assert model.before_reading(1000, 2_000_000)[0] is None  # nothing known yet
    model = model.observed("incremental", 5000, 1000, 2.5)  # 1 kB of change took 2.5 s
    assert model.before_reading(499, 2_000_000)[0] is None  # a much smaller change
    assert model.before_reading(500, 2_000_000)[0].kind == "cost"  # half of it, about alike
    assert model.before_reading(1000, 2_000_000)[0].kind == "cost"
    assert model.before_reading(1000, 3_000_000)[0] is None  # 2.5 s < 3 s
    assert model.before_reading(1000, 2_000_000, min_bytes=64e6)[0] is None  # little data
    warm = model.observed("incremental", 5000, 1000, 0.5)  # the latest one is the evidence
    assert warm.before_reading(1000, 2_000_000)[0] is None
    # a plan that reads the sources twice (a top-N) stands for changes at least as large
    planned = CostModel().after("incremental", False, planned=(500, 4_000_000))
    assert planned.before_reading(500, 2_000_000)[0].kind == "cost"
    assert planned.before_reading(249, 2_000_000)[0] is None
    assert planned.after_planning(4_000_000, 2_000_000)[0].kind == "cost"
    assert planned.after_planning(1_000_000, 2_000_000)[0] is None
    assert planned.after("full", True).planned == (500, 4_000_000)  # kept until planned again


@pytest.mark.fast
def test_an_incremental_refreshs_cost_is_predicted_to_grow_with_its_change():
    """One refresh of a small change, cheaper than a recompute, says little of a change a
    thousand times larger (in the planner benchmark, 10 % batches after a 0.01 % one took
    2.5–3.1 times a recompute, and AUTO applied them); the growth is assumed until two sizes
    measure it."""
    model = CostModel(1e6, ((1000, 1.0),))  # 1 kB of change took 1 s, a recompute 2 s
    assert model.before_reading(1000, 2_000_000)[0] is None
    obstacle, prediction = model.before_reading(1_000_000, 2_000_000)
    assert obstacle is not None and obstacle.kind == "cost", prediction
    assert "assumed" in prediction
    flat = model.observed("incremental", 5000, 10_000, 1.1)  # ten times the change: +10 %
    assert flat.growth()[1] and flat.before_reading(1_000_000, 2_000_000)[0] is None
    steep = model.observed("incremental", 5000, 10_000, 1.9)  # ten times the change: +90 %
    obstacle, prediction = steep.before_reading(100_000, 2_000_000)
    assert obstacle is not None and "measured" in prediction
    assert steep.before_reading(10_000, 2_000_000)[0] is None  # as measured: 1.9 s < 2 s


@pytest.mark.fast
def test_after_recomputing_by_cost_for_a_while_a_refresh_measures_incremental_again():
    model = CostModel(planned=(1, 9_000_000))
    for _ in range(REMEASURE_AFTER):
        assert model.before_reading(1, 1_000_000)[0] is not None
        model = model.after("full", by_cost=True)
    obstacle, prediction = model.before_reading(1, 1_000_000)
    assert obstacle is None and "measure its cost again" in prediction
    assert model.after("incremental", by_cost=False).recomputed_in_a_row == 0


@pytest.mark.fast
def test_a_change_much_larger_than_any_measured_waits_longer_to_be_measured_again():
    """Measuring with a change a thousand times the evidence's costs a multiple of a
    recompute, and tells less: the planner benchmark's 10 % batches, after a run of
    recomputes chosen on 0.01 % batches' evidence, were each measured once."""
    model = CostModel(1e6, ((1000, 3.0),))  # 1 kB of change took 3 s, a recompute 2 s
    for _ in range(REMEASURE_AFTER):
        model = model.after("full", by_cost=True)
    assert model.before_reading(1500, 2_000_000)[0] is None  # a change like the measured
    obstacle, _ = model.before_reading(1_000_000, 2_000_000)
    assert obstacle is not None and obstacle.kind == "cost"
    obstacle, _ = model.after_planning(3_000_000, 2_000_000, change_bytes=1_000_000)
    assert obstacle is not None and obstacle.kind == "cost"
    for _ in range(REMEASURE_AFTER * (REMEASURE_AFTER - 1)):
        model = model.after("full", by_cost=True)
    obstacle, prediction = model.before_reading(1_000_000, 2_000_000)  # at most 8 × as long
    assert obstacle is None and "measure its cost again" in prediction


# The policies at work -------------------------------------------------------------------


def test_auto_recomputes_a_view_whose_change_reads_more_than_its_query(
    spark, r, every_size_predicted, monkeypatch, capsys, tmp_path
):
    """A top-N reads its input before and after a change that removes rows: more than
    recomputing it."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    spark.sql("UPDATE r SET a = 30 WHERE a = 5")
    spark.conf.set(RATIO, "1")  # the UPDATE rewrote r's one file: the cost model chooses
    try:
        result = refresh(spark, "top", TOP)
    finally:
        spark.conf.unset(RATIO)
    assert result.mode == "full" and "a full recompute is predicted cheaper" in result.reason
    last = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW top").first()
    assert last.prediction and last.prediction in result.reason
    assert "prune" in result.phases  # it planned the delta query before it chose

    spark.sql("INSERT INTO r VALUES (4, 40)")  # from the latest plan: no change read now
    explained = explain(spark, monkeypatch, capsys, tmp_path, "top", TOP)
    result = refresh(spark, "top", TOP)
    assert result.mode == "full" and "the latest delta query, for a change of" in result.reason
    assert f"the next refresh of {r}.top: a full recompute: {result.reason}\n" in explained
    assert "prune" not in result.phases

    ivm.sql(spark, "ALTER MATERIALIZED VIEW top SET REFRESH POLICY INCREMENTAL")
    spark.sql("DELETE FROM r WHERE k >= 3")
    assert refresh(spark, "top", TOP).mode == "incremental"
    facts = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW top").collect())
    assert facts["refresh policy"] == "INCREMENTAL" and facts["last refresh prediction"] == ""


def test_auto_applies_a_change_that_reads_less_than_the_query(spark, r, every_size_predicted):
    """Sums and counts are linear: their delta query reads the change alone."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (1, 1)")
    assert refresh(spark, "totals", TOTALS).mode == "incremental"
    (_, create), (_, incremental) = records(spark, "totals")
    assert incremental["planned_bytes"] < create["planned_bytes"]
    assert incremental["prediction"].startswith("the delta query reads ")


def test_each_record_carries_what_the_refreshes_before_it_cost(spark, r):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (1, 1)")
    refresh(spark, "totals", TOTALS)
    spark.sql("INSERT INTO r VALUES (1, 2)")
    refresh(spark, "totals", TOTALS)
    (created_at, create), (first_at, first), (_, second) = records(spark, "totals")
    # the model keeps the CREATE as a rate: its planned bytes over that rate are its seconds
    seconds = (created_at - create["started_ms"]) / 1000
    assert create["planned_bytes"] / first["cost"]["bytes_per_second"] == pytest.approx(seconds)
    assert first["cost"]["incremental"] == [] and first["cost"]["planned"] == [
        first["read_bytes"],
        first["planned_bytes"],
    ]
    [(change, took)] = second["cost"]["incremental"]
    assert change == first["read_bytes"]
    assert took == pytest.approx((first_at - first["started_ms"]) / 1000)


def test_policy_full_recomputes_every_refresh_but_not_an_unchanged_view(spark, r):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals REFRESH POLICY FULL AS {TOTALS}")
    spark.sql("INSERT INTO r VALUES (3, 1)")
    result = refresh(spark, "totals", TOTALS)
    assert (result.mode, result.reason) == ("full", "REFRESH POLICY FULL")
    assert refresh(spark, "totals", TOTALS).mode == "noop"


def test_policy_incremental_ignores_the_cost_of_a_large_change(spark, r):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals REFRESH POLICY INCREMENTAL AS {TOTALS}")
    spark.conf.set(RATIO, "0")
    spark.conf.set(MIN_BYTES, "0")
    try:
        spark.sql("INSERT INTO r SELECT id % 5, id FROM range(100)")
        assert refresh(spark, "totals", TOTALS).mode == "incremental"
        ivm.sql(spark, "ALTER MATERIALIZED VIEW totals SET REFRESH POLICY AUTO")
        spark.sql("INSERT INTO r VALUES (9, 9)")
        assert refresh(spark, "totals", TOTALS).mode == "full"
    finally:
        spark.conf.unset(RATIO)
        spark.conf.unset(MIN_BYTES)


def test_policy_incremental_strict_fails_where_the_change_is_unavailable(spark, r):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals REFRESH POLICY INCREMENTAL STRICT AS {TOTALS}")
    store_version = len(records(spark, "totals"))
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")
    spark.sql("DELETE FROM r WHERE k = 1")  # no change data recorded
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    with pytest.raises(NotIncrementalizable, match="change data feed of .*r was turned off"):
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert len(records(spark, "totals")) == store_version  # nothing committed
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals FULL")  # asked for: allowed
    assert result.mode == "full"
    assert_equals_query(spark, "totals", TOTALS)


def test_policy_incremental_strict_recomputes_a_replaced_source(spark, r):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals REFRESH POLICY INCREMENTAL STRICT AS {TOTALS}")
    spark.sql(
        f"CREATE OR REPLACE TABLE r USING DELTA {CDF} AS SELECT * FROM VALUES (7, 70) AS v(k, a)"
    )
    result = refresh(spark, "totals", TOTALS)
    assert result.mode == "full" and "was replaced" in result.reason


def test_a_view_never_maintained_incrementally_cannot_take_an_incremental_policy(
    spark, r, float_sums_folded
):
    with pytest.raises(NotIncrementalizable, match="cannot be added exactly"):
        ivm.sql(
            spark, f"CREATE MATERIALIZED VIEW totals REFRESH POLICY INCREMENTAL AS {FLOAT_SUMS}"
        )
    assert not spark.catalog.tableExists("totals")
    assert not spark.catalog.tableExists(store_name(f"{r}.totals"))
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {FLOAT_SUMS}")
    with pytest.raises(NotIncrementalizable, match="cannot be added exactly"):
        ivm.sql(spark, "ALTER MATERIALIZED VIEW totals SET REFRESH POLICY INCREMENTAL STRICT")
    facts = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW totals").collect())
    assert facts["refresh policy"] == "AUTO"


# EXPLAIN CREATE -------------------------------------------------------------------------


def plan(spark, statement):
    return [row.plan for row in ivm.sql(spark, statement).collect()]


def test_explain_create_says_how_a_view_would_be_maintained_and_creates_nothing(
    spark, r, float_sums_folded
):
    lines = plan(spark, f"EXPLAIN CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    assert lines[:4] == [
        f"materialized view {r}.totals",
        "refresh policy: AUTO (the default)",
        "store layout: merge: each refresh merges its change into the stored rows",
        "maintained: incrementally, unless a refresh predicts a full recompute cheaper",
    ]
    assert "delta circuit (inputs first):" in lines
    assert any(line.startswith("estimate of what a refresh reads") for line in lines)
    assert not spark.catalog.tableExists("totals")
    assert not spark.catalog.tableExists(store_name(f"{r}.totals"))

    assert plan(
        spark, f"EXPLAIN CREATE MATERIALIZED VIEW totals REFRESH POLICY INCREMENTAL AS {FLOAT_SUMS}"
    )[3].startswith(
        "maintained: no, CREATE fails: sums stored as types that cannot be added exactly"
    )
    assert plan(spark, f"EXPLAIN CREATE MATERIALIZED VIEW totals AS {FLOAT_SUMS}")[3].startswith(
        "maintained: by a full recompute on every refresh: sums stored as"
    )
    refused = plan(spark, "EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT k, rand() AS x FROM r")
    assert refused[3].startswith("maintained: no, CREATE fails: ") and "rand" in refused[3].lower()


def test_explain_create_says_a_create_over_a_source_without_change_data_fails(spark, r):
    """``EXPLAIN CREATE`` checks the sources as the CREATE does: a Delta table without change
    data feed, or a table of another format, is a line saying the CREATE fails, and why."""
    spark.sql("CREATE TABLE plain (k INT, a INT) USING DELTA")
    spark.sql("CREATE TABLE other (k INT) USING PARQUET")
    query = "SELECT p.k, SUM(r.a) AS a FROM plain p JOIN r ON p.k = r.k JOIN other o ON o.k = p.k"
    lines = plan(spark, f"EXPLAIN CREATE MATERIALIZED VIEW v AS {query} GROUP BY p.k")
    refused = [line.split("; ")[0] for line in lines if "CREATE fails" in line]
    assert refused == [
        f"source {r}.other: CREATE fails: source {r}.other is not a Delta table",
        f"source {r}.plain: CREATE fails: source {r}.plain does not have change data feed enabled",
    ], lines
    assert f"enable it: ALTER TABLE {r}.plain SET TBLPROPERTIES" in lines[-1]
    with pytest.raises(ivm.SourceError, match="change data feed"):  # as the CREATE says
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query} GROUP BY p.k")
