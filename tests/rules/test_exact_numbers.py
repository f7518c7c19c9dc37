"""A view's numbers are the query's numbers: decimals keep their type and every digit,
integer sums are exact, float sums recover from retractions, and an overflow is never
folded into the store silently."""

import importlib

import pytest

import ivm
from ivm import compile
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query

DECIMALS = {"d1": (18, 8), "d2": (38, 18), "d3": (38, 0), "d4": (10, 2), "d5": (38, 38)}


def assert_same_as_query(spark, view, query):
    """The view has the query's column types, and its rows as a multiset."""
    assert spark.table(view).schema.simpleString() == spark.sql(query).schema.simpleString()
    assert_equals_query(spark, view, query)


def refresh(spark, view, mode="incremental"):
    result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    assert result.mode == mode, result
    return result


def decimal_literal(precision: int, scale: int, seed: int) -> str:
    """A value of DECIMAL(precision, scale) using all of its fractional digits."""
    whole = str(seed % 7 + 1)[: precision - scale] or "0"
    digits = "00" + "0123456789" * 4 if scale == precision else ("0123456789" * 4)[seed % 10 :]
    fraction = digits[: scale - 1] + str(seed % 9 + 1) if scale else ""  # sums stay below 1
    text = f"{whole}.{fraction}" if scale else whole
    return f"CAST({text} AS DECIMAL({precision},{scale}))"


def decimal_row(k: int, seed: int) -> str:
    return (
        "("
        + ", ".join(
            [str(k)]
            + [decimal_literal(p, s, seed + i) for i, (p, s) in enumerate(DECIMALS.values())]
        )
        + ")"
    )


@pytest.fixture
def decimals(spark, fresh_db):
    columns = ", ".join(f"{c} DECIMAL({p},{s})" for c, (p, s) in DECIMALS.items())
    spark.sql(f"CREATE TABLE d (k INT, {columns}) USING DELTA {CDF}")
    spark.sql(
        f"INSERT INTO d VALUES {decimal_row(1, 1)}, {decimal_row(1, 2)}, "
        f"{decimal_row(2, 3)}, (2, NULL, NULL, NULL, NULL, NULL)"
    )
    return fresh_db


def change_decimals(spark):
    """An insert of the same row twice (weight 2), a delete and an update."""
    spark.sql(f"INSERT INTO d VALUES {decimal_row(1, 5)}, {decimal_row(1, 5)}, {decimal_row(3, 6)}")
    spark.sql("DELETE FROM d WHERE k = 2 AND d1 IS NOT NULL")
    spark.sql(
        "UPDATE d SET d1 = d1 + CAST(0.00000001 AS DECIMAL(18,8)), "
        "d2 = d2 - CAST(0.000000000000000001 AS DECIMAL(38,18)), d3 = d3 * 3, "
        "d5 = d5 / 3 WHERE k = 1"
    )


@pytest.mark.parametrize(
    "type_, first, added",
    [
        ("DECIMAL(18,8)", "0.12345678", "0.00000001"),
        ("DECIMAL(38,18)", "0.123456789012345678", "0.000000000000000001"),
    ],
)
def test_decimal_sum_keeps_its_scale(spark, fresh_db, type_, first, added):
    """The change's last digit of scale reaches the view, also from a row inserted twice (a
    change of weight 2: summed as ``x`` twice, as ``x * 2`` would cut the scale of a wide
    decimal)."""
    query = "SELECT k, SUM(x) AS s, COUNT(*) AS n FROM d GROUP BY k"
    spark.sql(f"CREATE TABLE d (k INT, x {type_}) USING DELTA {CDF}")
    spark.sql(f"INSERT INTO d VALUES (1, {first})")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql(f"INSERT INTO d VALUES (1, {added}), (1, {added})")
    refresh(spark, "v")
    assert [r.s for r in spark.table("v").collect()] == [spark.sql(query).first().s]
    assert_same_as_query(spark, "v", query)


def test_decimal_sums_of_every_width_equal_the_query(spark, decimals):
    sums = ", ".join(f"SUM({c}) AS s_{c}" for c in DECIMALS if c != "d5")
    query = f"SELECT k, {sums}, AVG(d1) AS a_d1, AVG(d4) AS a_d4, COUNT(*) AS n FROM d GROUP BY k"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    assert_same_as_query(spark, "v", query)
    change_decimals(spark)
    refresh(spark, "v")
    assert_same_as_query(spark, "v", query)


