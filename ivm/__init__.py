"""ivm: incremental view maintenance for Apache Spark and Delta Lake.

``compile(sql)`` turns a view's SELECT into its delta query; ``sql(spark, statement)`` runs
CREATE / REFRESH / DROP MATERIALIZED VIEW (and passes other statements to Spark);
``spark_session()`` starts local Spark with Delta and a persistent catalog;
``view_changes(spark, view, version)`` reads a view's changelog (``+I/-U/+U/-D``);
``verify(spark, view)`` compares a view with its query at the source versions it reflects;
``materialized_views(spark, database)`` lists the views and ``view_definition(spark, view)``
gives one's definition (its query and clauses), as tools that create views from code need.
The names backed by the runtime load it, and pyspark, on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ivm import compiler
from ivm.compiler import CompiledView
from ivm.errors import (
    CatalogError,
    ConcurrentRefresh,
    DependencyCycle,
    InvalidQuery,
    IvmError,
    OwnedByView,
    ReservedName,
    SetupError,
    SourceError,
    SqlSyntaxError,
    StaleJob,
    StateError,
    UnsupportedQuery,
    ViewExists,
    ViewInUse,
    ViewNotFound,
    ViewsNotRefreshed,
)

if TYPE_CHECKING:  # loaded at run time by __getattr__, on first use
    from ivm.runtime.catalog.graph import materialized_views
    from ivm.runtime.catalog.history import RefreshResult
    from ivm.runtime.commands.statements import sql
    from ivm.runtime.observation.changelog import view_changes
    from ivm.runtime.observation.describe import ViewDefinition, view_definition
    from ivm.runtime.observation.verify import Verification, verify
    from ivm.runtime.spark.connect import Session
    from ivm.runtime.spark.session import spark_session

_RUNTIME = {
    "RefreshResult": "ivm.runtime.catalog.history",
    "spark_session": "ivm.runtime.spark.session",
    "sql": "ivm.runtime.commands.statements",
    "view_changes": "ivm.runtime.observation.changelog",
    "verify": "ivm.runtime.observation.verify",
    "Verification": "ivm.runtime.observation.verify",
    "materialized_views": "ivm.runtime.catalog.graph",
    "view_definition": "ivm.runtime.observation.describe",
    "ViewDefinition": "ivm.runtime.observation.describe",
}
"""Public names and the runtime modules that define them."""


def __getattr__(name: str):
    if name not in _RUNTIME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_RUNTIME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_RUNTIME))


def compile(
    sql: str,
    schema: Mapping | None = None,
    *,
    spark: Session | None = None,
    default_db: str | None = None,
    name: str | None = None,
) -> CompiledView:
    """Compile a view's SELECT into its delta query and store layout.

    Names are resolved against ``schema`` (``{table: {column: type}}``, optionally nested by
    database) or, given a SparkSession, against its catalog; a name without a database is in
    ``default_db`` (default: the session's current database). ``name``: the view's, after
    which its state tables are named (default ``view``). Raises
    :class:`~ivm.errors.IvmError` subclasses for bad or unsupported SQL.
    """
    if schema is not None:
        return compiler.compile(sql, schema, default_db=default_db, name=name)
    if spark is None:
        raise ValueError("compile needs a schema mapping or a SparkSession")
    from ivm.runtime.catalog.tables import catalog_schema

    return compiler.compile(sql, catalog_schema(spark), default_db=default_db, name=name)


__all__ = [
    "CatalogError",
    "CompiledView",
    "ConcurrentRefresh",
    "DependencyCycle",
    "InvalidQuery",
    "IvmError",
    "OwnedByView",
    "RefreshResult",
    "ReservedName",
    "SetupError",
    "SourceError",
    "SqlSyntaxError",
    "StaleJob",
    "StateError",
    "UnsupportedQuery",
    "Verification",
    "ViewDefinition",
    "ViewExists",
    "ViewInUse",
    "ViewNotFound",
    "ViewsNotRefreshed",
    "compile",
    "materialized_views",
    "spark_session",
    "sql",
    "verify",
    "view_changes",
    "view_definition",
]
