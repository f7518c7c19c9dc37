"""Run a scenario against materialized views and check each against its oracle.

The oracle of a view is Spark running the view's original SQL on the current sources. A view
is correct when it equals its oracle as a multiset: ``view EXCEPT ALL oracle`` and
``oracle EXCEPT ALL view`` are both empty, duplicates and NULLs included.

Checking every view that way costs two shuffles per view, so :func:`mismatches` first asks one
equivalent question of all the views in one Spark job: grouping ``view (+1) UNION ALL oracle
(-1)`` by every column (NULLs group together, as EXCEPT ALL matches them; so do NaNs, and
-0.0 with 0.0), is any row's weight not 0? Only for a view where one is, both ``exceptAll``
differences and both sides are collected, for the failure message.

Two refinements make "equal" what a view promises:

* **Settings of the CREATE.** A view keeps the session settings that give its definition a
  meaning (:data:`PINNED`: the time zone of ``CAST(ts AS DATE)`` and ``hour(ts)``, ANSI
  mode) from its CREATE, whatever the session that refreshes it uses. So the oracle runs under
  the settings the session had when the views were created, even after a scenario changed them.
* **Float aggregates.** Floating-point addition is not associative, so a SUM or AVG of doubles
  (and the sign of a MIN or MAX of -0.0 and 0.0) depends on the order Spark visits the rows in;
  a view recomputing a group may add them in another order than the oracle. Only the columns
  a view declares approximate (:class:`Approximate`) are compared with a relative tolerance,
  :data:`FLOAT_TOLERANCE`, and only after the exact comparison failed; NaN equals NaN, and
  ±Infinity equal themselves. Every other column, and every row count, must match exactly.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce

from hypothesis import note
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import ivm
from ivm.runtime import execution
from strategies import Scenario, create_table, insert


@dataclass(frozen=True)
class Rewritten:
    """A view whose definition Spark cannot run as written (``QUALIFY``), with an equivalent
    query that Spark runs as its oracle."""

    definition: str
    oracle: str


@dataclass(frozen=True)
class Approximate:
    """A view whose ``columns`` are float aggregates: compared within :data:`FLOAT_TOLERANCE`
    (see the module's docstring)."""

    definition: str
    columns: tuple[str, ...]


FLOAT_TOLERANCE = 1e-12
"""Relative tolerance of approximate columns. Summing n doubles in two orders differs by at
most about n·2⁻⁵³ times the sum of their magnitudes; the drawn doubles never cancel two large
terms (``strategies.FLOATS``), so that is about n·2⁻⁵³ of the sum itself: 1e-12 leaves room
for thousands of rows and none for a retraction gone wrong (1e16 + 1.0 − 1e16 giving 0.0)."""

PINNED = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")
"""Session settings a view keeps from its CREATE: its oracle runs under them."""


def definition(view) -> str:
    return view if isinstance(view, str) else view.definition


def oracle(view) -> str:
    return view.oracle if isinstance(view, Rewritten) else definition(view)


View = str | Rewritten | Approximate
"""A view definition: SQL, or SQL with an oracle of its own or with approximate columns."""


def approximate(view) -> tuple[str, ...]:
    return view.columns if isinstance(view, Approximate) else ()


def respell(name: str) -> str:
    """The view name ``name`` spelt in the other case, as a user may (Spark resolves names
    case-insensitively): what the tests refresh a view by.

    >>> respell("ByKey"), respell("`order`")
    ('bYkEY', '`ORDER`')
    """
    return name.swapcase()


def pinned_settings(spark) -> dict[str, str]:
    """The current values of the :data:`PINNED` settings."""
    return {key: spark.conf.get(key) for key in PINNED}


@contextmanager
def session_settings(spark, settings: Mapping[str, str]):
    """Run the block under ``settings`` (:func:`ivm.runtime.execution.session_settings`);
    the :data:`PINNED` settings, which the block may change too, are put back afterwards."""
    pinned = pinned_settings(spark)
    try:
        with execution.session_settings(spark, dict(settings)):
            yield
    finally:
        for key, value in pinned.items():
            spark.conf.set(key, value)


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


def _same(a, b, tolerant: bool) -> bool:
    """Equal as EXCEPT ALL matches values (NULL with NULL, NaN with NaN), or within
    :data:`FLOAT_TOLERANCE` when ``tolerant``."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE) if tolerant else a == b
    return a == b


def _unmatched(view_rows: list, oracle_rows: list, tolerant: set[int]) -> tuple[list, list]:
    """Rows of the view and of the oracle left over when each view row takes an oracle row
    equal to it (:func:`_same`, tolerant in the columns numbered ``tolerant``)."""
    left = list(oracle_rows)
    extra = []
    for row in view_rows:
        match = next((i for i, other in enumerate(left) if all(
            _same(a, b, n in tolerant) for n, (a, b) in enumerate(zip(row, other)))), None)
        if match is None:
            extra.append(row)
        else:
            left.pop(match)
    return extra, left


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


CHECK_SETTINGS = {
    # Spark 4.0's constraint propagation fails (a key lookup in UnionBase.rewriteConstraints)
    # on a union over a correlated scalar subquery in SELECT; it only infers filters.
    "spark.sql.constraintPropagation.enabled": "false",
}
"""The settings of the check's one query over every view and its oracle."""


def _signed(frame: DataFrame, weight: int) -> DataFrame:
    return frame.withColumn("_check_weight", F.lit(weight))


def mismatches(spark, views: Mapping[str, View], created: Mapping[str, str] | None = None,
               few_rows: bool = True) -> dict[str, tuple[list, list]]:
    """``{view: (rows only in the view, rows only in the oracle)}`` for every wrong view; the
    oracles run under the settings ``created`` (:func:`pinned_settings` at CREATE);
    ``few_rows``: the sources hold a few rows, so the check runs as ivm's statements over
    little data do (:data:`~ivm.runtime.execution.LITTLE_DATA`): compiling Java code for
    every oracle and running each shuffle as a Spark job of its own took a third of its
    time."""
    with session_settings(spark, created or {}):
        little = execution.LITTLE_DATA if few_rows else {}
        return _mismatches(spark, views, CHECK_SETTINGS | little)


def _mismatches(spark, views, settings) -> dict[str, tuple[list, list]]:
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
    with session_settings(spark, settings):
        wrong = reduce(DataFrame.unionAll, unbalanced).collect()
    result = {}
    for row in wrong:
        got, want = spark.table(row.view), spark.sql(oracle(views[row.view]))
        result[row.view] = (got.exceptAll(want).collect(), want.exceptAll(got).collect())
        assert result[row.view] != ([], []), f"{row.view}: the two checks disagree"
        columns = approximate(views[row.view])
        if columns:
            tolerant = {got.columns.index(c) for c in columns}
            result[row.view] = _unmatched(got.collect(), want.collect(), tolerant)
            if result[row.view] == ([], []):
                del result[row.view]
    return result


def check_views(spark, views: Mapping[str, View], when: str,
                created: Mapping[str, str] | None = None, few_rows: bool = True) -> None:
    """Assert every view equals its oracle (run under the settings ``created``); on failure
    show both sides of each wrong view. ``few_rows``: as for :func:`mismatches`."""
    wrong = mismatches(spark, views, created, few_rows)
    if wrong:
        with session_settings(spark, created or {}):
            message = "\n".join(_describe(spark, name, views[name], *wrong[name])
                                for name in wrong)
        raise AssertionError(f"{len(wrong)} view(s) differ from recomputation {when}:\n"
                             f"{message}")


def create_views(spark, views: Mapping[str, View]) -> None:
    for name, view in views.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {definition(view)}")


def refresh_views(spark, views: Mapping[str, View], full: bool = False) -> list:
    """Refresh each view, by its name in the other case (:func:`respell`)."""
    suffix = " FULL" if full else ""
    return [ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {respell(name)}{suffix}")
            for name in views]


def run_scenario(spark, scenario: Scenario, views: Mapping[str, View], log=note) -> None:
    """Create the sources and views, then after each batch refresh and check every view;
    finally refresh every view FULL and check again. A batch may change session settings
    (``SET TIME ZONE``): the refreshes after it run under them, the oracles under those of the
    CREATE, and the session gets its own back at the end. The views are created under the
    scenario's ``settings``. ``log`` reports each batch's refreshes (Hypothesis's ``note``
    inside a property test)."""
    created = pinned_settings(spark) | scenario.settings
    with example_database(spark), session_settings(spark, created):
        create_sources(spark, scenario.tables)
        create_views(spark, views)
        check_views(spark, views, "after CREATE", created)
        for i, batch in enumerate(scenario.batches):
            for statement in batch:
                spark.sql(statement)
            results = refresh_views(spark, views)
            log(f"batch {i}: " + "; ".join(str(r) for r in results))
            check_views(spark, views, f"after the refresh of batch {i} {batch}", created)
        refresh_views(spark, views, full=True)
        check_views(spark, views, "after REFRESH ... FULL", created)
