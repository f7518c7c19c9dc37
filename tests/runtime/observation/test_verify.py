"""``ivm verify`` and ``ivm.verify``: a view compared with its query at the source versions
it reflects; a correct view passes, a tampered one fails with the differing rows."""

from decimal import Decimal

import pytest

import ivm
from ivm import cli
from ivm.errors import CatalogError, StateError
from tests.support.cdf import CDF


@pytest.fixture
def sales(spark, fresh_db):
    spark.sql(
        f"CREATE TABLE Sales (Region STRING, amount DECIMAL(12,2), rate DOUBLE, "
        f"at TIMESTAMP) USING DELTA {CDF}"
    )
    spark.sql(
        "INSERT INTO Sales VALUES ('EU', 10.00, 1.5, TIMESTAMP '2024-01-01 23:30:00'), "
        "('EU', 10.00, 1.5, TIMESTAMP '2024-01-01 23:30:00'), "
        "('US', 2.50, 1e16, TIMESTAMP '2024-01-02 00:15:00'), (NULL, NULL, NULL, NULL)"
    )
    return fresh_db


def test_a_correct_view_equals_its_query_while_its_sources_move_on(spark, sales):
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW ByRegion AS SELECT Region, hour(at) AS h, "
        "SUM(amount) AS total, SUM(rate) AS rates, COUNT(*) AS n FROM sales s "
        "GROUP BY Region, hour(at)",
    )
    created = ivm.verify(spark, "byregion")
    assert created.equal and created.rows == 3, created
    # the sources move on: the view is checked at the versions it reflects, not the latest
    spark.sql("INSERT INTO sales VALUES ('APAC', 1.00, 0.5, NULL)")
    spark.sql("SET TIME ZONE 'Asia/Kolkata'")  # the view keeps the zone of its CREATE
    try:
        behind = ivm.verify(spark, "ByRegion")
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW byregion")
        refreshed = ivm.verify(spark, "byregion")
    finally:
        spark.sql("SET TIME ZONE 'UTC'")
    assert behind.equal and behind.sources == created.sources, behind
    assert ivm.sql(spark, "VERIFY MATERIALIZED VIEW byRegion") == refreshed
    assert refreshed.equal and refreshed.rows == 4, refreshed
    assert list(refreshed.sources.values()) == [v + 1 for v in created.sources.values()]
    assert str(refreshed).startswith(
        f"ok: {sales}.byregion equals its query at sources {sales}.sales v2"
    )


def test_a_tampered_store_differs_with_the_rows_and_their_counts(spark, sales):
    ivm.sql(
        spark, "CREATE MATERIALIZED VIEW kept AS SELECT Region, amount FROM sales WHERE amount > 1"
    )
    # the view keeps duplicates as a count: one copy of ('EU', 10.00) goes, a row comes
    spark.sql(f"UPDATE {sales}__ivm.kept__ivm_store SET _ivm_count = 1 WHERE Region = 'EU'")
    spark.sql(f"INSERT INTO {sales}__ivm.kept__ivm_store SELECT 'XX', 1.00, 1")
    verdict = ivm.verify(spark, "kept")
    assert not verdict.equal and verdict.difference is not None
    rows = {row: (in_view, in_query) for row, in_view, in_query in verdict.difference.rows}
    assert rows == {("EU", Decimal("10.00")): (1, 2), ("XX", Decimal("1.00")): (1, 0)}
    text = str(verdict)
    assert text.startswith(f"DIFFERENT: {sales}.kept differs") and "in view" in text
    assert "('EU', 10.00)" in text and "('XX', 1.00)" in text


