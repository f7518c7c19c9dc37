"""MERGE of the change: the change to the store folded into the stored rows by one MERGE,
row by row (matched on the view's keys, null-safely: :func:`ivm.codegen.store.merge_statement`).
Into a large store, the MERGE says which ranges of keys it can touch, for Delta to skip the
files of others."""

from __future__ import annotations

from sqlglot import exp

from ivm import codegen
from ivm.codegen.store import STORED
from ivm.runtime.catalog.history import Technique
from ivm.runtime.catalog.tables import schema_types
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.commit import LostRace, spark_errors
from ivm.runtime.refresh.pruning import stored_key_ranges
from ivm.runtime.refresh.techniques.change import STORE_CHANGE, Change, committed
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import (
    SMALL_STORE_BYTES,
    evaluation_settings,
    merge_settings,
    session_settings,
)

TECHNIQUE = Technique.MERGE
MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """MERGE ``change`` into ``write``'s store, in one commit. A MERGE that Delta skips as
    done (its transaction committed already) has no metrics: another refresh was first."""
    assert change is not None and change.rows
    store, compiled = write.store, write.compiled
    with write.clock.phase("delta"), spark_errors(write.view, spark, compiled.sources):
        store_bytes = DeltaLogReader.of(spark, store).size_in_bytes()
        within = None
        if store_bytes is None or store_bytes > SMALL_STORE_BYTES:
            within = stored_key_ranges(change.frame, compiled.store, STORED)
    types = schema_types(write.schema)
    rows = exp.select("*").from_(STORE_CHANGE)
    statement = codegen.merge_statement(compiled.store, store, rows, types, within=within)
    with session_settings(spark, _merge_settings(spark, store_bytes, change.kept_bytes)):
        merged = committed(spark, write, change, statement, TECHNIQUE)
    if not isinstance(merged, list):
        return merged
    if not merged:  # Delta skipped it: the transaction was committed already
        return LostRace()
    metrics = merged[0]
    return write.result(
        TECHNIQUE,
        rows_inserted=metrics.num_inserted_rows,
        rows_updated=metrics.num_updated_rows,
        rows_deleted=metrics.num_deleted_rows,
    )


def _merge_settings(spark: Session, store_bytes: int | None, change_bytes: int) -> dict[str, str]:
    """Settings for the MERGE into a store of ``store_bytes`` of a kept change of about
    ``change_bytes``: its source, the change to the store, is kept already, so Delta need
    not materialize it again; those for the store's size
    (:func:`~ivm.runtime.spark.settings.merge_settings`); and those for the little data of a
    small store and change (:func:`~ivm.runtime.spark.settings.evaluation_settings`)."""
    both = None if store_bytes is None else store_bytes + change_bytes
    return (
        {MATERIALIZE_SOURCE: "none"}
        | merge_settings(store_bytes)
        | evaluation_settings(spark, both)
    )
