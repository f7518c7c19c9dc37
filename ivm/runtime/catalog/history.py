"""What each write of a view's store records, and the status and history read back from it.

Every commit ivm makes to a store carries, in Delta's ``userMetadata``, one
:class:`RefreshRecord` (a CREATE or REFRESH returns a :class:`RefreshResult`): which
refresh wrote it, in which mode and why, and the source versions the store reflects from then
on. Delta keeps the commits, so the refresh history of a view is its store's Delta history,
and the latest record is where the next refresh starts. A source is known by its Delta table
id, which the record keeps, so a table dropped and created again under the same name is not
taken for the one the view read.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ivm.errors import StateError
from ivm.runtime.catalog.properties import STATE_OF, VIEW
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.decision.terms import Mode
from ivm.runtime.log.delta_log import DeltaLogReader, describe_history, once
from ivm.runtime.spark.connect import Session

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
ROW_WRITES = frozenset({"WRITE", "DELETE", "UPDATE", "MERGE", "TRUNCATE", "RESTORE"})
"""Delta's operations that write a table's rows (besides those that replace the table)."""
HISTORY_SCAN = 50
"""How many of a store's latest commits are searched for its latest record (others, such as
an OPTIMIZE of the store, carry none)."""


class Technique(StrEnum):
    """How a write applied its rows to the store; its value is what the record, the result
    and the history say (as Databricks logs a technique per refresh)."""

    MERGE = "merge"  # the change merged into the stored rows, row by row
    REWRITE = "rewrite"  # a small store overwritten with the change folded into its rows
    APPEND = "append"  # the change appended to a logged store's log, folded on read
    RECORD_ONLY = "record only"  # no stored row changed: the commit carries the record
    RECOMPUTE = "recompute"  # the store overwritten with the query's rows
    PARTITION_OVERWRITE = "partition overwrite"  # the rows of one partition overwritten


@dataclass
class RefreshResult:
    """What one CREATE or REFRESH did."""

    view: str
    mode: Mode
    consumed: dict[str, int] = field(default_factory=dict)
    previous: dict[str, int] = field(default_factory=dict)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: float = 0.0
    reason: str | None = None  # why a refresh was full
    rules: str | None = None  # INSERTS_ONLY where an incremental refresh
    # applied the rules for inserted rows only
    technique: Technique | None = None  # how it wrote the store (None: it wrote nothing)
    phases: dict = field(default_factory=dict)  # phase → Phase (ivm.runtime.refresh.phases)
    states: list[RefreshResult] = field(default_factory=list)  # its state tables', first
    upkeep: list = field(default_factory=list)  # the compactions that followed it
    # (ivm.runtime.refresh.upkeep.Upkeep)
    repaired: str | None = None  # what was wrong with its catalog view, written anew

    def __str__(self) -> str:
        versions = ", ".join(
            f"{t} v{self.previous[t]}→v{v}"
            if t in self.previous and self.previous[t] != v
            else f"{t} v{v}"
            for t, v in self.consumed.items()
        )
        text = f"{self.mode} refresh of {self.view} in {self.seconds:.2f}s"
        if self.reason or self.rules:
            text += f" ({self.reason or self.rules})"
        text += f"; sources: {versions}"
        if self.technique is Technique.APPEND:
            text += f"; appended: {self.rows_inserted} change rows, folded on read"
        elif self.technique is Technique.REWRITE:
            text += f"; rewritten: {self.rows_inserted} store rows, the change folded in"
        elif self.mode != Mode.NOOP:
            text += (
                f"; store rows: +{self.rows_inserted} inserted, ~{self.rows_updated} "
                f"updated, -{self.rows_deleted} deleted"
            )
        repaired = [] if self.repaired is None else [f"{self.repaired}: written anew"]
        return "; ".join([text, *repaired, *map(str, self.upkeep)])


INSERTS_ONLY = "inserts only"
"""The ``rules`` of an incremental refresh whose sources' change only inserted rows, folded
into the view's own rows (:mod:`ivm.rules.append`)."""


def _shown(spark_type: str) -> dict[str, str]:
    """The metadata of a record's field that :func:`history` shows: its Spark SQL type in
    the record's JSON."""
    return {"spark": spark_type}


