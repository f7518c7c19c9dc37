"""The life of a materialized view on Spark and Delta: create, alter, drop.

A materialized view ``db.v`` is two catalog objects:

* its **store** ``db__ivm.v__ivm_store``, in the internal database of ``db`` (see
  :mod:`ivm.runtime.catalog.tables`; ``db.v__ivm_store`` for a view created before ivm kept its
  tables there), a Delta table with change data feed on, holding the view's rows and hidden
  state (see :mod:`ivm.store`); its table properties keep the view's definition and what
  fixes its meaning (the database its names resolve in, the settings every refresh runs
  under: see :mod:`ivm.runtime.catalog.definition`), and each commit's ``userMetadata`` a
  :class:`~ivm.runtime.catalog.history.RefreshRecord` with the source versions (and Delta table
  ids) it reflects;
* the catalog **view** ``db.v``, ``SELECT <the view's columns> FROM db__ivm.v__ivm_store``,
  which is what users query.

A state table is a materialized view of the same kind, ``db__ivm.v__ivm_state1`` (its
catalog view) over ``db__ivm.v__ivm_state1__ivm_store``.

Every write of a store is a committed write (:mod:`ivm.runtime.refresh.commit`); refreshes
live in :mod:`ivm.runtime.refresh.execute`, what a view says about itself in
:mod:`ivm.runtime.observation.describe`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ivm import codegen
from ivm.codegen.store import LOGGED
from ivm.compiler import CompiledView, compile
from ivm.errors import CatalogError, SourceError, UnsupportedQuery, ViewExists, ViewInUse
from ivm.names import DIALECT, internal_database, is_internal_database, quote, split
from ivm.runtime.catalog.analysis import analyse, refuse_temporary
from ivm.runtime.catalog.definition import compile_definition, named_view, not_a_view, pin
from ivm.runtime.catalog.graph import check_no_cycle, readers
from ivm.runtime.catalog.history import RefreshRecord, RefreshResult, Technique
from ivm.runtime.catalog.properties import (
    COLUMNS,
    DEFINITION,
    FRESHNESS,
    LAYOUT,
    LOGGED_LAYOUT,
    MERGED_LAYOUT,
    POLICY,
    STATE_OF,
    SUSPENDED,
    VIEW,
    is_logged,
    layout_description,
)
from ivm.runtime.catalog.tables import (
    catalog_kind,
    catalog_schema,
    catalog_view,
    check_name,
    column_types,
    has_legacy_layout,
    is_legacy_view,
    qualified_name,
    schema_types,
    state_tables,
    store_name,
    store_properties,
)
from ivm.runtime.decision.decide import admit, maintained, never_incremental
from ivm.runtime.decision.terms import DEFAULT_POLICY, Mode, Policy
from ivm.runtime.log.delta_log import CDF_PROPERTY, reading_each_log_once, rows_written
from ivm.runtime.observation.describe import consumed_versions
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.commit import (
    Commit,
    bound_reads,
    committed_write,
    execute,
    isolated,
    write_catalog_view,
)
from ivm.runtime.refresh.read_estimate import read_estimate
from ivm.runtime.refresh.sources import (
    bind,
    check_source,
    latest_sources,
    total_source_bytes,
    unbind,
)
from ivm.runtime.refresh.upkeep import (
    DEFAULT_RETENTION_SECONDS,
    check_retention,
    retention_properties,
)
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import (
    STATE_LAYOUT,
    STORE_LAYOUT,
    apply_settings,
    evaluation_settings,
    plan_settings,
    session_settings,
    store_write_settings,
)
from ivm.zset import Read, relation_name


def _is_materialized_view(spark: Session, view: str) -> bool:
    return store_properties(spark, view) is not None


def create_view(
    spark: Session,
    name: str,
    sql: str,
    *,
    replace: bool = False,
    if_not_exists: bool = False,
    freshness: int | None = None,
    retention: int | None = None,
    partitioned_by: tuple[str, ...] = (),
    policy: str | None = None,
    layout: str | None = None,
) -> RefreshResult:
    """Create the materialized view ``name`` defined by the SELECT ``sql``, computed in full.

    ``replace`` redefines an existing view: its store is replaced in one commit, then its
    catalog view. A CREATE that died after writing the store is completed by running it again.
    ``freshness``: the most seconds ``ivm run`` lets the view lag behind its sources.
    ``retention``: how many seconds the view's change data and earlier versions stay
    readable (:mod:`ivm.runtime.refresh.upkeep`; default 7 days, for its files and its log).
    ``partitioned_by``: columns of the view that partition its store, so that a partition
    can be recomputed alone (:func:`refresh_partition`). ``policy``: the view's refresh
    policy (:mod:`ivm.runtime.decision.terms`; default AUTO). ``layout``: how the store
    takes a change, ``merge`` or ``log`` (:mod:`ivm.codegen.store`; default the session's
    :data:`STORE_LAYOUT`, else ``merge``).

    The view's state tables (:mod:`ivm.passes.states`) are created first, each a hidden
    materialized view; those of a replaced definition that this one does not have are
    dropped last.
    """
    start = time.perf_counter()
    view = qualified_name(spark, name)
    check_name(view)
    refuse_temporary(spark, sql)
    if retention is not None:
        check_retention(view, retention)
    with isolated(spark) as work:
        # The checks read the catalog and each log once; nothing is written until they pass.
        with reading_each_log_once():
            checked = _check_create(work, view, sql, replace, if_not_exists, layout, partitioned_by)
            if checked is None:  # the view exists: IF NOT EXISTS passes over it
                return RefreshResult(view, Mode.NOOP, consumed_versions(work, view))
        versions = _write_view(
            work, view, sql, checked, freshness, retention, policy, partitioned_by
        )
        faults.reach("create.after_write")
        rows = rows_written(work, store_name(view))
    return RefreshResult(
        view,
        Mode.CREATE,
        versions,
        {},
        rows_inserted=rows,
        seconds=time.perf_counter() - start,
        technique=Technique.RECOMPUTE,
    )


@dataclass(frozen=True)
class _Checked:
    """What the checks of a CREATE found, for its writes."""

    compiled: CompiledView
    spelled: list[str] | None  # the view's columns as Spark spells them (see analyse)
    legacy_layout: bool  # its store and state tables are kept beside it (see has_legacy_layout)
    logged: bool  # its store takes the log layout
    states_logged: bool  # its state tables' stores do
    remains: bool  # what is left of a view of its name, which the CREATE drops first


def _check_create(
    spark: Session,
    view: str,
    sql: str,
    replace: bool,
    if_not_exists: bool,
    layout: str | None,
    partitioned_by: tuple[str, ...],
) -> _Checked | None:
    """Check, writing nothing, that ``view`` can be created as the SELECT ``sql`` (see
    :func:`create_view`), applying its plan's Spark settings to ``spark``; what the checks
    found, or None where the view exists and ``if_not_exists`` passes over it."""
    existing = store_properties(spark, view)
    if existing is None:
        _check_user_database(view)
    legacy_layout = has_legacy_layout(view)  # a view replaced keeps its layout
    schema = catalog_schema(spark)
    compiled = compile(sql, schema, name=view, legacy_layout=legacy_layout)
    spelled = analyse(spark, sql, schema)
    apply_settings(spark, plan_settings(compiled))
    states = [table for table, _ in compiled.states]
    read = list(compiled.source_tables)
    for table in read:
        check_source(spark, table)
    logged = _logged_layout_chosen(spark, layout)
    states_logged = _logged_layout_chosen(spark, setting=STATE_LAYOUT)
    _check_partitioning(view, compiled, partitioned_by, logged)
    is_view, has_catalog_view, store_gone = _what_exists(spark, view, existing, replace)
    if is_view and has_catalog_view:
        if if_not_exists:
            return None
        if not replace:
            raise ViewExists(
                f"{view} already exists",
                hint="use CREATE OR REPLACE MATERIALIZED VIEW to redefine it",
            )
    _check_stores_free(spark, [view, *states])
    check_no_cycle(spark, view, read)
    remains = (is_view and not has_catalog_view) or store_gone
    return _Checked(compiled, spelled, legacy_layout, logged, states_logged, remains)


def _write_view(
    spark: Session,
    view: str,
    sql: str,
    checked: _Checked,
    freshness: int | None,
    retention: int | None,
    policy: str | None,
    partitioned_by: tuple[str, ...],
) -> dict[str, int]:
    """Write the view ``view`` that :func:`_check_create` passed (``checked``) with the
    CREATE's clauses (see :func:`create_view`): its state tables, then its store and catalog
    view; the source versions it reflects."""
    if checked.remains:
        # A store without its catalog view (its view dropped by Spark's DROP VIEW or DROP
        # DATABASE … CASCADE, or its CREATE died before the catalog view), or a catalog
        # view without its store (Spark's DROP TABLE): no one reads it, so the view
        # created now starts afresh, with a history of its own.
        _drop_parts(spark, view)
    if not checked.legacy_layout:
        _create_internal_database(spark, view)
    shared = (
        {DEFINITION: sql.strip(), **pin(spark)}
        | ({} if policy is None else {POLICY: policy})
        | retention_properties(DEFAULT_RETENTION_SECONDS if retention is None else retention)
    )
    compiled = checked.compiled
    for table, state in compiled.states:
        state_properties = shared | {STATE_OF: view} | _layout(checked.states_logged)
        _create_store(spark, table, state, state_properties, policy)
    properties = shared | {VIEW: view} | _layout(checked.logged)
    if checked.spelled is not None and tuple(checked.spelled) != compiled.store.view_columns:
        properties[COLUMNS] = json.dumps(checked.spelled)
    if freshness is not None:
        properties[FRESHNESS] = str(freshness)
    versions = _create_store(spark, view, compiled, properties, policy, partitioned_by)
    states = [table for table, _ in compiled.states]
    for table in state_tables(spark, view):
        if table not in states:  # a state of the definition this one replaced
            _drop(spark, table)
    return versions


def _what_exists(
    spark: Session, view: str, existing: dict[str, str] | None, replace: bool
) -> tuple[bool, bool, bool]:
    """What a CREATE of ``view`` finds under its name (``existing``: the properties of a store
    of that name): whether it is a materialized view, whether a catalog view has its name,
    and whether that catalog view is what is left of a view whose store is gone. Raises
    :class:`ViewExists` where the name is another's: a state table's, a Spark table's or
    view's, or a view's remains that only a CREATE OR REPLACE (``replace``) takes."""
    if existing is not None and STATE_OF in existing:
        raise ViewExists(
            f"{view} is a state table of the materialized view {existing[STATE_OF]}",
            hint=f"choose another name (CREATE OR REPLACE MATERIALIZED VIEW "
            f"{existing[STATE_OF]} redefines that view and its state tables)",
        )
    is_view = existing is not None
    has_catalog_view = spark.catalog.tableExists(view)
    store_gone = has_catalog_view and not is_view and _store_gone(spark, view)
    if store_gone and not replace:
        raise ViewExists(
            f"{view} is what is left of a materialized view whose store is gone "
            f"(dropped outside ivm, by Spark's DROP TABLE?)",
            hint=f"CREATE OR REPLACE MATERIALIZED VIEW {view} AS ... creates it anew",
        )
    if has_catalog_view and not is_view and not store_gone:
        raise ViewExists(f"{view} already exists", hint="choose another name")
    return is_view, has_catalog_view, store_gone


def _check_stores_free(spark: Session, tables: list[str]) -> None:
    """Refuse a CREATE whose view or state ``tables`` would take a store name a table that is
    no store of theirs has."""
    for table in tables:
        if not _is_materialized_view(spark, table) and spark.catalog.tableExists(store_name(table)):
            raise ViewExists(
                f"{store_name(table)} already exists and is not the store of {table}",
                hint="choose another view name",
            )


def _check_user_database(view: str) -> None:
    """Refuse a new view in a database of ivm's own tables."""
    database = split(view)[0]
    if is_internal_database(database):
        raise CatalogError(
            f"{view} cannot be created: {database} is named as a database of "
            f"ivm's own tables (stores and state tables), which ivm keeps in "
            f"<database>__ivm for the views of <database>",
            hint="create the view in a database whose name does not end in __ivm",
        )


