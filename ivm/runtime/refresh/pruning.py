"""Snapshot reads pruned to the change's keys, so that Delta skips the files they cannot be in.

A delta term reads a snapshot restricted to the keys of a change, ``R ⋉ K`` (see
:mod:`ivm.rules.join` and :mod:`ivm.rules.keyed`). Spark runs the restriction as a semi-join
after scanning all of ``R``. Before a refresh runs, ``K`` is small and can be read: this pass
reads the keys of one of its columns and filters ``R`` by ranges covering them,

    R ⋉ K  =  (σ_{k ∈ [a1, b1] ∪ … ∪ [an, bn]} R) ⋉ K        (every key of K in some range)

a predicate on literals, which Delta's data skipping checks against each file's min/max
statistics. The semi-join still decides which rows meet, so the ranges may cover more than
the keys: they only decide what is read. Tables written in key order (most fact tables, the
TPC-H ones) then read the files around the change instead of all of them. A key may reach
the scan through filters and projections that pass its column on (the input of a window,
such as a dedup's ``ROW_NUMBER() OVER (PARTITION BY k …)``, is a projection).

Where the restriction has one key and few values (at most :data:`MAX_LISTED`), they are
listed in the query as well, and decide alone, in place of the semi-join (which costs Spark
an aggregate, a broadcast and their jobs)::

    R ⋉ K  =  σ_{k ∈ [a1, b1] ∪ … ∪ [an, bn]  ∧  k ∈ {v1, …, vm}} R     (K = {v1, …, vm})

Where snapshots are read from their files (``spark.ivm.snapshotReads=files``, the default),
this pass skips the files itself: it binds each snapshot again over the files whose
statistics admit one of its keys (:func:`_read_from_files`), so that Delta plans no read;
it says, for each table, how its snapshots are read (:data:`SnapshotReads`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from functools import reduce
from itertools import pairwise
from typing import Any, cast

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, DateType, DecimalType, IntegralType, StringType
from sqlglot import exp

from ivm import codegen
from ivm.ir import Filter, Project, Relation, Restrict, Scan, children, columns, with_children
from ivm.names import quote
from ivm.runtime.log.file_lists import DataFile, Unlisted, admitting
from ivm.runtime.refresh.sources import SNAPSHOTS
from ivm.runtime.spark.connect import Session, is_connect
from ivm.runtime.spark.settings import (
    FILES,
    evaluation_settings,
    planned_read_bytes,
    session_settings,
)
from ivm.store import Store
from ivm.zset import Read, relation_name

MAX_KEYS = 100_000
"""More distinct keys than this (a NULL included): the change is large, and the snapshot is
read whole."""

MAX_LISTED = 1_000
"""At most this many distinct keys (a NULL among them) of a one-key restriction are listed in
the query, which filters by them in place of the semi-join."""

MAX_RANGES = 32
"""The most ranges a predicate lists; neighbouring keys are merged across the smallest gaps."""

SET, KEY, RANK = "_ivm_set", "_ivm_key", "_ivm_rank"

Key = int | Decimal | str | datetime.date
"""A non-NULL key value pruned on: one with a literal form (:func:`_literal`)."""

KeySet = tuple[Relation, str]
"""``(affected, column)``: a restriction's relation of keys and its column pruned on."""

KeyValues = tuple[list[Key], bool]
"""A key's sorted non-NULL values, and whether NULL is among them."""

SnapshotReads = dict[str, str]
"""How a refresh read each table's snapshots: ``files: 3 of 120`` (the files read of those
listed, over the versions it read), or ``delta: <why>`` where Delta planned the read
(:class:`~ivm.runtime.log.file_lists.Unlisted`)."""

Placed = tuple[str, list[Key], bool]
"""The keys of a filter this pass put on a scan: its column, sorted non-NULL values and
whether NULL is among them."""


