"""The ivm adapter: dbt-spark's, with materialized views that ivm keeps.

A model with ``materialized='materialized_view'`` (the macro in
``dbt/include/ivm/macros/materializations``) becomes ``CREATE MATERIALIZED VIEW`` on its first
run and ``REFRESH MATERIALIZED VIEW`` on the next ones. The adapter lists ivm's materialized
views as such (Spark's catalog shows each as a view over its store), renders a model's
configuration as ivm's clauses, and says what a model changes of its view's definition, for
dbt's ``on_configuration_change``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from dbt.adapters.base.meta import available
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.contracts.relation import RelationType
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError
from pyspark.sql import DataFrame
from sqlglot.tokens import Tokenizer

import ivm

from .connections import IvmConnectionManager, IvmCursor

SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
POLICIES = ("auto", "incremental", "incremental strict", "full")
DATABRICKS_ONLY = ("schedule", "tblproperties", "liquid_clustered_by", "databricks_tags")
"""Configs of dbt-databricks' materialized views that ivm has no use for: a model that sets
them runs, with a warning that they are left out."""


@dataclass
class IvmConfig(SparkConfig):
    """A model's configs besides dbt-spark's: how its materialized view is kept."""

    # freshness is dbt's own (build_after): how far `ivm run` lets the view lag
    retention: Any = None  # seconds, or "<n> <unit>": how long its change data stays readable
    refresh_policy: str | None = None  # auto, incremental, incremental strict or full


def seconds(config: str, value: Any) -> int | None:
    """A duration config in seconds. ``freshness`` is dbt's own model config, ``{'build_after':
    {'count': 5, 'period': 'minute'}}`` (dbt parses it; ``period`` is minute, hour or day), and
    says how far ``ivm run`` lets the view lag behind its sources; ``retention`` is a number of
    seconds or ``'<n> <unit>'`` (second, minute, hour, day, week; plural or not)."""
    if value is None:
        return None
    after = (
        value.get("build_after") if isinstance(value, dict) else getattr(value, "build_after", None)
    )
    if after is not None:
        count = after.get("count") if isinstance(after, dict) else after.count
        period = after.get("period") if isinstance(after, dict) else after.period
        unit = str(getattr(period, "value", period) or "")
        if isinstance(count, int) and unit in SECONDS:
            return count * SECONDS[unit]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    else:
        words = str(value).lower().split()
        words = words[1:] if words[:1] == ["interval"] else words
        if len(words) == 2 and words[0].isdigit() and words[1].removesuffix("s") in SECONDS:
            return int(words[0]) * SECONDS[words[1].removesuffix("s")]
    raise DbtRuntimeError(
        f"config {config} is {value!r}: give "
        + (
            "{'build_after': {'count': <n>, 'period': 'minute' | 'hour' | 'day'}}"
            if config == "freshness"
            else "a number of seconds or '<n> <unit>', such as '30 days'"
        )
    )


def partition_columns(partition_by: Any) -> tuple[str, ...]:
    """``partition_by`` as dbt-spark and dbt-databricks take it: a column or a list of them."""
    if not partition_by:
        return ()
    return (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)


def policy(refresh_policy: str | None) -> str | None:
    """The ``refresh_policy`` config as ivm's ``REFRESH POLICY`` spells it (upper case);
    None where the model gives none."""
    if refresh_policy is None:
        return None
    spelled = " ".join(str(refresh_policy).lower().replace("_", " ").split())
    if spelled not in POLICIES:
        raise DbtRuntimeError(
            f"config refresh_policy is {refresh_policy!r}: give one of {', '.join(POLICIES)}"
        )
    return spelled.upper()


def create_clauses(config: dict[str, Any]) -> str:
    """The clauses of ``CREATE MATERIALIZED VIEW`` that a model's ``config`` asks for."""
    clauses = []
    columns = partition_columns(config.get("partition_by"))
    if columns:
        clauses.append(f"PARTITIONED BY ({', '.join(columns)})")
    for clause in ("freshness", "retention"):
        value = seconds(clause, config.get(clause))
        if value is not None:
            clauses.append(f"{clause.upper()} = INTERVAL '{value}' SECONDS")
    chosen = policy(config.get("refresh_policy"))
    if chosen is not None:
        clauses.append(f"REFRESH POLICY {chosen}")
    return " ".join(clauses)


@dataclass(frozen=True)
class Changes:
    """What a model changes of its materialized view's definition: one line per clause
    (``described``), and either the ``alters`` that apply them to the view as it is (a
    freshness, a retention, a refresh policy) or, where one of them is the query or the
    partitioning, ``replace``: only CREATE OR REPLACE can."""

    described: list[str]
    alters: list[str]
    replace: bool


