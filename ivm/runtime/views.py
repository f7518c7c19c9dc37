"""Materialized views on Spark and Delta: create, refresh, describe, drop.

A materialized view ``db.v`` is two catalog objects:

* its **store** ``db.v__ivm_store``, a Delta table with change data feed on, holding the
  view's rows and hidden state (see :mod:`ivm.store`); its table properties keep the view's
  definition and what fixes its meaning (the database its names resolve in, the settings
  every refresh runs under: see :mod:`ivm.runtime.definition`), and each commit's
  ``userMetadata`` a :class:`~ivm.runtime.history.RefreshRecord` with the source versions
  (and Delta table ids) it reflects;
* the catalog **view** ``db.v``, ``SELECT <the view's columns> FROM db.v__ivm_store``, which
  is what users query.

Exactly once. Every write to the store is one Delta commit that carries the source versions
it consumed, so a refresh that dies before its commit changes nothing, and the next refresh
starts from the versions the latest commit records. Two refreshes of one view racing each
other both read the store at some version *n* and write with Delta's idempotent transaction
``(ivm:<view>, n)``: Delta commits the first and skips or rejects the second, which then
starts again from the new version. Each refresh runs in its own Spark session (same
SparkContext and catalog, own temporary views and settings), so refreshes in threads of one
application do not see each other's bindings.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from sqlglot import exp

from ivm import codegen
from ivm.codegen.store import NEGATIVE_COUNT
from ivm.store import OVERFLOW, is_exact
from ivm.compiler import CompiledView, compile
from ivm.errors import (CatalogError, ConcurrentRefresh, IvmError, SourceError, StateError,
                        ViewExists, ViewInUse, ViewNotFound)
from ivm.names import DIALECT
from ivm.runtime import faults
from ivm.runtime.analysis import analyse, refuse_temporary
from ivm.runtime.catalog import (COLUMNS, DEFINITION, FRESHNESS, SUSPENDED, VIEW, catalog_schema,
                                 check_name, qualified_name, store_name, store_properties)
from ivm.runtime.definition import (compile_definition, is_pinned, pin, resolution_database,
                                    settings, view_properties)
from ivm.runtime.delta_log import CDF_PROPERTY, DeltaLogReader
from ivm.runtime.fallback import CHANGE_DATA_UNAVAILABLE, estimate, replaced_source
from ivm.runtime.graph import (check_no_cycle, dependency_graph, materialized_views, readers,
                               refresh_order)
from ivm.runtime.history import USER_METADATA, RefreshRecord, history, latest_record
from ivm.runtime.pruning import prune
from ivm.runtime.sources import (bind, check_source, delta_table, latest_sources,
                                 table_version, unbind)
from ivm.runtime.wide import apply_plan_settings

STORE = "ivm.store"
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
ATTEMPTS = 3
"""How often a refresh that lost a race with another refresh of its view starts again."""


@dataclass
class RefreshResult:
    """What one CREATE or REFRESH did."""

    view: str
    mode: str                       # create | incremental | full | partition | noop
    consumed: dict[str, int] = field(default_factory=dict)
    previous: dict[str, int] = field(default_factory=dict)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: float = 0.0
    reason: str | None = None                   # why a refresh was full

    def __str__(self) -> str:
        versions = ", ".join(
            f"{t} v{self.previous[t]}→v{v}" if t in self.previous and self.previous[t] != v
            else f"{t} v{v}" for t, v in self.consumed.items())
        text = f"{self.mode} refresh of {self.view} in {self.seconds:.2f}s"
        if self.reason:
            text += f" ({self.reason})"
        text += f"; sources: {versions}"
        if self.mode in ("incremental", "full", "create", "partition"):
            text += (f"; store rows: +{self.rows_inserted} inserted, ~{self.rows_updated} "
                     f"updated, -{self.rows_deleted} deleted")
        return text


class _LostRace(Exception):
    """Another refresh of the view committed first."""


class _Overflow(Exception):
    """A value overflowed its type while folding a change: the query alone can say whether
    it overflows too."""


OVERFLOW_REASON = "a sum overflowed its type while folding the change"
OVERFLOW_ERRORS = (OVERFLOW, "NUMERIC_VALUE_OUT_OF_RANGE", "ARITHMETIC_OVERFLOW",
                   "CAST_OVERFLOW")


@contextmanager
def _isolated(spark, pinned: dict[str, str] | None = None):
    """A session of its own for one statement: ``spark``'s settings and current database,
    its own temporary views and settings. ``pinned``: the settings a view's CREATE pinned
    (see :mod:`ivm.runtime.definition`), which replace ``spark``'s own."""
    own = spark.newSession()
    inherited = own.conf.getAll
    for key, value in spark.conf.getAll.items():
        if inherited.get(key) != value and (pinned is None or not is_pinned(key)):
            own.conf.set(key, value)
    for key, value in (pinned or {}).items():
        own.conf.set(key, value)
    own.catalog.setCurrentDatabase(spark.catalog.currentDatabase())
    yield own


