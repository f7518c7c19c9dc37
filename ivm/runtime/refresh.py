"""Refreshes: bring a materialized view up to its sources' latest versions, or recompute one
partition of it.

An incremental refresh folds the change of every source since the versions the store records
into the store by one MERGE; a full one overwrites the store with the query's result. Either
is one committed write (:mod:`ivm.runtime.commit`), retried from a fresh read of the store
when another refresh of the view committed first.
"""

from __future__ import annotations

import time

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from sqlglot import exp

from ivm import codegen
from ivm.compiler import CompiledView
from ivm.errors import CatalogError, SourceError, StateError
from ivm.names import DIALECT
from ivm.runtime.catalog import qualified_name, store_name
from ivm.runtime.commit import LostRace, committed_write, retrying, spark_errors
from ivm.runtime.definition import compile_definition
from ivm.runtime.delta_log import DeltaLogReader
from ivm.runtime.execution import (apply_settings, evaluation_settings, merge_settings,
                                   plan_settings, planned_read_bytes, session_settings)
from ivm.runtime.fallback import estimate, replaced_source
from ivm.runtime.graph import dependency_graph, materialized_views, refresh_order
from ivm.runtime.history import RefreshRecord, RefreshResult, latest_record
from ivm.runtime.phases import PhaseClock
from ivm.runtime.pruning import prune
from ivm.runtime.read_estimate import total_source_bytes
from ivm.runtime.sources import kept, latest_sources, release
from ivm.runtime.views import repair_catalog_view
from ivm.store import OVERFLOW, is_exact


class _Overflow(Exception):
    """A value overflowed its type while folding a change: the query alone can say whether
    it overflows too."""


STORE_CHANGE = "_ivm_store_change"
"""The temporary view of the change to the store, which the MERGE reads."""
MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"

OVERFLOW_REASON = "a sum overflowed its type while folding the change"
OVERFLOW_ERRORS = (OVERFLOW, "NUMERIC_VALUE_OUT_OF_RANGE", "ARITHMETIC_OVERFLOW",
                   "CAST_OVERFLOW")


def refresh_view(spark, name: str, *, full: bool = False) -> RefreshResult:
    """Bring the materialized view ``name`` up to its sources' latest versions.

    Incremental unless ``full`` or unless :func:`~ivm.runtime.fallback.estimate` finds a
    reason to recompute: the change of every source since the versions the store records is
    folded into the store by one MERGE. A full refresh overwrites the store with the query's
    result instead, which also repairs a store that disagrees with its sources.
    """
    clock = PhaseClock(spark)
    with clock.running():
        result = retrying(spark, qualified_name(spark, name),
                          lambda work, view, properties: _refresh(work, view, properties,
                                                                  full, clock))
    clock.count_jobs()
    result.phases = clock.phases
    return result


def refresh_all(spark, views: list[str] | None = None) -> list[RefreshResult]:
    """Refresh ``views`` (default: every materialized view) and the materialized views they
    read, each after the views it reads."""
    targets = materialized_views(spark) if views is None else [
        qualified_name(spark, v) for v in views]
    return [refresh_view(spark, view)
            for view in refresh_order(dependency_graph(spark, targets))]


def refresh_partition(spark, name: str, partition: dict[str, exp.Literal]) -> RefreshResult:
    """Recompute the rows of the view ``name`` in one partition (``{column: value}``) from
    scratch, leaving every other partition as it is: a repair or backfill.

    The partition is computed from the source versions the store already reflects, so the
    store stays one consistent state; a later refresh applies newer changes as usual.
    """
    return retrying(spark, qualified_name(spark, name),
                    lambda work, view, properties: _refresh_partition(work, view, properties,
                                                                      partition))


