"""The change to the store, computed once for the techniques that apply it
(:mod:`~ivm.runtime.refresh.techniques.record_only`,
:mod:`~ivm.runtime.refresh.techniques.append`, :mod:`~ivm.runtime.refresh.techniques.merge`).

With the sources' reads bound, the change to the store is computed before any statement
writes it: the delta query pruned to the keys of the change (phase ``prune``), planned, and
kept (phase ``delta``; :func:`~ivm.runtime.refresh.sources.kept`), so that the statement that
writes it reads it as it is (Delta need not materialize a MERGE's source again).

What only reading the change shows comes back as a
:class:`~ivm.runtime.decision.decide.Revision`, a value, before anything is committed: the
delta query, once planned, predicted to read at least a recompute's bytes (rule 2 of
:mod:`ivm.runtime.decision.cost`); or a Spark failure that the Spark call reading, computing
or writing the change returns as a value (:func:`~ivm.runtime.refresh.commit.spark_call`):
a change data file gone (VACUUM), or a sum that overflows its type.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, Row
from sqlglot import exp

from ivm import codegen
from ivm.names import DIALECT
from ivm.runtime.catalog.history import Technique
from ivm.runtime.decision.decide import DEFAULT_MIN_BYTES, MIN_BYTES, Revision
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind
from ivm.runtime.refresh.commit import Append, LostRace, Overwrite, committed_write, spark_call
from ivm.runtime.refresh.gather import CHANGE_DATA_UNAVAILABLE
from ivm.runtime.refresh.pruning import prune
from ivm.runtime.refresh.retention import unreadable
from ivm.runtime.refresh.sources import ChangeReads, Kept, kept, release, total_source_files
from ivm.runtime.refresh.techniques.writing import Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.failures import Failure
from ivm.runtime.spark.settings import (
    number_setting,
    planned_read_bytes,
    planning_settings,
    session_settings,
)

STORE_CHANGE = "_ivm_store_change"
"""The temporary view of the change to the store, which the statement that writes it reads."""
OVERFLOW_REASON = "a sum overflowed its type while folding the change"
COLUMN_BYTES = 20
"""What a column of a kept change is taken to weigh in a row: Spark's size of a string it
knows nothing else of (``StringType.defaultSize``), above a number's 8 or a decimal's 16."""

UNREADABLE: Collection[Failure] = (Failure.CHANGE_DATA_LOST,)
"""The failures that revise a refresh where it reads the change: a change data file gone."""
REVISABLE: Collection[Failure] = (Failure.CHANGE_DATA_LOST, Failure.OVERFLOW)
"""The failures that revise a refresh where it computes or writes the change: also a sum that
overflows its type."""


@dataclass(frozen=True)
class Change:
    """The change to the store, computed once: ``kept`` holds its rows, read as the
    temporary view :data:`STORE_CHANGE`; ``query_bytes``: what its delta query reads, as
    planned; ``planned``: the record's fields known once the delta query is planned (its
    ``planned_bytes``, ``cost``, and the cost model's ``prediction`` where it judged)."""

    kept: Kept
    query_bytes: int | None
    planned: dict[str, Any]

    @property
    def rows(self) -> int:
        return self.kept.rows

    @property
    def frame(self) -> DataFrame:
        return self.kept.frame

    @property
    def kept_bytes(self) -> int:
        """What the kept change weighs, estimated from its rows and columns
        (:data:`COLUMN_BYTES` each): what a write reads of it, where ``query_bytes`` is what
        computing it read (a join's snapshots, say)."""
        return self.rows * len(self.frame.columns) * COLUMN_BYTES

    def release(self, spark: Session) -> None:
        """Drop the change's temporary view and the rows kept for it."""
        spark.catalog.dropTempView(STORE_CHANGE)
        if self.kept.checkpoint is not None:
            release(self.kept.checkpoint)