@dataclass(frozen=True)
class RefreshRecord:
    """The record of one write of a store (a CREATE or a REFRESH); the fields with a Spark
    type are those the history shows (:func:`record_type`)."""

    # a Mode's value, as written (a later ivm's may be one this one does not know)
    mode: str = field(metadata=_shown("STRING"))
    # the source versions the store now reflects
    sources: dict[str, int] = field(metadata=_shown("MAP<STRING, BIGINT>"))
    reason: str | None = field(default=None, metadata=_shown("STRING"))  # why a refresh was full
    # the bytes of source data or change it read
    read_bytes: int | None = field(default=None, metadata=_shown("BIGINT"))
    table_ids: dict[str, str] | None = None  # each source's Delta table id (None: unknown,
    # in records written before ids were kept)
    refresh: str = field(default_factory=lambda: uuid.uuid4().hex, metadata=_shown("STRING"))
    started_ms: int = field(
        default_factory=lambda: int(time.time() * 1000), metadata=_shown("BIGINT")
    )
    # phase → {seconds, jobs}, of the phases before the write (ivm.runtime.refresh.phases)
    phases: dict[str, dict] | None = field(
        default=None, metadata=_shown("MAP<STRING, STRUCT<seconds DOUBLE, jobs INT>>")
    )
    planned_bytes: int | None = None  # what it read as the cost model counts it
    # table → how the delta query read its snapshots (ivm.runtime.refresh.pruning's
    # SnapshotReads: from the files its keys admit, or through Delta and why)
    snapshot_reads: dict[str, str] | None = field(
        default=None, metadata=_shown("MAP<STRING, STRING>")
    )
    # table → how the sources' changes were read (ivm.runtime.refresh.sources' ChangeReads:
    # from the files their commits name, or by Delta's change data feed and why)
    change_reads: dict[str, str] | None = field(
        default=None, metadata=_shown("MAP<STRING, STRING>")
    )
    cost: dict[str, Any] | None = None  # the cost model it was planned with
    # the cost model's prediction, where it chose
    prediction: str | None = field(default=None, metadata=_shown("STRING"))
    rules: str | None = field(default=None, metadata=_shown("STRING"))  # as RefreshResult.rules
    # a Technique's value: how the write applied its rows
    technique: str | None = field(default=None, metadata=_shown("STRING"))
    # the ways the refresh weighed, the chosen one first (ivm.runtime.decision.decide's
    # Alternative.to_record)
    alternatives: list[dict] | None = field(
        default=None,
        metadata=_shown(
            "ARRAY<STRUCT<mode STRING, chosen BOOLEAN, applicable BOOLEAN, cost_bytes BIGINT, "
            "reason STRING>>"
        ),
    )
    committed_ms: int | None = None  # when it was committed: read from the log,
    # never written

    @property
    def seconds(self) -> float | None:
        """How long the write took, from its start to its commit."""
        return None if self.committed_ms is None else (self.committed_ms - self.started_ms) / 1000

    def to_json(self) -> str:
        written = {k: v for k, v in asdict(self).items() if k != "committed_ms"}
        return json.dumps({"ivm": written}, sort_keys=True)

    @classmethod
    def from_json(
        cls,
        text: str | None,
        committed_ms: int | None = None,
    ) -> RefreshRecord | None:
        """The record in the ``userMetadata`` of a commit made at ``committed_ms``; None if it
        holds none. Fields this version does not know (a later one wrote them) are left
        out, so that a store stays readable by the ivm of an older job."""
        try:
            record = json.loads(text or "")["ivm"]
            known = {k: v for k, v in record.items() if k in _RECORD_FIELDS}
            return cls(
                **{
                    **known,
                    "sources": {t: int(v) for t, v in record["sources"].items()},
                    "committed_ms": committed_ms,
                }
            )
        except (ValueError, KeyError, TypeError):
            return None


_RECORD_FIELDS = {f.name for f in fields(RefreshRecord)}


def record_type() -> str:
    """The Spark SQL type of a record's JSON as :func:`history` reads it: the fields of
    :class:`RefreshRecord` it shows, each with the Spark type its field declares.

    >>> record_type()[:63]
    'STRUCT<mode STRING, sources MAP<STRING, BIGINT>, reason STRING,'
    """
    shown = [f"{f.name} {f.metadata['spark']}" for f in fields(RefreshRecord) if f.metadata]
    return f"STRUCT<{', '.join(shown)}>"


def latest_record(log: DeltaLogReader, upto: int | None = None) -> tuple[int, RefreshRecord]:
    """The latest commit of a store that holds a record (at ``upto`` or before, if given),
    and the record."""
    latest = log.version() if upto is None else upto
    for version in range(latest, max(-1, latest - HISTORY_SCAN), -1):
        record = RefreshRecord.from_json(*log.commit_info(version))
        if record is not None:
            return version, record
    properties = log.properties()
    view = properties.get(VIEW, log.table)
    raise StateError(
        f"the store of {view} records no consumed source versions",
        hint=f"recompute it: REFRESH MATERIALIZED VIEW {properties.get(STATE_OF, view)} FULL",
    )


