"""Run a scenario against materialized views and check each against its oracle.

The oracle of a view is Spark running the view's original SQL on the current sources. A view
is correct when it equals its oracle as a multiset: ``view EXCEPT ALL oracle`` and
``oracle EXCEPT ALL view`` are both empty, duplicates and NULLs included.

Checking every view that way costs two shuffles per view, so :func:`mismatches` first asks one
equivalent question of all the views in one Spark job: grouping ``view (+1) UNION ALL oracle
(-1)`` by every column (NULLs group together, as EXCEPT ALL matches them), is any row's weight
not 0? Only for a view where one is, both ``exceptAll`` differences and both sides are
collected, for the failure message.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from hypothesis import note
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import ivm
from strategies import Scenario, create_table, insert


@dataclass(frozen=True)
class Rewritten:
    """A view whose definition Spark cannot run as written (``QUALIFY``), with an equivalent
    query that Spark runs as its oracle."""

    definition: str
    oracle: str


def definition(view) -> str:
    return view.definition if isinstance(view, Rewritten) else view


def oracle(view) -> str:
    return view.oracle if isinstance(view, Rewritten) else view


@contextmanager
def example_database(spark):
    """A new database, current for the block, dropped with everything in it afterwards.

    Hypothesis runs many examples in one test call, so each example makes its own.
    """
    name = f"prop_{uuid.uuid4().hex[:10]}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    try:
        yield name
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


def create_sources(spark, tables: Mapping[str, list[tuple]]) -> None:
    for table, rows in tables.items():
        spark.sql(create_table(table))
        if rows:
            spark.sql(insert(table, rows))


def _sorted(rows) -> list:
    return sorted((tuple(r) for r in rows), key=repr)


def _describe(spark, name: str, view, extra: list, missing: list) -> str:
    view_rows = _sorted(spark.table(name).collect())
    oracle_rows = _sorted(spark.sql(oracle(view)).collect())
    delta_sql = ivm.compile(definition(view), spark=spark).delta_sql.replace("\n", "\n    ")
    return (f"view {name}: {definition(view)}\n"
            f"  in the view, not the oracle: {_sorted(extra)}\n"
            f"  in the oracle, not the view: {_sorted(missing)}\n"
            f"  view   ({len(view_rows)} rows): {view_rows}\n"
            f"  oracle ({len(oracle_rows)} rows): {oracle_rows}\n"
            f"  delta query:\n    {delta_sql}")


def _signed(frame: DataFrame, weight: int) -> DataFrame:
    return frame.withColumn("_check_weight", F.lit(weight))


def mismatches(spark, views: Mapping[str, "str | Rewritten"]) -> dict[str, tuple[list, list]]:
    """``{view: (rows only in the view, rows only in the oracle)}`` for every wrong view."""
    unbalanced = []
    for name, view in views.items():
        got, want = spark.table(name), spark.sql(oracle(view))
        assert got.columns == want.columns, (
            f"view {name} has columns {got.columns}, its query {want.columns}")
        difference = (_signed(got, 1).unionAll(_signed(want, -1))
                      .groupBy(*(F.col(f"`{c}`") for c in got.columns))
                      .agg(F.sum("_check_weight").alias("_check_weight"))
                      .where("_check_weight <> 0"))
        unbalanced.append(difference.select(F.lit(name).alias("view")).limit(1))
    # Spark 4.0's constraint propagation fails (a key lookup in UnionBase.rewriteConstraints)
    # on a union over a correlated scalar subquery in SELECT; it only infers filters.
    spark.conf.set("spark.sql.constraintPropagation.enabled", "false")
    try:
        wrong = reduce(DataFrame.unionAll, unbalanced).collect()
    finally:
        spark.conf.unset("spark.sql.constraintPropagation.enabled")
    result = {}
    for row in wrong:
        got, want = spark.table(row.view), spark.sql(oracle(views[row.view]))
        result[row.view] = (got.exceptAll(want).collect(), want.exceptAll(got).collect())
        assert result[row.view] != ([], []), f"{row.view}: the two checks disagree"
    return result


def check_views(spark, views: Mapping[str, "str | Rewritten"], when: str) -> None:
    """Assert every view equals its oracle; on failure show both sides of each wrong view."""
    wrong = mismatches(spark, views)
    assert not wrong, f"{len(wrong)} view(s) differ from recomputation {when}:\n" + "\n".join(
        _describe(spark, name, views[name], *wrong[name]) for name in wrong)


def create_views(spark, views: Mapping[str, "str | Rewritten"]) -> None:
    for name, view in views.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {definition(view)}")


def refresh_views(spark, views: Mapping[str, "str | Rewritten"], full: bool = False) -> list:
    suffix = " FULL" if full else ""
    return [ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}{suffix}") for name in views]


def run_scenario(spark, scenario: Scenario, views: Mapping[str, "str | Rewritten"]) -> None:
    """Create the sources and views, then after each batch refresh and check every view;
    finally refresh every view FULL and check again."""
    with example_database(spark):
        create_sources(spark, scenario.tables)
        create_views(spark, views)
        check_views(spark, views, "after CREATE")
        for i, batch in enumerate(scenario.batches):
            for statement in batch:
                spark.sql(statement)
            results = refresh_views(spark, views)
            note(f"batch {i}: " + "; ".join(str(r) for r in results))
            check_views(spark, views, f"after the refresh of batch {i} {batch}")
        refresh_views(spark, views, full=True)
        check_views(spark, views, "after REFRESH ... FULL")
