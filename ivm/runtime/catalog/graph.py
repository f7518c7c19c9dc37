"""Materialized views that read materialized views: the graph, its order, and its cycles.

An edge ``source → view`` says that ``view`` reads ``source``. Refreshing in a topological
order of this graph lets each view consume the change its upstream views have just
committed, so a pipeline refreshed in one pass reflects one consistent set of sources.
"""

from __future__ import annotations

import networkx as nx

from ivm.errors import DependencyCycle
from ivm.names import internal_database, join, split
from ivm.runtime.catalog.history import latest_consumed
from ivm.runtime.catalog.properties import STATE_OF
from ivm.runtime.catalog.tables import databases, store_properties, stores_in, view_of_store
from ivm.runtime.log.delta_log import reading_each_log_once
from ivm.runtime.spark.connect import Session


def materialized_views(spark: Session, database: str | None = None) -> list[str]:
    """Every materialized view in the catalog (or in ``database``), as ``db.name`` (not the
    state tables, which are parts of their views), its store in the internal database or
    beside it; not those whose database was dropped (``DROP DATABASE … CASCADE`` leaves
    their stores in the internal database), which no query can read any more."""
    views = []
    existing = databases(spark)
    searched = (
        existing
        if database is None
        else existing & {database.lower(), internal_database(database.lower())}
    )
    with reading_each_log_once(reuse=True):  # each store's log and each listing once
        for searching in sorted(searched):
            for store in sorted(stores_in(spark, searching)):
                view = view_of_store(spark, join([searching, store]))
                if (
                    view is not None
                    and split(view)[0] in existing
                    and (database is None or split(view)[0] == database.lower())
                    and STATE_OF not in (store_properties(spark, view) or {})
                ):
                    views.append(view)
    return views


def dependency_graph(spark: Session, views: list[str]) -> nx.DiGraph[str]:
    """``views`` and, transitively, the sources they read; materialized views are the nodes
    whose attribute ``materialized`` is true, state tables those whose ``state`` is. (In a
    block of :func:`~ivm.runtime.log.delta_log.reading_each_log_once`, each store's latest
    record is read once.)"""
    graph: nx.DiGraph[str] = nx.DiGraph()
    pending = list(views)
    while pending:
        view = pending.pop()
        if graph.nodes.get(view, {}).get("materialized"):
            continue
        graph.add_node(
            view, materialized=True, state=STATE_OF in (store_properties(spark, view) or {})
        )
        for source in latest_consumed(spark, view).sources:
            graph.add_edge(source, view)
            if store_properties(spark, source) is not None:
                pending.append(source)
    return graph


def refresh_order(graph: nx.DiGraph[str]) -> list[str]:
    """The materialized views of ``graph``, each after every view it reads, by name where
    that leaves a choice (not the state tables: a view's refresh refreshes its own)."""
    return [
        v
        for v in nx.lexicographical_topological_sort(graph)
        if graph.nodes[v].get("materialized") and not graph.nodes[v].get("state")
    ]


def readers(spark: Session, view: str) -> list[str]:
    """The materialized views that read ``view`` directly, sorted."""
    graph = dependency_graph(spark, materialized_views(spark))
    return sorted(graph.successors(view)) if view in graph else []


def check_no_cycle(spark: Session, view: str, sources) -> None:
    """Refuse a definition of ``view`` that reads ``sources`` if ``view`` would then read
    itself through other materialized views."""
    upstream = [s for s in sources if store_properties(spark, s) is not None]
    graph = dependency_graph(spark, upstream)
    graph.add_edges_from((source, view) for source in sources)
    try:
        cycle = nx.find_cycle(graph, view)
    except nx.NetworkXNoCycle:
        return
    path = " → ".join([edge[0] for edge in cycle] + [cycle[0][0]])
    raise DependencyCycle(
        f"{view} would read itself: {path}",
        hint="a materialized view may read other materialized views, but not through a cycle",
    )
