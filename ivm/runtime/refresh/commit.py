"""The exactly-once protocol: every write to a view's store is one Delta commit.

A *committed write* (:class:`Commit`) is the only way ivm writes a store:

1. bind the sources' reads at the versions the write consumes, each source's change read
   once (the first read bound fails at the fault point ``<stage>.during_write`` when a
   test armed it), for a block that computes what it writes (:func:`bound_reads`);
2. pass the fault point ``<stage>.before_write`` (:func:`committed_write`, from here on);
3. run the write, one statement, as one Delta commit whose ``userMetadata`` is the write's
   :class:`~ivm.runtime.catalog.history.RefreshRecord`: the source versions the store reflects from
   then on. A write computed from store version *n* is Delta's idempotent transaction
   ``(ivm:<view>, n)``, so it commits at most once per store version;
4. pass ``<stage>.after_commit``;
5. check that the store's latest record is this write's: Delta skips a transaction whose
   version was committed already, and then another write got there first (a record
   committed alone, through Delta's transaction API, was checked as it committed:
   :mod:`ivm.runtime.log.transaction`);
6. unbind the reads, once the block is done.

A write that dies before step 3's commit changes nothing; one that dies after it is done.
A write that lost the race returns :class:`LostRace`, a value, and :func:`retrying` runs the
whole refresh again from a fresh read of the store. Each attempt runs in a session of its own
(:func:`isolated`): same SparkContext and catalog, own temporary views and settings, so that
writes in threads of one application do not see each other's bindings.

A CREATE writes the view's catalog view after the store's commit; a refresh writes it again
(:func:`repair_catalog_view`) where that CREATE died in between, or where it no longer
shows the store's columns.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from py4j.protocol import Py4JJavaError  # pyright: ignore[reportMissingTypeStubs]
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from sqlglot import exp

from ivm import codegen
from ivm.compiler import CompiledView
from ivm.errors import ConcurrentRefresh, IvmError, SourceError, StateError
from ivm.names import DIALECT, quote
from ivm.runtime.catalog.definition import is_pinned, settings, spelled_columns, view_properties
from ivm.runtime.catalog.history import USER_METADATA, RefreshRecord, RefreshResult, latest_record
from ivm.runtime.catalog.properties import STORE, is_logged
from ivm.runtime.catalog.tables import (
    CatalogView,
    catalog_view,
    column_types,
    schema_types,
    store_name,
)
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once
from ivm.runtime.log.file_lists import DataFile
from ivm.runtime.log.transaction import (
    append_committed,
    overwrite_committed,
    record_committed,
)
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.gather import CHANGE_DATA_UNAVAILABLE
from ivm.runtime.refresh.phases import PhaseClock
from ivm.runtime.refresh.sources import (
    Bound,
    bind,
    delta_table,
    folded_rows,
    store_rows,
    unbind,
)
from ivm.runtime.spark.connect import Session, session_of_its_own, set_settings, settings_of
from ivm.runtime.spark.failures import Failure, classify, is_under, missing_file
from ivm.runtime.spark.settings import session_settings

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
PARTITION_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
T = TypeVar("T")
ATTEMPTS = 3
"""How often a refresh that lost a race with another refresh of its view starts again."""


@dataclass(frozen=True)
class LostRace:
    """Another write of the view committed first: what :func:`committed_write` returns then,
    and on which :func:`retrying` starts the refresh again."""


@contextmanager
def isolated(spark: Session, pinned: dict[str, str] | None = None):
    """A session of its own for one statement: ``spark``'s settings and current database,
    its own temporary views and settings. ``pinned``: the settings a view's CREATE pinned
    (see :mod:`ivm.runtime.catalog.definition`), which replace ``spark``'s own."""
    with session_of_its_own(spark) as own:
        inherited = settings_of(own)
        set_settings(
            own,
            {
                key: value
                for key, value in settings_of(spark).items()
                if inherited.get(key) != value and (pinned is None or not is_pinned(key))
            }
            | (pinned or {}),
        )
        own.catalog.setCurrentDatabase(spark.catalog.currentDatabase())
        yield own


def execute(spark: Session, statement: exp.Expr) -> list[Row]:
    """Run the sqlglot ``statement`` in ``spark``; its rows."""
    return spark.sql(statement.sql(DIALECT)).collect()  # pyright: ignore[reportUnknownMemberType]


