"""Fast reads of a Delta table's state from its transaction log.

A refresh asks a few questions of each table it touches: its latest version, its id, a table
property, the ``userMetadata`` of a commit, and what the commits since a version did (see
:class:`Commit`). Delta's public API answers them through
``DESCRIBE HISTORY``/``DESCRIBE DETAIL`` jobs (~0.5 s each); the table's ``DeltaLog`` in the
JVM answers from the cached log in ~0.05 s. The log is Delta's internal API, used here only,
for the exact Delta version ivm pins; should it ever fail, and in a Spark Connect session
(which has no JVM), SQL answers instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ivm.names import split
from ivm.runtime.log.schema_history import MAPPING_OFF, schema_changes
from ivm.runtime.spark.connect import Session, is_connect, java_class, java_session, metastore
from ivm.runtime.spark.failures import FILE_NOT_FOUND, java_classes

CDF_PROPERTY = "delta.enableChangeDataFeed"
MAPPING_PROPERTY = "delta.columnMapping.mode"

REPLACING_OPERATIONS = (
    "CREATE OR REPLACE TABLE",
    "REPLACE TABLE",
    "TRUNCATE",
    "CREATE OR REPLACE TABLE AS SELECT",
    "REPLACE TABLE AS SELECT",
)
"""Operations after which a table's earlier rows are not what its change data feed deletes."""

SCHEMA_OPERATIONS = (
    "ADD COLUMNS",
    "DROP COLUMNS",
    "RENAME COLUMN",
    "CHANGE COLUMN",
    "REPLACE COLUMNS",
    "REMOVE COLUMN MAPPING",
)
"""Operations that change a table's columns, as ``DESCRIBE HISTORY`` names them."""

_read_once: ContextVar[dict | None] = ContextVar("ivm_read_once", default=None)
T = TypeVar("T")


@contextmanager
def reading_each_log_once(reuse: bool = False):
    """In the block, :meth:`DeltaLogReader.of` reads each table's log once, and
    :func:`once` answers each question once: the state a refresh plans from. (A reader made
    directly reads the log anew, as the check of a refresh's own commit must.) ``reuse``:
    the answers of an enclosing block stand in this one too (nothing was written since)."""
    token = _read_once.set(_read_once.get() if reuse and _read_once.get() is not None else {})
    try:
        yield
    finally:
        _read_once.reset(token)


def once(key: tuple[object, ...], read: Callable[[], T]) -> T:
    """``read()``, the first time ``key`` is asked for in a block of
    :func:`reading_each_log_once`; every time outside one."""
    answers = _read_once.get()
    if answers is None:
        return read()
    if key not in answers:
        answers[key] = read()
    return answers[key]


@dataclass(frozen=True)
class Commit:
    """What one commit of a table did, as far as a refresh that reads its change cares."""

    version: int
    timestamp_ms: int
    operation: str
    metadata_changed: bool  # its schema or properties were set
    change_bytes: int | None  # what a change data feed read of it scans, if known
    change_data_feed: bool | None = None  # whether its metadata, if it set any, keeps
    # the change data feed on
    inserts_only: bool | None = None  # it added rows and removed none: no data file
    # removed and no change data file written
    schema: str | None = None  # the schema its metadata set (Delta's JSON, with
    # column mapping's physical names), where the
    # log was read directly
    column_mapping: str | None = None  # the column mapping mode its metadata set

    @property
    def replaces_table(self) -> bool:
        return self.operation in REPLACING_OPERATIONS


READ_BY_NAME = 8
"""Ranges of at most this many commits are read by file name rather than by listing the log
(see :meth:`DeltaLogReader._changes`): at ~5 ms a commit, at most what listing a young
log costs (~35 ms), and a sixth of listing one of 2,000 commits."""