def test_a_column_of_another_type_differs_by_the_column_and_its_types(spark, sales):
    """A column's type is part of the view: a store column widened by Delta (the same values,
    another type) makes the view differ from its query, told by column."""
    query = "SELECT Region, SUM(amount) AS total FROM sales GROUP BY Region"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {query}")
    store = f"{sales}__ivm.totals__ivm_store"
    spark.sql(f"ALTER TABLE {store} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql(f"ALTER TABLE {store} ALTER COLUMN total TYPE DECIMAL(30, 2)")
    verdict = ivm.verify(spark, "totals")
    assert not verdict.equal and verdict.difference is None
    promised = spark.sql(query).schema["total"].dataType.simpleString()
    assert (
        verdict.schema_difference
        == f"column 2 (total) is decimal(30,2) in the view, {promised} in its query"
    )
    assert str(verdict).endswith(f": {verdict.schema_difference}")


def test_float_columns_differ_only_beyond_the_tolerance(spark, sales):
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW rates AS SELECT Region, SUM(rate) AS total "
        "FROM sales GROUP BY Region",
    )
    spark.sql(
        f"UPDATE {sales}__ivm.rates__ivm_store SET total = total * (1 + 1e-14) WHERE Region = 'US'"
    )
    assert ivm.verify(spark, "rates").equal  # within the default relative 1e-9
    exact = ivm.verify(spark, "rates", float_tolerance=0)
    assert not exact.equal and exact.difference.total == 2
    spark.sql(f"UPDATE {sales}__ivm.rates__ivm_store SET total = 0.0 WHERE Region = 'US'")
    assert not ivm.verify(spark, "rates").equal  # 1e16 against 0.0: no rounding


def test_a_pipeline_and_self_join_are_verified_against_their_own_sql(spark, sales):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW base AS SELECT Region, amount FROM sales")
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW pairs AS WITH b AS (SELECT * FROM base) "
        "SELECT x.Region, COUNT(*) AS n FROM b x JOIN base y "
        "ON x.Region = y.Region GROUP BY x.Region",
    )
    spark.sql("DELETE FROM sales WHERE Region = 'US'")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW base")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW pairs")
    verdict = ivm.verify(spark, "pairs")
    assert verdict.equal and verdict.rows == 1, verdict


def test_a_view_with_a_state_table_is_verified_at_its_sources_versions(spark, sales):
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW top AS SELECT Region, SUM(amount) AS total "
        "FROM sales GROUP BY Region ORDER BY total DESC LIMIT 2",
    )
    assert ivm.compile(
        "SELECT Region, SUM(amount) AS total FROM sales GROUP BY Region "
        "ORDER BY total DESC LIMIT 2",
        spark=spark,
        name="top",
    ).states
    spark.sql("INSERT INTO sales VALUES ('APAC', 100.00, 0.5, NULL)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    spark.sql("INSERT INTO sales VALUES ('US', 500.00, 0.5, NULL)")  # not refreshed
    verdict = ivm.verify(spark, "top")
    assert verdict.equal and verdict.sources == {f"{sales}.sales": 2}, verdict


def test_a_source_created_again_or_dropped_is_named(spark, sales):
    ivm.sql(spark, "CREATE MATERIALIZED VIEW plain AS SELECT Region FROM sales")
    spark.sql("DROP TABLE sales")
    spark.sql(
        f"CREATE TABLE sales (Region STRING, amount DECIMAL(12,2), rate DOUBLE, "
        f"at TIMESTAMP) USING DELTA {CDF}"
    )
    with pytest.raises(StateError, match=r"sales was dropped and created again") as error:
        ivm.verify(spark, "plain")
    assert "REFRESH MATERIALIZED VIEW" in error.value.hint
    spark.sql("DROP TABLE sales")
    with pytest.raises(CatalogError, match=r"table or view not found: .*sales"):
        ivm.verify(spark, "plain")


def test_the_command_exits_1_on_a_difference(spark, sales, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    ivm.sql(spark, "CREATE MATERIALIZED VIEW one AS SELECT Region FROM sales")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW two AS SELECT COUNT(*) AS n FROM sales")
    assert cli.main(["verify", "one", "two"]) == 0
    assert capsys.readouterr().out.count("ok: ") == 2
    spark.sql(f"DELETE FROM {sales}__ivm.two__ivm_store")
    assert cli.main(["verify", "--all"]) == 1
    out = capsys.readouterr().out
    assert "ok: " in out and f"DIFFERENT: {sales}.two" in out and "(4)" in out
    assert cli.main(["verify"]) == 2
    assert "name the views to verify, or --all" in capsys.readouterr().err