def written_outside(log: DeltaLogReader, recorded: int, logged: bool) -> str | None:
    """The first commit of a store (``log``) since its latest record (at version
    ``recorded``) that wrote rows without ivm, as ``version 7 (DELETE)``; None where none
    did. A MERGE into a ``logged`` store is ivm's fold of its log
    (:func:`~ivm.runtime.refresh.upkeep.fold_log`), its one write of rows that records no
    refresh."""
    latest = log.version()
    for commit in (log.commits(recorded, latest) or []) if latest > recorded else []:
        if commit.operation not in ROW_WRITES and not commit.replaces_table:
            continue
        if logged and commit.operation == "MERGE":
            continue
        return f"version {commit.version} ({commit.operation})"
    return None


KEPT_RECORDS = 1024
"""How many stores' latest records a process keeps (the least recently used go first)."""

_records: OrderedDict[str, tuple[str, int, RefreshRecord]] = OrderedDict()
_records_lock = threading.Lock()


def latest_consumed(spark: Session, view: str) -> RefreshRecord:
    """The latest record of the store of ``view``: the source versions it reflects."""
    store = store_name(view)
    return once(("latest record", store), lambda: _latest_record(DeltaLogReader.of(spark, store)))


def _latest_record(log: DeltaLogReader) -> RefreshRecord:
    """The latest record of ``log``'s store; kept with the store's id and version, as a
    store's commits never change."""
    if log.location() is None:  # no log at hand (Spark Connect): the id is a query of its own
        return latest_record(log)[1]
    table_id, version = log.table_id(), log.version()
    with _records_lock:
        kept = _records.get(log.table)
        if kept is not None and kept[:2] == (table_id, version):
            _records.move_to_end(log.table)
            return kept[2]
    record = latest_record(log, version)[1]
    with _records_lock:
        _records[log.table] = (table_id, version, record)
        _records.move_to_end(log.table)
        while len(_records) > KEPT_RECORDS:
            _records.popitem(last=False)
    return record


def history(spark: Session, store: str) -> DataFrame:
    """Every write of ``store`` that ivm made, newest first: its store version and time, the
    refresh's id, mode and reason, the cost model's prediction where it chose the mode (see
    :mod:`ivm.runtime.decision.cost`), the rules of an incremental refresh where they were
    those for inserted rows only (:data:`INSERTS_ONLY`), how it wrote the store
    (:class:`Technique`), the ways it weighed (``alternatives``: applying the change and
    recomputing, see :mod:`ivm.runtime.decision.decide`), the source versions it consumed,
    the bytes it read, how its delta query read the sources' snapshots (``snapshot_reads``,
    see :mod:`ivm.runtime.refresh.pruning`) and their changes (``change_reads``, see
    :mod:`ivm.runtime.log.change_files`), the store rows it inserted (an append: the
    change rows it logged), updated and deleted, how long it took until its commit, and where
    that time went: ``phases``, each phase's seconds and Spark jobs (see
    :mod:`ivm.runtime.refresh.phases`), the ``write`` up to its commit included, its jobs
    uncounted (the commit is written before they are known)."""
    record = F.from_json("userMetadata", f"ivm {record_type()}").ivm
    metrics = F.col("operationMetrics")
    seconds = (F.unix_millis("timestamp") - F.col("record.started_ms")) / 1000
    # the write of an attempt that fell back to a full recompute is the final write's share
    before_write = F.map_filter("record.phases", lambda name, _: name != "write")
    write = _write_phase(seconds, before_write)

    def metric(*names):
        # a commit of the record alone (an UPDATE of no row) changed no row
        nothing = F.when(F.col("operation") == "UPDATE", F.lit(0))
        return F.coalesce(*(metrics[n] for n in names), nothing).cast("bigint")

    return (
        describe_history(spark, store)
        .withColumn("record", record)
        .where(F.col("record.refresh").isNotNull())
        .select(
            "version",
            "timestamp",
            "record.refresh",
            "record.mode",
            "record.reason",
            "record.prediction",
            "record.rules",
            "record.technique",
            "record.alternatives",
            "record.sources",
            "record.read_bytes",
            "record.snapshot_reads",
            "record.change_reads",
            metric("numTargetRowsInserted", "numOutputRows").alias("rows_inserted"),
            metric("numTargetRowsUpdated").alias("rows_updated"),
            metric("numTargetRowsDeleted").alias("rows_deleted"),
            seconds.alias("seconds"),
            F.map_concat(before_write, write).alias("phases"),
        )
        .orderBy(F.col("version").desc())
    )


def _write_phase(seconds: Column, before_write: Column) -> Column:
    """The ``write`` phase of a refresh that took ``seconds`` until its commit, as a map of
    one phase: what the phases ``before_write`` leave of those seconds, its jobs unknown."""
    return F.create_map(
        F.lit("write"),
        F.struct(
            F.round(
                seconds
                - F.aggregate(
                    F.map_values(before_write),
                    F.lit(0.0),
                    lambda total, phase: total + phase.seconds,
                ),
                3,
            ).alias("seconds"),
            F.lit(None).cast("int").alias("jobs"),
        ),
    )
