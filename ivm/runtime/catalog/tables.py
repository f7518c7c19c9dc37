"""Names and schemas from the Spark catalog, and the names of views' stores.

Every name ivm keeps is canonical (see :mod:`ivm.names`): qualified by its database, in lower
case as the catalog stores it, quoted where Spark needs it. Names reach Spark's catalog API
(``tableExists``, ``spark.table``, ``DeltaTable.forName``) in that spelling, which those
functions parse as a multi-part name.

The store of the view ``db.v`` is ``db__ivm.v__ivm_store``, in the *internal database* of
``db`` (:func:`ivm.names.internal_database`), beside the view's state tables, so that
``db`` holds the user's tables and views alone. A view created before ivm kept its tables
there has them beside it, in ``db`` (the *legacy layout*): Spark's catalog cannot move a
table to another database, so they stay, and are found there. Every command resolves the
views it acts on (:func:`store_properties`) before it names their stores, and that
resolution, which looks in the internal database first, records the layout it found for
:func:`store_name`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import partial

from pyspark.errors import AnalysisException
from pyspark.sql.types import StructType
from sqlglot import exp

from ivm.compiler import SchemaLookup
from ivm.errors import CatalogError
from ivm.frontend.parse import referenced_tables
from ivm.frontend.positions import position_of
from ivm.names import CATALOG_NAME, canonical, internal_table, join, split
from ivm.passes.states import STATE_SUFFIX
from ivm.runtime.catalog.properties import STATE_OF, STORE, VIEW
from ivm.runtime.log.delta_log import DeltaLogReader, once
from ivm.runtime.spark.connect import Session, is_connect, metastore
from ivm.runtime.spark.failures import conditions

STORE_SUFFIX = "__ivm_store"
NO_DATABASE = "SCHEMA_NOT_FOUND"
"""Spark's error condition of a statement on a database that does not exist."""
SESSION_CATALOG = "spark_catalog"


_legacy_layout: set[str] = set()
"""The views and state tables whose store the latest resolution of each in this process
(:func:`_store_properties`) found beside them, in the legacy layout."""


def store_name(view: str) -> str:
    """The Delta table holding the rows and state of the materialized view (or state table)
    ``view``: in the internal database, or beside ``view`` where it has the legacy layout,
    as its latest resolution (:func:`store_properties`) found.

    >>> store_name("db.`order`")
    'db__ivm.order__ivm_store'
    """
    return internal_table(view, STORE_SUFFIX, has_legacy_layout(view))


def has_legacy_layout(view: str) -> bool:
    """Whether the store and state tables of the view (or state table) ``view`` are beside
    it, as its latest resolution (:func:`store_properties`) found; False for one not found
    (a view created now has the internal database)."""
    return view in _legacy_layout


def is_legacy_view(spark: Session, view: str) -> bool:
    """Whether the materialized view ``view`` has the legacy layout, as resolving it now
    finds; False where it does not exist."""
    store_properties(spark, view)
    return has_legacy_layout(view)


def store_properties(spark: Session, view: str) -> dict[str, str] | None:
    """The properties of the store of ``view``; None if ``view`` is no materialized view.
    (Asked of each table several times while a refresh plans, and answered once there.)"""
    properties = once(("store properties", view), lambda: _store_properties(spark, view))
    return None if properties is None else dict(properties)


def _store_properties(spark: Session, view: str) -> dict[str, str] | None:
    """The properties of the store of ``view``, looked for in the internal database, then
    beside ``view``; the layout found (or none) is recorded for :func:`store_name`, so that
    a view another process dropped and created again is named as it now is."""
    internal = internal_table(view, STORE_SUFFIX)
    for store in dict.fromkeys([internal, internal_table(view, STORE_SUFFIX, True)]):
        *db, name = split(store)
        if name.lower() not in stores_in(spark, join(db) or None):
            continue
        properties = DeltaLogReader.of(spark, store).properties()
        if canonical(properties.get(VIEW) or "``") == view:
            if store == internal:
                _legacy_layout.discard(view)
            else:
                _legacy_layout.add(view)
            return properties
    _legacy_layout.discard(view)
    return None