class DeltaLogReader:
    """Reads of one table's log; ``table`` is ``db.name`` (quoted where needed)."""

    def __init__(self, spark: Session, table: str):
        self.spark, self.table = spark, table
        self._detail: Row | None = None
        self._version: int | None = None
        self._commit_infos: dict[int, tuple[str | None, int | None]] = {}
        self._actions: dict[int, list] = {}  # a commit's actions, read once: a commit file
        # never changes (a refresh reads them to size its change, then to read it)
        self._is_view = False  # the metastore says the name is a view's
        if is_connect(spark):  # no JVM here: the log is read through SQL
            self._log = self._snapshot = None
            return
        try:
            db, name = split(table)
            # the metastore's entry, asked for once: Delta's forTable(name) asks after the
            # database too, and costs 1.5-2 times as much
            found = metastore(spark).getTable(db, name)
            if found.tableType().name() == "VIEW":  # a view has no log, and is no Delta table
                self._log = self._snapshot = None
                self._is_view = True
                return
            delta_log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog")
            self._log = delta_log.forTable(java_session(spark), found)
            empty = _scala_none(spark)
            self._snapshot = self._log.update(False, empty, empty)
        except Exception:  # internal API unavailable: fall back to the public one
            self._log = self._snapshot = None

    @classmethod
    def of(cls, spark: Session, table: str) -> DeltaLogReader:
        """A reader of ``table``'s log, the same one for every call in a block of
        :func:`reading_each_log_once`."""
        return once(("log", table), lambda: cls(spark, table))

    def location(self) -> str | None:
        """Where the table's files are, as its log says; None if unknown."""
        return None if self._log is None else str(self._log.dataPath().toString())

    def snapshot_at(self, version: int):
        """The JVM's snapshot of ``version``; None where the log is read through SQL or no
        longer holds that version."""
        if self._log is None:
            return None
        none = _scala_none(self.spark)
        try:
            return self._log.getSnapshotAt(version, none, none)
        except Py4JJavaError:
            return None

    def actions(self, first: int, last: int) -> list[tuple[int, list]]:
        """``(version, actions)`` of the commits ``first…last`` the log holds, in order (the
        JVM's actions); none where the log is read through SQL."""
        return [] if self._log is None else self._changes(self._log, first, last)

    def is_delta_table(self) -> bool:
        """Whether the table exists and is a Delta table (where the log is read directly: has
        a committed version)."""
        if self._snapshot is not None:
            return int(self._snapshot.version()) >= 0
        if self._is_view:
            return False
        try:
            return self.detail().format == "delta"
        except AnalysisException:  # no such table
            return False

    def schema(self) -> StructType:
        """The table's schema, as its log's metadata holds it (as Spark reads the table where
        the log is read through SQL)."""
        if self._snapshot is None:
            return self.spark.table(self.table).schema
        return StructType.fromJson(json.loads(self._snapshot.metadata().schemaString()))

    def schema_fingerprint(self) -> str | None:
        """The table's id and schema, as its log's metadata holds them; None if unknown."""
        if self._snapshot is None:
            return None
        metadata = self._snapshot.metadata()
        return f"{metadata.id()} {metadata.schemaString()}"

    def version(self) -> int:
        """The latest committed version, as the reader first found it: the snapshot it took
        as it was made, or, where the log is read through SQL, the first answer. A refresh
        asks its reader of the store for the version its record was read at, and its write
        is the idempotent transaction of that version: a later answer, after another
        refresh committed, would let both commits stand."""
        if self._snapshot is not None:
            return int(self._snapshot.version())
        if self._version is None:
            self._version = int(_only_row(describe_history(self.spark, self.table, 1)).version)
        return self._version

    def table_id(self) -> str:
        """The table's id, which Delta gives a table when it creates it: a table dropped and
        created again under the same name has another."""
        if self._snapshot is not None:
            return str(self._snapshot.metadata().id())
        return self.detail().id

    def properties(self) -> dict[str, str]:
        """The table's properties."""
        if self._snapshot is not None:
            configuration = self._snapshot.metadata().configuration()
            keys = configuration.keys().iterator()
            result = {}
            while keys.hasNext():
                key = keys.next()
                result[key] = configuration.apply(key)
            return result
        return dict(self.detail().properties or {})

    def partition_columns(self) -> list[str]:
        """The columns the table is partitioned by."""
        if self._snapshot is not None:
            columns = self._snapshot.metadata().partitionColumns()
            return [columns.apply(i) for i in range(columns.size())]
        return list(self.detail().partitionColumns)

    def detail(self) -> Row:
        """The table's ``DESCRIBE DETAIL`` row, read once (where the log cannot be read
        directly)."""
        if self._detail is None:
            self._detail = _only_row(describe_detail(self.spark, self.table))
        return self._detail

    def _detail_number(self, field: str) -> int | None:
        """A number of the table's detail; None for a table that does not exist (yet), such
        as the state table of a view being explained before its CREATE."""
        try:
            return int(self.detail()[field])
        except AnalysisException:
            return None

    def size_in_bytes(self) -> int | None:
        """The size of the latest version's data files; None where the table does not exist.

        Delta writes it into each version's checksum file (``<version>.crc``), read with the
        log; where that file is missing, the snapshot's state is computed for it (three
        Spark jobs over the log's checkpoint and commits, ~0.3 s)."""
        if self._snapshot is None:
            return self._detail_number("sizeInBytes")
        checksum = self._snapshot.checksumOpt()
        if checksum.isDefined():
            return int(checksum.get().tableSizeBytes())
        return int(self._snapshot.sizeInBytes())

    def file_count(self) -> int | None:
        """How many data files the latest version has (from its checksum file where there is
        one, else from the snapshot's state); None where the table does not exist."""
        if self._snapshot is None:
            return self._detail_number("numFiles")
        checksum = self._snapshot.checksumOpt()
        if checksum.isDefined():
            return int(checksum.get().numFiles())
        return int(self._snapshot.numOfFiles())

    def schema_at(self, version: int):
        """The table's schema at ``version``."""
        return (
            self.spark.read.format("delta").option("versionAsOf", version).table(self.table).schema
        )

    def schema_changes(self, after: int, commits: list[Commit]) -> list[str]:
        """The commits among ``commits``, the ones after version ``after``, that changed a
        column (see :mod:`ivm.runtime.log.schema_history`), each as ``version N (OPERATION):
        what changed``. Where the log is read through SQL, which shows no physical names, a
        commit is judged by its operation, and the schemas at both ends are compared."""
        if not any(c.metadata_changed for c in commits):
            return []
        if self._log is not None:
            none = _scala_none(self.spark)
            try:
                metadata = self._log.getSnapshotAt(after, none, none).metadata()
            except Py4JJavaError:  # the log no longer holds what version ``after`` was
                first = next(c for c in commits if c.metadata_changed)
                return [
                    f"version {first.version} ({first.operation}) set the table's "
                    f"metadata, and its schema before is no longer in the log"
                ]
            mode = metadata.configuration().get(MAPPING_PROPERTY)
            return schema_changes(
                (metadata.schemaString(), mode.get() if mode.isDefined() else MAPPING_OFF), commits
            )
        found = [
            f"version {c.version} ({c.operation})"
            for c in commits
            if c.operation in SCHEMA_OPERATIONS
        ]
        if not found and self.schema_at(after) != self.schema_at(commits[-1].version):
            found = [f"after version {after}"]
        return found

    def commits(self, after: int, upto: int) -> list[Commit] | None:
        """The commits ``(after, upto]``; None if some of them are no longer in the log.

        A commit's ``change_bytes`` is what Delta's change data feed reads for it: its change
        data files where it wrote some, else the data files it added and removed.
        """
        if self._log is None:
            return self._commits_from_history(after, upto)
        found = []
        for version, actions in self._changes(self._log, after + 1, upto):
            found.append(self._summary(version, actions))
        if [c.version for c in found] != list(range(after + 1, upto + 1)):
            return None
        return found

    def _changes(self, log, first: int, last: int) -> list[tuple[int, list]]:
        """``(version, actions)`` of the commits ``first…last`` that ``log`` (the JVM's
        ``DeltaLog``) holds, in order.

        Delta's ``getChanges`` lists the whole ``_delta_log`` directory to find them (on a
        local, HDFS or ADLS file system: about 0.1 ms per commit the log keeps, so 0.25 s
        per call after 2,000 commits). A short range is read by file name instead, which
        costs the same after a million commits as after ten; a file that is not there (a
        commit removed by log cleanup, or one not yet backfilled from a commit
        coordinator) is left to ``getChanges``."""
        if all(v in self._actions for v in range(first, last + 1)):
            return [(v, self._actions[v]) for v in range(first, last + 1)]
        if last - first + 1 <= READ_BY_NAME:
            by_name, conf = [], log.newDeltaHadoopConf()
            for version in range(first, last + 1):
                if (actions := self._actions_by_name(log, conf, version)) is None:
                    break
                by_name.append((version, actions))
            else:
                self._actions.update(by_name)
                return by_name
        changes, listed = log.getChanges(first, False), []
        while changes.hasNext():
            pair = changes.next()
            if int(pair._1()) > last:
                break
            actions = pair._2()
            listed.append((int(pair._1()), [actions.apply(i) for i in range(actions.size())]))
        self._actions.update(listed)
        return listed

    def _actions_by_name(self, log, conf, version: int) -> list | None:
        """The actions of the commit file of ``version`` (read with the Hadoop settings
        ``conf``); None if there is no such file."""
        names = java_class(self.spark, "org.apache.spark.sql.delta.util.FileNames")
        path = names.unsafeDeltaFile(log.logPath(), version)
        try:
            lines = log.store().read(path, conf)
        except Py4JJavaError as error:
            if java_classes(error)[:1] == [FILE_NOT_FOUND]:
                return None
            raise
        from_json = java_class(self.spark, "org.apache.spark.sql.delta.actions.Action").fromJson
        return [from_json(lines.apply(i)) for i in range(lines.size())]

    @staticmethod
    def _summary(version: int, actions: list) -> Commit:
        operation, timestamp, metadata, feed, schema, mapping = "", 0, False, None, None, None
        cdc_bytes, file_bytes, has_cdc, removes = 0, 0, False, False
        for action in actions:
            kind = action.getClass().getSimpleName()
            if kind == "CommitInfo":
                operation, timestamp = action.operation(), int(action.timestamp().getTime())
            elif kind == "Metadata":
                metadata = True
                setting = action.configuration().get(CDF_PROPERTY)
                feed = setting.isDefined() and setting.get().lower() == "true"
                schema, mode = action.schemaString(), action.configuration().get(MAPPING_PROPERTY)
                mapping = mode.get() if mode.isDefined() else MAPPING_OFF
            elif kind == "AddCDCFile":
                has_cdc, cdc_bytes = True, cdc_bytes + int(action.size())
            elif kind == "AddFile" and action.dataChange():
                file_bytes += int(action.size())
            elif kind == "RemoveFile" and action.dataChange():
                size = action.size()
                file_bytes += int(size.get()) if size.isDefined() else 0
                removes = True
        return Commit(
            version,
            timestamp,
            operation,
            metadata,
            cdc_bytes if has_cdc else file_bytes,
            feed,
            not (has_cdc or removes),
            schema,
            mapping,
        )

    def _commits_from_history(self, after: int, upto: int) -> list[Commit] | None:
        rows = (
            describe_history(self.spark, self.table)
            .where((F.col("version") > after) & (F.col("version") <= upto))
            .orderBy("version")
            .collect()
        )
        if [r.version for r in rows] != list(range(after + 1, upto + 1)):
            return None
        return [
            Commit(
                r.version,
                int(r.timestamp.timestamp() * 1000),
                r.operation,
                r.operation in (*SCHEMA_OPERATIONS, "SET TBLPROPERTIES", "UNSET TBLPROPERTIES")
                or r.operation in REPLACING_OPERATIONS,
                None,
            )
            for r in rows
        ]

    def _commit_info(self, version: int):
        """The JVM's ``CommitInfo`` action of the commit that made ``version``; None where
        the log no longer holds it."""
        assert self._log is not None
        for _, actions in self._changes(self._log, version, version):
            for action in actions:
                if action.getClass().getSimpleName() == "CommitInfo":
                    return action
        return None

    def commit_info(self, version: int) -> tuple[str | None, int | None]:
        """The ``userMetadata`` of the commit that made ``version``, and its time in ms
        (None, None where the log no longer holds it)."""
        if self._log is not None:
            if (action := self._commit_info(version)) is None:
                return None, None
            metadata = action.userMetadata()
            return (
                metadata.get() if metadata.isDefined() else None,
                int(action.timestamp().getTime()),
            )
        if version not in self._commit_infos:  # a query per version: a commit does not change
            row = (
                describe_history(self.spark, self.table)
                .where(F.col("version") == version)
                .select("userMetadata", "timestamp")
                .first()
            )
            self._commit_infos[version] = (
                (row.userMetadata, int(row.timestamp.timestamp() * 1000)) if row else (None, None)
            )
        return self._commit_infos[version]

    def operation_metrics(self, version: int) -> dict[str, str]:
        """The ``operationMetrics`` of the commit that made ``version`` (empty where the log
        no longer holds it or the commit recorded none)."""
        if self._log is not None:
            action = self._commit_info(version)
            metrics = None if action is None else action.operationMetrics()
            if metrics is None or not metrics.isDefined():
                return {}
            found, entries = {}, metrics.get().iterator()
            while entries.hasNext():
                entry = entries.next()
                found[str(entry._1())] = str(entry._2())
            return found
        row = (
            describe_history(self.spark, self.table)
            .where(F.col("version") == version)
            .select("operationMetrics")
            .first()
        )
        return dict(row.operationMetrics or {}) if row else {}

    def first_missing_change(self, after: int, upto: int) -> int | None:
        """The first of the commits ``(after, upto]`` some of whose change files are gone
        from the file system (deleted by a VACUUM, or by hand): the change data files it
        wrote, or where it wrote none the data files it added and removed, which a change
        data feed reads instead. None where every file checked is there.

        Each file's existence is asked of the Hadoop file system of the table, at most
        :data:`CHANGE_FILES_CHECKED` of them, the oldest commits' first (a VACUUM deletes
        those first). Not checked where the log is read through SQL (a Spark Connect
        session has no JVM to ask): None."""
        if self._log is None:
            return None
        base = self._log.dataPath()
        files = base.getFileSystem(self._log.newDeltaHadoopConf())
        operations = java_class(self.spark, "org.apache.spark.sql.delta.util.DeltaFileOperations")
        checked = 0
        for first in range(after + 1, upto + 1, READ_BY_NAME):
            last = min(first + READ_BY_NAME - 1, upto)
            for version, actions in self._changes(self._log, first, last):
                for path in _change_files(actions):
                    if not files.exists(operations.absolutePath(base.toString(), path)):
                        return version
                    checked += 1
                    if checked == CHANGE_FILES_CHECKED:
                        return None
        return None


