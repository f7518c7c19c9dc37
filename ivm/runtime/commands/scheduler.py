"""``ivm run``: keep every materialized view within its freshness, until stopped.

A view declared with ``FRESHNESS = INTERVAL f`` may lag at most ``f`` behind its sources: its
lag is the age of the oldest source commit it has not consumed, through the materialized
views it reads (:mod:`ivm.runtime.observation.lag`). The loop runs a pass per tick:

* **What is due.** A pass first reads every watched view's lag, each Delta log once
  (:func:`~ivm.runtime.log.delta_log.reading_each_log_once`): N views over S sources cost
  N + S log reads, and a pass with nothing due nothing more. A view is due when its lag
  reaches half its freshness, which leaves the other half for the refresh itself.
* **In which order.** The most urgent view first: by *slack*, its freshness minus its lag
  (how long until it is staler than it may be; ties upstream first). Just before a view,
  the materialized views it reads that lag themselves are refreshed, upstream first, so it
  consumes what they have just committed; and a view with a freshness that reads a view
  the pass refreshed is refreshed in the same pass, at its own slack, so that a pipeline
  stays consistent. A pass refreshes what was due at its start; a view due meanwhile waits
  for the next one.
* **Failures.** A refresh that fails (a source dropped, a store that disagrees with its
  sources, …) is reported in one line, and the view is tried again after a backoff that
  doubles from the tick up to its freshness; the other views go on. A view whose lag cannot
  be read is due, after every other: its refresh says what is wrong.
* **Upkeep.** Between passes the loop vacuums one view's stores (:mod:`ivm.runtime.refresh.upkeep`)
  if one is due: each view once per ``vacuum_every`` (a day), the views first seen spread
  over that period, so that a loop started anew does not vacuum them all at once.
* **The catalog.** Which views there are, and each one's freshness and suspension, are read
  at each catalog rescan (:data:`CATALOG_RESCAN_SECONDS`): a view created, dropped,
  altered, suspended or resumed is seen within that time.

Views without a freshness, or suspended, are refreshed only on demand, or as what a due view
reads. Stopping (Ctrl-C, or ``stop``) between or during refreshes is safe: refreshes are
exactly-once.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx
from py4j.protocol import Py4JNetworkError

from ivm.runtime.catalog.graph import dependency_graph, materialized_views
from ivm.runtime.catalog.history import RefreshResult
from ivm.runtime.catalog.properties import FRESHNESS, SUSPENDED
from ivm.runtime.catalog.tables import store_properties
from ivm.runtime.decision.terms import Mode
from ivm.runtime.log.delta_log import reading_each_log_once
from ivm.runtime.messages import one_line
from ivm.runtime.observation.lag import lag_seconds, oldest_unconsumed_ms
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.refresh.upkeep import VACUUM_EVERY_SECONDS, upkeep
from ivm.runtime.spark.connect import Session

CATALOG_RESCAN_SECONDS = 30.0
"""How often the loop reads the catalog again: the views created or dropped since, and each
view's freshness and suspension."""


@dataclass(frozen=True)
class Failing:
    """A view whose latest refreshes failed: how many in a row, and when it is tried again
    (seconds since the epoch)."""

    failures: int
    retry_at: float


@dataclass
class Watched:
    """The views the loop keeps, as the latest catalog rescan found them (:func:`watch`), and
    the failing ones."""

    views: list[str]  # every watched view, qualified
    freshness: dict[str, float]  # those kept fresh: the seconds each may lag
    graph: nx.DiGraph  # those and, transitively, what they read
    failing: dict[str, Failing] = field(default_factory=dict)
    rank: dict[str, int] = field(init=False)  # each node's place, upstream first
    known: dict[str, bool] = field(init=False)  # whether each node is a materialized view

    def __post_init__(self):
        self.rank = {
            node: i for i, node in enumerate(nx.lexicographical_topological_sort(self.graph))
        }
        self.known = {
            node: bool(materialized)
            for node, materialized in self.graph.nodes(data="materialized", default=False)
        }

    def backing_off(self, view: str, now: float) -> bool:
        return view in self.failing and self.failing[view].retry_at > now


@dataclass(frozen=True)
class Failure:
    """A refresh that failed, and when its view is tried again."""

    view: str
    message: str  # one line
    failures: int  # in a row
    retry_in: float  # seconds

    def __str__(self) -> str:
        again = f", {self.failures} times in a row" if self.failures > 1 else ""
        return (
            f"refresh of {self.view} failed{again}: {self.message}; "
            f"trying again in {self.retry_in:g}s"
        )