def computed(spark: Session, write: Write, change_reads: ChangeReads) -> Change | Revision:
    """The change to the store from ``write.previous`` to the record's source versions, its
    reads bound (the sources' changes read as ``change_reads`` says, for the record): the
    delta query pruned, planned, judged once more against a recompute, and kept. Or, where it
    cannot be applied, why (see the module's docstring)."""
    view, compiled, clock = write.view, write.compiled, write.clock
    with clock.phase("prune"):
        pruned = spark_call(
            view,
            spark,
            compiled.sources,
            lambda: prune(spark, compiled.maintenance.delta, write.record.read_bytes),
            UNREADABLE,
        )
    if isinstance(pruned, Failure):
        return revision(spark, write, pruned)
    delta = codegen.to_select(pruned[0])
    reads = {"snapshot_reads": pruned[1] or None, "change_reads": change_reads or None}
    with clock.phase("delta"):
        change = spark_call(
            view,
            spark,
            compiled.sources,
            lambda: _planned(spark, write, delta, reads),
            REVISABLE,
        )
    return revision(spark, write, change) if isinstance(change, Failure) else change


def _planned(
    spark: Session, write: Write, delta: exp.Query, reads: dict[str, Any]
) -> Change | Revision:
    """The change computed by the delta query ``delta``, planned and kept; or, where the
    cost model, given the plan, predicts a recompute cheaper, the revision (the change read
    is spent). ``reads``: how its snapshots and changes were read, for the record."""
    change_bytes, model = write.record.read_bytes, write.model
    files = total_source_files(spark, write.record.sources)
    with session_settings(spark, planning_settings(spark, files)):
        query = spark.sql(delta.sql(DIALECT))  # pyright: ignore[reportUnknownMemberType]
        query_bytes = planned_read_bytes(query, change_bytes)
    plan = None if change_bytes is None or query_bytes is None else (change_bytes, query_bytes)
    observed = model.after(Mode.INCREMENTAL, False, plan)
    planned: dict[str, Any] = {
        "planned_bytes": query_bytes,
        "cost": observed.to_record(),
        **reads,
    }
    if write.recheck_against is not None:
        min_bytes = number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES)
        cheaper, planned["prediction"] = model.after_planning(
            query_bytes, write.recheck_against, min_bytes, change_bytes
        )
        if cheaper is not None:
            return Revision(cheaper, planned["prediction"], observed)
    change = Change(kept(spark, query, query_bytes), query_bytes, planned)
    if change.rows:
        change.frame.createOrReplaceTempView(STORE_CHANGE)
    return change


def committed(
    spark: Session,
    write: Write,
    change: Change | None,
    statement: exp.Expr | Append | Overwrite | None,
    technique: Technique,
) -> list[Row] | Revision | LostRace:
    """``statement``, the write of ``change`` (None: none was read) by ``technique``,
    committed (:func:`~ivm.runtime.refresh.commit.committed_write`) with the record's fields
    known once the delta query was planned: its rows; or the revision where Spark failed
    writing it (a sum that overflows as the change is folded into the stored rows); or
    :class:`~ivm.runtime.refresh.commit.LostRace`."""
    amend = {"technique": technique, **(change.planned if change is not None else {})}
    rows = spark_call(
        write.view,
        spark,
        write.compiled.sources,
        lambda: committed_write(spark, write.committing, statement, **amend),
        REVISABLE,
    )
    return revision(spark, write, rows) if isinstance(rows, Failure) else rows


def revision(spark: Session, write: Write, failure: Failure) -> Revision:
    """The revision of an incremental ``write`` that Spark's ``failure`` keeps from applying
    the change: a sum that overflowed, or a change data file gone (VACUUM; which, said as
    ``ivm status`` says it)."""
    if failure is Failure.OVERFLOW:
        return Revision(Obstacle(ObstacleKind.UNAVAILABLE, OVERFLOW_REASON))
    assert failure is Failure.CHANGE_DATA_LOST, failure
    why = unreadable(spark, write.view) or f"{CHANGE_DATA_UNAVAILABLE} for {write.view}"
    return Revision(Obstacle(ObstacleKind.UNAVAILABLE, why))
