"""``ivm.sql``: materialized-view statements (parsed by :mod:`ivm.frontend.statements`), and
everything else passed to Spark."""

from __future__ import annotations

from ivm.frontend.statements import parse_statement
from ivm.runtime.commands.spark_statements import run_spark_statement
from ivm.runtime.commands.views import alter_view, create_view, drop_view, explain_create
from ivm.runtime.observation.describe import describe_view, refresh_history
from ivm.runtime.observation.verify import verify
from ivm.runtime.refresh.execute import refresh_all, refresh_partition, refresh_view
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
    if parsed is None:
        return run_spark_statement(spark, statement)
    if parsed.action == "refresh_all":
        return refresh_all(spark)
    assert parsed.name is not None  # every statement but REFRESH ALL names its view
    if parsed.action == "create":
        assert parsed.query is not None  # a CREATE always carries its query
        return create_view(
            spark,
            parsed.name,
            parsed.query,
            replace=parsed.replace,
            if_not_exists=parsed.if_exists,
            freshness=parsed.freshness,
            retention=parsed.retention,
            partitioned_by=parsed.partitioned_by,
            policy=parsed.policy,
            layout=parsed.layout,
        )
    if parsed.action == "explain":
        assert parsed.query is not None  # so is an EXPLAIN CREATE
        return explain_create(
            spark,
            parsed.name,
            parsed.query,
            policy=parsed.policy,
            layout=parsed.layout,
            partitioned_by=parsed.partitioned_by,
        )
    if parsed.action == "refresh" and parsed.partition is not None:
        return refresh_partition(spark, parsed.name, parsed.partition)
    if parsed.action == "refresh":
        return refresh_view(spark, parsed.name, full=parsed.full)
    if parsed.action == "alter":
        return alter_view(
            spark,
            parsed.name,
            freshness=parsed.freshness,
            retention=parsed.retention,
            suspended=parsed.suspended,
            policy=parsed.policy,
        )
    if parsed.action == "describe":
        return describe_view(spark, parsed.name)
    if parsed.action == "history":
        return refresh_history(spark, parsed.name)
    if parsed.action == "verify":
        return verify(spark, parsed.name)
    return drop_view(spark, parsed.name, if_exists=parsed.if_exists)