def store_view_query(
    spark: Session,
    view: str,
    compiled: CompiledView,
    properties: dict[str, str],
    store: str,
    schema: StructType | None = None,
):
    """The query of the view's rows from ``store`` (its store, or a snapshot of it): folded
    where the store is logged, each column read as the store types it (``schema``: the
    store's, where the caller has read it)."""
    logged = is_logged(properties)
    types = None
    if logged:
        types = column_types(spark, store) if schema is None else schema_types(schema)
    return codegen.view_query(
        compiled.store, store, spelled_columns(compiled, properties), logged=logged, types=types
    )


def stored_rows(
    spark: Session, view: str, compiled: CompiledView, logged: bool, version: int
) -> DataFrame:
    """The store columns of the rows of ``view``'s store as of ``version``, as a change that
    reads the view's own rows needs them: each group's accumulators as a MERGE would have
    left them, so a ``logged`` store's log folded in."""
    store = store_name(view)
    if not logged:
        return store_rows(spark, store, version).select(*map(quote, compiled.store.columns))
    return folded_rows(spark, compiled.store, store, version, column_types(spark, store))


def write_catalog_view(
    spark: Session, view: str, compiled: CompiledView, properties: dict[str, str]
) -> None:
    """(Re)create the catalog view of ``view`` over its store."""
    execute(
        spark,
        codegen.create_view_statement(
            view,
            store_view_query(spark, view, compiled, properties, store_name(view)),
            {STORE: store_name(view)},
            replace=True,
        ),
    )


CATALOG_VIEW_MISSING = (
    "its catalog view was missing (dropped by Spark's DROP VIEW, or by a CREATE that did "
    "not finish)"
)
CATALOG_VIEW_CHANGED = (
    "its catalog view did not read its store as ivm writes it (changed by Spark's ALTER "
    "VIEW or CREATE OR REPLACE VIEW)"
)


def catalog_view_problem(
    spark: Session,
    view: str,
    compiled: CompiledView,
    properties: dict[str, str],
    store: StructType,
    found: CatalogView | None = None,
) -> str | None:
    """What makes the catalog view of ``view`` (``found``, where the caller has read it)
    other than the one ivm writes over its store (``store``: the store's schema):
    :data:`CATALOG_VIEW_MISSING` or :data:`CATALOG_VIEW_CHANGED`; None where it is ivm's
    query of the store, whatever column types it was written for."""
    found = found or catalog_view(spark, view)
    if found is None:
        return CATALOG_VIEW_MISSING
    query = store_view_query(spark, view, compiled, properties, store_name(view), store)
    return CATALOG_VIEW_CHANGED if found.text != query.sql(DIALECT) else None


def repair_catalog_view(
    spark: Session, view: str, compiled: CompiledView, properties: dict[str, str], store: StructType
) -> str | None:
    """Write the catalog view anew where it is not the one ivm writes over the store
    (``store``: its schema): missing or changed outside ivm (:func:`catalog_view_problem`:
    what was wrong, returned for the refresh to tell), or written for other types of the
    store's columns (a source's column widened: ivm's own doing, nothing to tell)."""
    found = catalog_view(spark, view)
    problem = catalog_view_problem(spark, view, compiled, properties, store, found)
    wanted = tuple(
        (name, store[column].dataType.simpleString())
        for name, column in zip(
            spelled_columns(compiled, properties), compiled.store.view_columns, strict=True
        )
    )
    if problem is not None or found is None or found.columns != wanted:
        write_catalog_view(spark, view, compiled, properties)
    return problem


@dataclass(frozen=True)
class AttemptScope:
    """What one attempt of :func:`retrying` runs in: a ``session`` of its own under the
    settings the view's CREATE pinned, the ``view``, its store's ``properties`` as read at the
    attempt's start, and the ``clock`` that times every attempt's phases."""

    session: Session
    view: str
    properties: dict[str, str]
    clock: PhaseClock


def retrying(
    spark: Session, view: str, attempt: Callable[[AttemptScope], RefreshResult | LostRace]
) -> RefreshResult:
    """``attempt(scope)``, a refresh of ``view``, in a session of its own under the settings
    the view's CREATE pinned, each Delta log it plans from read once (the first time, those
    an enclosing :func:`reading_each_log_once` read stand); again, from a fresh read of the
    store, while it returns :class:`LostRace` (at most :data:`ATTEMPTS` times). Its result,
    with the seconds and Spark jobs of each phase of every attempt, timed by one clock
    (:mod:`ivm.runtime.refresh.phases`)."""
    clock = PhaseClock(spark)
    with clock.running():
        result = _first_not_lost(spark, view, attempt, clock)
    clock.count_jobs()
    result.phases = clock.phases
    return result


