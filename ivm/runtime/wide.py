"""Spark settings that let Spark plan the statements of a very wide view.

Spark 4 derives the output partitionings of a plan node whose output has aliases one
grouping key at a time, in nested lazy lists (``PartitioningPreservingUnaryExecNode``), and
overflows the driver's stack past about a thousand keys: ``SELECT c0, …, c1499, COUNT(*)
… GROUP BY c0, …, c1499`` fails in plain Spark, and the store of ``SELECT DISTINCT *`` over
1,500 columns is computed by just such a query. With no candidate partitionings derived
(limit 0) Spark plans it; the price is at most a shuffle that the derivation would have saved,
so only wide views pay it.
"""

from __future__ import annotations

PROJECTION_CANDIDATES = "spark.sql.optimizer.expressionProjectionCandidateLimit"
WIDE = 500
"""Store columns from which a view counts as wide (Spark overflows between 1,000 and 1,500)."""


def plan_settings(compiled) -> dict[str, str]:
    """The Spark settings the statements of ``compiled`` (a CompiledView) need.

    >>> from ivm import compile
    >>> plan_settings(compile("SELECT DISTINCT k FROM t", {"t": {"k": "INT"}}))
    {}
    >>> columns = {f"c{i}": "INT" for i in range(WIDE)}
    >>> plan_settings(compile("SELECT DISTINCT * FROM t", {"t": columns}))
    {'spark.sql.optimizer.expressionProjectionCandidateLimit': '0'}
    """
    return {PROJECTION_CANDIDATES: "0"} if len(compiled.store.columns) > WIDE else {}


def apply_plan_settings(spark, compiled) -> None:
    """Set :func:`plan_settings` on ``spark``, a session of the view's statements alone."""
    for key, value in plan_settings(compiled).items():
        spark.conf.set(key, value)
