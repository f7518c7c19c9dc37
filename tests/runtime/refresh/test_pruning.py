"""Snapshot reads pruned to the change's keys: the same rows, from the files around the change."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

import ivm
from benchmarks.measure import Meter
from ivm.ir import Project, Restrict, Scan
from ivm.runtime.refresh.pruning import (
    KEY,
    MAX_LISTED,
    MAX_RANGES,
    _filtered,
    _local_keys,
    _ranges,
)
from ivm.zset import Read
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query

TOTALS = (
    "SELECT d.grp, COUNT(*) AS n, SUM(f.v) AS total FROM facts f JOIN dims d "
    "ON f.k = d.k GROUP BY d.grp"
)


def _covered(values, ranges, parse) -> bool:
    bounds = [(parse(low), parse(high)) for low, high in ranges]
    ordered = all(a[1] < b[0] for a, b in pairwise(bounds))
    return ordered and all(any(low <= v <= high for low, high in bounds) for v in values)


@given(st.sets(st.integers(-(10**12), 10**12), max_size=300))
def test_ranges_cover_every_key_within_the_range_budget(keys):
    values = sorted(keys)
    ranges = _ranges(values)
    assert len(ranges) == min(len(values), MAX_RANGES)
    assert _covered(values, ranges, lambda literal: int(literal.sql("spark")))


@given(st.sets(st.text(max_size=6), min_size=1, max_size=200))
def test_ranges_of_strings_cover_every_key(keys):
    values = sorted(keys)
    ranges = _ranges(values)
    assert len(ranges) <= MAX_RANGES
    assert _covered(values, ranges, lambda literal: literal.this)


def _restriction(keys: int) -> Restrict:
    facts = Scan("facts", "f", ("k", "j", "v"), Read.AFTER)
    change = Project(
        Scan("facts", "f", ("k", "j", "v"), Read.DELTA),
        (("_ivm_k0", exp.column("k", "f")), ("_ivm_k1", exp.column("j", "f"))),
    )
    return Restrict(facts, (exp.column("k", "f"), exp.column("j", "f"))[:keys], change)


@pytest.mark.parametrize(
    "keys, values, listed",
    [(1, [3, 7], True), (1, [], True), (1, list(range(MAX_LISTED + 1)), False), (2, [3, 7], False)],
)
@pytest.mark.parametrize("has_null", [False, True])
def test_few_values_of_one_key_filter_the_snapshot_in_place_of_the_semi_join(
    keys, values, listed, has_null
):
    pruned = _filtered(_restriction(keys), values, has_null)
    assert isinstance(pruned, Restrict) != listed
    predicate = (pruned if listed else pruned.input).predicate.sql("spark")
    assert ("IN (3, 7)" in predicate) == (listed and values == [3, 7])
    assert ("f.k IS NULL" in predicate) == has_null
    if listed and not values and not has_null:
        assert "FALSE" in predicate  # no key: no row meets the change


def _facts_and_dims(spark) -> None:
    spark.sql(f"CREATE TABLE facts (k BIGINT, v BIGINT) USING DELTA {CDF}")
    for start in range(0, 10_000, 1_000):  # files in key order, 1,000 keys each
        spark.sql(f"INSERT INTO facts SELECT id, id % 7 FROM range({start}, {start + 1_000}, 1, 1)")
    spark.sql(f"CREATE TABLE dims (k BIGINT, grp STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO dims SELECT id, CAST(id % 3 AS STRING) FROM range(0, 10000, 1, 1)")


@pytest.mark.parametrize(
    "query",
    [
        TOTALS,
        # the filters move onto the joined inputs (ivm.passes.pushdown): facts' snapshot is read
        # filtered, then restricted to the change's keys, and the ranges still prune its files
        TOTALS.replace(" GROUP BY", " WHERE f.v <> 3 AND d.grp <> '2' GROUP BY"),
    ],
)
def test_a_join_refresh_reads_the_files_around_the_changed_keys(spark, fresh_db, query):
    _facts_and_dims(spark)
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {query}")

    spark.sql("UPDATE dims SET grp = 'moved' WHERE k IN (4500, 4507)")
    cost, result = Meter(spark).cost(lambda: ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals"))

    assert result.mode == "incremental"
    # facts' after-snapshot meets the change at keys 4500 and 4507: one file of ten
    assert cost.rows_read < 3_000, cost
    assert_equals_query(spark, "totals", query)


def test_a_dedup_refresh_reads_the_files_of_the_changed_keys(spark, fresh_db):
    """The window's input is a projection of the table: the key reaches the scan through it."""
    query = (
        "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
        "ORDER BY v DESC) AS rn FROM facts) WHERE rn = 1 AND v = 6"
    )
    _facts_and_dims(spark)
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW latest AS {query}")

    spark.sql("INSERT INTO facts VALUES (4500, 100), (4507, 100)")
    cost, result = Meter(spark).cost(lambda: ivm.sql(spark, "REFRESH MATERIALIZED VIEW latest"))

    assert result.mode == "incremental"
    # the snapshots before and after at keys 4500 and 4507 (one file of ten and the new
    # one, twice), and the 1,429 rows of the store the MERGE reads
    assert cost.rows_read < 6_000, cost
    assert_equals_query(spark, "latest", query)


def test_a_null_key_in_the_change_still_meets_its_rows(spark, fresh_db):
    query = (
        "SELECT f.k, COUNT(d.k) AS matched FROM facts f LEFT JOIN dims d "
        "ON f.k <=> d.k GROUP BY f.k"
    )
    spark.sql(f"CREATE TABLE facts (k BIGINT) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE dims (k BIGINT) USING DELTA {CDF}")
    spark.sql("INSERT INTO facts VALUES (1), (NULL), (2)")
    spark.sql("INSERT INTO dims VALUES (2)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW matches AS {query}")
    spark.sql("INSERT INTO dims VALUES (NULL), (1)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW matches").mode == "incremental"
    rows = {r.k: r.matched for r in spark.table("matches").collect()}
    assert rows == {r.k: r.matched for r in spark.sql(query).collect()}


KEY_VALUES = {
    "BIGINT": ["7", "-3", "NULL", "10000000000", "7", "0"],
    "DECIMAL(12, 2)": ["1.50", "-0.25", "1.5", "NULL", "100.00"],
    "DATE": ["DATE'2024-03-01'", "DATE'1999-12-31'", "NULL", "DATE'2024-02-29'"],
    # code points across UTF-8's one- to four-byte forms, cases, and a prefix of another
    "STRING": ["'b'", "'B'", "'ab'", "'a'", "'é'", "'z'", "'日本'", "'😀'", "NULL", "'a'"],
}


@pytest.mark.parametrize("key_type", list(KEY_VALUES))
def test_keys_of_a_local_change_are_read_without_a_job_in_spark_s_order(spark, key_type):
    """Keys that Spark's optimizer finds in a local relation (a kept change's projection) are
    read and sorted in Python: the same distinct keys, in the order Spark sorts them, without
    a Spark job; a string of another collation is left to Spark."""
    rows = ", ".join(f"(CAST({v} AS {key_type}))" for v in KEY_VALUES[key_type])
    keys = spark.sql(f"SELECT * FROM VALUES {rows} AS change({KEY})")
    cost, found = Meter(spark).cost(lambda: _local_keys([keys]))
    spark_order = [r[KEY] for r in keys.distinct().orderBy(KEY).collect()]
    assert found == [spark_order] and cost.jobs == 0
    if key_type == "STRING":
        collated = keys.selectExpr(f"{KEY} COLLATE UTF8_LCASE AS {KEY}")
        assert _local_keys([collated]) is None