@contextmanager
def _session_conf(spark, settings: dict[str, str]):
    """Apply Spark settings for the statements run inside the block."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)


def _commit(spark, view: str, record: RefreshRecord, read_version: int | None = None):
    """Settings for a write of the store of ``view``: ``record`` goes into the commit, and,
    with the store version ``read_version`` the write was computed from, the write is an
    idempotent Delta transaction that commits at most once per store version."""
    settings = {USER_METADATA: record.to_json()}
    if read_version is not None:
        settings |= {TXN_APP_ID: f"ivm:{view}", TXN_VERSION: str(read_version)}
    return _session_conf(spark, settings)


def _is_lost_race(error: Exception) -> bool:
    text = str(error)
    return "io.delta.exceptions.Concurrent" in text or "DELTA_CONCURRENT" in text \
        or "ConcurrentTransactionException" in text or "MetadataChangedException" in text


@contextmanager
def _spark_errors(view: str):
    """Turn Spark failures met while maintaining ``view`` into errors a user can act on."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as error:
        if _is_lost_race(error):
            raise _LostRace() from error
        if _change_data_unavailable(error):
            raise SourceError(f"{CHANGE_DATA_UNAVAILABLE} for {view}",
                              hint=f"run REFRESH MATERIALIZED VIEW {view} FULL") from None
        if NEGATIVE_COUNT in str(error):
            raise StateError(f"the store of {view} disagrees with its sources",
                             hint=f"run REFRESH MATERIALIZED VIEW {view} FULL") from None
        raise


def _change_data_unavailable(error: Exception) -> bool:
    text = str(error)
    return any(code in text for code in ("DELTA_MISSING_CHANGE_DATA", "DELTA_CHANGE_DATA_FEED",
                                         "VersionNotFound", "DELTA_FILE_NOT_FOUND",
                                         "FileNotFoundException"))


def _execute(spark, statement) -> list:
    return spark.sql(statement.sql(DIALECT)).collect()


def _is_materialized_view(spark, view: str) -> bool:
    return store_properties(spark, view) is not None


def consumed_versions(spark, view: str) -> dict[str, int]:
    """The source versions the store of ``view`` reflects, from its latest record."""
    return latest_record(DeltaLogReader(spark, store_name(view)))[1].sources


def _bind(spark, compiled: CompiledView, before, after, point: str) -> list[str]:
    """Bind the sources' reads, the first one failing at ``point`` if a test armed it."""
    return bind(spark, compiled.sources, before, after,
                wrap=lambda frame: faults.during(point, frame))


def _spelled(compiled: CompiledView, properties: dict[str, str]) -> tuple[str, ...]:
    """The view's column names as the query spells them (recorded at CREATE), else the
    store's."""
    recorded = json.loads(properties.get(COLUMNS, "null"))
    columns = compiled.store.view_columns
    if recorded and [n.lower() for n in recorded] == [c.lower() for c in columns]:
        return tuple(recorded)
    return columns


def _write_catalog_view(spark, view: str, compiled: CompiledView,
                        properties: dict[str, str]) -> None:
    """(Re)create the catalog view of ``view`` over its store."""
    _execute(spark, codegen.create_view_statement(
        view, codegen.view_query(compiled.store, store_name(view),
                                 _spelled(compiled, properties)),
        {STORE: store_name(view)}, replace=True))