def prune(
    spark: Session, delta: Relation, change_bytes: int | None
) -> tuple[Relation, SnapshotReads]:
    """``delta`` with each restricted snapshot scan also filtered by its keys' ranges, and a
    restriction to few values of one key filtered by them instead; the keys of every
    restriction are read in one Spark job (``change_bytes``: the size of the sources' change
    data it reads, None if unknown). And how each table's snapshots are read."""
    wanted: dict[KeySet, None] = {}
    _visit(
        delta,
        lambda node: wanted.update(
            {found: None} if (found := _pruned_key(node)) is not None else {}
        ),
    )
    keys = _distinct_keys(spark, list(wanted), change_bytes)
    rewritten: dict[Relation, Relation] = {}  # equal subtrees stay equal: the SQL shares them
    placed: dict[Filter, Placed] = {}  # the filters put on scans, their keys

    def rewrite(node: Relation) -> Relation:
        if node not in rewritten:
            new = (
                with_children(node, tuple(rewrite(c) for c in children(node)))
                if children(node)
                else node
            )
            found = _pruned_key(new)
            values = keys.get(found) if found is not None else None
            if isinstance(new, Restrict) and values is not None:
                new = _filtered(new, *values, placed)
            rewritten[node] = new
        return rewritten[node]

    pruned = rewrite(delta)
    return pruned, _read_from_files(spark, pruned, placed)


def _read_from_files(
    spark: Session, delta: Relation, placed: dict[Filter, Placed]
) -> SnapshotReads:
    """Bind each snapshot that may be read from its files (``spark.ivm.snapshotReads``
    ``files``: :data:`~ivm.runtime.refresh.sources.SNAPSHOTS`) again, as a Parquet read of
    its version's files; of those whose statistics admit its keys, where every scan of it
    in ``delta`` is filtered by keys (``placed``: the filters this pass put on scans, each
    with its column, sorted non-NULL values and whether NULL is among them). How each
    table's snapshots were read."""
    reads: SnapshotReads = {}
    files_read: dict[str, list[int]] = {}  # table → files read, files listed (all versions)
    if not SNAPSHOTS or isinstance(delta, Scan):
        return reads
    uses: dict[str, list[Placed | None]] = {}

    def note(node: Relation) -> None:
        for child in children(node):
            if isinstance(child, Scan) and child.read in (Read.BEFORE, Read.AFTER):
                key = placed.get(node) if isinstance(node, Filter) else None
                uses.setdefault(relation_name(child.table, child.read), []).append(key)

    _visit(delta, note)
    for name, keys in uses.items():
        if (snapshot := SNAPSHOTS.get((id(spark), name))) is None:
            continue

        def keep(
            files: tuple[DataFile, ...], keys: list[Placed | None] = keys
        ) -> tuple[DataFile, ...]:
            if any(key is None for key in keys):
                return files
            admitted = {
                f.path: f for key in keys if key is not None for f in admitting(files, *key)
            }
            return tuple(admitted.values())

        found = snapshot.from_files(spark, keep)
        if isinstance(found, Unlisted):
            reads[snapshot.table] = f"delta: {found.reason}"
            continue
        frame, chosen, listed = found
        frame.createOrReplaceTempView(quote(name))
        counted = files_read.setdefault(snapshot.table, [0, 0])
        counted[0], counted[1] = counted[0] + chosen, counted[1] + listed
    return reads | {table: f"{FILES}: {n} of {of}" for table, (n, of) in files_read.items()}


def stored_key_ranges(change: DataFrame, store: Store, alias: str) -> exp.Expr | None:
    """A predicate on the first key of ``store``'s rows (columns qualified by ``alias``)
    that the rows with a key of ``change`` (a store change, kept) satisfy: ranges covering
    its values, by which Delta skips the store's files a MERGE of the change cannot touch
    (a store written in key order holds a range of keys per file). None where the store has
    no key, or the change more than :data:`MAX_KEYS` distinct first keys or one without a
    literal form. One Spark job, over the kept change."""
    if not store.keys:
        return None
    key = store.keys[0]
    found = [
        row[0] for row in change.select(key).distinct().orderBy(key).limit(MAX_KEYS + 1).collect()
    ]
    values = _key_values(found)
    return None if values is None else _key_ranges(exp.column(key, alias), *values)


def _visit(
    node: Relation, action: Callable[[Relation], object], seen: set[Relation] | None = None
) -> None:
    """``action`` on every distinct node of the tree ``node``."""
    seen = set() if seen is None else seen
    if node not in seen:
        seen.add(node)
        action(node)
        for child in children(node):
            _visit(child, action, seen)


def _scan_keys(node: Restrict) -> tuple[Scan, tuple[exp.Expr | None, ...]] | None:
    """The snapshot scan the restriction ``node`` reads, through filters and projections,
    and its keys as expressions over that scan (None where a projection computes one);
    None where it reads no such scan."""
    inner = node.input
    keys: tuple[exp.Expr | None, ...] = tuple(node.keys)
    while isinstance(inner, (Filter, Project)):
        if isinstance(inner, Project):
            named = dict(inner.columns)
            keys = tuple(
                named.get(k.name) if isinstance(k, exp.Column) and not k.table else None
                for k in keys
            )
        inner = inner.input
    if not isinstance(inner, Scan) or inner.read not in (Read.BEFORE, Read.AFTER):
        return None
    return inner, keys