@dataclass
class Pass:
    """What one pass did: each refresh (no-ops included) and failure, in order."""

    outcomes: list[RefreshResult | Failure] = field(default_factory=list)

    @property
    def refreshed(self) -> list[RefreshResult]:
        """The refreshes that wrote a store."""
        return [r for r in self.outcomes if isinstance(r, RefreshResult) and r.mode != Mode.NOOP]

    @property
    def failed(self) -> list[Failure]:
        return [f for f in self.outcomes if isinstance(f, Failure)]


@dataclass
class Vacuums:
    """When each watched view is vacuumed next (``time.monotonic()`` seconds)."""

    every: float
    due: dict[str, float] = field(default_factory=dict)

    def watch(self, views: list[str], now: float) -> None:
        """Keep the schedule of ``views``: a view not seen before is due within one period,
        the new ones spread over it; a view no longer watched is forgotten."""
        new = [view for view in views if view not in self.due]
        self.due = {view: at for view, at in self.due.items() if view in views}
        for i, view in enumerate(new):
            self.due[view] = now + self.every * (i + 1) / len(new)

    def next(self, now: float) -> str | None:
        """The most overdue view, if one is due, scheduled again a period later."""
        view = min(self.due, key=self.due.__getitem__, default=None)
        if view is None or self.due[view] > now:
            return None
        self.due[view] = now + self.every
        return view


def watch(spark: Session, views: list[str] | None = None, before: Watched | None = None) -> Watched:
    """The catalog rescan: ``views`` (qualified names), else every materialized view of the
    catalog; the freshness of each one that ``ivm run`` keeps fresh, and what those read; the
    failing views of ``before`` that still exist stay failing."""
    with reading_each_log_once():
        names = list(views) if views is not None else materialized_views(spark)
        freshness = {
            view: seconds for view in names if (seconds := _freshness(spark, view)) is not None
        }
        graph = nx.DiGraph()
        for view in freshness:
            try:
                graph.update(dependency_graph(spark, [view]))
            except Exception:  # a store without a record, say: its refresh will say so
                graph.add_node(view, materialized=True)
        failing = {
            view: failing
            for view, failing in (before.failing if before else {}).items()
            if store_properties(spark, view) is not None
        }
    return Watched(names, freshness, graph, failing)


def _freshness(spark: Session, view: str) -> float | None:
    """The freshness of ``view`` in seconds; None if ``ivm run`` leaves it alone."""
    properties = store_properties(spark, view) or {}
    if FRESHNESS not in properties or properties.get(SUSPENDED) == "true":
        return None
    return float(properties[FRESHNESS])


@dataclass(frozen=True)
class _Plan:
    """What a pass read before refreshing anything."""

    slack: dict[str, float]  # each view read: its freshness minus its lag
    due: list[str]
    behind: set[str]  # what due views read: the materialized views that lag


def run_pass(
    spark: Session, watched: Watched, *, tick: float = 1.0, now: float | None = None
) -> Pass:
    """One pass at ``now`` (seconds since the epoch; default: the present): refresh the
    views of ``watched`` that are due, most urgent first, each just after the lagging
    materialized views it reads; a view that fails is tried again after a backoff from
    ``tick`` seconds up (``watched.failing``)."""
    now = time.time() if now is None else now
    with reading_each_log_once():  # every read before the first refresh: none is stale
        plan = _plan(spark, watched, now)
    done, attempted = Pass(), set()
    queue = [(plan.slack[view], watched.rank[view], view) for view in plan.due]
    heapq.heapify(queue)

    def attempt(view: str, backoff_cap: float) -> None:
        attempted.add(view)
        try:
            result = refresh_view(spark, view)
        except Py4JNetworkError:  # Spark's driver is gone: no view can be refreshed
            raise
        except Exception as error:  # the others go on; KeyboardInterrupt stops the loop
            done.outcomes.append(_failed(watched, view, error, now, tick, backoff_cap))
            return
        watched.failing.pop(view, None)
        done.outcomes.append(result)
        if result.mode != Mode.NOOP:  # its readers kept fresh follow it in this pass
            for reader in _readers(watched.graph, view):
                if reader in plan.slack and reader not in attempted:
                    heapq.heappush(queue, (plan.slack[reader], watched.rank[reader], reader))

    while queue:
        _, _, view = heapq.heappop(queue)
        if view in attempted:
            continue
        for upstream in sorted(nx.ancestors(watched.graph, view), key=watched.rank.__getitem__):
            if (
                upstream in plan.behind
                and upstream not in attempted
                and not watched.backing_off(upstream, now)
            ):
                attempt(upstream, watched.freshness[view])
        attempt(view, watched.freshness[view])
    return done