def create_view(spark, name: str, sql: str, *, replace: bool = False,
                if_not_exists: bool = False, freshness: int | None = None,
                partitioned_by: tuple[str, ...] = ()) -> RefreshResult:
    """Create the materialized view ``name`` defined by the SELECT ``sql``, computed in full.

    ``replace`` redefines an existing view: its store is replaced in one commit, then its
    catalog view. A CREATE that died after writing the store is completed by running it again.
    ``freshness``: the most seconds ``ivm run`` lets the view lag behind its sources.
    ``partitioned_by``: columns of the view that partition its store, so that a partition
    can be recomputed alone (:func:`refresh_partition`).
    """
    start = time.perf_counter()
    view = qualified_name(spark, name)
    check_name(view)
    refuse_temporary(spark, sql)
    with _isolated(spark) as work:
        compiled = compile(sql, catalog_schema(work))
        spelled = analyse(work, sql)
        apply_plan_settings(work, compiled)
        for table in compiled.sources:
            check_source(work, table)
        for column in partitioned_by:
            if column not in compiled.store.view_columns:
                raise CatalogError(f"PARTITIONED BY {column}: {view} has no column {column}",
                                   hint=f"partition by columns of the view: "
                                        f"{', '.join(compiled.store.view_columns)}")
        store = store_name(view)
        is_view = _is_materialized_view(work, view)
        has_catalog_view = work.catalog.tableExists(view)
        if has_catalog_view and not is_view:
            raise ViewExists(f"{view} already exists", hint="choose another name")
        if is_view and has_catalog_view:
            if if_not_exists:
                return RefreshResult(view, "noop", consumed_versions(work, view))
            if not replace:
                raise ViewExists(f"{view} already exists",
                                 hint="use CREATE OR REPLACE MATERIALIZED VIEW to redefine it")
        if not is_view and work.catalog.tableExists(store):
            raise ViewExists(f"{store} already exists and is not the store of {view}",
                             hint="choose another view name")
        check_no_cycle(work, view, compiled.sources)
        versions, ids = latest_sources(work, compiled.sources)
        record = RefreshRecord("create", versions, table_ids=ids)
        properties = {CDF_PROPERTY: "true", VIEW: view, DEFINITION: sql.strip(), **pin(work)}
        if spelled is not None and tuple(spelled) != compiled.store.view_columns:
            properties[COLUMNS] = json.dumps(spelled)
        if freshness is not None:
            properties[FRESHNESS] = str(freshness)
        names = _bind(work, compiled, None, versions, "create.during_write")
        try:
            faults.reach("create.before_write")
            with _spark_errors(view), _commit(work, view, record):
                _execute(work, codegen.create_table_statement(
                    store, compiled.full_query, properties, replace=is_view,
                    partitioned_by=partitioned_by))
        finally:
            unbind(work, names)
        faults.reach("create.after_store")
        _write_catalog_view(work, view, compiled, properties)
        faults.reach("create.after_write")
        rows = work.table(store).count()
    return RefreshResult(view, "create", versions, {}, rows_inserted=rows,
                         seconds=time.perf_counter() - start)


def _retrying(spark, view: str, write) -> RefreshResult:
    """``write(session, view, properties)`` in a session of its own under the settings the
    view's CREATE pinned; again, from a fresh read of the store, whenever another refresh
    committed first (at most :data:`ATTEMPTS` times)."""
    for _ in range(ATTEMPTS):
        try:
            properties = view_properties(spark, view)
            with _isolated(spark, settings(properties)) as work:
                return write(work, view, properties)
        except _LostRace:
            continue
    raise ConcurrentRefresh(f"{view} was refreshed by another refresh {ATTEMPTS} times while "
                            f"this one ran", hint="refresh it again later")


def refresh_view(spark, name: str, *, full: bool = False) -> RefreshResult:
    """Bring the materialized view ``name`` up to its sources' latest versions.

    Incremental unless ``full`` or unless :func:`~ivm.runtime.fallback.estimate` finds a
    reason to recompute: the change of every source since the versions the store records is
    folded into the store by one MERGE. A full refresh overwrites the store with the query's
    result instead, which also repairs a store that disagrees with its sources.
    """
    return _retrying(spark, qualified_name(spark, name),
                     lambda work, view, properties: _refresh(work, view, properties, full))


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
    return _retrying(spark, qualified_name(spark, name),
                     lambda work, view, properties: _refresh_partition(work, view, properties,
                                                                       partition))