def _pruned(node: Relation) -> tuple[Scan, exp.Column, int] | None:
    """The snapshot scan the restriction ``node`` reads, its first key that is a plain column
    of that scan, and that key's position; None where there is none."""
    if not isinstance(node, Restrict) or (found := _scan_keys(node)) is None:
        return None
    scan, keys = found
    found_key = next(
        (
            (key, i)
            for i, key in enumerate(keys)
            if isinstance(key, exp.Column) and key.table == scan.alias and key.name in scan.columns
        ),
        None,
    )
    return None if found_key is None else (scan, *found_key)


def _pruned_key(node: Relation) -> KeySet | None:
    """``(affected, column)``: the relation of keys that :func:`_pruned` finds, and its
    column; equal restrictions share it."""
    if not isinstance(node, Restrict) or (found := _pruned(node)) is None:
        return None
    return node.affected, columns(node.affected)[found[2]]


def _filtered(
    node: Restrict, values: list[Key], has_null: bool, placed: dict[Filter, Placed] | None = None
) -> Relation:
    """``node`` with its scan filtered by the ranges of its key's sorted non-NULL ``values``
    (:func:`_key_ranges`), under the filters and projections it reads through; for one key
    of at most :data:`MAX_LISTED` values, also by the values themselves, in place of the
    restriction. The filter put on the scan is noted in ``placed``, with its keys."""
    found = _pruned(node)
    assert found is not None
    scan, column, _ = found
    predicate = _key_ranges(column, values, has_null)
    listed = len(node.keys) == 1 and len(values) + has_null <= MAX_LISTED
    if listed:
        predicate = exp.and_(predicate, _key_list(column, values, has_null))

    def filtered(inner: Relation) -> Relation:
        if inner == scan:
            if placed is not None:
                placed[Filter(inner, predicate)] = (column.name, values, has_null)
            return Filter(inner, predicate)
        # between the restriction and its scan: filters and projections (_scan_keys)
        return with_children(inner, (filtered(cast(Filter | Project, inner).input),))

    return filtered(node.input) if listed else replace(node, input=filtered(node.input))


def _key_list(column: exp.Column, values: Sequence[Key], has_null: bool) -> exp.Expr:
    """A predicate on the scanned ``column`` that exactly the keys satisfy (null-safely, as
    the restriction matches), given the keys' non-NULL ``values``."""
    admitted: list[exp.Expr] = []
    if values:
        admitted.append(exp.In(this=column.copy(), expressions=[_literal_of(v) for v in values]))
    if has_null:
        admitted.append(exp.Is(this=column.copy(), expression=exp.null()))
    return exp.or_(*admitted) if admitted else exp.false()


def _key_ranges(column: exp.Column, values: Sequence[Key], has_null: bool) -> exp.Expr:
    """A predicate on the scanned ``column`` that every key satisfies, given the keys'
    sorted non-NULL ``values``. A NULL key is a key (the restriction matches null-safely):
    IS NULL admits it."""
    admitted: list[exp.Expr] = [
        column.copy().eq(low)
        if low == high
        else exp.Between(this=column.copy(), low=low, high=high)
        for low, high in _ranges(values)
    ]
    if has_null:
        admitted.append(exp.Is(this=column.copy(), expression=exp.null()))
    return exp.or_(*admitted) if admitted else exp.false()