def _first_not_lost(
    spark: Session,
    view: str,
    attempt: Callable[[AttemptScope], RefreshResult | LostRace],
    clock: PhaseClock,
) -> RefreshResult:
    """The first outcome of ``attempt`` (see :func:`retrying`) that is not a lost race."""
    for n in range(ATTEMPTS):
        with reading_each_log_once(reuse=n == 0):
            properties = view_properties(spark, view)
            with isolated(spark, settings(properties)) as work:
                outcome = attempt(AttemptScope(work, view, properties, clock))
        if not isinstance(outcome, LostRace):
            return outcome
    raise ConcurrentRefresh(
        f"{view} was refreshed by another refresh {ATTEMPTS} times while this one ran",
        hint="refresh it again later",
    )


@dataclass(frozen=True)
class Commit:
    """One commit of the store of ``view`` carrying ``record``, written by the query of
    ``compiled``; ``stage`` (``create`` or ``refresh``) names its fault points. Computed from
    the store version ``read_version``, it is Delta's idempotent transaction of that version
    and checked to be the one that committed, and a change that reads the view's own rows
    reads them at that version (folded, where the store is ``logged``: :func:`stored_rows`).
    ``clock`` times the phases ``change`` (the binding), ``write`` (the statement) and
    ``check``; the record carries those measured before the write."""

    view: str
    compiled: CompiledView
    record: RefreshRecord
    stage: str
    read_version: int | None = None
    clock: PhaseClock | None = None
    logged: bool = False


@contextmanager
def bound_reads(
    spark: Session,
    commit: Commit,
    before: dict[str, int] | None = None,
    revisable: Collection[Failure] = (),
) -> Generator[Bound | Failure, None, None]:
    """A block with the sources of ``commit``'s query bound at its record's versions (and at
    ``before`` for a change), in which a write computes what it commits and commits it
    (:func:`committed_write`); they are unbound after it. The block gets what was bound (how
    the changes were read among it); or, where binding them met one of the failures
    ``revisable`` (a change data file gone), that failure, and nothing is bound. A block that
    learns it will not write returns, and nothing was committed."""
    view, compiled, version = commit.view, commit.compiled, commit.read_version
    own_rows = (
        None
        if version is None
        else (view, partial(stored_rows, spark, view, compiled, commit.logged, version))
    )
    with _timer(commit).phase("change"):
        bound = spark_call(
            view,
            spark,
            compiled.sources,
            lambda: bind(
                spark,
                compiled.sources,
                before,
                commit.record.sources,
                compiled.delta_reads,
                wrap=lambda frame: faults.during(f"{commit.stage}.during_write", frame),
                change_bytes=commit.record.read_bytes,
                store=own_rows,
            ),
            revisable,
        )
    if isinstance(bound, Failure):
        yield bound
        return
    try:
        yield bound
    finally:
        unbind(spark, bound)


@dataclass(frozen=True)
class Append:
    """The rows of ``query`` appended to the store (of columns ``schema``): committed through
    Delta's transaction API (:func:`~ivm.runtime.log.transaction.append_committed`: no
    lookup of the store's transactions) where the session has a JVM, else by ``INSERT``."""

    query: exp.Query
    schema: StructType


@dataclass(frozen=True)
class Overwrite:
    """The store (of columns ``schema``) overwritten with the rows of ``query``, its files at
    the version the write was computed from being ``replaced``: committed through Delta's
    transaction API (:func:`~ivm.runtime.log.transaction.overwrite_committed`: no state of
    the store reconstructed to find them) where the session has a JVM, else by ``INSERT
    OVERWRITE``."""

    query: exp.Query
    replaced: tuple[DataFile, ...]
    schema: StructType