def _create_internal_database(spark: Session, view: str) -> None:
    """Create the internal database of the database of ``view``, if it does not exist."""
    database = split(view)[0]
    execute(
        spark,
        codegen.create_database_statement(
            internal_database(database),
            f"ivm: the stores and state tables of the materialized views in {database}",
        ),
    )


def _create_store(
    spark: Session,
    view: str,
    compiled: CompiledView,
    properties: dict[str, str],
    policy: str | None,
    partitioned_by: tuple[str, ...] = (),
) -> dict[str, int]:
    """Write the store of ``view`` (a view, or a state table) computed in full, with
    ``properties``, replacing the store of an earlier definition, then its catalog view; the
    source versions it reflects. Up to the store's commit, each log and catalog answer it
    plans from is read once (nothing it reads is written before that commit)."""
    store = store_name(view)
    properties = {CDF_PROPERTY: "true", VIEW: view, **properties}
    with reading_each_log_once():
        versions, ids = latest_sources(spark, compiled.sources)
        total = total_source_bytes(spark, compiled.sources)
        record = RefreshRecord(
            Mode.CREATE,
            versions,
            read_bytes=total,
            table_ids=ids,
            planned_bytes=total,
            technique=Technique.RECOMPUTE,
        )
        commit = Commit(view, compiled, record, "create")
        with (
            session_settings(
                spark,
                evaluation_settings(spark, total)
                | store_write_settings(codegen.in_key_order(compiled.store)),
            ),
            bound_reads(spark, commit),
        ):
            if policy is not None:
                schema = spark.sql(compiled.full_query.sql(DIALECT)).schema
                admit(view, Policy(policy), never_incremental(compiled, schema_types(schema)))
            logged = is_logged(properties)
            committed_write(
                spark,
                commit,
                codegen.create_table_statement(
                    store,
                    codegen.stored_query(compiled.store, compiled.full_query, logged),
                    properties,
                    replace=_is_materialized_view(spark, view),
                    partitioned_by=_store_partitioning(partitioned_by, logged),
                ),
            )
    write_catalog_view(spark, view, compiled, properties)
    return versions