def _refresh_partition(spark, view: str, properties: dict[str, str],
                       partition: dict[str, exp.Literal]) -> RefreshResult:
    start = time.perf_counter()
    compiled = compile_definition(spark, view, properties)
    apply_settings(spark, plan_settings(compiled))
    store = store_name(view)
    log = DeltaLogReader(spark, store)
    partitioned_by = log.partition_columns()
    unknown = [c for c in partition if c not in partitioned_by]
    if unknown or not partition:
        raise CatalogError(f"{', '.join(unknown) or 'PARTITION ()'} is not a partition column "
                           f"of {view}", hint=f"{view} is partitioned by "
                                              f"{', '.join(partitioned_by) or 'nothing'}")
    repair_catalog_view(spark, view, compiled, properties)
    store_version = log.version()
    last = latest_record(log)[1]
    consumed = last.sources
    _, ids = latest_sources(spark, compiled.sources)
    if replaced := replaced_source(last.table_ids, ids):
        raise SourceError(f"{view} cannot recompute a partition: {replaced}",
                          hint=f"run REFRESH MATERIALIZED VIEW {view}")
    spec = ", ".join(f"{c} = {v.sql(DIALECT)}" for c, v in partition.items())
    predicate = exp.and_(*(exp.column(c).eq(v) for c, v in partition.items()))
    record = RefreshRecord("partition", consumed, reason=f"PARTITION ({spec})",
                           table_ids=last.table_ids)
    evaluation = evaluation_settings(spark, total_source_bytes(spark, compiled.sources))
    with session_settings(spark, evaluation), committed_write(
            spark, view, compiled, record, stage="refresh", read_version=store_version) as commit:
        commit(codegen.replace_where_statement(store, compiled.full_query, predicate))
    rows = spark.table(store).where(predicate.sql(DIALECT)).count()
    return RefreshResult(view, "partition", consumed, consumed, rows_inserted=rows,
                         reason=record.reason, seconds=time.perf_counter() - start)


def _refresh(spark, view: str, properties: dict[str, str], full: bool,
             clock: PhaseClock) -> RefreshResult:
    start = time.perf_counter()
    with clock.phase("plan"):
        compiled = compile_definition(spark, view, properties)
        apply_settings(spark, plan_settings(compiled))
        store = store_name(view)
        schema = spark.table(store).schema
        if tuple(schema.names) != compiled.store.columns:
            raise StateError(f"the definition of {view} no longer matches its store (did a "
                             f"source's schema change?)", hint=f"recreate it: CREATE OR "
                             f"REPLACE MATERIALIZED VIEW {view} AS ...")
        repair_catalog_view(spark, view, compiled, properties)
    with clock.phase("versions"), spark_errors(view):
        log = DeltaLogReader.of(spark, store)
        store_version = log.version()
        last = latest_record(log)[1]
        previous = last.sources
        current, ids = latest_sources(spark, compiled.sources)
        reason = f"REFRESH {view} FULL" if full else None
        if not full and set(previous) != set(current):
            reason = "the store records other sources than the definition reads"
        if reason is None:
            reason = replaced_source(last.table_ids, ids)
        if reason is None and previous == current:
            return RefreshResult(view, "noop", current, previous,
                                 seconds=time.perf_counter() - start)
        read_bytes = None
        if reason is None:
            reason = _inexact_sums(compiled, schema)
        if reason is None:
            change = estimate(spark, previous, current)
            reason, read_bytes = change.full_recompute_reason, change.change_bytes
    result = None
    if reason is None:
        try:
            result = _write(spark, view, compiled, store_version, previous, current, ids,
                            None, read_bytes, schema, clock)
        except SourceError as error:    # a change data file was VACUUMed
            reason = error.message
        except _Overflow:
            reason = OVERFLOW_REASON
    if result is None:   # not incremental, for ``reason``
        total = total_source_bytes(spark, current)
        with session_settings(spark, evaluation_settings(spark, total)):
            result = _write(spark, view, compiled, store_version, previous, current, ids,
                            reason, total, schema, clock)
    result.seconds = time.perf_counter() - start
    return result