def _plan(spark: Session, watched: Watched, now: float) -> _Plan:
    slack, due = {}, []
    for view, freshness in watched.freshness.items():
        if watched.backing_off(view, now):
            continue
        try:
            lag = lag_seconds(spark, view, now, watched.known)
        except Exception:  # a source dropped, say: due after every other, and its refresh
            slack[view] = math.inf  # will say what is wrong
            due.append(view)
            continue
        slack[view] = freshness - lag
        if lag >= freshness / 2:
            due.append(view)
    behind = {
        node
        for view in due
        for node in nx.ancestors(watched.graph, view)
        if _lags(spark, watched, node)
    }
    return _Plan(slack, due, behind)


def _lags(spark: Session, watched: Watched, node: str) -> bool:
    """Whether ``node`` is a materialized view (not a state table, which its view's refresh
    refreshes) with a source commit it does not reflect, or whose lag cannot be read."""
    if not watched.known.get(node) or watched.graph.nodes[node].get("state"):
        return False
    try:
        return oldest_unconsumed_ms(spark, node, watched.known) is not None
    except Exception:  # its refresh will say what is wrong
        return True


def _readers(graph: nx.DiGraph, view: str) -> set[str]:
    """The materialized views that read ``view``, directly or through a state table (whose
    refresh is its view's)."""
    found = set()
    for reader in graph.successors(view):
        found |= _readers(graph, reader) if graph.nodes[reader].get("state") else {reader}
    return found


def _failed(
    watched: Watched, view: str, error: Exception, now: float, tick: float, backoff_cap: float
) -> Failure:
    """Record the failed refresh of ``view`` in a pass started at ``now``: tried again
    ``tick`` seconds after, twice as long after each failure in a row, at most
    ``backoff_cap`` (and at least ``tick``)."""
    failures = watched.failing[view].failures + 1 if view in watched.failing else 1
    delay = min(tick * 2 ** min(failures - 1, 32), max(backoff_cap, tick))
    watched.failing[view] = Failing(failures, now + delay)
    return Failure(view, one_line(error), failures, delay)


def run(
    spark: Session,
    *,
    tick: float = 1.0,
    stop: threading.Event | None = None,
    report: Callable[[str], None] = print,
    views: list[str] | None = None,
    vacuum_every: float = VACUUM_EVERY_SECONDS,
) -> None:
    """Refresh views as their freshness requires until ``stop`` is set or Ctrl-C: those of
    ``views`` (qualified names), else every materialized view of the catalog; between
    passes, vacuum each one's stores every ``vacuum_every`` seconds."""
    stop = stop or threading.Event()
    watched, scanned, vacuums = None, -math.inf, Vacuums(vacuum_every)
    try:
        while not stop.is_set():
            if time.monotonic() - scanned >= CATALOG_RESCAN_SECONDS:
                scanned = time.monotonic()
                try:
                    watched = watch(spark, views, watched)
                except Exception as error:  # a view dropped as it was read, say
                    report(f"reading the catalog failed: {one_line(error)}")
                else:
                    vacuums.watch(watched.views, time.monotonic())
                    report(
                        f"keeping {len(watched.freshness)} of {len(watched.views)} "
                        f"materialized views fresh: "
                        f"{', '.join(watched.freshness) or 'none has a FRESHNESS'}"
                    )
            if watched is not None:
                done = run_pass(spark, watched, tick=tick)
                for outcome in done.outcomes:
                    if not (isinstance(outcome, RefreshResult) and outcome.mode == Mode.NOOP):
                        report(str(outcome))
            if (view := vacuums.next(time.monotonic())) is not None:
                _keep_up(spark, view, report)
            stop.wait(tick)
    except KeyboardInterrupt:
        pass
    report("stopped")


def _keep_up(spark: Session, view: str, report: Callable[[str], None]) -> None:
    """The upkeep of ``view``: compaction where due, and VACUUM; a failure is reported and
    the loop goes on (the view is vacuumed again a period later)."""
    try:
        for step in upkeep(spark, view):
            report(str(step))
    except Py4JNetworkError:  # Spark's driver is gone
        raise
    except Exception as error:  # a view dropped meanwhile, say
        report(f"upkeep of {view} failed: {one_line(error)}")