CHANGE_FILES_CHECKED = 32
"""How many change files :meth:`DeltaLogReader.first_missing_change` looks for, at most: a
DESCRIBE of a view that lags far behind stays cheap (a request to the file system for each,
and the commits holding them read; about 0.1 s here)."""


def _change_files(actions: list) -> list[str]:
    """The paths of the files a change data feed reads for a commit of ``actions``: its
    change data files, or where it wrote none, the data files it added and removed."""
    written = [a.path() for a in actions if a.getClass().getSimpleName() == "AddCDCFile"]
    return written or [
        a.path()
        for a in actions
        if a.getClass().getSimpleName() in ("AddFile", "RemoveFile") and a.dataChange()
    ]


def _scala_none(spark: Session):
    """Scala's ``None``, for the optional arguments of the log's methods."""
    return java_class(spark, "scala.Option").empty()


def rows_written(spark: Session, table: str) -> int:
    """The rows the latest commit of ``table`` wrote: ``numOutputRows`` of its operation
    metrics (a CREATE … AS SELECT's, an overwrite's or a replaceWhere's), read from the log
    in milliseconds; counted only where the commit did not record them. A count costs a
    planned query and a job even where Delta answers it from the files' statistics (0.25 s
    of a small view's 1.4 s CREATE), and scans the partition a replaceWhere wrote."""
    log = DeltaLogReader(spark, table)
    rows = log.operation_metrics(log.version()).get("numOutputRows")
    return spark.table(table).count() if rows is None else int(rows)


def describe_history(spark: Session, table: str, limit: int | None = None) -> DataFrame:
    """The commits of ``table``, newest first (at most ``limit``), as ``DESCRIBE HISTORY``
    gives them: SQL, which a Spark Connect session runs as a classic one does."""
    return spark.sql(f"DESCRIBE HISTORY {table}" + ("" if limit is None else f" LIMIT {limit}"))


def describe_detail(spark: Session, table: str) -> DataFrame:
    """``DESCRIBE DETAIL table``: its format, id, location, size, files and properties."""
    return spark.sql(f"DESCRIBE DETAIL {table}")


def _only_row(frame: DataFrame) -> Row:
    """The row of a one-row answer of Delta's: a table's detail, or its latest commit (a
    Delta table has at least its creating one)."""
    row = frame.first()
    assert row is not None
    return row