def _check_partitioning(
    view: str, compiled: CompiledView, partitioned_by: tuple[str, ...], logged: bool
) -> None:
    """Refuse ``PARTITIONED BY`` columns that ``view`` (``compiled``, its store ``logged``
    or not) cannot be partitioned by: a column it does not have, or, for a logged store, a
    column that is not one of its keys."""
    for column in partitioned_by:
        if column not in compiled.store.view_columns:
            raise CatalogError(
                f"PARTITIONED BY {column}: {view} has no column {column}",
                hint=f"partition by columns of the view: {', '.join(compiled.store.view_columns)}",
            )
        if logged and not compiled.store.is_key(column):
            # a logged change row holds its key and accumulators, not the rest
            raise CatalogError(
                f"PARTITIONED BY {column}: {view}'s store is logged (STORE LAYOUT "
                f"{LOGGED_LAYOUT.upper()}), whose appended changes carry the view's "
                f"keys alone, and {column} is not one of them",
                hint=f"partition by keys of the view "
                f"({', '.join(compiled.store.keys) or 'it has none'}), or give it "
                f"STORE LAYOUT {MERGED_LAYOUT.upper()}",
            )


DEFAULT_LAYOUTS = {STORE_LAYOUT: MERGED_LAYOUT, STATE_LAYOUT: LOGGED_LAYOUT}
"""The layout a store takes where neither its CREATE nor the session names one. A view's
store is merged: anyone may read it, through any engine, and reads plain rows. A state table
is logged: only its view's refresh reads it, at the keys a change touches, while a MERGE into
it rewrote every file holding a touched key (Q10's at SF 10: 4.2–5.5 s against a 0.2 s
append, ``benchmarks/README.md``)."""


