"""When incremental refresh is impossible or unwise, a refresh recomputes the view, records
why, and the view stays equal to its query."""

import pytest

import ivm
from ivm.runtime.decision.decide import MIN_BYTES, RATIO
from ivm.runtime.refresh.gather import predict
from tests.support.cdf import CDF, vacuum_everything
from tests.support.helpers import TOTALS, assert_equals_query


def refresh_and_check(spark, mode, reason=None):
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    assert result.mode == mode, result
    if reason is not None:
        assert reason in result.reason
    assert_equals_query(spark, "totals", TOTALS)
    last = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW totals").first()
    assert (last.mode, last.reason, last.technique) == (mode, result.reason, result.technique)
    # the ways the refresh weighed: the one it took first, the other with why not
    (taken, other) = last.alternatives
    assert (taken.mode, taken.chosen, taken.applicable) == (mode, True, True)
    assert other.mode == ("full" if mode == "incremental" else "incremental") and other.reason
    assert not other.chosen
    if mode == "full":
        assert other.reason == result.reason
    return result


def test_a_small_change_is_applied_incrementally(spark, totals):
    spark.sql("INSERT INTO r VALUES (3, 1)")
    assert refresh_and_check(spark, "incremental").reason is None


@pytest.mark.slow
def test_vacuumed_change_data_falls_back_to_a_full_recompute(spark, totals):
    """The refresh learns it reading the change, and records why as the prediction says."""
    spark.sql("UPDATE r SET a = a + 1 WHERE k = 2")  # writes change data files
    vacuum_everything(spark, "r")
    predicted = str(predict(spark, f"{totals}.totals"))
    assert predicted.startswith(f"a full recompute: the change of {totals}.r after version 1 ")
    reason = predicted.removeprefix("a full recompute: ")
    assert refresh_and_check(spark, "full").reason == reason


def test_change_data_feed_off_for_some_versions_falls_back_to_a_full_recompute(spark, totals):
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = false)")
    spark.sql("DELETE FROM r WHERE k = 1")  # no change data recorded
    spark.sql("ALTER TABLE r SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.sql("INSERT INTO r VALUES (3, 1)")
    refresh_and_check(spark, "full", "change data feed")


def test_a_schema_change_falls_back_to_a_full_recompute(spark, totals):
    spark.sql("ALTER TABLE r ADD COLUMNS (note STRING)")
    spark.sql("INSERT INTO r VALUES (1, 1, 'x')")
    refresh_and_check(spark, "full", "schema of")


def test_a_replaced_source_falls_back_to_a_full_recompute(spark, totals):
    spark.sql(
        f"CREATE OR REPLACE TABLE r USING DELTA {CDF} AS SELECT * FROM VALUES (7, 70) AS v(k, a)"
    )
    refresh_and_check(spark, "full", "was replaced")


def test_a_change_larger_than_the_threshold_is_recomputed(spark, totals):
    spark.conf.set(RATIO, "0.5")
    spark.conf.set(MIN_BYTES, "0")
    try:
        spark.sql("INSERT INTO r SELECT id % 5, id FROM range(100)")
        refresh_and_check(spark, "full", RATIO)
        spark.conf.set(RATIO, "100")
        spark.sql("DELETE FROM r WHERE k = 4")
        refresh_and_check(spark, "incremental")
    finally:
        spark.conf.unset(RATIO)
        spark.conf.unset(MIN_BYTES)


def test_describe_shows_the_last_refresh_and_the_lag(spark, totals):
    spark.sql("INSERT INTO r VALUES (3, 1)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    spark.sql("INSERT INTO r VALUES (4, 1)")
    facts = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW totals").collect())
    assert facts["definition"] == TOTALS and facts["last refresh mode"] == "incremental"
    assert facts["last refresh technique"] == "rewrite"  # a store of two rows
    assert facts[f"source {totals}.r"] == "version 2 of 3"
    assert float(facts["lag seconds"]) > 0
    history = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW totals").collect()
    assert [h.mode for h in history] == ["incremental", "create"]
    assert [h.technique for h in history] == ["rewrite", "recompute"]
    assert history[0].sources == {f"{totals}.r": 2}
    assert history[0].rows_inserted == spark.table("totals").count()  # the rows rewritten


def test_explain_estimates_reads_from_the_logs_and_foresees_the_next_refresh(spark, totals):
    from ivm.runtime.messages import size
    from ivm.runtime.refresh.read_estimate import read_estimate

    spark.sql(f"CREATE TABLE s (k INT, b STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO s VALUES (1, 'x'), (2, 'y')")
    detail = {t: spark.sql(f"DESCRIBE DETAIL {t}").first().sizeInBytes for t in ("r", "s")}
    r, s = f"{totals}.r", f"{totals}.s"

    joined = read_estimate(
        spark, ivm.compile("SELECT r.k, s.b FROM r JOIN s ON r.k = s.k", spark=spark)
    )
    for table, name in ((r, "r"), (s, "s")):
        assert (
            f"  {table} ({size(detail[name])}): its change (Δ); up to "
            f"{size(detail[name])} per snapshot (" in joined
        )
    assert joined.splitlines()[-1].endswith(f"a full recompute: {size(detail['r'] + detail['s'])}")

    def next_refresh():
        text = read_estimate(spark, ivm.compile(TOTALS, spark=spark), f"{totals}.totals")
        now = spark.sql("DESCRIBE DETAIL r").first().sizeInBytes
        assert f"{r} ({size(now)}): its change (Δ)\n" in text  # no snapshot
        return text.splitlines()[-1]

    assert next_refresh().endswith("nothing to do (no source changed)")
    spark.sql("INSERT INTO r VALUES (3, 1)")
    assert "incremental, a change of" in next_refresh()
    spark.conf.set(MIN_BYTES, "0")
    spark.conf.set(RATIO, "0")
    try:
        assert "a full recompute: the change" in next_refresh()
    finally:
        spark.conf.unset(RATIO)
        spark.conf.unset(MIN_BYTES)