def committed_write(
    spark: Session, commit: Commit, statement: exp.Expr | Append | Overwrite | None, **amend: Any
) -> list[Row] | LostRace:
    """Write the store by ``statement`` in one commit, as ``commit`` says, its sources bound
    (:func:`bound_reads`; steps 2 to 5 of the module's docstring); ``amend`` sets fields of
    the record known only once the write is planned. ``statement`` None: the commit carries
    the record alone (:func:`_record_alone`); an :class:`Append` (rows added) or an
    :class:`Overwrite` (the store's rows replaced): through Delta's transaction API
    (:func:`_rows_written`). The statement's rows; or, for a write computed from a
    store version, :class:`LostRace` where another write committed first (a CREATE's commit
    that Delta refused fails as Delta failed it)."""
    timer = _timer(commit)
    faults.reach(f"{commit.stage}.before_write")
    with timer.phase("write"):
        record = replace(commit.record, **amend)
        if commit.clock is not None:
            record = replace(record, phases=commit.clock.summary())
        conf = _commit_settings(commit.view, record, commit.read_version)
        rows = spark_call(
            commit.view,
            spark,
            commit.compiled.sources,
            lambda: _written(spark, commit, statement, conf),
            [] if commit.read_version is None else [Failure.LOST_RACE],
        )
    if isinstance(rows, Failure):  # Delta refused it: another commit changed what it read
        return LostRace()
    if isinstance(rows, LostRace):
        return rows
    faults.reach(f"{commit.stage}.after_commit")
    if rows is None:  # committed through Delta's transaction API, which checked it
        return []
    if commit.read_version is not None:
        with timer.phase("check"):
            latest = latest_record(DeltaLogReader(spark, store_name(commit.view)))[1]
        if latest.refresh != commit.record.refresh:  # Delta skipped it: another came first
            return LostRace()
    return rows


def _timer(commit: Commit) -> PhaseClock:
    return commit.clock or PhaseClock(None)


def _commit_settings(view: str, record: RefreshRecord, read_version: int | None) -> dict[str, str]:
    """Settings for the statement of a commit: ``record`` goes into its commit, and, with
    ``read_version``, the commit is the idempotent transaction ``(ivm:<view>, read_version)``.
    An overwrite replaces the whole store whatever the session's partition overwrite mode
    (a dynamic one would keep every partition the new rows do not fall in)."""
    conf = {USER_METADATA: record.to_json(), PARTITION_OVERWRITE_MODE: "static"}
    if read_version is not None:
        conf |= {TXN_APP_ID: f"ivm:{view}", TXN_VERSION: str(read_version)}
    return conf


def _written(
    spark: Session,
    commit: Commit,
    statement: exp.Expr | Append | Overwrite | None,
    conf: dict[str, str],
) -> list[Row] | LostRace | None:
    """Commit the write ``statement`` (see :func:`committed_write`) under the settings
    ``conf``: its rows; None where it was committed through Delta's transaction API, which
    checked it as it committed; or :class:`LostRace`."""
    if statement is None:
        return _record_alone(spark, commit, conf)
    if isinstance(statement, (Append, Overwrite)):
        return _rows_written(spark, commit, statement, conf)
    return _executed(spark, statement, conf)


def _rows_written(
    spark: Session, commit: Commit, write: Append | Overwrite, conf: dict[str, str]
) -> list[Row] | LostRace | None:
    """Commit ``write``, its rows typed as the store's (see :func:`_by_transaction_api`);
    else by ``INSERT`` or ``INSERT OVERWRITE``."""
    store = store_name(commit.view)

    def through_api(app_id: str, read_version: int) -> bool | None:
        rows = _typed(spark, write.query, write.schema)
        if isinstance(write, Overwrite):
            return overwrite_committed(spark, store, app_id, read_version, rows, write.replaced)
        return append_committed(spark, store, app_id, read_version, rows)

    sql = (
        codegen.overwrite_statement(store, write.query)
        if isinstance(write, Overwrite)
        else exp.Insert(this=exp.to_table(store, dialect=DIALECT), expression=write.query)
    )
    return _by_transaction_api(spark, commit, conf, through_api, sql)


def _typed(spark: Session, query: exp.Query, schema: StructType) -> DataFrame:
    """The rows of ``query``, its columns named by position after ``schema``'s and each cast
    to its type, as an ``INSERT`` casts them."""
    rows = spark.sql(query.sql(DIALECT))  # pyright: ignore[reportUnknownMemberType]
    rows = rows.toDF(*schema.fieldNames())
    return rows.select(*(F.col(quote(f.name)).cast(f.dataType).alias(f.name) for f in schema))


def _record_alone(
    spark: Session, commit: Commit, conf: dict[str, str]
) -> list[Row] | LostRace | None:
    """Commit the record alone (see :func:`_by_transaction_api`); else as an ``UPDATE`` of
    no row."""
    store = store_name(commit.view)
    return _by_transaction_api(
        spark,
        commit,
        conf,
        lambda app_id, read_version: record_committed(spark, store, app_id, read_version),
        codegen.record_only_statement(store),
    )