def _logged_layout_chosen(
    spark: Session, layout: str | None = None, setting: str = STORE_LAYOUT
) -> bool:
    """Whether a CREATE's ``STORE LAYOUT`` (``layout``), or else the session's ``setting``
    (:data:`STORE_LAYOUT` for a view's store, :data:`STATE_LAYOUT` for its state tables'),
    gives the store the ``log`` layout (else ``merge``; the default is the setting's
    :data:`DEFAULT_LAYOUTS`); an unknown layout is refused."""
    if layout is not None:
        return layout == LOGGED_LAYOUT
    default = DEFAULT_LAYOUTS[setting]
    layout = (spark.conf.get(setting, default) or default).lower()
    if layout not in (MERGED_LAYOUT, LOGGED_LAYOUT):
        other = LOGGED_LAYOUT if default == MERGED_LAYOUT else MERGED_LAYOUT
        raise CatalogError(
            f"{setting} is {layout!r}: no store layout has that name",
            hint=f"set it to {default} (the default) or {other}",
        )
    return layout == LOGGED_LAYOUT


def _store_partitioning(partitioned_by: tuple[str, ...], logged: bool) -> tuple[str, ...]:
    """The partition columns of a store whose view is ``PARTITIONED BY`` ``partitioned_by``:
    those, then, in a ``logged`` store, the column marking logged rows."""
    return (*partitioned_by, LOGGED) if logged else partitioned_by


