"""Append to a logged store: the change's rows (keys and accumulator changes) appended to
the store's log in one commit, which a read folds (a logged store's layout, ``log``:
:mod:`ivm.codegen.store`; :mod:`ivm.runtime.refresh.upkeep` folds the log when due). No
stored row is read or rewritten: the append does not depend on them. It is committed
through Delta's transaction API (:class:`~ivm.runtime.refresh.commit.Append`)."""

from __future__ import annotations

from sqlglot import exp

from ivm import codegen
from ivm.runtime.catalog.history import Technique
from ivm.runtime.catalog.tables import schema_types
from ivm.runtime.refresh.commit import Append
from ivm.runtime.refresh.techniques.change import STORE_CHANGE, Change, committed
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import evaluation_settings, session_settings

TECHNIQUE = Technique.APPEND


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """Append ``change``'s rows to the log of ``write``'s store. An append that Delta skips
    as done is found by the committed write's check."""
    assert change is not None and change.rows
    types = schema_types(write.schema)
    rows = exp.select("*").from_(STORE_CHANGE)
    insert = codegen.append_statement(write.compiled.store, write.store, rows, types)
    statement = Append(insert.expression, write.schema)
    with session_settings(spark, evaluation_settings(spark, change.kept_bytes)):
        done = committed(spark, write, change, statement, TECHNIQUE)
    if not isinstance(done, list):
        return done
    return write.result(TECHNIQUE, rows_inserted=change.rows)
