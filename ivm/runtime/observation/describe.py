"""What a materialized view says about itself: DESCRIBE, its history, its lag, its
definition."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row

from ivm.runtime.catalog.definition import (
    compile_definition,
    resolution_database,
    settings,
    view_properties,
)
from ivm.runtime.catalog.history import history, latest_consumed, latest_record
from ivm.runtime.catalog.properties import (
    DEFINITION,
    DELETED_FILE_RETENTION,
    FRESHNESS,
    LOGGED_LAYOUT,
    MERGED_LAYOUT,
    POLICY,
    STATE_OF,
    SUSPENDED,
    is_logged,
    layout_description,
)
from ivm.runtime.catalog.tables import qualified_name, store_name, store_properties
from ivm.runtime.decision.decide import Alternative
from ivm.runtime.decision.terms import DEFAULT_POLICY
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once
from ivm.runtime.messages import size
from ivm.runtime.observation.lag import lag_seconds
from ivm.runtime.refresh.gather import predict
from ivm.runtime.refresh.retention import (
    Assessment,
    Unconsumed,
    assess,
    interval_seconds,
    retentions,
    unconsumed,
)
from ivm.runtime.refresh.upkeep import COMPACT_AT
from ivm.runtime.spark.connect import Session


def consumed_versions(spark: Session, view: str) -> dict[str, int]:
    """The source versions the store of ``view`` reflects, from its latest record."""
    return latest_record(DeltaLogReader(spark, store_name(view)))[1].sources


def describe_view(spark: Session, name: str) -> DataFrame:
    """``DESCRIBE MATERIALIZED VIEW``: one ``(property, value)`` row per fact about the view:
    its definition and refresh policy, its last refresh (when, mode and why, the cost
    model's prediction, what it read and wrote), its state tables (key, size, version), the
    source versions it reflects and how far it lags behind its sources, until when the
    sources keep the change it has not consumed, what its next refresh would do now
    (:func:`~ivm.runtime.refresh.gather.predict`), and a ``warning`` where the sources may
    remove the change before the view takes it (see :mod:`ivm.runtime.refresh.retention`). Each
    Delta log is read once."""
    view = qualified_name(spark, name)
    with reading_each_log_once():
        return _describe_view(spark, view)


def _describe_view(spark: Session, view: str) -> DataFrame:
    properties = view_properties(spark, view, "DESCRIBE")
    store = store_name(view)
    record = latest_consumed(spark, view)  # a StateError if the store has none
    last = history(spark, store).first()
    assert last is not None  # the record read above is in the history
    freshness = properties.get(FRESHNESS)
    compiled = compile_definition(spark, view, properties)
    facts = [
        ("view", view),
        ("definition", properties[DEFINITION]),
        ("store", store),
        *([("state table of", properties[STATE_OF])] if STATE_OF in properties else []),
        *([("semantics", compiled.semantics)] if compiled.semantics else []),
        ("freshness seconds", freshness or ""),
        (
            "refreshed by ivm run",
            "suspended"
            if properties.get(SUSPENDED) == "true"
            else "yes"
            if freshness
            else "no (no FRESHNESS)",
        ),
        ("refresh policy", properties.get(POLICY, DEFAULT_POLICY.value)),
        ("last refresh", str(last.timestamp)),
        ("last refresh mode", last.mode),
        ("last refresh technique", last.technique or ""),
        ("last refresh reason", last.reason or ""),
        ("last refresh prediction", last.prediction or ""),
        ("last refresh alternatives", _alternatives(last.alternatives)),
        ("last refresh read bytes", "" if last.read_bytes is None else str(last.read_bytes)),
        (
            "last refresh rows written",
            f"+{last.rows_inserted or 0} ~{last.rows_updated or 0} -{last.rows_deleted or 0}",
        ),
        ("database", resolution_database(view, properties)),
        ("store layout", layout_description(is_logged(properties))),
        ("store files", _files(DeltaLogReader.of(spark, store))),
        (
            "store retention",
            "; ".join(map(str, retentions(DeltaLogReader.of(spark, store).properties()))),
        ),
    ]
    facts += [(f"setting {key}", value) for key, value in (settings(properties) or {}).items()]
    for table, state in compiled.states:
        log = DeltaLogReader.of(spark, store_name(table))
        keys = f"keyed by ({', '.join(state.store.keys)})" if state.store.keys else "one row"
        facts.append((f"state table {table}", f"{keys}; {_files(log)}; version {log.version()}"))
    for change in sorted(unconsumed(spark, record), key=lambda c: c.source):
        facts.append((f"source {change.source}", f"version {change.consumed} of {change.latest}"))
    assessed = retention_assessments(spark, view, compiled, record, freshness)
    facts += [
        (f"change data of {source} kept", a.kept_until)
        for source, a in assessed
        if a.kept_until is not None
    ]
    facts.append(("lag seconds", f"{lag_seconds(spark, view):.1f}"))
    facts.append(("next refresh", str(predict(spark, view))))
    facts += [("warning", warning) for _, a in assessed for warning in a.warnings]
    return spark.createDataFrame(facts, "property STRING, value STRING")


def _alternatives(recorded: list[Row] | None) -> str:
    """The ways a refresh weighed, as its record keeps them, in words ("" where it kept none:
    a CREATE, a refresh with nothing to do, a record of an older ivm)."""
    return "; ".join(str(Alternative.from_record(way.asDict())) for way in recorded or [])


def retention_assessments(
    spark: Session, view: str, compiled, record, freshness: str | None
) -> list[tuple[str, Assessment]]:
    """Per source of ``view`` (compiled as ``compiled``, its store's latest ``record``, its
    FRESHNESS in seconds): until when the source keeps the change the view has not consumed,
    and the warnings due (see :mod:`ivm.runtime.refresh.retention`). A refresh of the view refreshes
    its state tables first: their sources' change counts too."""
    changes = unconsumed(spark, record)
    for table, _ in compiled.states:
        changes += unconsumed(spark, latest_consumed(spark, table))
    freshness_seconds, now_ms = (
        None if freshness is None else float(freshness),
        int(time.time() * 1000),
    )
    return [
        (change.source, assess(view, change, freshness_seconds, now_ms))
        for change in _earliest_per_source(changes)
    ]


def _files(log: DeltaLogReader) -> str:
    """A store's data files and their size, and when a refresh compacts them."""
    return (
        f"{log.file_count()} files, {size(log.size_in_bytes())}; compacted at {COMPACT_AT} "
        f"files more than its size needs"
    )


def _earliest_per_source(changes: list[Unconsumed]) -> list[Unconsumed]:
    """One change per source, sorted by source: where the view and a state table of it both
    read a source, the one with the older pending commit (one no longer in the log first,
    then one whose files are gone)."""

    def earliest(change: Unconsumed) -> tuple:
        return (
            not change.pending,
            not change.lost,
            change.gone_from is None,
            change.oldest_ms or 0,
        )

    chosen: dict[str, Unconsumed] = {}
    for change in changes:
        if change.source not in chosen or earliest(change) < earliest(chosen[change.source]):
            chosen[change.source] = change
    return [chosen[source] for source in sorted(chosen)]


def refresh_history(spark: Session, name: str) -> DataFrame:
    """``DESCRIBE HISTORY MATERIALIZED VIEW``: every CREATE and REFRESH that wrote the view,
    newest first (see :func:`ivm.runtime.catalog.history.history`)."""
    view = qualified_name(spark, name)
    view_properties(spark, view, "DESCRIBE HISTORY")
    return history(spark, store_name(view))


@dataclass(frozen=True)
class ViewDefinition:
    """A materialized view as its CREATE defined it: each clause that a CREATE OR REPLACE
    with another value would change. A tool that keeps views in step with their source code
    (the dbt adapter) compares its own with these."""

    view: str
    query: str  # the SELECT, as the CREATE spelled it
    partitioned_by: tuple[str, ...]
    freshness: int | None  # seconds; None: no FRESHNESS (ivm run leaves the view alone)
    retention: float | None  # seconds its change data and earlier versions stay readable
    policy: str  # its REFRESH POLICY
    layout: str  # its STORE LAYOUT


def view_definition(spark: Session, name: str) -> ViewDefinition | None:
    """The definition of the materialized view ``name``; None where ``name`` is none (a
    table, a Spark view, nothing, or a state table, which is part of a view)."""
    view = qualified_name(spark, name)
    with reading_each_log_once():
        properties = store_properties(spark, view)
        if properties is None or STATE_OF in properties:
            return None
        freshness = properties.get(FRESHNESS)
        return ViewDefinition(
            view=view,
            query=properties[DEFINITION],
            partitioned_by=tuple(DeltaLogReader.of(spark, store_name(view)).partition_columns()),
            freshness=None if freshness is None else int(freshness),
            retention=interval_seconds(properties.get(DELETED_FILE_RETENTION, "")),
            policy=properties.get(POLICY, DEFAULT_POLICY.value),
            layout=LOGGED_LAYOUT if is_logged(properties) else MERGED_LAYOUT,
        )
