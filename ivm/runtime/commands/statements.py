"""``ivm.sql``: materialized-view statements (parsed by :mod:`ivm.frontend.statements`), and
everything else passed to Spark."""

from __future__ import annotations

from typing import assert_never

from ivm.frontend.statements import (
    AlterView,
    CreateView,
    DescribeHistory,
    DescribeView,
    DropView,
    ExplainCreate,
    RefreshAll,
    RefreshView,
    VerifyView,
    parse_statement,
)
from ivm.runtime.catalog.history import RefreshResult
from ivm.runtime.commands.spark_statements import run_spark_statement
from ivm.runtime.commands.views import alter_view, create_view, drop_view, explain_create
from ivm.runtime.observation.describe import describe_view, refresh_history
from ivm.runtime.observation.verify import verify
from ivm.runtime.refresh.every_view import refresh_all
from ivm.runtime.refresh.execute import refresh_partition, refresh_view
from ivm.runtime.spark.connect import Session


def sql(spark: Session, statement: str):
    """Run ``statement``: a materialized-view statement, or any Spark SQL.

    Returns a :class:`~ivm.runtime.catalog.history.RefreshResult` for CREATE and REFRESH, a list of
    them for REFRESH ALL (which raises :class:`~ivm.errors.ViewsNotRefreshed`, carrying them,
    where a view failed), None for ALTER and DROP, a
    :class:`~ivm.runtime.observation.verify.Verification` for VERIFY, and a DataFrame for EXPLAIN
    CREATE, DESCRIBE and anything else (``spark.sql(statement)``, unless it would break a
    materialized view: see :mod:`ivm.runtime.commands.spark_statements`).
    """
    parsed = parse_statement(statement)
    match parsed:
        case None:
            return run_spark_statement(spark, statement)
        case RefreshAll():
            return refresh_all(spark)
        case CreateView():
            return _create(spark, parsed)
        case ExplainCreate(create=create):
            return explain_create(
                spark,
                create.name,
                create.query,
                policy=create.policy,
                layout=create.layout,
                partitioned_by=create.partitioned_by,
            )
        case RefreshView(partition=dict() as partition):
            return refresh_partition(spark, parsed.name, partition)
        case RefreshView():
            return refresh_view(spark, parsed.name, full=parsed.full)
        case AlterView():
            return alter_view(
                spark,
                parsed.name,
                freshness=parsed.freshness,
                retention=parsed.retention,
                suspended=parsed.suspended,
                policy=parsed.policy,
            )
        case DescribeView():
            return describe_view(spark, parsed.name)
        case DescribeHistory():
            return refresh_history(spark, parsed.name)
        case VerifyView():
            return verify(spark, parsed.name)
        case DropView():
            return drop_view(spark, parsed.name, if_exists=parsed.if_exists)
        case _:
            assert_never(parsed)


def _create(spark: Session, create: CreateView) -> RefreshResult:
    """Run the CREATE MATERIALIZED VIEW statement ``create``, with its clauses."""
    return create_view(
        spark,
        create.name,
        create.query,
        replace=create.replace,
        if_not_exists=create.if_not_exists,
        freshness=create.freshness,
        retention=create.retention,
        partitioned_by=create.partitioned_by,
        policy=create.policy,
        layout=create.layout,
    )
