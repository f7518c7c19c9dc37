"""Full replace: the store overwritten with the query's result, at the record's source
versions; where the query's columns are not the store's, the store replaced in the same
commit, and the catalog view written anew."""

from __future__ import annotations

from pyspark.sql.types import StructType
from sqlglot import exp

from ivm import codegen
from ivm.names import DIALECT
from ivm.runtime.catalog.definition import view_properties
from ivm.runtime.catalog.history import Technique
from ivm.runtime.log.delta_log import DeltaLogReader, rows_written
from ivm.runtime.refresh.commit import (
    LostRace,
    bound_reads,
    committed_write,
    repair_catalog_view,
)
from ivm.runtime.refresh.techniques.change import Change
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session

TECHNIQUE = Technique.RECOMPUTE


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """Overwrite the store with the query's result at the record's source versions; where
    the query's columns are not the store's (a ``*`` expanded over a source's columns as they
    are now, or a source's column whose type changed), replace the store in the same commit,
    its properties and partitioning kept, and write the catalog view anew."""
    assert change is None  # a recompute reads no change
    view, compiled, store = write.view, write.compiled, write.store
    full = codegen.stored_query(compiled.store, compiled.full_query, write.logged)
    with bound_reads(spark, write.committing):
        reshaped = _columns_changed(spark, full, write.schema)
        statement = (
            _replacing(spark, store, full) if reshaped else codegen.overwrite_statement(store, full)
        )
        done = committed_write(spark, write.committing, statement, technique=TECHNIQUE)
    if isinstance(done, LostRace):
        return done
    if reshaped:
        schema = spark.table(store).schema
        repair_catalog_view(spark, view, compiled, view_properties(spark, view), schema)
    return write.result(TECHNIQUE, rows_inserted=rows_written(spark, store))


def _replacing(spark: Session, store: str, full: exp.Query) -> exp.Expr:
    """The statement that replaces ``store`` by the rows of ``full``, with the columns it
    gives, the store's properties and partitioning kept."""
    log = DeltaLogReader.of(spark, store)
    return codegen.create_table_statement(
        store,
        full,
        log.properties(),
        replace=True,
        partitioned_by=tuple(log.partition_columns()),
    )


def _columns_changed(spark: Session, query: exp.Query, store_schema: StructType) -> bool:
    """Whether the columns of ``query`` (the store's full query, its sources bound) are not
    those of the store's ``store_schema``, by name or type: a ``*`` expanded over a source's
    columns as they are now, or a source's column whose type changed (Delta's type
    widening), which an overwrite would cast to the old type."""
    wanted = spark.sql(query.sql(DIALECT)).schema  # pyright: ignore[reportUnknownMemberType]
    return [(f.name, f.dataType) for f in wanted] != [(f.name, f.dataType) for f in store_schema]
