"""ivm: incremental view maintenance for Apache Spark and Delta Lake.

``compile(sql)`` turns a view's SELECT into its delta query; ``sql(spark, statement)`` runs
CREATE / REFRESH / DROP MATERIALIZED VIEW (and passes other statements to Spark);
``spark_session()`` starts local Spark with Delta and a persistent catalog;
``view_changes(spark, view, version)`` reads a view's changelog (``+I/-U/+U/-D``).
"""

from __future__ import annotations

from collections.abc import Mapping

from ivm import compiler
from ivm.compiler import CompiledView
from ivm.errors import (CatalogError, ConcurrentRefresh, DependencyCycle, InvalidQuery, IvmError,
                        ReservedName, SetupError, SourceError, SqlSyntaxError, StaleJob,
                        StateError, UnsupportedQuery, ViewExists, ViewInUse, ViewNotFound)
from ivm.runtime.changelog import view_changes
from ivm.runtime.session import spark_session
from ivm.runtime.statements import sql
from ivm.runtime.views import RefreshResult


def compile(sql: str, schema: Mapping | None = None, *, spark=None,
            default_db: str | None = None) -> CompiledView:
    """Compile a view's SELECT into its delta query and store layout.

    Names are resolved against ``schema`` (``{table: {column: type}}``, optionally nested by
    database) or, given a SparkSession, against its catalog; a name without a database is in
    ``default_db`` (default: the session's current database). Raises
    :class:`~ivm.errors.IvmError` subclasses for bad or unsupported SQL.
    """
    if schema is None:
        if spark is None:
            raise ValueError("compile needs a schema mapping or a SparkSession")
        from ivm.runtime.catalog import catalog_schema
        schema = catalog_schema(spark)
    return compiler.compile(sql, schema, default_db=default_db)


__all__ = ["CatalogError", "CompiledView", "ConcurrentRefresh", "DependencyCycle", "InvalidQuery",
           "IvmError", "RefreshResult", "ReservedName", "SetupError", "SourceError",
           "SqlSyntaxError", "StaleJob", "StateError", "UnsupportedQuery", "ViewExists",
           "ViewInUse", "ViewNotFound", "compile", "spark_session", "sql", "view_changes"]
