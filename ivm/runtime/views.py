"""Materialized views on Spark and Delta: create, refresh, drop.

A materialized view ``db.v`` is two catalog objects:

* its **store** ``db.v__ivm_store``, a Delta table with change data feed on, holding the
  view's rows and hidden state (see :mod:`ivm.store`); its table properties keep the view's
  definition, and each commit's ``userMetadata`` records the source versions it reflects;
* the catalog **view** ``db.v``, ``SELECT <the view's columns> FROM db.v__ivm_store``, which
  is what users query.

Every write to the store is one Delta commit that carries the source versions it consumed, so
a refresh that dies before its commit changes nothing, and one that committed is never
applied again: the next refresh starts from the versions the store records.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from ivm import codegen
from ivm.codegen.store import NEGATIVE_COUNT
from ivm.compiler import CompiledView, compile
from ivm.errors import IvmError, SourceError, StateError, ViewExists, ViewNotFound
from ivm.runtime.catalog import qualified_name
from ivm.runtime.delta_log import DeltaLogReader
from ivm.runtime.sources import bind, check_source, table_version, unbind

STORE_SUFFIX = "__ivm_store"
DEFINITION = "ivm.definition"
VIEW = "ivm.view"
STORE = "ivm.store"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
HISTORY_SCAN = 50


@dataclass
class RefreshResult:
    """What one CREATE or REFRESH did."""

    view: str
    mode: str                                   # create | incremental | full | noop
    consumed: dict[str, int] = field(default_factory=dict)
    previous: dict[str, int] = field(default_factory=dict)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        versions = ", ".join(
            f"{t} v{self.previous[t]}→v{v}" if t in self.previous and self.previous[t] != v
            else f"{t} v{v}" for t, v in self.consumed.items())
        text = f"{self.mode} refresh of {self.view} in {self.seconds:.2f}s; sources: {versions}"
        if self.mode in ("incremental", "full", "create"):
            text += (f"; store rows: +{self.rows_inserted} inserted, ~{self.rows_updated} "
                     f"updated, -{self.rows_deleted} deleted")
        return text


def store_name(view: str) -> str:
    return view + STORE_SUFFIX


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


def _commit(spark, metadata: dict):
    """Settings for a store write: ``metadata`` goes into the Delta commit's userMetadata."""
    return _session_conf(spark, {USER_METADATA: json.dumps({"ivm": metadata}, sort_keys=True)})


