"""What a materialized view says about itself: DESCRIBE, its history, its lag."""

from __future__ import annotations

import time

from pyspark.sql import DataFrame

from ivm.runtime.catalog import (DEFINITION, FRESHNESS, SUSPENDED, qualified_name, store_name,
                                 store_properties)
from ivm.runtime.definition import (compile_definition, resolution_database, settings,
                                    view_properties)
from ivm.runtime.delta_log import DeltaLogReader
from ivm.runtime.fallback import replaced_source
from ivm.runtime.history import history, latest_record
from ivm.runtime.messages import size
from ivm.runtime.planner import DEFAULT_POLICY, POLICY
from ivm.runtime.sources import delta_table, table_version


def consumed_versions(spark, view: str) -> dict[str, int]:
    """The source versions the store of ``view`` reflects, from its latest record."""
    return latest_record(DeltaLogReader(spark, store_name(view)))[1].sources


def lag_seconds(spark, view: str) -> float:
    """How long the oldest source commit that ``view`` does not reflect has been waiting,
    through the materialized views it reads (0 when the view is up to date)."""
    oldest = _oldest_unconsumed_ms(spark, view)
    return 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)


def _oldest_unconsumed_ms(spark, view: str) -> int | None:
    """The commit time of the oldest source commit ``view`` does not reflect, if any."""
    times = []
    last = latest_record(DeltaLogReader(spark, store_name(view)))[1]
    for table, consumed in last.sources.items():
        log = DeltaLogReader(spark, delta_table(spark, table))
        latest = log.version()
        if replaced_source(last.table_ids, {table: log.table_id()}):
            consumed = -1       # another table of that name: none of its commits is reflected
        if latest > consumed:
            commits = log.commits(consumed, latest)
            times.append(commits[0].timestamp_ms if commits else 0)
        if store_properties(spark, table) is not None:
            times.append(_oldest_unconsumed_ms(spark, table))
    return min((t for t in times if t is not None), default=None)


def describe_view(spark, name: str) -> DataFrame:
    """``DESCRIBE MATERIALIZED VIEW``: one ``(property, value)`` row per fact about the view:
    its definition and refresh policy, its last refresh (when, mode and why, the cost
    model's prediction, what it read and wrote), its state tables (key, size, version), the
    source versions it reflects and how far it lags behind its sources."""
    view = qualified_name(spark, name)
    properties = view_properties(spark, view)
    store = store_name(view)
    consumed = consumed_versions(spark, view)  # a StateError where the store has no record
    last = history(spark, store).first()
    assert last is not None  # the record consumed_versions read is in the history
    freshness = properties.get(FRESHNESS)
    compiled = compile_definition(spark, view, properties)
    facts = [("view", view), ("definition", properties[DEFINITION]), ("store", store),
             *([("semantics", compiled.semantics)] if compiled.semantics else []),
             ("freshness seconds", freshness or ""),
             ("refreshed by ivm run", "suspended" if properties.get(SUSPENDED) == "true"
              else "yes" if freshness else "no (no FRESHNESS)"),
             ("refresh policy", properties.get(POLICY, DEFAULT_POLICY)),
             ("last refresh", str(last.timestamp)), ("last refresh mode", last.mode),
             ("last refresh reason", last.reason or ""),
             ("last refresh prediction", last.prediction or ""),
             ("last refresh read bytes", "" if last.read_bytes is None else str(last.read_bytes)),
             ("last refresh rows written", f"+{last.rows_inserted or 0} ~{last.rows_updated or 0}"
                                           f" -{last.rows_deleted or 0}"),
             ("database", resolution_database(view, properties))]
    facts += [(f"setting {key}", value)
              for key, value in (settings(properties) or {}).items()]
    for table, state in compiled.states:
        log = DeltaLogReader(spark, store_name(table))
        keys = f"keyed by ({', '.join(state.store.keys)})" if state.store.keys else "one row"
        facts.append((f"state table {table}",
                      f"{keys}; {size(log.size_in_bytes())}; version {log.version()}"))
    for table, version in sorted(consumed.items()):
        latest = table_version(spark, table)
        facts.append((f"source {table}", f"version {version} of {latest}"))
    facts.append(("lag seconds", f"{lag_seconds(spark, view):.1f}"))
    return spark.createDataFrame(facts, "property STRING, value STRING")


def refresh_history(spark, name: str) -> DataFrame:
    """``DESCRIBE HISTORY MATERIALIZED VIEW``: every CREATE and REFRESH that wrote the view,
    newest first (see :func:`ivm.runtime.history.history`)."""
    view = qualified_name(spark, name)
    view_properties(spark, view)
    return history(spark, store_name(view))