def normalized(sql: str) -> list[tuple[str, str]]:
    """``sql``'s tokens (sqlglot's, as Spark SQL), without comments, whitespace or a last
    semicolon: two spellings of a model that differ in these alone define the same view (ivm
    keeps a definition from its first token on, without the comments before it)."""
    tokens = [(t.token_type.name, t.text) for t in Tokenizer(dialect="spark").tokenize(sql)]
    return tokens[:-1] if tokens and tokens[-1][0] == "SEMICOLON" else tokens


class IvmAdapter(SparkAdapter):
    ConnectionManager = IvmConnectionManager
    AdapterSpecificConfigs = IvmConfig

    def _spark(self):
        """The Spark session of this thread's connection."""
        return cast(IvmCursor, self.connections.get_thread_connection().handle).spark

    def list_relations_without_caching(self, schema_relation: BaseRelation) -> list[BaseRelation]:
        """The relations of a schema, ivm's materialized views among them as such."""
        relations = super().list_relations_without_caching(schema_relation)
        if not relations or schema_relation.schema is None:
            return relations
        views = {
            view.rsplit(".", 1)[-1].strip("`").lower()
            for view in ivm.materialized_views(self._spark(), schema_relation.schema)
        }
        return [
            relation.incorporate(type=RelationType.MaterializedView)
            if (relation.identifier or "").lower() in views
            else relation
            for relation in relations
        ]

    @available
    def left_out_configs(self, config: dict[str, Any]) -> list[str]:
        """The configs of the model that only dbt-databricks uses (:data:`DATABRICKS_ONLY`)."""
        return [name for name in DATABRICKS_ONLY if config.get(name)]

    @available
    def materialized_view_clauses(self, config: dict[str, Any]) -> str:
        """The clauses of ``CREATE MATERIALIZED VIEW`` that the model's ``config`` asks for."""
        return create_clauses(config)

    @available
    def materialized_view_changes(
        self, relation: BaseRelation, sql: str, config: dict[str, Any]
    ) -> Changes:
        """What the model (its ``sql`` and ``config``) changes of the materialized view
        ``relation``'s definition, and how to apply it."""
        definition = ivm.view_definition(self._spark(), relation.render())
        if definition is None:
            return Changes([f"{relation} is no materialized view"], [], replace=True)
        described, alters, replace = [], [], False
        if normalized(sql) != normalized(definition.query):
            described.append("its query")
            replace = True
        columns = tuple(c.lower() for c in partition_columns(config.get("partition_by")))
        if columns != tuple(c.lower() for c in definition.partitioned_by):
            described.append(f"partition_by: {list(definition.partitioned_by)} to {list(columns)}")
            replace = True
        freshness = seconds("freshness", config.get("freshness"))
        if freshness != definition.freshness:
            described.append(f"freshness: {definition.freshness} to {freshness} seconds")
            alters.append(f"SET FRESHNESS = INTERVAL '{freshness}' SECONDS")
            replace = replace or freshness is None  # ALTER sets a freshness, removes none
        retention = seconds("retention", config.get("retention"))
        if retention is not None and retention != definition.retention:
            described.append(f"retention: {definition.retention} to {retention} seconds")
            alters.append(f"SET RETENTION = INTERVAL '{retention}' SECONDS")
        chosen = policy(config.get("refresh_policy")) or "AUTO"
        if chosen != definition.policy.upper():
            described.append(f"refresh_policy: {definition.policy} to {chosen}")
            alters.append(f"SET REFRESH POLICY {chosen}")
        return Changes(
            described,
            [] if replace else [f"ALTER MATERIALIZED VIEW {relation} {alter}" for alter in alters],
            replace,
        )

    @available
    def check_materialized_view(
        self, relation: BaseRelation, sql: str, config: dict[str, Any]
    ) -> None:
        """Raise where ivm would refuse to create the model's view (its ``sql``, ``config``):
        SQL it cannot maintain (ivm's error, with the place in the SQL), or a source, clause
        or setting that ``EXPLAIN CREATE`` says the CREATE fails on. Run before anything in
        the view's place is dropped."""
        spark = self._spark()
        ivm.compile(sql, spark=spark)
        explain = f"EXPLAIN CREATE MATERIALIZED VIEW {relation} {create_clauses(config)} AS {sql}"
        plan = [row.plan for row in cast(DataFrame, ivm.sql(spark, explain)).collect()]
        failing = [line for line in plan if "CREATE fails" in line]
        if failing:
            raise DbtRuntimeError(f"{relation} cannot be created: " + "; ".join(failing))