def _layout(logged: bool) -> dict[str, str]:
    """The store property that gives a store the ``log`` layout, if ``logged``."""
    return {LAYOUT: LOGGED_LAYOUT} if logged else {}


def explain_create(
    spark: Session,
    name: str,
    sql: str,
    *,
    policy: str | None = None,
    layout: str | None = None,
    partitioned_by: tuple[str, ...] = (),
) -> DataFrame:
    """``EXPLAIN CREATE MATERIALIZED VIEW``: whether and how the view defined by the SELECT
    ``sql`` would be maintained under ``policy``, with its store in ``layout`` (or the
    session's) and partitioned by ``partitioned_by``, before anything is created; one
    ``plan`` row per line: the verdict, the store layout (and the state tables'), the
    partitioning, the delta circuit and what a refresh reads. SQL, clauses or sources that a
    CREATE would refuse are no error here: the line they concern says the CREATE fails, and
    why (and where a source is refused, nothing is read to estimate a refresh)."""
    view = qualified_name(spark, name)
    chosen = policy or DEFAULT_POLICY
    lines = [
        f"materialized view {view}",
        f"refresh policy: {chosen}{'' if policy else ' (the default)'}",
    ]
    logged = None
    try:
        logged = _logged_layout_chosen(spark, layout)
        lines.append(f"store layout: {layout_description(logged)}")
    except CatalogError as refused:
        lines.append(f"store layout: CREATE fails: {refused.message}")
    states_logged = None
    try:
        states_logged = _logged_layout_chosen(spark, setting=STATE_LAYOUT)
    except CatalogError as refused:  # a CREATE refuses it with or without state tables
        lines.append(f"state tables' layout: CREATE fails: {refused.message}")
    with isolated(spark) as work:
        try:
            schema = catalog_schema(work)
            compiled = compile(sql, schema, name=view, legacy_layout=is_legacy_view(work, view))
            if compiled.states and states_logged is not None:
                lines.append(f"state tables' layout: {layout_description(states_logged)}")
            if partitioned_by:
                lines.append(_partitioning_line(view, compiled, partitioned_by, bool(logged)))
            refused_sources = _refused_sources(work, compiled)
            lines += refused_sources or _maintenance(work, sql, schema, compiled, Policy(chosen))
        except UnsupportedQuery as refused:
            lines.append(f"maintained: no, CREATE fails: {refused.message}")
    # in the caller's session: a Connect session of its own is released after its block
    return spark.createDataFrame([(line,) for line in lines], "plan STRING")


def _partitioning_line(
    view: str, compiled: CompiledView, partitioned_by: tuple[str, ...], logged: bool
) -> str:
    """What ``EXPLAIN CREATE`` says of the view's ``PARTITIONED BY`` columns: the store's
    partition columns, or why a CREATE refuses them."""
    try:
        _check_partitioning(view, compiled, partitioned_by, logged)
    except CatalogError as refused:
        return f"partitioned by: CREATE fails: {refused.message}"
    return f"partitioned by: {', '.join(_store_partitioning(partitioned_by, logged))}"


def _refused_sources(spark: Session, compiled: CompiledView) -> list[str]:
    """A line for each source of ``compiled`` that a CREATE refuses (not Delta, or without
    change data feed), saying so and what to do; nothing is read of the others while one is
    refused."""
    lines = []
    for table in sorted(compiled.source_tables):
        try:
            check_source(spark, table)
        except SourceError as refused:
            lines.append(f"source {table}: CREATE fails: {refused.message}; {refused.hint}")
    return lines


def _maintenance(
    spark: Session, sql: str, schema, compiled: CompiledView, policy: Policy
) -> list[str]:
    """How the view defined by ``sql`` (over the catalog ``schema``; ``compiled``) is
    maintained under ``policy``, as lines: the verdict, the delta circuit and what a refresh
    reads. Raises :class:`UnsupportedQuery` for SQL that ivm cannot maintain."""
    analyse(spark, sql, schema)
    never = next(
        (
            reason
            for part, schema in _store_schemas(spark, compiled)
            if (reason := never_incremental(part, schema_types(schema)))
        ),
        None,
    )
    return [
        maintained(policy, never),
        *compiled.explain().splitlines(),
        *read_estimate(spark, compiled).splitlines(),
    ]