def view_of_store(spark: Session, store: str) -> str | None:
    """The materialized view (or state table) whose store is the canonical ``store``; None
    if it is no store."""
    *db, table = split(store)
    if not table.endswith(STORE_SUFFIX) or table not in stores_in(spark, join(db) or None):
        return None
    view = DeltaLogReader.of(spark, store).properties().get(VIEW)
    if view is None or store_properties(spark, canonical(view)) is None:
        return None
    return canonical(view) if store_name(canonical(view)) == store else None


def databases(spark: Session) -> frozenset[str]:
    """The names of the catalog's databases: in a classic session, the metastore's listing of
    names alone (one call; ``spark.catalog.listDatabases`` reads each database's entry)."""
    if is_connect(spark):
        return frozenset(row.namespace for row in spark.sql("SHOW DATABASES").collect())
    names = metastore(spark).listDatabases()
    return frozenset(names.apply(i) for i in range(names.size()))


def stores_in(spark: Session, database: str | None) -> frozenset[str]:
    """The names of the stores in ``database`` (None: the current one), in lower case; listed
    once in a block of :func:`~ivm.runtime.log.delta_log.reading_each_log_once`."""
    return once(("stores", database), partial(_stores, spark, database))


def _stores(spark: Session, database: str | None) -> frozenset[str]:
    """The names of the stores in ``database`` (None: the current one; none if it does not
    exist), in lower case: one catalog call, where asking after each source's store would
    make one each. In a classic session, the metastore's listing of names alone: Spark's
    ``SHOW TABLES`` asks after each table it lists, 8-10 times the cost."""
    if not is_connect(spark):
        try:
            names = metastore(spark).listTables(
                database or current_database(spark), f"*{STORE_SUFFIX}"
            )
        except AnalysisException as error:  # PySpark converts the JVM's errors
            if NO_DATABASE in conditions(error):
                return frozenset()
            raise  # the catalog failed: no answer, which is not "no stores"
        return frozenset(names.apply(i).lower() for i in range(names.size()))
    where = f" IN {database}" if database else ""
    try:
        rows = spark.sql(f"SHOW TABLES{where} LIKE '*{STORE_SUFFIX}'").collect()
    except AnalysisException as error:
        if NO_DATABASE in conditions(error):
            return frozenset()
        raise  # the catalog failed: no answer, which is not "no stores"
    return frozenset(row.tableName.lower() for row in rows if not row.isTemporary)


def state_tables(spark: Session, view: str) -> list[str]:
    """The state tables of the materialized view ``view`` in the catalog, by name: those of
    its definition, and any a CREATE OR REPLACE or DROP that died left behind; in the
    internal database, and beside ``view`` (the legacy layout)."""
    tables = []
    for legacy_layout in (False, True):
        *db, prefix = split(internal_table(view, STATE_SUFFIX, legacy_layout))
        for store in sorted(_stores(spark, join(db) or None)):
            state = store[: -len(STORE_SUFFIX)]
            qualified = join([*db, state])
            if (
                state.startswith(prefix)
                and qualified not in tables
                and (store_properties(spark, qualified) or {}).get(STATE_OF) == view
            ):
                tables.append(qualified)
    return tables


def catalog_kind(spark: Session, name: str) -> tuple[str, str | None] | None:
    """What the canonical ``name``, which is no materialized view, names in the catalog:
    ``("store", view)`` for the store of the materialized view ``view`` (of a state table:
    the view it is part of), ``("table", None)`` or ``("view", None)`` (a Spark view); None
    where nothing has that name."""
    view = view_of_store(spark, name)
    if view is not None:
        return "store", (store_properties(spark, view) or {}).get(STATE_OF, view)
    try:
        found = spark.catalog.getTable(name)
    except AnalysisException:
        return None
    return ("view" if found.tableType in ("VIEW", "TEMPORARY") else "table"), None


@dataclass(frozen=True)
class CatalogView:
    """A view as Spark's catalog keeps it: the text of its query, its columns, each with its
    Spark type as ``simpleString`` spells it, and the store it was written over where ivm
    wrote it (its property :data:`~ivm.runtime.catalog.properties.STORE`)."""

    text: str
    columns: tuple[tuple[str, str], ...]
    store: str | None = None


