"""``REFRESH ALL MATERIALIZED VIEWS``: every view (or those named, and the views they read)
refreshed in the order of the graph of views, each after the views it reads, a failure
stopping only the views that read the failed one."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
from py4j.protocol import Py4JNetworkError  # pyright: ignore[reportMissingTypeStubs]

from ivm.errors import ViewsNotRefreshed
from ivm.runtime.catalog.graph import dependency_graph, materialized_views, refresh_order
from ivm.runtime.catalog.history import RefreshResult
from ivm.runtime.catalog.tables import qualified_name
from ivm.runtime.messages import one_line
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.spark.connect import Session


def refresh_all(
    spark: Session, views: list[str] | None = None, report: Callable[[str], None] | None = None
) -> list[RefreshResult]:
    """Refresh ``views`` (default: every materialized view) and the materialized views they
    read, each after the views it reads; ``report`` is told each view's outcome, on a line,
    as soon as it is known. The refreshes, in order.

    A refresh that fails does not stop the others, but a view that reads a failed one,
    directly or through others, is skipped: refreshed, it would join its other sources' new
    rows with the failed view's old ones. If a view was not refreshed, once every other one
    is, :class:`~ivm.errors.ViewsNotRefreshed` is raised instead, from the first failure's
    error: it carries the refreshes, and why each view left was not refreshed."""
    targets = (
        materialized_views(spark) if views is None else [qualified_name(spark, v) for v in views]
    )
    graph = dependency_graph(spark, targets)
    results: list[RefreshResult] = []
    failures: dict[str, str] = {}
    failed: list[str] = []
    first: Exception | None = None
    for view in refresh_order(graph):
        # networkx's stubs leave the type of ancestors' source unknown
        reads = nx.ancestors(graph, view)  # pyright: ignore[reportUnknownMemberType]
        if upstream := [v for v in failed if v in reads]:
            failures[view] = f"skipped: it reads {', '.join(upstream)}, which failed"
            line = f"refresh of {view} {failures[view]}"
        else:
            try:
                results.append(refresh_view(spark, view))
            except Py4JNetworkError:  # Spark's driver is gone: no view can be refreshed
                raise
            except Exception as error:  # the others go on; KeyboardInterrupt stops them
                first = first or error
                failed.append(view)
                failures[view] = one_line(error)
                line = f"refresh of {view} failed: {failures[view]}"
            else:
                line = str(results[-1])
        if report is not None:
            report(line)
    if failures:
        raise ViewsNotRefreshed(results, failures) from first
    return results
