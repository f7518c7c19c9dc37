"""A commit of a refresh's record alone, written through Delta's transaction API.

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

Classic sessions only: a Spark Connect client has no JVM, and commits through SQL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ivm.names import split
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
    session, none = java_session(spark), java_class(spark, "scala.Option").empty()
    db, name = split(table)
    found = metastore(spark).getTable(db, name)
    log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(session, found)
    with _active(spark, session):
        txn = log.startTransaction(java_class(spark, "scala.Some")(found), none)
        if txn.readVersion() == read_version:
            txn.readTxn().addOne(app_id)  # what txnVersion registers, without its lookup
        elif txn.txnVersion(app_id) >= read_version:
            return False
        now = java_class(spark, "scala.Some")(int(time.time() * 1000))
        actions = java_class(spark, "java.util.ArrayList")()
        actions.add(
            java_class(spark, "org.apache.spark.sql.delta.actions.SetTransaction")(
                app_id, read_version, now
            )
        )
        converters = java_class(spark, "scala.jdk.javaapi.CollectionConverters")
        update = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Update")
        txn.commit(converters.asScala(actions).toList(), update(none))
    return True


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