def test_decimal_averages_of_every_width_equal_the_query(spark, decimals):
    """The wider averages, and sums of DECIMAL(38,38), recompute the groups changed."""
    averages = ", ".join(f"AVG({c}) AS a_{c}" for c in DECIMALS)
    query = f"SELECT k, {averages}, SUM(d5) AS s_d5 FROM d GROUP BY k"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    change_decimals(spark)
    refresh(spark, "v")
    assert_same_as_query(spark, "v", query)


def test_double_sum_recovers_when_a_large_value_is_deleted(spark, fresh_db):
    query = "SELECT k, SUM(x) AS s, AVG(x) AS a, COUNT(*) AS n FROM f GROUP BY k"
    spark.sql(f"CREATE TABLE f (k INT, x DOUBLE) USING DELTA {CDF}")
    spark.sql("INSERT INTO f VALUES (1, 1e16), (1, 1.0), (2, 2.0)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("DELETE FROM f WHERE x = 1e16")
    refresh(spark, "v")
    assert sorted((r.k, r.s) for r in spark.table("v").collect()) == [(1, 1.0), (2, 2.0)]
    assert_same_as_query(spark, "v", query)


@pytest.mark.parametrize("column", ["x", "X"])
def test_a_negative_zero_keeps_its_sign_through_the_change(spark, fresh_db, column):
    # Spark normalises -0.0 to 0.0 where it groups by a float; the change of a source must
    # not, or a row computed from its bits (here its text) is retracted as another row. The
    # query may spell the column in another case than its table does.
    query = "SELECT k, CAST(x AS STRING) AS x_text FROM f"
    spark.sql(f"CREATE TABLE f (k INT, {column} DOUBLE) USING DELTA {CDF}")
    spark.sql(
        "INSERT INTO f VALUES (1, CAST('-0.0' AS DOUBLE)), (2, 0.0), (3, CAST('NaN' AS DOUBLE))"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("DELETE FROM f WHERE k = 1")
    spark.sql("INSERT INTO f VALUES (4, CAST('-0.0' AS DOUBLE))")
    refresh(spark, "v")
    assert sorted(r.x_text for r in spark.table("v").collect()) == ["-0.0", "0.0", "NaN"]
    assert_same_as_query(spark, "v", query)


@pytest.mark.parametrize("special", ["'NaN'", "'Infinity'", "'-Infinity'"])
def test_float_sum_recovers_when_a_special_value_is_deleted(spark, fresh_db, special):
    query = "SELECT k, SUM(x) AS s FROM f GROUP BY k"
    spark.sql(f"CREATE TABLE f (k INT, x FLOAT) USING DELTA {CDF}")
    spark.sql("INSERT INTO f VALUES (1, 1.5)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql(f"INSERT INTO f VALUES (1, CAST({special} AS FLOAT))")
    refresh(spark, "v")
    assert_same_as_query(spark, "v", query)
    spark.sql("DELETE FROM f WHERE isnan(x) OR abs(x) = CAST('Infinity' AS FLOAT)")
    refresh(spark, "v")
    assert [r.s for r in spark.table("v").collect()] == [1.5]


OVERFLOW = "SELECT k, SUM(x) AS s FROM o GROUP BY k"


@pytest.fixture(params=["true", "false"], ids=["ansi", "no_ansi"])
def overflow(request, spark, fresh_db):
    """A view whose change overflows its sum's type while the sum itself fits, created and
    refreshed with ANSI mode on (an overflow raises) and off (it would give NULL).

    The change is an update of one row from 9e37 to -9e37: the deletion and the insertion sum
    to -1.8e38, past DECIMAL(38,0), while the query sums one row. Had the change been two
    inserted rows, the query itself could overflow when Spark happens to add them first."""
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    try:
        spark.sql(f"CREATE TABLE o (k INT, x DECIMAL(38,0)) USING DELTA {CDF}")
        spark.sql("INSERT INTO o VALUES (1, 90000000000000000000000000000000000000)")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {OVERFLOW}")
        spark.sql("UPDATE o SET x = -x")
        yield fresh_db
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def test_overflow_inside_the_change_falls_back_to_a_full_recompute(spark, overflow):
    result = refresh(spark, "v", "full")
    assert "overflow" in result.reason
    assert_same_as_query(spark, "v", OVERFLOW)
    last = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW v").first()
    assert (last.mode, last.reason) == ("full", result.reason)


def test_a_float_accumulator_is_recomputed_not_folded(spark, fresh_db, monkeypatch):
    """Where typing took a float argument for exact, a refresh recomputes the view."""
    query = "SELECT k, SUM(x) AS s FROM f GROUP BY k"
    spark.sql(f"CREATE TABLE f (k INT, x DOUBLE) USING DELTA {CDF}")
    spark.sql("INSERT INTO f VALUES (1, 1e16), (1, 1.0)")
    lowering = importlib.import_module("ivm.frontend.lower")
    monkeypatch.setattr(lowering, "EXACT_TYPES", lowering.EXACT_TYPES | {"DOUBLE"})
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("DELETE FROM f WHERE x = 1e16")
    result = refresh(spark, "v", "full")
    assert "DOUBLE" in result.reason
    assert_same_as_query(spark, "v", query)


SCHEMA = {
    "t": {
        "k": "INT",
        "i": "INT",
        "b": "BIGINT",
        "d": "DECIMAL(18,8)",
        "w": "DECIMAL(38,18)",
        "z": "DECIMAL(38,38)",
        "f": "DOUBLE",
        "r": "FLOAT",
        "s": "STRING",
    }
}


@pytest.mark.parametrize(
    "aggregate, invertible",
    [
        ("SUM(i)", True),
        ("SUM(b * 2)", True),
        ("SUM(d)", True),
        ("SUM(d * 2)", True),
        ("AVG(d)", True),
        ("AVG(i)", True),
        ("SUM(w)", True),
        ("COUNT(f)", True),
        ("SUM(f)", False),
        ("AVG(r)", False),
        ("SUM(s)", False),
        ("SUM(i / 2)", False),
        ("SUM(d * 1.5)", True),
        ("SUM(d * 1.5e0)", False),
        ("SUM(COALESCE(d, f))", False),
        ("SUM(CAST(s AS INT))", True),
        ("SUM(IF(k > 0, d, 0))", True),
        ("AVG(w)", False),
        ("SUM(z)", False),
    ],
)
def test_only_exact_sums_are_folded(aggregate, invertible):
    view = compile(f"SELECT k, {aggregate} AS a FROM t GROUP BY k", schema=SCHEMA)
    assert (view.maintenance.rule.name, view.maintenance.rule.kind.value == "invertible") == (
        "aggregate" if invertible else "integrate",
        invertible,
    )


UNIONS = {
    # a DECIMAL(18, 8) widened to DECIMAL(38, 0) beside a DECIMAL(38, 0): rounded to 0 or 1,
    # so 0.12345678 equals 0.2 (cast to the union's type too, 0), and 0.5 equals 1
    "widened": "SELECT u.v = 0.2 AS near_zero, u.v = 1 AS one FROM "
    "(SELECT d1 AS v FROM narrow UNION ALL SELECT d3 AS v FROM wide) u",
    # an INT widened to BIGINT beside a BIGINT: 1 more than the largest INT is no overflow
    "counted": "SELECT u.n + 1 AS next FROM "
    "(SELECT i AS n FROM narrow UNION ALL SELECT b AS n FROM wide) u",
    "intersected": "SELECT d1 AS v FROM narrow INTERSECT ALL SELECT d3 AS v FROM wide",
}


def test_a_union_of_columns_of_different_types_reads_its_change_as_the_union_types_it(
    spark, fresh_db
):
    """Spark casts each branch of a set operation to the wider of their types; a change of
    one branch alone, read by what reads the union, is cast the same way (a change read in
    its own branch's type compared 0.12345678 with 0.2 where the query compared 0 with 0)."""
    spark.sql(f"CREATE TABLE narrow (k INT, d1 DECIMAL(18,8), i INT) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE wide (k INT, d3 DECIMAL(38,0), b BIGINT) USING DELTA {CDF}")
    spark.sql("INSERT INTO narrow VALUES (1, 0.5, 1)")
    spark.sql("INSERT INTO wide VALUES (1, 0, 2), (2, 1, 3)")
    for name, query in UNIONS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {query}")
    spark.sql("INSERT INTO narrow VALUES (2, 0.12345678, 2147483647), (3, 0.49999999, 5)")
    for name, query in UNIONS.items():
        refresh(spark, name)
        assert_same_as_query(spark, name, query)