def _merge_settings(spark, store: str, change_bytes: int | None) -> dict[str, str]:
    """Settings for the MERGE into ``store`` of a change computed from ``change_bytes`` (at
    most its size): its source, the change to the store, is kept already, so Delta need not
    materialize it again; those for the store's size
    (:func:`~ivm.runtime.execution.merge_settings`); and those for the little data of a
    small store and change (:func:`~ivm.runtime.execution.evaluation_settings`)."""
    store_bytes = DeltaLogReader.of(spark, store).size_in_bytes()
    both = None if store_bytes is None or change_bytes is None else store_bytes + change_bytes
    return {MATERIALIZE_SOURCE: "none"} | merge_settings(store_bytes) \
        | evaluation_settings(spark, both)


def _inexact_sums(compiled: CompiledView, schema) -> str | None:
    """Why the store's sums cannot be folded, if one is stored as a type whose addition is
    inexact (floating point)."""
    types = {f.name: f.dataType.simpleString() for f in schema}
    inexact = [f"{acc.name} {types[acc.name].upper()}" for acc in compiled.store.accumulators
               if acc.kind == "sum" and not is_exact(types[acc.name])]
    return f"sums stored as types that cannot be added exactly ({', '.join(inexact)})" \
        if inexact else None


def _write(spark, view: str, compiled: CompiledView, store_version: int,
           previous: dict[str, int], current: dict[str, int], ids: dict[str, str],
           reason: str | None, read_bytes: int | None, schema,
           clock: PhaseClock) -> RefreshResult:
    """Fold the change from ``previous`` to ``current`` into the store in one commit, or,
    with a ``reason`` to, overwrite the store with the query's result at ``current``;
    ``ids``: the sources' Delta table ids.

    The change to the store is computed once, before the MERGE, which then reads it as it
    is (Delta need not materialize the MERGE's source again); an empty change commits the
    record alone, and writes no file."""
    store = store_name(view)
    full = reason is not None
    record = RefreshRecord("full" if full else "incremental", current, reason, read_bytes,
                           table_ids=ids, started_ms=clock.started_ms)
    with committed_write(spark, view, compiled, record, stage="refresh",
                         before=None if full else previous, read_version=store_version,
                         clock=clock) as commit:
        if full:
            commit(codegen.overwrite_statement(store, compiled.full_query))
            return RefreshResult(view, "full", current, previous, reason=reason,
                                 rows_inserted=spark.table(store).count())
        with clock.phase("prune"), spark_errors(view):
            delta = codegen.to_select(prune(spark, compiled.maintenance.delta, read_bytes))
        types = {f.name: f.dataType.simpleString() for f in schema}
        change = None
        try:
            with clock.phase("delta"), spark_errors(view):
                query = spark.sql(delta.sql(DIALECT))
                query_bytes = planned_read_bytes(query, read_bytes)
                change = kept(spark, query, query_bytes)
                settings = _merge_settings(spark, store, query_bytes) if change.rows else {}
            if not change.rows:  # no stored row changes: the commit carries the record
                commit(codegen.record_only_statement(store))
                return RefreshResult(view, "incremental", current, previous)
            change.frame.createOrReplaceTempView(STORE_CHANGE)
            with session_settings(spark, settings):
                merged = commit(codegen.merge_statement(
                    compiled.store, store, exp.select("*").from_(STORE_CHANGE), types))
        except (PySparkException, Py4JJavaError) as error:
            if any(code in str(error) for code in OVERFLOW_ERRORS):
                raise _Overflow() from error
            raise
        finally:
            spark.catalog.dropTempView(STORE_CHANGE)
            if change is not None and change.checkpoint is not None:
                release(change.checkpoint)
        if not merged:  # Delta skipped it: the transaction was committed already
            raise LostRace()
        metrics = merged[0]
        return RefreshResult(view, "incremental", current, previous,
                             rows_inserted=metrics.num_inserted_rows,
                             rows_updated=metrics.num_updated_rows,
                             rows_deleted=metrics.num_deleted_rows)
