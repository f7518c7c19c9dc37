"""``ivm run``: keep every materialized view within its freshness, until stopped.

A view declared with ``FRESHNESS = INTERVAL f`` may lag at most ``f`` behind its sources: its
lag is the age of the oldest source commit it has not consumed. Each pass of the loop
refreshes the views whose lag has reached half their freshness (leaving the other half for
the refresh itself), together with the materialized views they read, upstream first; a
view whose upstream view was just refreshed is refreshed in the same pass, so a pipeline
stays consistent. Views without a freshness, or suspended, are refreshed only on demand.

Stopping (Ctrl-C, or ``stop``) between or during refreshes is safe: refreshes are exactly-once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import networkx as nx

from ivm.runtime.catalog import FRESHNESS, SUSPENDED, store_properties
from ivm.runtime.describe import lag_seconds
from ivm.runtime.graph import dependency_graph, materialized_views, refresh_order
from ivm.runtime.history import RefreshResult
from ivm.runtime.refresh import refresh_view

CATALOG_RESCAN_SECONDS = 30.0
"""How often the loop looks for views created or dropped since it started."""


def _schedule(spark, view: str) -> float | None:
    """The freshness of ``view`` in seconds; None if ``ivm run`` leaves it alone."""
    properties = store_properties(spark, view) or {}
    if FRESHNESS not in properties or properties.get(SUSPENDED) == "true":
        return None
    return float(properties[FRESHNESS])


def run_pass(spark, views: list[str]) -> list[RefreshResult]:
    """One pass: refresh the views of ``views`` that are due, and what they read."""
    graph = dependency_graph(spark, views)
    due = set()
    for view in views:
        freshness = _schedule(spark, view)
        if freshness is not None and lag_seconds(spark, view) >= freshness / 2:
            due.add(view)
    for view in list(due):
        due |= {v for v in nx.ancestors(graph, view) if graph.nodes[v].get("materialized")}
    results, refreshed = [], set()
    for view in refresh_order(graph):
        upstream_moved = any(v in refreshed for v in graph.predecessors(view))
        if view in due or (upstream_moved and _schedule(spark, view) is not None):
            result = refresh_view(spark, view)
            results.append(result)
            if result.mode != "noop":
                refreshed.add(view)
    return results


def run(spark, *, tick: float = 1.0, stop: threading.Event | None = None,
        report: Callable[[str], None] = print, views: list[str] | None = None) -> None:
    """Refresh views as their freshness requires until ``stop`` is set or Ctrl-C: those of
    ``views`` (qualified names), else every materialized view of the catalog."""
    stop = stop or threading.Event()
    watched: list[str] = []
    scanned = 0.0
    try:
        while not stop.is_set():
            if time.monotonic() - scanned >= CATALOG_RESCAN_SECONDS:
                watched = list(views) if views is not None else materialized_views(spark)
                scanned = time.monotonic()
                scheduled = [v for v in watched if _schedule(spark, v) is not None]
                report(f"keeping {len(scheduled)} of {len(watched)} materialized views fresh: "
                       f"{', '.join(scheduled) or 'none has a FRESHNESS'}")
            for result in run_pass(spark, watched):
                if result.mode != "noop":
                    report(str(result))
            stop.wait(tick)
    except KeyboardInterrupt:
        pass
    report("stopped")