@contextmanager
def _spark_errors(view: str):
    """Turn Spark failures met while maintaining ``view`` into errors a user can act on."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as error:
        text = str(error)
        if "DELTA_MISSING_CHANGE_DATA" in text or "DELTA_CHANGE_DATA_FEED" in text \
                or "VersionNotFound" in text or "DELTA_FILE_NOT_FOUND" in text:
            raise SourceError(f"the change data of a source of {view} is no longer available",
                              hint=f"run REFRESH MATERIALIZED VIEW {view} FULL") from None
        if NEGATIVE_COUNT in text:
            raise StateError(f"the store of {view} disagrees with its sources",
                             hint=f"run REFRESH MATERIALIZED VIEW {view} FULL") from None
        raise


def _execute(spark, statement) -> list:
    return spark.sql(statement.sql(codegen.DIALECT)).collect()


def _store_properties(spark, view: str) -> dict[str, str] | None:
    """The properties of the store of ``view``; None if ``view`` is no materialized view."""
    store = store_name(view)
    if not spark.catalog.tableExists(store):
        return None
    properties = DeltaLogReader(spark, store).properties()
    return properties if properties.get(VIEW) == view else None


def _is_materialized_view(spark, view: str) -> bool:
    return _store_properties(spark, view) is not None


def _definition(spark, view: str) -> str:
    properties = _store_properties(spark, view)
    if properties is None:
        raise ViewNotFound(f"materialized view {view} does not exist",
                           hint="create it with CREATE MATERIALIZED VIEW")
    return properties[DEFINITION]


def consumed_versions(spark, view: str) -> dict[str, int]:
    """The source versions the store of ``view`` reflects, from its latest ivm commit."""
    log = DeltaLogReader(spark, store_name(view))
    latest = log.version()
    for version in range(latest, max(-1, latest - HISTORY_SCAN), -1):
        try:
            metadata = json.loads(log.user_metadata(version) or "")
        except ValueError:
            continue
        if isinstance(metadata, dict) and "ivm" in metadata:
            return {t: int(v) for t, v in metadata["ivm"]["sources"].items()}
    raise StateError(f"the store of {view} records no consumed source versions",
                     hint=f"run REFRESH MATERIALIZED VIEW {view} FULL")


def _latest_versions(spark, compiled: CompiledView) -> dict[str, int]:
    return {table: table_version(spark, table) for table in compiled.sources}


def create_view(spark, name: str, sql: str, *, replace: bool = False,
                if_not_exists: bool = False) -> RefreshResult:
    """Create the materialized view ``name`` defined by the SELECT ``sql``, computed in full."""
    start = time.perf_counter()
    view = qualified_name(spark, name)
    compiled = compile(sql, spark=spark)
    for table in compiled.sources:
        check_source(spark, table)
    versions = _latest_versions(spark, compiled)
    if spark.catalog.tableExists(view):
        if if_not_exists and _is_materialized_view(spark, view):
            return RefreshResult(view, "noop", consumed_versions(spark, view))
        if not (replace and _is_materialized_view(spark, view)):
            raise ViewExists(f"{view} already exists", hint=(
                "use CREATE OR REPLACE MATERIALIZED VIEW to redefine it"
                if _is_materialized_view(spark, view) else "choose another name"))
    drop_view(spark, view, if_exists=True)
    if spark.catalog.tableExists(store_name(view)):
        raise ViewExists(f"{store_name(view)} already exists and is not the store of {view}",
                         hint="choose another view name")

    store = store_name(view)
    names = bind(spark, compiled.sources, None, versions)
    try:
        with _spark_errors(view), _commit(spark, {"mode": "create", "sources": versions}):
            _execute(spark, codegen.create_table_statement(store, compiled.full_query, {
                "delta.enableChangeDataFeed": "true", VIEW: view, DEFINITION: sql.strip()}))
        try:
            _execute(spark, codegen.create_view_statement(
                view, codegen.view_query(compiled.store, store), {STORE: store}))
        except BaseException:
            _execute(spark, codegen.drop_statement("TABLE", store))
            raise
    finally:
        unbind(spark, names)
    rows = spark.table(store).count()
    return RefreshResult(view, "create", versions, {}, rows_inserted=rows,
                         seconds=time.perf_counter() - start)


def refresh_view(spark, name: str, *, full: bool = False) -> RefreshResult:
    """Bring the materialized view ``name`` up to its sources' latest versions.

    Incremental unless ``full``: the change of every source since the versions the store
    records is folded into the store by one MERGE. ``full`` recomputes the store instead,
    which also repairs a store that disagrees with its sources.
    """
    start = time.perf_counter()
    view = qualified_name(spark, name)
    compiled = compile(_definition(spark, view), spark=spark)
    store = store_name(view)
    schema = spark.table(store).schema
    if tuple(schema.names) != compiled.store.columns:
        raise StateError(f"the definition of {view} no longer matches its store (did a "
                         f"source's schema change?)",
                         hint=f"recreate it: CREATE OR REPLACE MATERIALIZED VIEW {view} AS ...")
    with _spark_errors(view):
        current = _latest_versions(spark, compiled)
        previous = {} if full else consumed_versions(spark, view)
    if not full and set(previous) != set(current):
        raise StateError(f"the store of {view} records other sources than its definition reads",
                         hint=f"run REFRESH MATERIALIZED VIEW {view} FULL")
    if not full and previous == current:
        return RefreshResult(view, "noop", current, previous,
                             seconds=time.perf_counter() - start)

    mode = "full" if full else "incremental"
    names = bind(spark, compiled.sources, None if full else previous, current)
    try:
        with _spark_errors(view), _commit(spark, {"mode": mode, "sources": current}):
            if full:
                _execute(spark, codegen.overwrite_statement(store, compiled.full_query))
                result = RefreshResult(view, mode, current, previous,
                                       rows_inserted=spark.table(store).count())
            else:
                types = {f.name: f.dataType.simpleString() for f in schema}
                merge = codegen.merge_statement(compiled.store, store, compiled.delta_query,
                                                types)
                metrics = _execute(spark, merge)[0]
                result = RefreshResult(view, mode, current, previous,
                                       rows_inserted=metrics.num_inserted_rows,
                                       rows_updated=metrics.num_updated_rows,
                                       rows_deleted=metrics.num_deleted_rows)
    finally:
        unbind(spark, names)
    result.seconds = time.perf_counter() - start
    return result


def drop_view(spark, name: str, *, if_exists: bool = False) -> None:
    """Drop the materialized view ``name``: its catalog view and its store."""
    view = qualified_name(spark, name)
    if not _is_materialized_view(spark, view):
        if if_exists:
            return
        raise ViewNotFound(f"materialized view {view} does not exist")
    _execute(spark, codegen.drop_statement("VIEW", view))
    _execute(spark, codegen.drop_statement("TABLE", store_name(view)))


__all__ = ["IvmError", "RefreshResult", "consumed_versions", "create_view", "drop_view",
           "refresh_view", "store_name"]
