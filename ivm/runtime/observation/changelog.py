"""A materialized view's own changelog, for consumers downstream of it.

Each refresh is one commit to the view's store, and the store's change data feed records
what it did to each stored row. Read through the view's columns, that is the changelog of
Flink and Paimon: ``+I`` a row inserted, ``-D`` deleted, and an update as ``-U`` (the row
before) followed by ``+U`` (after) — so the new total of an aggregate group arrives as an
update of that group, not as the deletion of one row and the insertion of an unrelated one.
Within a commit the retractions (``-U``, ``-D``) come before the additions. A store row that
stands for ``n`` identical view rows appears ``n`` times.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ivm.errors import StateError
from ivm.runtime.catalog.definition import compile_definition, view_properties
from ivm.runtime.catalog.properties import LOGGED_LAYOUT, is_logged
from ivm.runtime.catalog.tables import qualified_name, store_name
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import STORE_LAYOUT
from ivm.zset import COUNT

OPERATIONS = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}
"""Delta's change types, as changelog operations."""


def view_changes(
    spark: Session, name: str, starting_version: int, ending_version: int | None = None
) -> DataFrame:
    """The changes of the view ``name`` made by its store's commits from
    ``starting_version`` (to ``ending_version``): its columns, then ``_op`` (``+I``, ``-U``,
    ``+U``, ``-D``), ``_commit_version`` and ``_commit_timestamp``, in commit order."""
    view = qualified_name(spark, name)
    if is_logged(view_properties(spark, view)):
        raise StateError(
            f"the changes of {view} cannot be read: its store is logged "
            f"({STORE_LAYOUT}={LOGGED_LAYOUT}), and its change data feed holds the "
            f"changes of its accumulators, not of its rows",
            hint=f"recreate {view} with {STORE_LAYOUT}=merge to read its changes",
        )
    store = compile_definition(spark, view).store
    reader = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", starting_version)
    )
    if ending_version is not None:
        reader = reader.option("endingVersion", ending_version)
    feed = reader.table(store_name(view))
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
