"""Snapshot reads pruned to the change's keys, so that Delta skips the files they cannot be in.

A delta term reads a snapshot restricted to the keys of a change, ``R ⋉ K`` (see
:mod:`ivm.rules.join` and :mod:`ivm.rules.keyed`). Spark runs the restriction as a semi-join
after scanning all of ``R``. Before a refresh runs, ``K`` is small and can be read: this pass
reads the keys of one of its columns and filters ``R`` by ranges covering them,

    R ⋉ K  =  (σ_{k ∈ [a1, b1] ∪ … ∪ [an, bn]} R) ⋉ K        (every key of K in some range)

a predicate on literals, which Delta's data skipping checks against each file's min/max
statistics. The semi-join still decides which rows meet, so the ranges may cover more than
the keys: they only decide what is read. Tables written in key order (most fact tables, the
TPC-H ones) then read the files around the change instead of all of them.
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from decimal import Decimal

from sqlglot import exp

from ivm import codegen
from ivm.ir import Filter, Restrict, Scan, children, columns, with_children
from ivm.zset import Read

MAX_KEYS = 100_000
"""More distinct keys than this: the change is large, and the snapshot is read whole."""

MAX_RANGES = 32
"""The most ranges a predicate lists; neighbouring keys are merged across the smallest gaps."""


def prune(spark, delta):
    """``delta`` with each restricted snapshot scan also filtered by its keys' ranges."""
    keys_read: dict = {}
    rewritten: dict = {}    # equal subtrees stay equal, so the SQL still shares them

    def rewrite(node):
        if node not in rewritten:
            new = with_children(node, tuple(rewrite(c) for c in children(node))) \
                if children(node) else node
            if isinstance(new, Restrict):
                predicate = _key_ranges(spark, new, keys_read)
                if predicate is not None:
                    new = replace(new, input=Filter(new.input, predicate))
            rewritten[node] = new
        return rewritten[node]
    return rewrite(delta)


def _snapshot_scan(node) -> Scan | None:
    """The snapshot scan ``node`` reads, through filters; None for anything else."""
    while isinstance(node, Filter):
        node = node.input
    return node if isinstance(node, Scan) and node.read in (Read.BEFORE, Read.AFTER) else None


def _key_ranges(spark, node: Restrict, keys_read: dict) -> exp.Expr | None:
    """A predicate on the scanned column that every key of ``node.affected`` satisfies, or
    None where there is none to give (no plain column key, too many keys, a type not
    pruned on). A NULL key is a key (the restriction matches null-safely): IS NULL admits it."""
    scan = _snapshot_scan(node.input)
    if scan is None:
        return None
    position = next((i for i, key in enumerate(node.keys) if isinstance(key, exp.Column)
                     and key.table == scan.alias and key.name in scan.columns), None)
    if position is None:
        return None
    name = columns(node.affected)[position]
    if (node.affected, name) not in keys_read:
        keys_read[node.affected, name] = _distinct_keys(spark, node.affected, name)
    if keys_read[node.affected, name] is None:
        return None
    values, has_null = keys_read[node.affected, name]
    column = exp.column(node.keys[position].name, scan.alias)
    admitted: list[exp.Expr] = [column.copy().eq(low) if low == high else
                exp.Between(this=column.copy(), low=low, high=high)
                for low, high in _ranges(values)]
    if has_null:
        admitted.append(exp.Is(this=column.copy(), expression=exp.null()))
    return exp.or_(*admitted) if admitted else exp.false()


def _distinct_keys(spark, affected, name: str) -> tuple[list, bool] | None:
    """The sorted non-NULL values of column ``name`` of ``affected`` and whether it holds a
    NULL; None if there are more than :data:`MAX_KEYS` or a value has no literal form."""
    rows = (spark.sql(codegen.to_sql(affected, pretty=False)).select(name).distinct()
            .orderBy(name).limit(MAX_KEYS + 2).collect())
    values = [row[0] for row in rows if row[0] is not None]
    if len(values) > MAX_KEYS or not all(_literal(v) is not None for v in values):
        return None
    return values, len(values) < len(rows)


def _ranges(values: list) -> list[tuple[exp.Expr, exp.Expr]]:
    """At most :data:`MAX_RANGES` ``(low, high)`` literal pairs covering the sorted
    ``values``: split at the widest gaps where values can be subtracted, else evenly."""
    cuts: list[int]
    if not values:
        return []
    if len(values) <= MAX_RANGES:
        cuts = list(range(1, len(values)))
    else:
        try:
            gaps = [(values[i] - values[i - 1], i) for i in range(1, len(values))]
            cuts = sorted(i for _, i in sorted(gaps, reverse=True)[:MAX_RANGES - 1])
        except TypeError:                    # strings: no distance between values
            step = len(values) / MAX_RANGES
            cuts = [round(step * k) for k in range(1, MAX_RANGES)]
    bounds = [0, *cuts, len(values)]

    def literal(value) -> exp.Expr:
        form = _literal(value)
        assert form is not None  # _distinct_keys keeps only values that have a literal form
        return form
    return [(literal(values[a]), literal(values[b - 1])) for a, b in zip(bounds, bounds[1:])]


def _literal(value) -> exp.Expr | None:
    """``value`` as a Spark SQL literal of its type; None for types not pruned on."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, Decimal)):
        return exp.Literal.number(str(value))
    if isinstance(value, str):
        return exp.Literal.string(value)
    # A timestamp comes back in the Python process's time zone, its literal is read in the
    # session's: they may differ, so timestamps are not pruned on. A date has no zone.
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat()),
                        to=exp.DataType.build("DATE"))
    return None
