"""A materialized view's own changelog, for consumers downstream of it.

Each refresh is one commit to the view's store, and the store's change data feed records
what it did to each stored row. Read through the view's columns, that is the changelog of
Flink and Paimon: ``+I`` a row inserted, ``-D`` deleted, and an update as ``-U`` (the row
before) followed by ``+U`` (after) — so the new total of an aggregate group arrives as an
update of that group, not as the deletion of one row and the insertion of an unrelated one.
Within a commit the retractions (``-U``, ``-D``) come before the additions. A store row that
stands for ``n`` identical view rows appears ``n`` times.

A commit that rewrote the store (a small store's refresh, a recompute) removed every stored row
and inserted the new ones: its deletions and insertions are compared by key
(:func:`_consolidated`), so that a row it left as it was does not appear, and a changed one
appears as an update. A logged store's change data feed holds appended accumulator changes,
not rows: its changelog is found by comparing the view's rows folded before and after each
commit, at the keys the commit touched (:func:`_row_feed`), and reads as a merged store's
would.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ivm.names import quote
from ivm.runtime.catalog.definition import compile_definition, view_properties
from ivm.runtime.catalog.properties import is_logged
from ivm.runtime.catalog.tables import column_types, qualified_name, store_name
from ivm.runtime.refresh.sources import SIGN, folded_sides
from ivm.runtime.spark.connect import Session
from ivm.store import Store
from ivm.zset import COUNT

OPERATIONS = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}
"""Delta's change types, as changelog operations."""
AFTER = "_ivm_after"
"""The columns of a logged store's rows after a commit, beside those before it."""


def view_changes(
    spark: Session, name: str, starting_version: int, ending_version: int | None = None
) -> DataFrame:
    """The changes of the view ``name`` made by its store's commits from
    ``starting_version`` (to ``ending_version``): its columns, then ``_op`` (``+I``, ``-U``,
    ``+U``, ``-D``), ``_commit_version`` and ``_commit_timestamp``, in commit order."""
    view = qualified_name(spark, name)
    store = compile_definition(spark, view).store
    reader = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", starting_version)
    )
    if ending_version is not None:
        reader = reader.option("endingVersion", ending_version)
    feed = reader.table(store_name(view))
    if is_logged(view_properties(spark, view)):
        feed = _row_feed(spark, store, store_name(view), feed)
    else:
        feed = _consolidated(store, feed)
    if store.repeat_rows:
        feed = feed.withColumn("_copy", F.explode(F.sequence(F.lit(1), F.col(COUNT))))
    op = F.create_map(*(F.lit(x) for pair in OPERATIONS.items() for x in pair))[
        F.col("_change_type")
    ]
    order = F.when(F.col("_change_type").isin("update_preimage", "delete"), 0).otherwise(1)
    return (
        feed.select(
            *store.view_columns,
            op.alias("_op"),
            "_commit_version",
            "_commit_timestamp",
            order.alias("_order"),
        )
        .orderBy("_commit_version", "_order")
        .drop("_order")
    )


def _row_feed(spark: Session, store: Store, table: str, feed: DataFrame) -> DataFrame:
    """The change feed ``feed`` of the logged store ``table`` (appended accumulator changes,
    folds of the log) as the change feed of its rows folded: for each commit ``v``, the
    folded rows as of ``v - 1`` and as of ``v`` at the keys ``v`` touched, compared by key::

        key in both, row changed  → update_preimage (before), update_postimage (after)
        key after only            → insert
        key before only           → delete

    A fold of the log changes no folded row, and leaves nothing. Each commit costs one read
    of the store, at the keys it touched (:func:`~ivm.runtime.refresh.sources.folded_sides`)."""
    commits = (
        feed.select("_commit_version", "_commit_timestamp")
        .distinct()
        .orderBy("_commit_version")
        .collect()
    )
    types, parts = column_types(spark, table), []
    for commit in commits:
        version = commit["_commit_version"]
        sides = folded_sides(
            spark, store, table, feed.where(F.col("_commit_version") == version), version, types
        )
        after, before = (sides.where(F.col(SIGN) == sign).drop(SIGN) for sign in (1, -1))
        parts.append(
            _compared(store, before, after).select(
                "*",
                F.lit(version).alias("_commit_version"),
                F.lit(commit["_commit_timestamp"]).alias("_commit_timestamp"),
            )
        )
    return reduce(DataFrame.unionByName, parts) if parts else feed


COMMIT = ("_commit_version", "_commit_timestamp")
"""The columns of a change feed that say which commit made a change."""


def _consolidated(store: Store, feed: DataFrame) -> DataFrame:
    """The change feed ``feed`` of a merged store with each commit's deletions and
    insertions compared by key (:func:`_compared`): a row deleted and inserted alike is no
    change, a key deleted and inserted with other values an update. A MERGE's updates are
    kept as they are."""
    columns = [*store.columns, *COMMIT]

    def typed(*types: str) -> DataFrame:
        return feed.where(F.col("_change_type").isin(*types))

    before, after = (typed(t).select(*columns) for t in ("delete", "insert"))
    updates = typed("update_preimage", "update_postimage").select(*columns, "_change_type")
    return updates.unionByName(_compared(store, before, after, COMMIT))


def _compared(
    store: Store, before: DataFrame, after: DataFrame, commit: tuple[str, ...] = ()
) -> DataFrame:
    """The store rows ``before`` and ``after`` a commit (at the keys it touched), as the
    change types of a change feed (see :func:`_row_feed`); with ``commit``, the columns
    that name a row's commit, of the rows of several commits, each compared with its own."""
    columns = [*store.columns, *commit]
    renamed = after.select(*(F.col(quote(c)).alias(f"{AFTER}{i}") for i, c in enumerate(columns)))
    same_key = [
        before[quote(c)].eqNullSafe(renamed[f"{AFTER}{i}"])
        for i, c in enumerate(columns)
        if store.is_key(c) or c in commit
    ] or [F.lit(True)]
    same_row = reduce(
        lambda x, y: x & y,
        (before[quote(c)].eqNullSafe(renamed[f"{AFTER}{i}"]) for i, c in enumerate(columns)),
    )
    as_after = [F.col(f"{AFTER}{i}").alias(c) for i, c in enumerate(columns)]
    pairs = before.join(renamed, on=same_key, how="inner").where(~same_row)

    def typed(rows: DataFrame, change_type: str) -> DataFrame:
        return rows.withColumn("_change_type", F.lit(change_type))

    return reduce(
        DataFrame.unionByName,
        [
            typed(before.join(renamed, on=same_key, how="left_anti"), "delete"),
            typed(pairs.select(*(before[quote(c)] for c in columns)), "update_preimage"),
            typed(pairs.select(*as_after), "update_postimage"),
            typed(renamed.join(before, on=same_key, how="left_anti").select(*as_after), "insert"),
        ],
    )
