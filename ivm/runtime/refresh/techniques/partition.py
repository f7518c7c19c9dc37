"""Partition overwrite: the rows of one partition of the store recomputed from scratch and
overwritten, at the source versions the store reflects, so that the store stays one
consistent state (a repair or a backfill; a later refresh applies newer changes as usual).
:func:`partition_write` makes the write of a partition refresh; :func:`write` carries it
out."""

from __future__ import annotations

from sqlglot import exp

from ivm import codegen
from ivm.codegen.store import LOGGED
from ivm.errors import CatalogError, SourceError, StateError
from ivm.names import DIALECT
from ivm.runtime.catalog.history import RefreshRecord, Technique, latest_record
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.decision.decide import replaced_source
from ivm.runtime.decision.terms import Mode
from ivm.runtime.log.delta_log import DeltaLogReader, rows_written
from ivm.runtime.refresh.commit import LostRace, bound_reads, committed_write
from ivm.runtime.refresh.gather import reshaped
from ivm.runtime.refresh.sources import latest_sources, total_source_bytes
from ivm.runtime.refresh.techniques.change import Change
from ivm.runtime.refresh.techniques.writing import Attempt, Outcome, Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import evaluation_settings

TECHNIQUE = Technique.PARTITION_OVERWRITE


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """Overwrite the rows of the store in ``write.partition`` with the query's, at the
    source versions the store reflects. A logged store's partition columns are keys of the
    view (:func:`~ivm.runtime.commands.views.create_view`), so its logged rows of the
    partition are replaced with its stored ones: the partition is left folded."""
    assert change is None  # a recompute reads no change
    assert write.partition is not None
    full = codegen.stored_query(write.compiled.store, write.compiled.full_query, write.logged)
    statement = codegen.replace_where_statement(write.store, full, write.partition)
    with bound_reads(spark, write.committing):
        done = committed_write(spark, write.committing, statement, technique=TECHNIQUE)
    if isinstance(done, LostRace):
        return done
    return write.result(TECHNIQUE, rows_inserted=rows_written(spark, write.store))


def partition_write(spark: Session, attempt: Attempt, partition: dict[str, exp.Literal]) -> Write:
    """The write that recomputes the rows of ``attempt``'s view in ``partition``
    (``{column: value}``), from the source versions its store reflects. Refused where the
    store has not the columns the definition now gives, ``partition`` names a column the
    store is not partitioned by, or a source was replaced since the store was written."""
    view, compiled = attempt.view, attempt.compiled
    if (other_columns := reshaped(compiled, attempt.properties, attempt.schema)) is not None:
        raise StateError(
            f"{view} cannot recompute a partition: {other_columns}",
            hint=f"REFRESH MATERIALIZED VIEW {view} recomputes it with its definition's columns",
        )
    with attempt.clock.phase("versions"):
        log = DeltaLogReader.of(spark, store_name(view))  # the reader the store version came from
        _check_columns(view, partition, [c for c in log.partition_columns() if c != LOGGED])
        last = latest_record(log)[1]
        _, ids = latest_sources(spark, compiled.sources)
        if replaced := replaced_source(last.table_ids, ids):
            raise SourceError(
                f"{view} cannot recompute a partition: {replaced}",
                hint=f"run REFRESH MATERIALIZED VIEW {view}",
            )
    spec = ", ".join(f"{c} = {v.sql(DIALECT)}" for c, v in partition.items())
    record = RefreshRecord(
        Mode.PARTITION,
        last.sources,
        reason=f"PARTITION ({spec})",
        table_ids=last.table_ids,
        started_ms=attempt.clock.started_ms,
        cost=last.cost,  # the model carries on
    )
    return Write(
        view,
        compiled,
        attempt.schema,
        attempt.store_version,
        last.sources,
        record,
        attempt.clock,
        partition=exp.and_(*(exp.column(c).eq(v) for c, v in partition.items())),
        logged=attempt.logged,
        settings=evaluation_settings(spark, total_source_bytes(spark, compiled.sources)),
    )


def _check_columns(view: str, partition: dict[str, exp.Literal], partitioned_by: list[str]) -> None:
    """Refuse a ``partition`` of ``view`` that names no column, or one its store is not
    ``partitioned_by``."""
    unknown = [c for c in partition if c not in partitioned_by]
    if unknown or not partition:
        raise CatalogError(
            f"{', '.join(unknown) or 'PARTITION ()'} is not a partition column of {view}",
            hint=f"{view} is partitioned by {', '.join(partitioned_by) or 'nothing'}",
        )
