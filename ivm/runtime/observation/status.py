"""``ivm status``: one line per materialized view (its freshness, how far it lags, its last
refresh, and what its next refresh would do now) and the warnings due (a catalog view
dropped or changed by Spark's own statements among them).

The prediction is the plan the next refresh would make now
(:func:`~ivm.runtime.refresh.gather.predict`), so a refresh that will fail, or recompute, is
known before ``ivm run`` or a job meets it. ``DESCRIBE MATERIALIZED VIEW`` says the rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ivm.runtime.catalog.definition import compile_definition, view_properties
from ivm.runtime.catalog.history import latest_consumed
from ivm.runtime.catalog.properties import FRESHNESS, SUSPENDED
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.log.delta_log import reading_each_log_once
from ivm.runtime.messages import one_line
from ivm.runtime.observation.describe import retention_assessments
from ivm.runtime.observation.lag import lag_seconds
from ivm.runtime.refresh.commit import catalog_view_problem
from ivm.runtime.refresh.gather import predict, reshaped
from ivm.runtime.spark.connect import Session

HEADER = ("view", "freshness", "lag", "last refresh", "next refresh")


@dataclass(frozen=True)
class ViewStatus:
    """What ``ivm status`` says of one view: its ``freshness`` in seconds (None: none, so
    ``ivm run`` leaves it alone), whether ``ivm run`` has it ``suspended``, its ``lag`` in
    seconds, its last refresh (``last_mode``, committed at ``last_ms`` in ``last_seconds``),
    the plan of its ``next`` refresh in words, and the ``warnings`` due."""

    view: str
    freshness: float | None
    suspended: bool
    lag: float
    last_mode: str
    last_ms: int | None
    last_seconds: float | None
    next: str
    warnings: tuple[str, ...] = ()


def view_status(spark: Session, view: str) -> ViewStatus:
    """The status of the materialized view ``view`` (qualified), each Delta log read once. A
    next refresh that cannot even be planned (a source dropped, say) is shown as the error
    it would meet."""
    with reading_each_log_once():
        properties = view_properties(spark, view)
        freshness = properties.get(FRESHNESS)
        record = latest_consumed(spark, view)
        catalog_view = []
        try:
            compiled = compile_definition(spark, view)
            assessed = retention_assessments(spark, view, compiled, record, freshness)
            upcoming = str(predict(spark, view))
            store = spark.table(store_name(view)).schema
            if reshaped(compiled, properties, store) is None and (
                problem := catalog_view_problem(spark, view, compiled, properties, store)
            ):  # a store of other columns has its catalog view written anew by its recompute
                catalog_view = [f"{problem}: the next refresh writes it anew"]
        except Exception as error:  # what the refresh would meet, on one line
            upcoming, assessed = f"fails: {one_line(error)}", []
        return ViewStatus(
            view,
            None if freshness is None else float(freshness),
            properties.get(SUSPENDED) == "true",
            lag_seconds(spark, view),
            record.mode,
            record.committed_ms,
            record.seconds,
            upcoming,
            (*catalog_view, *(w for _, a in assessed for w in a.warnings)),
        )


def duration(seconds: float) -> str:
    """``seconds`` for a reader.

    >>> [duration(s) for s in (0, 4.2, 80, 90, 7200, 86400 * 3)]
    ['0 s', '4 s', '80 s', '1.5 min', '2.0 h', '3.0 d']
    """
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size * 1.5:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def status_table(statuses: list[ViewStatus], now_ms: int | None = None) -> str:
    """The views' status as an aligned table, one line each, then the warnings.

    >>> print(status_table([ViewStatus("db.v", 300, False, 12.0, "incremental", 1000, 0.8,
    ...                                "incremental, a change of 698 B")], now_ms=181000))
    view  freshness  lag   last refresh                     next refresh
    db.v  5.0 min    12 s  3.0 min ago, incremental, 0.8 s  incremental, a change of 698 B
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms

    def last(s: ViewStatus) -> str:
        ago = [] if s.last_ms is None else [f"{duration(max(0, now_ms - s.last_ms) / 1000)} ago"]
        took = [] if s.last_seconds is None else [f"{s.last_seconds:.1f} s"]
        return ", ".join([*ago, s.last_mode, *took])

    rows = [HEADER] + [
        (
            s.view,
            "suspended" if s.suspended else "-" if s.freshness is None else duration(s.freshness),
            duration(s.lag),
            last(s),
            s.next,
        )
        for s in statuses
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER) - 1)]
    lines = [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]])
        for row in rows
    ]
    lines += [f"warning: {s.view}: {w}" for s in statuses for w in s.warnings]
    return "\n".join(lines)