def _refresh_partition(spark, view: str, properties: dict[str, str],
                       partition: dict[str, exp.Literal]) -> RefreshResult:
    start = time.perf_counter()
    compiled = compile_definition(spark, view, properties)
    apply_plan_settings(spark, compiled)
    store = store_name(view)
    log = DeltaLogReader(spark, store)
    partitioned_by = log.partition_columns()
    unknown = [c for c in partition if c not in partitioned_by]
    if unknown or not partition:
        raise CatalogError(f"{', '.join(unknown) or 'PARTITION ()'} is not a partition column "
                           f"of {view}", hint=f"{view} is partitioned by "
                                              f"{', '.join(partitioned_by) or 'nothing'}")
    _repair_catalog_view(spark, view, compiled, properties)
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
    names = _bind(spark, compiled, None, consumed, "refresh.during_write")
    try:
        faults.reach("refresh.before_write")
        with _spark_errors(view), _commit(spark, view, record, store_version):
            _execute(spark, codegen.replace_where_statement(store, compiled.full_query,
                                                            predicate))
    finally:
        unbind(spark, names)
    faults.reach("refresh.after_write")
    if latest_record(DeltaLogReader(spark, store))[1].refresh != record.refresh:
        raise _LostRace()
    rows = spark.table(store).where(predicate.sql(DIALECT)).count()
    return RefreshResult(view, "partition", consumed, consumed, rows_inserted=rows,
                         reason=record.reason, seconds=time.perf_counter() - start)


def _refresh(spark, view: str, properties: dict[str, str], full: bool) -> RefreshResult:
    start = time.perf_counter()
    compiled = compile_definition(spark, view, properties)
    apply_plan_settings(spark, compiled)
    store = store_name(view)
    schema = spark.table(store).schema
    if tuple(schema.names) != compiled.store.columns:
        raise StateError(f"the definition of {view} no longer matches its store (did a "
                         f"source's schema change?)",
                         hint=f"recreate it: CREATE OR REPLACE MATERIALIZED VIEW {view} AS ...")
    _repair_catalog_view(spark, view, compiled, properties)
    log = DeltaLogReader(spark, store)
    with _spark_errors(view):
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
    if reason is None:
        try:
            result = _write(spark, view, compiled, store_version, previous, current, ids,
                            None, read_bytes, schema)
        except SourceError as error:    # a change data file was VACUUMed
            reason = error.message
        except _Overflow:
            reason = OVERFLOW_REASON
    if reason is not None:
        sizes = [DeltaLogReader(spark, table).size_in_bytes() for table in current]
        result = _write(spark, view, compiled, store_version, previous, current, ids, reason,
                        None if None in sizes else sum(sizes), schema)
    result.seconds = time.perf_counter() - start
    return result


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
           reason: str | None, read_bytes: int | None, schema) -> RefreshResult:
    """Fold the change from ``previous`` to ``current`` into the store in one commit, or,
    with a ``reason`` to, overwrite the store with the query's result at ``current``;
    ``ids``: the sources' Delta table ids."""
    store = store_name(view)
    full = reason is not None
    record = RefreshRecord("full" if full else "incremental", current, reason, read_bytes,
                           table_ids=ids)
    names = _bind(spark, compiled, None if full else previous, current, "refresh.during_write")
    try:
        faults.reach("refresh.before_write")
        with _spark_errors(view), _commit(spark, view, record, store_version):
            if full:
                _execute(spark, codegen.overwrite_statement(store, compiled.full_query))
                result = RefreshResult(view, "full", current, previous, reason=reason,
                                       rows_inserted=spark.table(store).count())
            else:
                types = {f.name: f.dataType.simpleString() for f in schema}
                change = codegen.to_select(prune(spark, compiled.maintenance.delta))
                try:
                    merged = _execute(spark, codegen.merge_statement(compiled.store, store,
                                                                     change, types))
                except (PySparkException, Py4JJavaError) as error:
                    if any(code in str(error) for code in OVERFLOW_ERRORS):
                        raise _Overflow() from error
                    raise
                if not merged:  # Delta skipped it: the transaction was committed already
                    raise _LostRace()
                metrics = merged[0]
                result = RefreshResult(view, "incremental", current, previous,
                                       rows_inserted=metrics.num_inserted_rows,
                                       rows_updated=metrics.num_updated_rows,
                                       rows_deleted=metrics.num_deleted_rows)
    finally:
        unbind(spark, names)
    faults.reach("refresh.after_write")
    if latest_record(DeltaLogReader(spark, store))[1].refresh != record.refresh:
        raise _LostRace()   # Delta skipped the write: the transaction was committed already
    return result


def _repair_catalog_view(spark, view: str, compiled: CompiledView,
                         properties: dict[str, str]) -> None:
    """Recreate the catalog view if a CREATE died before writing it, or wrote it for an
    earlier definition."""
    try:
        columns = spark.table(view).columns
    except PySparkException:
        columns = None
    if columns != list(_spelled(compiled, properties)):
        _write_catalog_view(spark, view, compiled, properties)