def _store_schemas(spark: Session, compiled: CompiledView) -> list[tuple[CompiledView, StructType]]:
    """The schema of the store of each state table of a view not created yet, then of the
    view's: each computed from its full query over the sources, a state table's standing
    in for the table (nothing runs: Spark only analyses the queries)."""
    states = dict(compiled.states)
    schemas, bounds, named = [], [], []
    try:
        for table, part in [*compiled.states, (None, compiled)]:
            read = {t: c for t, c in part.sources.items() if t not in states}
            bounds.append(bind(spark, read, None, latest_sources(spark, read)[0], {}))
            rows = spark.sql(part.full_query.sql(DIALECT))
            schemas.append((part, rows.schema))
            if table is not None:
                named.append(quote(relation_name(table, Read.AFTER)))
                rows.createOrReplaceTempView(named[-1])
    finally:
        for bound in bounds:
            unbind(spark, bound)
        for name in named:
            spark.catalog.dropTempView(name)
    return schemas


def alter_view(
    spark: Session,
    name: str,
    *,
    freshness: int | None = None,
    retention: int | None = None,
    suspended: bool | None = None,
    policy: str | None = None,
) -> None:
    """Set the freshness, the retention or the refresh policy of the view ``name`` (the
    last two of its state tables too), or suspend or resume its refreshes by ``ivm run``."""
    view = named_view(spark, name, "ALTER")
    shared = {}
    if policy is not None:
        for table in [*state_tables(spark, view), view]:
            never = never_incremental(
                compile_definition(spark, table), column_types(spark, store_name(table))
            )
            admit(table, Policy(policy), never)
        shared[POLICY] = policy
    if retention is not None:
        check_retention(view, retention)
        shared |= retention_properties(retention)
    if shared:
        for table in state_tables(spark, view):
            execute(spark, codegen.set_properties_statement(store_name(table), shared))
    changes = dict(shared)
    if freshness is not None:
        changes[FRESHNESS] = str(freshness)
    if suspended is not None:
        changes[SUSPENDED] = str(suspended).lower()
    execute(spark, codegen.set_properties_statement(store_name(view), changes))


def drop_view(spark: Session, name: str, *, if_exists: bool = False) -> None:
    """Drop the materialized view ``name``: its catalog view, its state tables, its store
    (last, so that a DROP that died is finished by running it again)."""
    view = qualified_name(spark, name)
    properties = store_properties(spark, view)
    if properties is None and _store_gone(spark, view):
        _drop_parts(spark, view)
        return
    if properties is None:
        if if_exists and catalog_kind(spark, view) is None:
            return  # IF EXISTS passes over a name that nothing has, not a table's or a view's
        raise not_a_view(spark, view, "DROP")
    if STATE_OF in properties:
        raise ViewInUse(
            f"{view} is a state table of the materialized view {properties[STATE_OF]}",
            hint=f"DROP MATERIALIZED VIEW {properties[STATE_OF]} drops it",
        )
    if downstream := readers(spark, view):
        raise ViewInUse(
            f"materialized view {view} is read by {', '.join(downstream)}",
            hint="drop the views that read it first",
        )
    _drop_parts(spark, view)


def _drop_parts(spark: Session, view: str) -> None:
    """Drop what there is of the materialized view ``view``: its catalog view, its state
    tables, its store (last, so that a DROP that died is finished by running it again)."""
    execute(spark, codegen.drop_statement("VIEW", view))
    faults.reach("drop.after_view")
    for state in state_tables(spark, view):
        _drop(spark, state)
    execute(spark, codegen.drop_statement("TABLE", store_name(view)))


def _store_gone(spark: Session, view: str) -> bool:
    """Whether ``view`` is a catalog view that ivm wrote over a store that is gone (dropped
    by Spark's DROP TABLE)."""
    found = catalog_view(spark, view)
    return found is not None and found.store is not None


def _drop(spark: Session, view: str) -> None:
    """Drop the catalog view and the store of ``view``."""
    execute(spark, codegen.drop_statement("VIEW", view))
    execute(spark, codegen.drop_statement("TABLE", store_name(view)))