def _distinct_keys(
    spark: Session, wanted: list[KeySet], change_bytes: int | None
) -> dict[KeySet, KeyValues | None]:
    """For each ``(affected, column)`` of ``wanted``: the sorted non-NULL values of the
    column and whether it holds a NULL; None if it has more than :data:`MAX_KEYS` distinct
    values or a value without a literal form. Where the optimizer finds them all in local
    relations, no Spark job reads them (:func:`_local_keys`); else one job reads them all:
    the distinct keys of each set in a column of its own, sorted by Spark (so in the
    column's own order), at most ``MAX_KEYS + 1`` of a set sent back."""
    if not wanted:
        return {}
    keys = [
        spark.sql(codegen.to_sql(affected, pretty=False)).select(F.col(name).alias(KEY))  # pyright: ignore[reportUnknownMemberType]
        for affected, name in wanted
    ]
    if (local := _local_keys(keys)) is not None:
        return {request: _key_values(found) for request, found in zip(wanted, local, strict=True)}
    frames = [
        frame.select(F.lit(i).alias(SET), F.col(KEY).alias(f"{KEY}{i}")).distinct()
        for i, frame in enumerate(keys)
    ]
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)
    in_set = Window.partitionBy(SET)
    rank = F.row_number().over(in_set.orderBy(*(f"{KEY}{i}" for i in range(len(wanted)))))
    ranked = union.withColumn(RANK, rank).where(F.col(RANK) <= MAX_KEYS + 1).orderBy(SET, RANK)
    read_bytes = planned_read_bytes(ranked, change_bytes)
    with session_settings(spark, evaluation_settings(spark, read_bytes)):
        rows = ranked.collect()
    found: dict[int, list[Any]] = {i: [] for i in range(len(wanted))}
    for row in rows:
        found[row[SET]].append(row[f"{KEY}{row[SET]}"])
    return {request: _key_values(found[i]) for i, request in enumerate(wanted)}


def _ordered_alike(data_type: DataType) -> bool:
    """Whether Python sorts values of ``data_type`` as Spark does: integers, decimals, dates,
    and strings of the binary collation (a collated string's order is the collation's)."""
    return isinstance(data_type, (IntegralType, DecimalType, DateType)) or data_type == StringType()


def _local_keys(keys: list[DataFrame]) -> list[list[Any]] | None:
    """Each of the key columns ``keys`` (one column, :data:`KEY`) as its distinct values,
    sorted (NULL first), at most ``MAX_KEYS + 1``, where Spark's optimizer finds them all in
    the plan (each a projection or a filter of a change kept as a local relation, which it
    evaluates as it optimizes): read without a Spark job. None where one needs a job (a key
    joined with a snapshot, a change kept as a checkpoint), and in a Spark Connect session.

    Sorted here, by Python, in the order Spark sorts them: the values pruned on
    (:data:`Key`) are integers, decimals and dates, ordered by value in both, and strings,
    whose code points Python compares in the order of their UTF-8 bytes, Spark's order
    (:func:`_ordered_alike`)."""
    if is_connect(keys[0]) or not all(_ordered_alike(f.schema[KEY].dataType) for f in keys):
        return None
    plans = [cast(Any, frame)._jdf.queryExecution().optimizedPlan() for frame in keys]
    if any(plan.getClass().getSimpleName() != "LocalRelation" for plan in plans):
        return None
    found: list[list[Any]] = []
    for frame in keys:
        values = {row[KEY] for row in frame.collect()}  # a local relation's rows: no job
        ordered: list[Any] = [None] if None in values else []
        found.append(ordered + sorted(v for v in values if v is not None)[: MAX_KEYS + 1])
    return found


def _key_values(found: Sequence[Any]) -> KeyValues | None:
    """The sorted non-NULL values of the keys ``found`` (sorted, at most ``MAX_KEYS + 1``)
    and whether a NULL is among them; None if there are more than :data:`MAX_KEYS` or a
    value has no literal form."""
    values: list[Key] = [v for v in found if v is not None]
    if len(found) > MAX_KEYS or not all(_literal(v) is not None for v in values):
        return None
    return values, len(values) < len(found)


def _ranges(values: Sequence[Key]) -> list[tuple[exp.Expr, exp.Expr]]:
    """At most :data:`MAX_RANGES` ``(low, high)`` literal pairs covering the sorted
    ``values``: split at the widest gaps where values can be subtracted, else evenly."""
    cuts: list[int]
    if not values:
        return []
    if len(values) <= MAX_RANGES:
        cuts = list(range(1, len(values)))
    else:
        try:
            # the keys of a column are of one type: numbers and dates subtract, strings raise
            gaps = [(cast(Any, values[i]) - values[i - 1], i) for i in range(1, len(values))]
            cuts = sorted(i for _, i in sorted(gaps, reverse=True)[: MAX_RANGES - 1])
        except TypeError:  # strings: no distance between values
            step = len(values) / MAX_RANGES
            cuts = [round(step * k) for k in range(1, MAX_RANGES)]
    bounds = [0, *cuts, len(values)]
    return [(_literal_of(values[a]), _literal_of(values[b - 1])) for a, b in pairwise(bounds)]


def _literal_of(value: Key) -> exp.Expr:
    form = _literal(value)
    assert form is not None  # _distinct_keys keeps only values that have a literal form
    return form


def _literal(value: object) -> exp.Expr | None:
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
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    return None