def catalog_view(spark: Session, view: str) -> CatalogView | None:
    """The catalog view ``view`` (canonical) as the catalog keeps it; None where the catalog
    has no view of that name. One metastore call in a classic session, a ``DESCRIBE`` over
    Spark Connect."""
    if not is_connect(spark):
        database, table = split(view)
        try:
            found = metastore(spark).getTable(database, table)
        except AnalysisException as error:  # one call, not two: tableExists, then getTable
            if conditions(error) & {"TABLE_OR_VIEW_NOT_FOUND", NO_DATABASE}:
                return None
            raise  # the catalog failed: no answer, which is not "no view"
        if found.tableType().name() != "VIEW" or found.viewText().isEmpty():
            return None
        schema = StructType.fromJson(json.loads(found.schema().json()))
        columns = tuple((f.name, f.dataType.simpleString()) for f in schema)
        store = found.properties().get(STORE)
        return CatalogView(
            found.viewText().get(), columns, store.get() if store.isDefined() else None
        )
    try:
        rows = spark.sql(f"DESCRIBE TABLE EXTENDED {view}").collect()
    except AnalysisException:
        return None
    blank = next((i for i, row in enumerate(rows) if not row.col_name), len(rows))
    details = {row.col_name: row.data_type for row in rows[blank:]}
    if details.get("Type") != "VIEW":
        return None
    columns = tuple((row.col_name, row.data_type) for row in rows[:blank])
    store = re.search(rf"\b{re.escape(STORE)}=([^,\]]+)", details.get("Table Properties", ""))
    return CatalogView(
        details.get("View Original Text") or details["View Text"],
        columns,
        store and store[1],
    )


def current_database(spark: Session) -> str:
    return spark.catalog.currentDatabase()


def qualified_name(spark: Session, name: str) -> str:
    """The canonical ``db.name`` of the table or view ``name`` (Spark SQL text), with the
    current database where it names none."""
    parts = split(name)
    if len(parts) == 3 and parts[0].lower() == SESSION_CATALOG:
        parts = parts[1:]
    if len(parts) > 2:
        raise CatalogError(
            f"{name} is not in Spark's session catalog",
            hint="name a materialized view as name or database.name",
        )
    if len(parts) == 1:
        parts = [current_database(spark), *parts]
    return canonical(join(parts))


def check_name(view: str) -> None:
    """Refuse a name the session catalog cannot store (it takes letters, digits and ``_``)."""
    for part in split(view):
        if not CATALOG_NAME.fullmatch(part):
            raise CatalogError(
                f"{view} is not a valid name for a materialized view: Spark's "
                f"catalog accepts only letters, digits and _ in database and "
                f"table names",
                hint="choose another name",
            )


def catalog_schema(spark: Session) -> SchemaLookup:
    """The schema lookup :func:`ivm.compiler.compile` takes: ``spark``'s catalog."""
    return partial(source_schema, spark)


def column_types(spark: Session, table: str) -> dict[str, str]:
    """Each column of ``table`` (a store, say) and its Spark type, as Spark spells it."""
    return schema_types(spark.table(table).schema)


def schema_types(schema: StructType) -> dict[str, str]:
    """Each column of ``schema`` and its Spark type, as Spark spells it."""
    return {f.name: f.dataType.simpleString() for f in schema}


def source_schema(
    spark: Session, query: exp.Expr, sql: str, default_db: str | None = None
) -> tuple[dict, str]:
    """``({db: {table: {column: type}}}, database)`` for the tables ``query`` reads, names
    without a database being in ``default_db`` (default: the current database)."""
    default_db = default_db or current_database(spark)
    schema: dict[str, dict[str, dict[str, str]]] = {}
    for table in referenced_tables(query):
        db, name = (table.db or default_db).lower(), table.name.lower()
        found = _schema(spark, join([db, name]))
        if found is None:
            raise CatalogError(
                f"table or view not found: {join([db, name])}",
                sql,
                position_of(table),
                hint="check the name, or create the source table first",
            )
        schema.setdefault(db, {})[name] = schema_types(found)
    return schema, default_db


def _schema(spark: Session, table: str) -> StructType | None:
    """The schema of the canonical ``table``; None where nothing has that name. A Delta
    table's is read from its log (one metastore call, and the reader is the one the refresh
    reads the table's versions with), a view's or another table's as Spark resolves it."""
    if not is_connect(spark) and (log := DeltaLogReader.of(spark, table)).is_delta_table():
        return log.schema()
    return spark.table(table).schema if spark.catalog.tableExists(table) else None
