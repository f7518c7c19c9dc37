"""Partition overwrite: the rows of one partition of the store overwritten with the
query's, at the source versions the store reflects (a repair or a backfill)."""

from __future__ import annotations

from ivm import codegen
from ivm.runtime.catalog.history import Technique
from ivm.runtime.log.delta_log import rows_written
from ivm.runtime.refresh.commit import LostRace, bound_reads, committed_write
from ivm.runtime.refresh.techniques.change import Change
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session

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
