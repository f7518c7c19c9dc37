"""Commits written through Delta's transaction API: a refresh's record alone, an append to
a logged store, and the overwrite of a small store.

A refresh whose change leaves every stored row as it is still commits, to record the source
versions its store reflects. Through SQL that commit is an ``UPDATE … WHERE FALSE`` under
Delta's idempotent-transaction settings, and Delta then looks up the table's transactions
(``txnVersion``), which reconstructs the state of the whole snapshot: 0.15–1 s for a commit
that writes no file.

Here the commit is Delta's ``OptimisticTransaction`` given one action, the
``SetTransaction(ivm:<view>, n)`` that the SQL path writes too. It asks for no lookup where
none is needed: a transaction that starts at store version ``n``, the version the refresh
read, has no later commit to look for, and registering the application id as read makes
Delta's conflict check refuse the commit if another write of the view commits first. Where
the store has moved on since ``n`` (a compaction, say), the lookup runs, as in SQL: a write
of ``(ivm:<view>, ≥ n)`` there means another refresh got there first.

A logged store's append (:mod:`~ivm.runtime.refresh.techniques.append`) is the files Delta
writes for the change's rows and the transaction, under the same rule: through SQL, Delta's
``INSERT`` looks up the transactions, a state reconstruction of three Spark jobs. An append
reads no stored row, so a fold of the log committed since ``n`` does not stop it.

A small store rewritten (:mod:`~ivm.runtime.refresh.techniques.rewrite`) is overwritten the
same way: the files Delta writes for the new rows, a ``remove`` of each file the store's log
lists at version ``n``, and the transaction. Through SQL, Delta's overwrite reconstructs the
snapshot's state to find the files it removes (a Spark job) and looks up the transactions;
here the files are those the refresh read the stored rows from, and a store that has moved
on since ``n`` is a lost race.

Classic sessions only: a Spark Connect client has no JVM, and commits through SQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import DataFrame

from ivm.names import split
from ivm.runtime.log.file_lists import DataFile
from ivm.runtime.spark.connect import Session, is_connect, java_class, java_session, metastore


def record_committed(spark: Session, table: str, app_id: str, read_version: int) -> bool | None:
    """Commit to the Delta table ``table`` the transaction ``(app_id, read_version)`` and no
    other action, with the ``userMetadata`` that ``spark``'s settings carry, as Delta's
    ``UPDATE`` of no row: True once committed; False where a commit of ``(app_id, ≥
    read_version)`` is in the log already (another write came first); None on a Connect
    session, where the caller commits through SQL. A write that commits while this one
    runs makes Delta raise its conflict (``ConcurrentTransactionException``)."""
    if is_connect(spark):
        return None
    with _transaction(spark, table) as txn:
        if not _first(txn, app_id, read_version):
            return False
        update = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Update")
        _commit(spark, txn, [_set_transaction(spark, app_id, read_version)], update(_none(spark)))
    return True


def append_committed(
    spark: Session, table: str, app_id: str, read_version: int, rows: DataFrame
) -> bool | None:
    """Append ``rows`` (of the Delta table ``table``'s columns and types) to ``table`` in the
    transaction ``(app_id, read_version)``, with the ``userMetadata`` that ``spark``'s
    settings carry, as Delta's ``INSERT``: its files written by Delta, no file removed.
    True once committed; False where a commit of ``(app_id, ≥ read_version)`` is in the log
    already (another write came first); None on a Connect session. The append reads no
    stored row, so a commit of another application since ``read_version`` (a fold of a
    logged store's log) does not stop it."""
    if is_connect(spark):
        return None
    with _transaction(spark, table) as txn:
        if not _first(txn, app_id, read_version):
            return False
        _commit(
            spark,
            txn,
            [*_written(txn, rows), _set_transaction(spark, app_id, read_version)],
            _write_operation(spark, "Append"),
        )
    return True


def overwrite_committed(
    spark: Session,
    table: str,
    app_id: str,
    read_version: int,
    rows: DataFrame,
    replaced: tuple[DataFile, ...],
) -> bool | None:
    """Overwrite the Delta table ``table``, whose files at ``read_version`` are ``replaced``,
    with ``rows`` (of its columns and types), in the transaction ``(app_id, read_version)``,
    with the ``userMetadata`` that ``spark``'s settings carry, as Delta's overwrite: its
    files written by Delta (statistics, constraints, partitions as a write of the table
    makes them), ``replaced`` removed. True once committed; False where the table has
    moved on since ``read_version`` (another commit came first: the files it replaces
    are no longer the table's); None on a Connect session. A commit that lands while this
    one runs makes Delta raise its conflict: it registers the whole table as read."""
    if is_connect(spark):
        return None
    with _transaction(spark, table) as txn:
        if txn.readVersion() != read_version:
            return False
        txn.readTxn().addOne(app_id)
        txn.readWholeTable()
        actions = _written(txn, rows)
        now = int(time.time() * 1000)
        parse = java_class(spark, "org.apache.spark.sql.delta.actions.Action").fromJson
        actions += [parse(json.dumps({"remove": _removal(file, now)})) for file in replaced]
        actions.append(_set_transaction(spark, app_id, read_version))
        _commit(spark, txn, actions, _write_operation(spark, "Overwrite"))
    return True


def _first(txn: Any, app_id: str, read_version: int) -> bool:
    """Whether ``txn`` is the first commit of ``(app_id, read_version)``, the application id
    registered as read so that Delta's conflict check refuses it if another such commit
    lands first: without a lookup where ``txn`` starts at ``read_version`` (no later commit
    to look for), else by Delta's lookup of the application's latest transaction."""
    if txn.readVersion() == read_version:
        txn.readTxn().addOne(app_id)  # what txnVersion registers, without its lookup
        return True
    return txn.txnVersion(app_id) < read_version


def _written(txn: Any, rows: DataFrame) -> list[Any]:
    """The ``add`` actions of the files ``txn`` writes for ``rows`` (Delta's write: its
    partitions, statistics and constraints)."""
    written = txn.writeFiles(rows._jdf)  # pyright: ignore[reportPrivateUsage]
    return [written.apply(i) for i in range(written.size())]


def _write_operation(spark: Session, mode: str) -> Any:
    """Delta's ``WRITE`` operation in the save ``mode`` (``Append``, ``Overwrite``)."""
    save_mode = getattr(java_class(spark, "org.apache.spark.sql.SaveMode"), mode)
    write = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Write")
    none = _none(spark)
    return write(save_mode, none, none, none)


def _removal(file: DataFile, now: int) -> dict[str, Any]:
    """The ``remove`` action of ``file`` at ``now`` (milliseconds), as the Delta protocol
    spells it: a change of data, with the file's partition values and size."""
    assert file.logged, file.path  # listed from the log, which spelled its path
    return {
        "path": file.logged,
        "deletionTimestamp": now,
        "dataChange": True,
        "extendedFileMetadata": True,
        "partitionValues": dict(file.partition),
        "size": file.size,
    }


@contextmanager
def _transaction(spark: Session, table: str) -> Iterator[Any]:
    """A Delta transaction of ``table`` started at its latest version, in a block in which
    ``spark``'s JVM session is the active one."""
    session = java_session(spark)
    db, name = split(table)
    found = metastore(spark).getTable(db, name)
    log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(session, found)
    with _active(spark, session):
        yield log.startTransaction(java_class(spark, "scala.Some")(found), _none(spark))


def _set_transaction(spark: Session, app_id: str, version: int) -> Any:
    """The action that records the transaction ``(app_id, version)``, dated now."""
    now = java_class(spark, "scala.Some")(int(time.time() * 1000))
    return java_class(spark, "org.apache.spark.sql.delta.actions.SetTransaction")(
        app_id, version, now
    )


def _commit(spark: Session, txn: Any, actions: list[Any], operation: Any) -> None:
    """Commit ``actions`` in ``txn`` as ``operation``."""
    listed = java_class(spark, "java.util.ArrayList")()
    for action in actions:
        listed.add(action)
    converters = java_class(spark, "scala.jdk.javaapi.CollectionConverters")
    txn.commit(converters.asScala(listed).toList(), operation)


def _none(spark: Session) -> Any:
    return java_class(spark, "scala.Option").empty()


@contextmanager
def _active(spark: Session, session: Any) -> Iterator[None]:
    """A block in which the JVM session ``session`` is the active one: Delta's transaction
    reads its settings (``userMetadata`` among them) from the active session."""
    sessions = java_class(spark, "org.apache.spark.sql.classic.SparkSession")
    previous = sessions.getActiveSession()
    sessions.setActiveSession(session)
    try:
        yield
    finally:
        if previous.isDefined():
            sessions.setActiveSession(previous.get())
        else:
            sessions.clearActiveSession()
