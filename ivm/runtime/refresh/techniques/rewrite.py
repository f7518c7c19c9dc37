"""Rewrite: a small store overwritten, in one commit, with the change folded into its rows
(:func:`ivm.codegen.store.refolded_query`). A MERGE first searches the store for the rows
the change touches (a join, its own Spark jobs) and then rewrites the files that hold them;
a store of a few files is rewritten whole by the one job that reads it and the change, sums
them by key and writes the result. The store's change data feed then holds every row
deleted and inserted again: a view that reads the view takes its net change, in which a row
deleted and inserted alike cancels out (:mod:`~ivm.runtime.refresh.sources`), and its
changelog compares the two by key (:mod:`~ivm.runtime.observation.changelog`)."""

from __future__ import annotations

from sqlglot import exp

from ivm import codegen
from ivm.runtime.catalog.history import Technique
from ivm.runtime.catalog.tables import schema_types
from ivm.runtime.log.delta_log import DeltaLogReader, rows_written
from ivm.runtime.log.file_lists import DataFile, Listing, listed
from ivm.runtime.refresh.commit import Overwrite, spark_errors
from ivm.runtime.refresh.techniques.change import STORE_CHANGE, Change, committed
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import (
    DEFAULT_REWRITE_MAX_BYTES,
    REWRITE_MAX_BYTES,
    evaluation_settings,
    number_setting,
    reads_files,
    session_settings,
)

TECHNIQUE = Technique.REWRITE
CONSTRAINT_PROPAGATION = "spark.sql.constraintPropagation.enabled"
"""Off for the rewrite: Spark 4.0's inference of a union's constraints fails (``key not
found``) where one side is the kept change of a view that reads views; a rewrite's plan (a
union summed by key, then a filter of the sums) gains nothing from inferred constraints."""

STORED_ROWS = "_ivm_stored_rows"
"""The temporary view of the stored rows, read from the files the store's log lists."""


def rewrites(spark: Session, store: str) -> bool:
    """Whether the merged ``store`` is small enough to take a change rewritten: at most
    ``spark.ivm.rewriteMaxBytes``, as the checksum of its latest version says."""
    largest = number_setting(spark, REWRITE_MAX_BYTES, DEFAULT_REWRITE_MAX_BYTES)
    size = DeltaLogReader.of(spark, store).size_in_bytes()
    return size is not None and 0 < largest >= size


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """Overwrite ``write``'s store with its rows and ``change``'s folded by key."""
    assert change is not None and change.rows
    types = schema_types(write.schema)
    rows = exp.select("*").from_(STORE_CHANGE)
    with spark_errors(write.view, spark, write.compiled.sources):
        stored, files = _stored_rows(spark, write)
    try:
        folded = codegen.refolded_query(write.compiled.store, stored, rows, types)
        return _rewritten(spark, write, change, folded, files)
    finally:
        if stored == STORED_ROWS:
            spark.catalog.dropTempView(STORED_ROWS)


def _stored_rows(spark: Session, write: Write) -> tuple[str, tuple[DataFile, ...] | None]:
    """The relation a rewrite reads the stored rows from, and the store's files at the
    version it read where its log listed them (:mod:`~ivm.runtime.log.file_lists`): those
    files, as :data:`STORED_ROWS`, so that Delta plans no read of the store (its listing of
    the store's files is a Spark job of its own); or, where there are none, or they are not
    listed, the store itself."""
    if not reads_files(spark):
        return write.store, None
    listing = listed(spark, write.store, write.store_version)
    if not isinstance(listing, Listing):
        return write.store, None
    if not listing.files:
        return write.store, ()
    listing.read(spark).createOrReplaceTempView(STORED_ROWS)
    return STORED_ROWS, listing.files


def _rewritten(
    spark: Session,
    write: Write,
    change: Change,
    folded: exp.Query,
    files: tuple[DataFile, ...] | None,
) -> Outcome:
    """The store, whose files are ``files`` where they are known, overwritten with the rows
    of ``folded``: through Delta's transaction API where the files are known
    (:class:`~ivm.runtime.refresh.commit.Overwrite`), else by ``INSERT OVERWRITE``."""
    statement = (
        codegen.overwrite_statement(write.store, folded)
        if files is None
        else Overwrite(folded, files, write.schema)
    )
    store_bytes = DeltaLogReader.of(spark, write.store).size_in_bytes()
    read = None if store_bytes is None else store_bytes + change.kept_bytes
    settings = evaluation_settings(spark, read) | {CONSTRAINT_PROPAGATION: "false"}
    with session_settings(spark, settings):
        done = committed(spark, write, change, statement, TECHNIQUE)
    if not isinstance(done, list):
        return done
    return write.result(TECHNIQUE, rows_inserted=rows_written(spark, write.store))