def alter_view(spark, name: str, *, freshness: int | None = None,
               suspended: bool | None = None) -> None:
    """Set the freshness of the view ``name``, or suspend or resume its refreshes by
    ``ivm run``."""
    view = qualified_name(spark, name)
    view_properties(spark, view)
    changes = {}
    if freshness is not None:
        changes[FRESHNESS] = str(freshness)
    if suspended is not None:
        changes[SUSPENDED] = str(suspended).lower()
    _execute(spark, codegen.set_properties_statement(store_name(view), changes))


def lag_seconds(spark, view: str) -> float:
    """How long the oldest source commit that ``view`` does not reflect has been waiting,
    through the materialized views it reads (0 when the view is up to date)."""
    oldest = _oldest_unconsumed_ms(spark, view)
    return 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)


def _oldest_unconsumed_ms(spark, view: str) -> int | None:
    """The commit time of the oldest source commit ``view`` does not reflect, if any."""
    times = []
    last = latest_record(DeltaLogReader(spark, store_name(view)))[1]
    for table, consumed in last.sources.items():
        log = DeltaLogReader(spark, delta_table(spark, table))
        latest = log.version()
        if replaced_source(last.table_ids, {table: log.table_id()}):
            consumed = -1       # another table of that name: none of its commits is reflected
        if latest > consumed:
            commits = log.commits(consumed, latest)
            times.append(commits[0].timestamp_ms if commits else 0)
        if store_properties(spark, table) is not None:
            times.append(_oldest_unconsumed_ms(spark, table))
    return min((t for t in times if t is not None), default=None)


def describe_view(spark, name: str) -> DataFrame:
    """``DESCRIBE MATERIALIZED VIEW``: one ``(property, value)`` row per fact about the view:
    its definition, its last refresh (when, mode and why, what it read and wrote), the source
    versions it reflects and how far it lags behind its sources."""
    view = qualified_name(spark, name)
    properties = view_properties(spark, view)
    store = store_name(view)
    last = history(spark, store).first()
    freshness = properties.get(FRESHNESS)
    facts = [("view", view), ("definition", properties[DEFINITION]), ("store", store),
             ("freshness seconds", freshness or ""),
             ("refreshed by ivm run", "suspended" if properties.get(SUSPENDED) == "true"
              else "yes" if freshness else "no (no FRESHNESS)"),
             ("last refresh", str(last.timestamp)), ("last refresh mode", last.mode),
             ("last refresh reason", last.reason or ""),
             ("last refresh read bytes", "" if last.read_bytes is None else str(last.read_bytes)),
             ("last refresh rows written", f"+{last.rows_inserted or 0} ~{last.rows_updated or 0}"
                                           f" -{last.rows_deleted or 0}"),
             ("database", resolution_database(view, properties))]
    facts += [(f"setting {key}", value)
              for key, value in (settings(properties) or {}).items()]
    for table, consumed in sorted(consumed_versions(spark, view).items()):
        latest = table_version(spark, table)
        facts.append((f"source {table}", f"version {consumed} of {latest}"))
    facts.append(("lag seconds", f"{lag_seconds(spark, view):.1f}"))
    return spark.createDataFrame(facts, "property STRING, value STRING")


def refresh_history(spark, name: str) -> DataFrame:
    """``DESCRIBE HISTORY MATERIALIZED VIEW``: every CREATE and REFRESH that wrote the view,
    newest first (see :func:`ivm.runtime.history.history`)."""
    view = qualified_name(spark, name)
    view_properties(spark, view)
    return history(spark, store_name(view))


def drop_view(spark, name: str, *, if_exists: bool = False) -> None:
    """Drop the materialized view ``name``: its catalog view, then its store."""
    view = qualified_name(spark, name)
    if not _is_materialized_view(spark, view):
        if if_exists:
            return
        raise ViewNotFound(f"materialized view {view} does not exist")
    if downstream := readers(spark, view):
        raise ViewInUse(f"materialized view {view} is read by {', '.join(downstream)}",
                        hint="drop the views that read it first")
    _execute(spark, codegen.drop_statement("VIEW", view))
    faults.reach("drop.after_view")
    _execute(spark, codegen.drop_statement("TABLE", store_name(view)))


__all__ = ["IvmError", "RefreshResult", "alter_view", "consumed_versions", "create_view",
           "describe_view", "drop_view", "lag_seconds", "refresh_all", "refresh_history",
           "refresh_partition", "refresh_view", "store_name"]
