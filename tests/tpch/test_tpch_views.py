"""The 22 TPC-H queries as materialized views, maintained under TPC-H style change batches.

Every query the compiler accepts becomes a view over TPC-H data (scale factor
:data:`tpch_batches.SCALE`). After CREATE, after each batch of changes (new orders; deleted
orders with updated line items and orders) and its incremental REFRESH, and after a final
REFRESH ... FULL, every view must equal Spark running the query's own text, as a multiset.

The views share one database and are created once for the module; each stage checks all of
them together, so the whole file costs few Spark jobs. A stage can also run alone.
"""

from functools import reduce

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import ivm
from benchmarks import tpch_data
from benchmarks.tpch_queries import QUERIES
from tests.property.harness import check_views, create_views, example_database, refresh_views
from tests.tpch import tpch_batches

pytestmark = [pytest.mark.tpch, pytest.mark.long]

#: Queries the compiler refuses, as ``{"qN": "<construct>: <what in the query>"}``; the
#: construct is the one the error names (``UnsupportedQuery.construct``). Every TPC-H query
#: compiles now; an entry here documents a refusal that support for a construct removes.
REFUSED: dict[str, str] = {}

#: Queries without a row at this scale factor (or only a row of NULLs, for a global
#: aggregate); every other query must return rows on the generated data.
EMPTY_AT_SCALE = {
    # At scale factor 0.01 no part is Brand#23 in a MED BOX: the one row is NULL.
    "q17",
}


@pytest.fixture(scope="module")
def tpch(spark):
    """A fresh database holding the TPC-H tables, current for the module."""
    parquet = tpch_data.generate(tpch_batches.SCALE)
    with example_database(spark):
        tpch_data.load(spark, parquet)
        yield


@pytest.fixture(scope="module")
def refusals(spark, tpch):
    """``{query: UnsupportedQuery}`` for every query the compiler refuses."""
    refused = {}
    for name, sql in QUERIES.items():
        try:
            ivm.compile(sql, spark=spark)
        except ivm.UnsupportedQuery as error:
            refused[name] = error
    return refused


@pytest.fixture(scope="module")
def views(spark, refusals):
    """Every query the compiler accepts, created as a materialized view of its name."""
    maintained = {name: sql for name, sql in QUERIES.items() if name not in refusals}
    create_views(spark, maintained)
    return maintained


def test_refused_queries(refusals):
    """Exactly the queries in REFUSED are refused, each for the construct its reason names."""
    assert set(refusals) == set(REFUSED), "\n\n".join(
        [
            f"refused, not in REFUSED: {sorted(set(refusals) - set(REFUSED))}",
            f"in REFUSED, but compiled: {sorted(set(REFUSED) - set(refusals))}",
        ]
        + [f"{name}: {refusals[name]}" for name in sorted(set(refusals) - set(REFUSED))]
    )
    wrong = {
        name: error.construct
        for name, error in refusals.items()
        if REFUSED[name].split(":")[0] != error.construct
    }
    assert not wrong, f"refused for another construct than REFUSED says: {wrong}"


def _without_rows(spark, frames: dict[str, DataFrame]) -> set[str]:
    """The names of the frames without a row that has a value other than NULL; one job."""
    found = [
        frame.where(" OR ".join(f"`{c}` IS NOT NULL" for c in frame.columns))
        .select(F.lit(name).alias("name"))
        .limit(1)
        for name, frame in frames.items()
    ]
    return set(frames) - {row.name for row in reduce(DataFrame.unionAll, found).collect()}


def test_views_after_create(spark, views):
    """Every view has rows (as has every refused query), and equals its query."""
    frames = {
        name: spark.table(name) if name in views else spark.sql(sql)
        for name, sql in QUERIES.items()
    }
    empty = _without_rows(spark, frames)
    assert empty == EMPTY_AT_SCALE, (
        f"without rows after CREATE: {sorted(empty)}; expected only {sorted(EMPTY_AT_SCALE)}"
    )
    check_views(spark, views, "after CREATE", few_rows=False)


@pytest.mark.parametrize("batch", [name for name, _ in tpch_batches.BATCHES])
def test_views_after_batch(spark, views, batch):
    """Apply one batch of changes to the sources, refresh every view incrementally, check."""
    statements = dict(tpch_batches.BATCHES)[batch](spark)
    for statement in statements:
        spark.sql(statement)
    results = refresh_views(spark, views)
    full = [str(r) for r in results if r.mode not in ("incremental", "noop")]
    assert not full, f"refreshes that were not incremental: {full}"
    check_views(
        spark,
        views,
        f"after the refresh of batch {batch!r}:\n"
        + ";\n".join(statements)
        + "\n"
        + "\n".join(str(r) for r in results),
        few_rows=False,
    )


def test_verify_at_the_versions_each_view_reflects(spark, views):
    """``ivm.verify`` finds every view equal to its query run on the versions it reflects,
    after its sources moved on without a refresh: its rewrite of each query's table
    references to snapshots holds for all 22 queries' SQL (CTEs, subqueries, self-joins)."""
    for statement in tpch_batches.BATCHES[0][1](spark):
        spark.sql(statement)
    verdicts = [ivm.verify(spark, name) for name in views]
    assert all(v.equal for v in verdicts), "\n".join(str(v) for v in verdicts if not v.equal)


def test_views_after_full_refresh(spark, views):
    """REFRESH ... FULL recomputes every view; each still equals its query."""
    refresh_views(spark, views, full=True)
    check_views(spark, views, "after REFRESH ... FULL", few_rows=False)
