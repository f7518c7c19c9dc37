"""Store upkeep: what keeps a view's store, and its state tables', as fast and as small after
its thousandth refresh as after its first.

Each refresh is one commit to the store. Its MERGE rewrites the files holding the rows it
updates (copy-on-write) and writes the rows it inserts into new files, so a store whose
refreshes mostly insert (a filter or a join over an append-only source) gains a small file
per refresh. Delta itself checkpoints the log every ``delta.checkpointInterval`` (10)
commits, so a snapshot reads one checkpoint and at most nine commits however long the
history, and removes commit files older than ``delta.logRetentionDuration`` at a
checkpoint. Two things are left to ivm:

* **compaction** (:func:`compact`): once a store holds :data:`COMPACT_AT` files more than
  its size needs, its small files are merged by ``OPTIMIZE`` into files of up to
  :data:`TARGET_FILE_BYTES`. Every refresh ends with it (so a store stays bounded whoever
  refreshes it); it costs a read of the store's log when nothing is due. An ``OPTIMIZE``
  commit changes no row (``dataChange = false``): it carries no refresh record, a
  reader of the store's change data feed skips it, and a refresh that meets it among its
  sources' commits reads nothing for it;
* **folding the log** (:func:`fold_log`) of a logged store (``log`` layout,
  :mod:`ivm.codegen.store`): once :data:`DEFAULT_LOG_FOLD_AT` refreshes in a row (the
  setting :data:`LOG_FOLD_AT`) appended their
  change, one MERGE folds the logged rows into the stored ones and removes them, in one
  commit that carries no refresh record (the store reflects the same source versions);
* **vacuum** (:func:`vacuum`): ``VACUUM`` deletes the files that no version within the
  store's retention needs. It lists the table's files, so ``ivm run`` does it between
  refreshes, once per :data:`VACUUM_EVERY_SECONDS` per view, and ``ivm upkeep`` on demand.
  It keeps what the store's ``delta.deletedFileRetentionDuration`` says, which a view's
  ``RETENTION`` sets (:func:`retention_properties`): that long, the view's change data
  (``view_changes``, views that read it) and its earlier versions stay readable.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError  # pyright: ignore[reportMissingTypeStubs]
from pyspark.errors import PySparkException

from ivm import codegen
from ivm.errors import CatalogError
from ivm.names import DIALECT
from ivm.runtime.catalog.definition import compile_definition, settings, view_properties
from ivm.runtime.catalog.properties import DELETED_FILE_RETENTION, LOG_RETENTION, is_logged
from ivm.runtime.catalog.tables import column_types, qualified_name, state_tables, store_name
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.messages import one_line
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.failures import Failure, classify
from ivm.runtime.spark.settings import number_setting, session_settings

COMPACT_AT = 50
"""How many files more than its size needs a store may hold before it is compacted: Delta's
own threshold for auto compaction (``spark.databricks.delta.autoCompact.minNumFiles``)."""
TARGET_FILE_BYTES = 128 * 1024 * 1024
"""The size of the files compaction writes, and of the files a store's size is counted in.
A MERGE rewrites every file holding a row it updates, so a store's files are kept at
auto compaction's size rather than OPTIMIZE's 1 GB."""
SMALL_FILE_BYTES = TARGET_FILE_BYTES // 4
"""Files below this size are merged by a compaction; larger ones are left as they are."""
VACUUM_EVERY_SECONDS = 24 * 3600.0
"""How often ``ivm run`` vacuums each view's store (and its state tables')."""
MIN_RETENTION_SECONDS = 3600
"""The shortest RETENTION a view may have: a refresh, a verify or a reader of the view's
change data reads versions of the store a while after they were written, and VACUUM must
not delete their files under them."""

DEFAULT_RETENTION_SECONDS = 7 * 86400
"""A view's RETENTION where its CREATE gives none: Delta's for deleted files, and for its
log too, where Delta's default is 30 days. A version whose files VACUUM removed cannot be
read, so the longer log would keep only history while every read of the log lists four
times the commits (on a local, HDFS or ADLS file system; ~43,000 of them for a view
refreshed every minute)."""


@dataclass(frozen=True)
class Upkeep:
    """What one step of upkeep did to a store."""

    store: str
    action: str  # fold | compact | vacuum
    files_before: int | None
    files_after: int | None
    seconds: float
    error: str | None = None  # why a compaction after a refresh failed, if it did

    def __str__(self) -> str:
        if self.error is not None:
            return f"compaction of {self.store} failed, left to the next refresh: {self.error}"
        if self.action == "fold":
            return f"folded the log of {self.store} in {self.seconds:.2f}s"
        if self.action == "compact":
            return (
                f"compacted {self.store}: {self.files_before} files into "
                f"{self.files_after} in {self.seconds:.2f}s"
            )
        return f"vacuumed {self.store} in {self.seconds:.2f}s"


def compaction_due(files: int, size_bytes: int) -> bool:
    """Whether a store of ``files`` files holding ``size_bytes`` is due for compaction: it
    has :data:`COMPACT_AT` files more than its size needs.

    >>> compaction_due(49, 1_000), compaction_due(51, 1_000)
    (False, True)
    >>> compaction_due(60, 60 * TARGET_FILE_BYTES)   # large files, each worth its place
    False
    """
    return files - max(1, math.ceil(size_bytes / TARGET_FILE_BYTES)) >= COMPACT_AT


def compact(spark: Session, view: str) -> Upkeep | None:
    """Compact the store of ``view`` (a view or a state table) if it is due (a logged
    store: fold its log, :func:`fold_log`); what was done, or None. Another write of the
    store that commits first wins: the compaction is then left to the next refresh."""
    store = store_name(view)
    log = DeltaLogReader(spark, store)
    if is_logged(log.properties()):  # its log folded in is its compaction
        return fold_log(spark, view, log)
    files, size = log.file_count(), log.size_in_bytes()
    if files is None or size is None or not compaction_due(files, size):
        return None
    start = time.perf_counter()
    settings = {
        "spark.databricks.delta.optimize.minFileSize": str(SMALL_FILE_BYTES),
        "spark.databricks.delta.optimize.maxFileSize": str(TARGET_FILE_BYTES),
    }
    try:
        with session_settings(spark, settings):
            spark.sql(f"OPTIMIZE {store}").collect()  # pyright: ignore[reportUnknownMemberType]
    except (PySparkException, Py4JJavaError) as error:
        if classify(error) is Failure.LOST_RACE:
            return None
        raise
    return Upkeep(
        store,
        "compact",
        files,
        DeltaLogReader(spark, store).file_count(),
        time.perf_counter() - start,
    )


LOG_FOLD_AT = "spark.ivm.logFoldAt"
DEFAULT_LOG_FOLD_AT = 8
"""How many commits in a row that added files alone (appends, and the CREATE's among them) a
logged store takes before its log is folded in: a read of the view folds at most this many
refreshes' changes."""


def log_fold_due(log: DeltaLogReader, at: int) -> bool:
    """Whether the last ``at`` commits of a logged store all appended (none folded the log
    in, recomputed or replaced it)."""
    latest = log.version()
    if latest + 1 < at:  # fewer commits than that
        return False
    commits = log.commits(latest - at, latest) or []
    return len(commits) == at and all(c.inserts_only for c in commits)


def fold_log(spark: Session, view: str, log: DeltaLogReader) -> Upkeep | None:
    """Fold the logged rows of the logged store of ``view`` (``log``: its log) into its
    stored rows, if due (:func:`log_fold_due`); what was done, or None. A refresh that
    appends meanwhile keeps its rows: the MERGE removes only the files it read, and another
    fold that commits first wins."""
    properties, store = log.properties(), log.table
    if not log_fold_due(log, max(1, int(number_setting(spark, LOG_FOLD_AT, DEFAULT_LOG_FOLD_AT)))):
        return None
    start, files = time.perf_counter(), log.file_count()
    compiled = compile_definition(spark, view, properties)
    statement = codegen.compaction_statement(compiled.store, store, column_types(spark, store))
    try:
        with session_settings(spark, settings(properties) or {}):
            spark.sql(statement.sql(DIALECT)).collect()  # pyright: ignore[reportUnknownMemberType]
    except (PySparkException, Py4JJavaError) as error:
        if classify(error) is Failure.LOST_RACE:
            return None
        raise
    seconds = time.perf_counter() - start
    return Upkeep(store, "fold", files, DeltaLogReader(spark, store).file_count(), seconds)


def compact_after_refresh(spark: Session, view: str) -> Upkeep | None:
    """:func:`compact` after a refresh of ``view`` committed: a compaction that fails is
    reported in what it returns rather than raised, since the refresh did its work (the
    next refresh tries again)."""
    start = time.perf_counter()
    try:
        return compact(spark, view)
    except (PySparkException, Py4JJavaError) as error:
        return Upkeep(
            store_name(view), "compact", None, None, time.perf_counter() - start, one_line(error)
        )


def vacuum(spark: Session, view: str) -> Upkeep:
    """Delete the files of the store of ``view`` that no version within its retention
    needs (``VACUUM``, at the store's ``delta.deletedFileRetentionDuration``).

    ``VACUUM … LITE`` finds the files to delete in the log rather than by listing the
    table's directory (a tenth of the time here); where the log no longer reaches back to
    the last VACUUM (a store never vacuumed for longer than its log retention), a full
    ``VACUUM`` runs instead."""
    store = store_name(view)
    start = time.perf_counter()
    files = DeltaLogReader(spark, store).file_count()
    try:
        spark.sql(f"VACUUM {store} LITE").collect()  # pyright: ignore[reportUnknownMemberType]
    except (PySparkException, Py4JJavaError) as error:
        if "LITE" not in str(error):
            raise
        spark.sql(f"VACUUM {store}").collect()  # pyright: ignore[reportUnknownMemberType]
    return Upkeep(store, "vacuum", files, files, time.perf_counter() - start)


def upkeep(spark: Session, view: str, *, vacuum_too: bool = True) -> list[Upkeep]:
    """The upkeep of the materialized view ``view``: its state tables' stores and its own
    compacted where due, then (``vacuum_too``) vacuumed."""
    view = qualified_name(spark, view)
    view_properties(spark, view)
    tables = [*state_tables(spark, view), view]
    done = [step for table in tables if (step := compact(spark, table)) is not None]
    if vacuum_too:
        done += [vacuum(spark, table) for table in tables]
    return done


def check_retention(view: str, seconds: int) -> None:
    """Refuse a RETENTION of ``view`` shorter than :data:`MIN_RETENTION_SECONDS`."""
    if seconds < MIN_RETENTION_SECONDS:
        raise CatalogError(
            f"RETENTION of {view}: {seconds} seconds is too short: a refresh "
            f"or a reader of the view's changes could lose the files it reads",
            hint=f"set at least INTERVAL '{MIN_RETENTION_SECONDS // 3600}' HOUR",
        )


def retention_properties(seconds: int) -> dict[str, str]:
    """The store properties that keep a view's change data and earlier versions readable
    for ``seconds``: VACUUM keeps the files they need, log cleanup the commits."""
    interval = f"interval {seconds} seconds"
    return {DELETED_FILE_RETENTION: interval, LOG_RETENTION: interval}
