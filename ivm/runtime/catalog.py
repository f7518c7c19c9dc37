"""Names and schemas from the Spark catalog, and the names of views' stores."""

from __future__ import annotations

from sqlglot import exp

from ivm.errors import CatalogError
from ivm.runtime.delta_log import DeltaLogReader
from ivm.frontend.parse import referenced_tables
from ivm.frontend.positions import position_of


STORE_SUFFIX = "__ivm_store"
VIEW = "ivm.view"                 # store property: the view it stores
DEFINITION = "ivm.definition"     # store property: the view's SELECT
FRESHNESS = "ivm.freshness"       # store property: the most seconds `ivm run` lets it lag
SUSPENDED = "ivm.suspended"       # store property: "true" if `ivm run` leaves it alone
DATABASE = "ivm.database"         # store property: where the definition's names resolve
SETTINGS = "ivm.settings"         # store property: the session settings pinned at CREATE (JSON)


def store_name(view: str) -> str:
    """The Delta table holding the rows and state of the materialized view ``view``."""
    return view + STORE_SUFFIX


def store_properties(spark, view: str) -> dict[str, str] | None:
    """The properties of the store of ``view``; None if ``view`` is no materialized view."""
    store = store_name(view)
    if not spark.catalog.tableExists(store):
        return None
    properties = DeltaLogReader(spark, store).properties()
    return properties if properties.get(VIEW) == view else None


def current_database(spark) -> str:
    return spark.catalog.currentDatabase()


def qualified_name(spark, name: str) -> str:
    """``db.name``: ``name`` with the current database where it has none."""
    table = exp.to_table(name, dialect="spark")
    db = table.db or current_database(spark)
    return f"{db}.{table.name}"


def source_schema(spark, query: exp.Expression, sql: str,
                  default_db: str | None = None) -> tuple[dict, str]:
    """``({db: {table: {column: type}}}, database)`` for the tables ``query`` reads, names
    without a database being in ``default_db`` (default: the current database)."""
    default_db = default_db or current_database(spark)
    schema: dict[str, dict[str, dict[str, str]]] = {}
    for table in referenced_tables(query):
        db = table.db or default_db
        if not spark.catalog.tableExists(f"{db}.{table.name}"):
            raise CatalogError(f"table or view not found: {db}.{table.name}", sql,
                               position_of(table),
                               hint="check the name, or create the source table first")
        fields = spark.table(f"{db}.{table.name}").schema.fields
        schema.setdefault(db, {})[table.name] = {f.name: f.dataType.simpleString()
                                                for f in fields}
    return schema, default_db
