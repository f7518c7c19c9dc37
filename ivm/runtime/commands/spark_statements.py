"""Spark's own statements on what a materialized view owns, as ``ivm.sql`` runs them.

A materialized view ``db.v`` is a catalog view over a store (:mod:`ivm.runtime.commands.views`).
Spark's statements on those names would break it without a word: ``DROP VIEW`` leaves the
store and state tables behind, ``ALTER VIEW`` or ``CREATE OR REPLACE VIEW`` makes readers see
something other than what the refreshes maintain, and a write to a store makes it disagree
with the source versions it records. ``ivm.sql`` (so ``ivm sql``, the dbt adapter and Spark
Connect clients) refuses each of them, naming the statement that does what was meant, and
carries out ``DROP DATABASE … CASCADE`` with the views of the database, their stores and
their history. The same statements run with ``spark.sql`` are found by the next refresh,
``ivm status`` and ``ivm verify`` (:func:`~ivm.runtime.refresh.commit.catalog_view_check`).
"""

from __future__ import annotations

import networkx as nx

from ivm import codegen
from ivm.errors import CatalogError, OwnedByView, ViewInUse
from ivm.frontend.statements import SparkStatement, spark_statement
from ivm.names import canonical, internal_database, is_internal_database, split, user_database
from ivm.runtime.catalog.graph import dependency_graph, materialized_views
from ivm.runtime.catalog.properties import STATE_OF
from ivm.runtime.catalog.tables import (
    STORE_SUFFIX,
    qualified_name,
    store_properties,
    view_of_store,
)
from ivm.runtime.commands.views import drop_view
from ivm.runtime.refresh.commit import execute
from ivm.runtime.spark.connect import Session


def run_spark_statement(spark: Session, statement: str):
    """``spark.sql(statement)``, unless it would break a materialized view (refused with
    :class:`~ivm.errors.OwnedByView`); ``DROP DATABASE … CASCADE`` drops the database's
    materialized views first, and their internal database after it."""
    target = spark_statement(statement)
    if target is not None and target.verb == "DROP DATABASE":
        return _drop_database(spark, statement, target)
    if target is not None:
        _refuse_on_owned(spark, target)
    return spark.sql(statement)


def _refuse_on_owned(spark: Session, target: SparkStatement) -> None:
    """Raise :class:`OwnedByView` where ``target`` names the catalog view, the store or a
    state table of a materialized view."""
    if target.writes_rows and not split(target.name)[-1].lower().endswith(STORE_SUFFIX):
        return  # Spark writes no rows into a view; of the tables, only a store is a view's
    try:
        name = qualified_name(spark, target.name)
    except CatalogError:
        return  # a table of another catalog: none of ivm's
    properties = store_properties(spark, name)
    if properties is not None:
        owner = properties.get(STATE_OF, name)
        what = "a materialized view" if owner == name else f"a state table of {owner}"
    else:
        store_of = view_of_store(spark, name)
        if store_of is None:
            return
        owner = (store_properties(spark, store_of) or {}).get(STATE_OF, store_of)
        what = f"the store of the materialized view {owner}"
    raise OwnedByView(f"{name} is {what}: {_breaks(target.verb)}", hint=_instead(target, owner))


def _breaks(verb: str) -> str:
    """What ``verb`` would do to the view that owns its target."""
    if verb.startswith("DROP"):
        return f"{verb} would leave the rest of the view behind"
    if verb in ("ALTER VIEW", "CREATE VIEW", "REPLACE TABLE", "ALTER TABLE"):
        return f"{verb} would make its readers see other rows than its refreshes maintain"
    return f"{verb} would make it disagree with the source versions it reflects"


def _instead(target: SparkStatement, view: str) -> str:
    """The statement that does what ``target`` meant, on the materialized view ``view``."""
    if target.verb.startswith("DROP"):
        return f"DROP MATERIALIZED VIEW {view}"
    if target.writes_rows:
        return (
            f"only its refreshes write it: change its sources, then REFRESH MATERIALIZED "
            f"VIEW {view}"
        )
    return (
        f"CREATE OR REPLACE MATERIALIZED VIEW {view} AS SELECT ... redefines it, ALTER "
        f"MATERIALIZED VIEW {view} SET ... changes its settings"
    )


def _drop_database(spark: Session, statement: str, target: SparkStatement):
    """Run ``DROP DATABASE`` (``target``): refused on an internal database; with CASCADE, the
    database's materialized views are dropped first (each reader before what it reads), and
    its internal database, which holds their stores, after it."""
    database = canonical(target.name)
    if is_internal_database(database):
        owner = user_database(database)
        raise OwnedByView(
            f"{database} holds the stores and state tables of the materialized views in "
            f"{owner}: dropping it would leave their catalog views reading nothing",
            hint=f"DROP MATERIALIZED VIEW each of them, or DROP DATABASE {owner} CASCADE",
        )
    if not target.cascade:
        return spark.sql(statement)  # Spark refuses a database that holds a view
    views = materialized_views(spark, database)
    graph = dependency_graph(spark, materialized_views(spark))
    for view in views:
        outside = sorted(
            reader
            for reader in (graph.successors(view) if view in graph else ())
            if graph.nodes[reader].get("materialized")
            and not graph.nodes[reader].get("state")
            and reader not in views
        )
        if outside:
            raise ViewInUse(
                f"materialized view {view} is read by {', '.join(outside)}, outside {database}",
                hint="drop the views that read it first",
            )
    for view in reversed(list(nx.topological_sort(graph.subgraph(views)))):
        drop_view(spark, view)
    result = spark.sql(statement)
    execute(spark, codegen.drop_database_statement(internal_database(database)))
    return result
