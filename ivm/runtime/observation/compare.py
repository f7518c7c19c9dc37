"""Two relations compared as multisets: which rows each holds more often than the other.

Relations ``A`` and ``B`` are equal when they have the same columns (names, in order, and
Spark types: :func:`column_difference`) and, as multisets, the same rows: every row occurs
in both equally often,
duplicates and NULLs included. One shuffle answers that for any number of pairs: group
``A (+1) UNION ALL B (−1)`` by every column and keep the groups whose two counts differ;
NULLs group together, as do NaNs, and -0.0 with 0.0 (as ``EXCEPT ALL`` matches them)::

    difference(A, B) = { (row, #A(row), #B(row)) : #A(row) ≠ #B(row) }

**Floating point.** Addition of doubles is not associative: a SUM or AVG of doubles depends
on the order Spark visits the rows in, so a view that recomputed a group may differ from its
query in the last bits. Where the exact comparison fails, the differing rows (a few, where the
view is right) are matched once more, the float columns within a relative ``tolerance``: a
row of ``A`` takes a row of ``B`` equal to it in every other column and close in these
(NaN only equals NaN, ±Infinity only itself). An error in maintenance (1e16 + 1.0 − 1e16
giving 0.0 in place of 1.0) is a relative difference of 1, far above any tolerance.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType

from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import session_settings
from ivm.zset import match_within

SIDE = "_ivm_side"
LEFT, RIGHT = "_ivm_left", "_ivm_right"

MATCHED_AT_MOST = 10_000
"""Differing rows beyond this many are not matched within the float tolerance: so many
differences are no rounding."""

COMPARE_SETTINGS = {
    # Spark 4.0's constraint propagation fails (a key lookup in UnionBase.rewriteConstraints)
    # on a union over a correlated scalar subquery in SELECT; it only infers filters.
    "spark.sql.constraintPropagation.enabled": "false",
}
"""The settings of the comparing queries."""


@dataclass(frozen=True)
class Difference:
    """The rows two relations hold unequally often: ``rows`` holds the first few as
    ``(row, count on the left, count on the right)``; ``total`` counts them all."""

    columns: tuple[str, ...]
    rows: tuple[tuple[tuple, int, int], ...]
    total: int

    def table(self, left: str, right: str) -> str:
        """The differing rows as a text table, with their counts under ``left`` and
        ``right``, and how many more there are."""
        header = ("(" + ", ".join(self.columns) + ")", left, right)
        lines = [(_render(row), str(a), str(b)) for row, a, b in self.rows]
        widths = [max(len(line[i]) for line in [header, *lines]) for i in range(3)]
        text = "\n".join(
            f"{r:<{widths[0]}}  {a:>{widths[1]}}  {b:>{widths[2]}}" for r, a, b in [header, *lines]
        )
        more = self.total - len(self.rows)
        return text + (f"\n… and {more} more differing row{'s' * (more > 1)}" if more else "")


def columns_of(frame: DataFrame) -> list[tuple[str, str]]:
    """The columns of ``frame``, in order: ``(name, Spark type)``, the type as Spark writes it
    in SQL. Whether a column may hold NULL is not part of it: a Delta table created from a
    query, as a store is, has every column nullable, where the query may say ``COUNT(*)``
    never is."""
    return [(f.name, f.dataType.simpleString()) for f in frame.schema.fields]


def column_difference(
    left: Sequence[tuple[str, str]],
    right: Sequence[tuple[str, str]],
    sides: tuple[str, str] = ("the view", "its query"),
) -> str | None:
    """How the columns ``left`` and ``right`` (:func:`columns_of`) differ: in number, or
    column by column in name (whatever the case, as Spark resolves names) or type; None if
    they do not. ``sides`` names the two in the answer.

    >>> column_difference([("k", "int"), ("Total", "decimal(20,2)")],
    ...                   [("K", "int"), ("total", "decimal(22,2)")])
    'column 2 (Total) is decimal(20,2) in the view, decimal(22,2) in its query'
    >>> column_difference([("k", "int"), ("n", "bigint")], [("k", "int"), ("m", "bigint")])
    'column 2 is n in the view, m in its query'
    >>> column_difference([("k", "int")], [("k", "int"), ("n", "bigint")])
    'the view has 1 column (k int), its query 2 (k int, n bigint)'
    """
    if len(left) != len(right):

        def listed(columns):
            return ", ".join(f"{name} {type_}" for name, type_ in columns)

        return (
            f"{sides[0]} has {len(left)} column{'s' * (len(left) != 1)} ({listed(left)}), "
            f"{sides[1]} {len(right)} ({listed(right)})"
        )
    found = []
    for i, ((name, type_), (other, other_type)) in enumerate(zip(left, right, strict=True), 1):
        if name.lower() != other.lower():
            found.append(f"column {i} is {name} in {sides[0]}, {other} in {sides[1]}")
        elif type_ != other_type:
            found.append(
                f"column {i} ({name}) is {type_} in {sides[0]}, {other_type} in {sides[1]}"
            )
    return "; ".join(found) or None


def _render(row: tuple) -> str:
    """A row as SQL-like text: NULL for None, strings quoted.

    >>> _render((1, None, "it's", 2.5))
    "(1, NULL, 'it\\\\'s', 2.5)"
    """

    def value(v) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, str):
            return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return str(v)

    return "(" + ", ".join(value(v) for v in row) + ")"


def counted(left: DataFrame, right: DataFrame) -> DataFrame:
    """Every row whose count differs between ``left`` and ``right`` (compared by position,
    named as in ``left``), with both counts as ``_ivm_left`` and ``_ivm_right``."""
    columns = [f"`{c}`" for c in left.columns]
    both = left.withColumn(SIDE, F.lit(1)).unionAll(
        right.toDF(*left.columns).withColumn(SIDE, F.lit(-1))
    )
    return (
        both.groupBy(*columns)
        .agg(
            F.count(F.when(F.col(SIDE) == 1, 1)).alias(LEFT),
            F.count(F.when(F.col(SIDE) == -1, 1)).alias(RIGHT),
        )
        .where(F.col(LEFT) != F.col(RIGHT))
    )


def unequal(
    spark: Session,
    pairs: Mapping[str, tuple[DataFrame, DataFrame]],
    settings: Mapping[str, str] | None = None,
) -> set[str]:
    """The names of the ``pairs`` whose two relations differ as multisets, asked in one
    Spark job for all of them; under ``settings`` besides :data:`COMPARE_SETTINGS`."""
    if not pairs:
        return set()
    probes = [
        counted(left, right).select(F.lit(name).alias("name")).limit(1)
        for name, (left, right) in pairs.items()
    ]
    with session_settings(spark, COMPARE_SETTINGS | dict(settings or {})):
        return {row.name for row in reduce(DataFrame.unionAll, probes).collect()}


def difference(
    spark: Session,
    left: DataFrame,
    right: DataFrame,
    *,
    shown: int = 10,
    tolerance: float = 0.0,
    tolerant: Collection[str] | None = None,
    settings: Mapping[str, str] | None = None,
) -> Difference | None:
    """The rows ``left`` and ``right`` hold unequally often, the first ``shown`` of them
    collected; None when they are equal, exactly or with the columns ``tolerant`` (None:
    every float column) within the relative ``tolerance`` (see the module's docstring)."""
    with session_settings(spark, COMPARE_SETTINGS | dict(settings or {})):
        differing = counted(left, right)
        total = differing.count()
        if total == 0:
            return None
        floats = [
            i
            for i, field in enumerate(left.schema.fields)
            if (
                field.name in tolerant
                if tolerant is not None
                else isinstance(field.dataType, (FloatType, DoubleType))
            )
        ]
        if tolerance > 0 and floats and total <= MATCHED_AT_MOST:
            rows = [(tuple(r)[:-2], r[LEFT], r[RIGHT]) for r in differing.collect()]
            if match_within(rows, set(floats), tolerance):
                return None
        else:
            rows = [(tuple(r)[:-2], r[LEFT], r[RIGHT]) for r in differing.limit(shown).collect()]
    rows.sort(key=repr)
    return Difference(tuple(left.columns), tuple(rows[:shown]), total)