def _by_transaction_api(
    spark: Session,
    commit: Commit,
    conf: dict[str, str],
    through_api: Callable[[str, int], bool | None],
    sql: exp.Expr,
) -> list[Row] | LostRace | None:
    """A commit under the settings ``conf`` (:func:`_commit_settings`), made by
    ``through_api(app_id, read_version)`` (:mod:`ivm.runtime.log.transaction`) where the
    write is computed from a store version and the session has a JVM: None once committed,
    a commit that needs no check after it, or :class:`LostRace`; else by the statement
    ``sql`` (its rows)."""
    if commit.read_version is not None:
        with session_settings(spark, {USER_METADATA: conf[USER_METADATA]}):
            done = through_api(conf[TXN_APP_ID], commit.read_version)
        if done is not None:
            return None if done else LostRace()
    return _executed(spark, sql, conf)


def _executed(spark: Session, statement: exp.Expr, conf: dict[str, str]) -> list[Row]:
    """The rows of ``statement``, run under the settings ``conf``."""
    with session_settings(spark, conf):
        return execute(spark, statement)


def spark_call(
    view: str,
    spark: Session,
    sources: Iterable[str],
    call: Callable[[], T],
    acted_on: Collection[Failure] = (),
) -> T | Failure:
    """``call()``, a step of maintaining ``view`` that reads ``sources``; or, where Spark
    fails with one of the failures ``acted_on``, that failure, a value its caller acts on
    (another commit first, a change data file gone, a sum that overflows). Any other
    failure is raised as :func:`spark_errors` raises it."""
    try:
        return call()
    except (PySparkException, Py4JJavaError) as error:
        failure, for_user = _classified(view, spark, sources, error)
        if failure is not None and failure in acted_on:
            return failure
        if for_user is None:
            raise
        raise for_user from None


@contextmanager
def spark_errors(view: str, spark: Session, sources: Iterable[str]):
    """Turn Spark failures met while maintaining ``view`` into errors a user can act on. A
    missing file is lost change data where it is a file of one of ``sources``; elsewhere (the
    store's, say) it fails naming the file, since a recompute would hide a table damaged
    outside Delta. Any other failure is raised as Spark raised it."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as error:
        _, for_user = _classified(view, spark, sources, error)
        if for_user is None:
            raise
        raise for_user from None


def _classified(
    view: str, spark: Session, sources: Iterable[str], error: Exception
) -> tuple[Failure | None, IvmError | None]:
    """The kind of the Spark failure ``error`` met maintaining ``view`` (see
    :func:`spark_errors`), and the error a user can act on that it is, if it is one."""
    path = missing_file(error)
    read = [delta_table(spark, source) for source in sources] if path else []
    locations = _locations(spark, [*read, store_name(view)]) if path else {}
    failure = classify(error, [locations[table] for table in read if table in locations])
    if failure is Failure.CHANGE_DATA_LOST:
        return failure, SourceError(
            f"{CHANGE_DATA_UNAVAILABLE} for {view}",
            hint=f"run REFRESH MATERIALIZED VIEW {view} FULL",
        )
    if failure is Failure.FILE_MISSING and path is not None:
        table = next((t for t, at in locations.items() if is_under(path, at)), None)
        return failure, StateError(
            f"{view} cannot be refreshed: the file {path}"
            f"{f' of {table}' if table else ''} is missing, though its table's log "
            f"names it (was it removed other than by VACUUM?)",
            hint=f"restore the file, or drop it from the log with FSCK REPAIR TABLE "
            f"{table or '<its table>'}; then refresh {view} again",
        )
    if failure is Failure.STORE_DISAGREES:
        return failure, StateError(
            f"the store of {view} disagrees with its sources",
            hint=f"run REFRESH MATERIALIZED VIEW {view} FULL",
        )
    return failure, None


def _locations(spark: Session, tables: list[str]) -> dict[str, str]:
    """Where each of the Delta tables ``tables`` that still exists keeps its files."""
    found: dict[str, str] = {}
    for table in tables:
        reader = DeltaLogReader.of(spark, table)
        try:
            found[table] = reader.location() or reader.detail()["location"]
        except AnalysisException:  # gone since: no file of it is missing
            continue
    return found
