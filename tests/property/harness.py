"""The property tests' use of the correctness harness, :mod:`ivm.testing.scenario`.

The comparison, the oracle's settings and the scenario runs are the product's own; the tests
add three things: the sources are r, s and t (``strategies.SOURCES``); views are refreshed by
their names in the other case (:func:`respell`), as a user may spell them; a wrong view's
description also shows both sides in full and its delta query.
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import note

import ivm
from ivm.testing import scenario as harness

# Approximate, Rewritten, create_views, pinned_settings and session_settings: for the tests,
# which import them from here
from ivm.testing.scenario import (  # noqa: F401
    Approximate,
    Rewritten,
    View,
    create_views,
    definition,
    oracle,
    pinned_settings,
    scratch_database,
    session_settings,
)
from tests.property.strategies import SOURCES, Scenario


def respell(name: str) -> str:
    """The view name ``name`` spelt in the other case, as a user may (Spark resolves names
    case-insensitively): what the tests refresh a view by.

    >>> respell("ByKey"), respell("`order`")
    ('bYkEY', '`ORDER`')
    """
    return name.swapcase()


def _sorted(rows) -> list:
    return sorted((tuple(r) for r in rows), key=repr)


def both_sides(spark, name: str, view: View) -> str:
    """The view's and its oracle's rows in full, and its delta query."""
    view_rows = _sorted(spark.table(name).collect())
    oracle_rows = _sorted(spark.sql(oracle(view)).collect())
    delta_sql = ivm.compile(definition(view), spark=spark).delta_sql.replace("\n", "\n    ")
    return (
        f"\n  view   ({len(view_rows)} rows): {view_rows}"
        f"\n  oracle ({len(oracle_rows)} rows): {oracle_rows}"
        f"\n  delta query:\n    {delta_sql}"
    )


def example_database(spark):
    """A database of its own for an example (Hypothesis runs many in one test call)."""
    return scratch_database(spark, prefix="prop")


def create_sources(spark, tables: Mapping[str, list[tuple]]) -> None:
    harness.create_sources(spark, [SOURCES[t] for t in tables], tables)


def check_views(
    spark,
    views: Mapping[str, View],
    when: str,
    created: Mapping[str, str] | None = None,
    few_rows: bool = True,
) -> None:
    harness.check_views(
        spark,
        views,
        when,
        created,
        few_rows,
        detail=lambda name, view: both_sides(spark, name, view),
    )


def refresh_views(spark, views: Mapping[str, View], full: bool = False) -> list:
    return harness.refresh_views(spark, views, full, spelled=respell)


def run_scenario(spark, scenario: Scenario, views: Mapping[str, View], log=note) -> None:
    """:func:`ivm.testing.scenario.run_scenario` over the sources of ``scenario``."""
    harness.run_scenario(
        spark,
        scenario,
        [SOURCES[t] for t in scenario.tables],
        views,
        log=log,
        spelled=respell,
        detail=lambda name, view: both_sides(spark, name, view),
    )
