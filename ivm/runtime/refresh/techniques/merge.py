"""MERGE of the change: the change of every source since the versions the store records,
folded into the stored rows by one MERGE (appended to a logged store's log), computed once
before it; an empty change commits the record alone."""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from sqlglot import exp

from ivm import codegen
from ivm.codegen.store import STORED
from ivm.errors import SourceError
from ivm.names import DIALECT
from ivm.runtime.catalog.history import RefreshResult, Technique
from ivm.runtime.decision.decide import DEFAULT_MIN_BYTES, MIN_BYTES, Revision
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.commit import LostRace, bound_reads, committed_write, spark_errors
from ivm.runtime.refresh.pruning import prune, stored_key_ranges
from ivm.runtime.refresh.retention import unreadable
from ivm.runtime.refresh.sources import kept, release, total_source_files
from ivm.runtime.refresh.techniques.writing import Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.failures import Failure, classify
from ivm.runtime.spark.settings import (
    SMALL_STORE_BYTES,
    evaluation_settings,
    merge_settings,
    number_setting,
    planned_read_bytes,
    planning_settings,
    session_settings,
)

STORE_CHANGE = "_ivm_store_change"
"""The temporary view of the change to the store, which the MERGE reads."""
MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"

OVERFLOW_REASON = "a sum overflowed its type while folding the change"


def write(spark: Session, write: Write) -> RefreshResult | Revision | LostRace:
    """Fold the change from ``write.previous`` to the record's source versions into the
    store in one commit; or, where the change cannot be applied, why (a change data file
    removed, found as it is read).

    The change to the store is computed once, before the MERGE, which then reads it as it
    is (Delta need not materialize the MERGE's source again); an empty change commits the
    record alone, and writes no file. A change of 0 bytes (the sources' commits since
    changed no row, as a state table's that recorded a refresh alone) is not read at all."""
    try:
        return _merge(spark, write)
    except SourceError as error:  # a change data file was VACUUMed: say which, as status does
        why = unreadable(spark, write.view) or error.message
        return Revision(Obstacle(ObstacleKind.UNAVAILABLE, why))


def _merge(spark: Session, write: Write) -> RefreshResult | Revision | LostRace:
    """The body of :func:`write`: the change's MERGE, or why it is not applied, learned once
    the delta query is planned (predicted dearer than a recompute) or run (a sum overflows)."""
    view, compiled, store, clock = write.view, write.compiled, write.store, write.clock
    change_bytes, model = write.record.read_bytes, write.model
    if change_bytes == 0:  # the commits since changed no row, nor does the view
        with bound_reads(spark, write.committing):
            done = committed_write(
                spark,
                write.committing,
                codegen.record_only_statement(store),
                technique=Technique.RECORD_ONLY,
            )
        return done if isinstance(done, LostRace) else write.result(Technique.RECORD_ONLY)
    with bound_reads(spark, write.committing, write.previous):
        with clock.phase("prune"), spark_errors(view, spark, compiled.sources):
            delta = codegen.to_select(prune(spark, compiled.maintenance.delta, change_bytes))
        types = {f.name: f.dataType.simpleString() for f in write.schema}
        change = None
        try:
            with clock.phase("delta"), spark_errors(view, spark, compiled.sources):
                with session_settings(
                    spark, planning_settings(spark, total_source_files(spark, write.record.sources))
                ):
                    query = spark.sql(delta.sql(DIALECT))
                    query_bytes = planned_read_bytes(query, change_bytes)
                plan = (
                    None
                    if change_bytes is None or query_bytes is None
                    else (change_bytes, query_bytes)
                )
                observed = model.after(Mode.INCREMENTAL, False, plan)
                planned = {"planned_bytes": query_bytes, "cost": observed.to_record()}
                if write.recheck_against is not None:
                    cheaper, planned["prediction"] = model.after_planning(
                        query_bytes, write.recheck_against, _min_bytes(spark), change_bytes
                    )
                    if cheaper is not None:  # the change read is spent
                        return Revision(cheaper, planned["prediction"], observed)
                change = kept(spark, query, query_bytes)
                settings, within = {}, None
                if change.rows and write.logged:  # one append
                    settings = evaluation_settings(spark, query_bytes)
                elif change.rows:  # the MERGE
                    store_bytes = DeltaLogReader.of(spark, store).size_in_bytes()
                    settings = _merge_settings(spark, store_bytes, query_bytes)
                    if store_bytes is None or store_bytes > SMALL_STORE_BYTES:
                        within = stored_key_ranges(change.frame, compiled.store, STORED)
            if not change.rows:  # no stored row changes: the commit carries the record
                done = committed_write(
                    spark,
                    write.committing,
                    codegen.record_only_statement(store),
                    technique=Technique.RECORD_ONLY,
                    **planned,
                )
                return done if isinstance(done, LostRace) else write.result(Technique.RECORD_ONLY)
            change.frame.createOrReplaceTempView(STORE_CHANGE)
            # an append that Delta skips as done is found by the committed write's check
            rows = exp.select("*").from_(STORE_CHANGE)
            written, technique = (
                (codegen.append_statement(compiled.store, store, rows, types), Technique.APPEND)
                if write.logged
                else (
                    codegen.merge_statement(compiled.store, store, rows, types, within=within),
                    Technique.MERGE,
                )
            )
            with session_settings(spark, settings):
                merged = committed_write(
                    spark, write.committing, written, technique=technique, **planned
                )
            if isinstance(merged, LostRace):
                return merged
            if write.logged:
                return write.result(technique, rows_inserted=change.rows)
        except (PySparkException, Py4JJavaError) as error:
            if classify(error) is Failure.OVERFLOW:
                return Revision(Obstacle(ObstacleKind.UNAVAILABLE, OVERFLOW_REASON))
            raise
        finally:
            spark.catalog.dropTempView(STORE_CHANGE)
            if change is not None and change.checkpoint is not None:
                release(change.checkpoint)
    if not merged:  # Delta skipped it: the transaction was committed already
        return LostRace()
    metrics = merged[0]
    return write.result(
        Technique.MERGE,
        rows_inserted=metrics.num_inserted_rows,
        rows_updated=metrics.num_updated_rows,
        rows_deleted=metrics.num_deleted_rows,
    )


def _min_bytes(spark: Session) -> float:
    """The sources' size below which the cost model predicts nothing."""
    return number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES)


def _merge_settings(
    spark: Session, store_bytes: int | None, change_bytes: int | None
) -> dict[str, str]:
    """Settings for the MERGE into a store of ``store_bytes`` of a change computed from
    ``change_bytes`` (at most its size): its source, the change to the store, is kept
    already, so Delta need not materialize it again; those for the store's size
    (:func:`~ivm.runtime.spark.settings.merge_settings`); and those for the little data of a
    small store and change (:func:`~ivm.runtime.spark.settings.evaluation_settings`)."""
    both = None if store_bytes is None or change_bytes is None else store_bytes + change_bytes
    return (
        {MATERIALIZE_SOURCE: "none"}
        | merge_settings(store_bytes)
        | evaluation_settings(spark, both)
    )
