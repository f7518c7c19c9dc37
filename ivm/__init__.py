"""ivm: incremental view maintenance for Apache Spark and Delta Lake.

``compile(sql)`` turns a view's SELECT into its delta query; ``sql(spark, statement)`` runs
CREATE / REFRESH / DROP MATERIALIZED VIEW (and passes other statements to Spark);
``spark_session()`` starts local Spark with Delta and a persistent catalog;
``view_changes(spark, view, version)`` reads a view's changelog (``+I/-U/+U/-D``).
"""

from ivm.compiler import CompiledView, compile
from ivm.errors import (CatalogError, ConcurrentRefresh, DependencyCycle, InvalidQuery, IvmError,
                        ReservedName, SetupError, SourceError, SqlSyntaxError, StaleJob,
                        StateError, UnsupportedQuery, ViewExists, ViewInUse, ViewNotFound)
from ivm.runtime.changelog import view_changes
from ivm.runtime.session import spark_session
from ivm.runtime.statements import sql
from ivm.runtime.history import RefreshResult

__all__ = ["CatalogError", "CompiledView", "ConcurrentRefresh", "DependencyCycle", "InvalidQuery",
           "IvmError", "RefreshResult", "ReservedName", "SetupError", "SourceError",
           "SqlSyntaxError", "StaleJob", "StateError", "UnsupportedQuery", "ViewExists",
           "ViewInUse", "ViewNotFound", "compile", "spark_session", "sql", "view_changes"]
