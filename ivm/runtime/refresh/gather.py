"""The facts a refresh's decision is made from (:class:`~ivm.runtime.decision.decide.Facts`),
read before any of the change is: the store's latest record, the sources' versions, table ids
and logs, the session's settings. Gathering chooses nothing; the decision
(:func:`~ivm.runtime.decision.decide.decide`) does.

What the sources' logs show standing in the way of applying the change
(:func:`read_change_size`):

* (``unavailable``) a source's log no longer holds some of the commits the change needs (log
  retention, VACUUM), or its change data feed was turned off in between (so some commits
  recorded no change data);
* (``reinitialize``) a source is not the table the view read: it is at an older version (a
  RESTORE), a commit replaced it, or a commit since changed a column (even one changed back
  later: see :mod:`ivm.runtime.log.schema_history`).

A change data file removed by VACUUM is found in the log's retention
(:func:`~ivm.runtime.refresh.retention.unreadable`) by a prediction, and by a refresh as it
reads the change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pyspark.sql.types import StructType

from ivm.codegen.store import LOGGED
from ivm.compiler import CompiledView
from ivm.rules import Kind
from ivm.runtime.catalog.definition import compile_definition, view_properties
from ivm.runtime.catalog.history import latest_record, written_outside
from ivm.runtime.catalog.properties import POLICY, is_logged
from ivm.runtime.catalog.tables import schema_types, store_name
from ivm.runtime.decision.cost import CostModel
from ivm.runtime.decision.decide import (
    DEFAULT_MIN_BYTES,
    DEFAULT_RATIO,
    MIN_BYTES,
    RATIO,
    Facts,
    RefreshPlan,
    after_state_tables,
    decide,
    never_incremental,
    replaced_source,
    state_table_recomputed,
)
from ivm.runtime.decision.terms import DEFAULT_POLICY, Obstacle, ObstacleKind, Policy
from ivm.runtime.log.delta_log import Commit, DeltaLogReader, reading_each_log_once
from ivm.runtime.refresh.retention import unreadable
from ivm.runtime.refresh.sources import (
    appends_rows,
    delta_table,
    latest_sources,
    total_source_bytes,
)
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import number_setting

CHANGE_DATA_UNAVAILABLE = "the change data of a source is no longer available"
INSERTS_ONLY_RULES = "spark.ivm.refresh.insertsOnlyRules"
"""``false`` turns off the rules for changes that insert rows only (:mod:`ivm.rules.append`):
every refresh then takes the rules for any change (to compare them, or to rule them out)."""


@dataclass(frozen=True)
class ChangeSize:
    """What the sources' logs say of the change: its bytes and the changed sources' bytes
    (None where the logs do not say, or were not read), whether it only inserts rows, and
    what stands in the way of applying it, if anything does."""

    change_bytes: int | None = None
    source_bytes: int | None = None
    inserts_only: bool = False  # every source's change inserts rows and removes none (as
    # far as its log says: a logged view's appends say nothing of its rows)
    found: Obstacle | None = None


def gather(
    spark: Session,
    view: str,
    compiled: CompiledView,
    properties: dict[str, str],
    store_schema: StructType,
    requested: Obstacle | None = None,
) -> Facts:
    """What is known of a refresh of ``view`` (a view, or a state table; ``compiled``, its
    store's ``properties`` and schema) before any of its change is read. The sources' logs
    are read for the change only where the decision can use it (nothing requested, some
    source changed, no policy or store that recomputes anyway)."""
    policy = _policy(compiled, properties)
    store = DeltaLogReader.of(spark, store_name(view))
    recorded, last = latest_record(store)
    requested = requested or _written_outside(store, recorded, properties)
    model = CostModel.from_record(last.cost).observed(
        last.mode, last.planned_bytes, last.read_bytes, last.seconds
    )
    previous = last.sources
    current, ids = latest_sources(spark, compiled.sources)
    other_columns = reshaped(compiled, properties, store_schema)
    # the store's types say nothing of sums in columns it does not have
    inexact = None if other_columns else never_incremental(compiled, schema_types(store_schema))
    replaced = replaced_source(last.table_ids, ids) is not None
    readable = (
        requested is None
        and policy is not Policy.FULL
        and inexact is None
        and not replaced
        and set(previous) == set(current)
        and previous != current
    )
    noop = requested is None and not replaced and previous == current and not other_columns
    ratio = number_setting(spark, RATIO, DEFAULT_RATIO)
    min_bytes = number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES)
    change = (
        read_change_size(spark, previous, current, ratio * min_bytes) if readable else ChangeSize()
    )
    return Facts(
        view,
        policy,
        previous,
        current,
        last.table_ids,
        ids,
        requested,
        inexact,
        found=change.found,
        change_bytes=change.change_bytes,
        source_bytes=change.source_bytes,
        inserts_only=change.inserts_only,
        model=model,
        full_bytes=None if noop else total_source_bytes(spark, current),
        min_bytes=min_bytes,
        ratio=ratio,
        reshaped=other_columns,
        inserts_only_rules=_inserts_only_rules(spark),
    )


def _policy(compiled: CompiledView, properties: dict[str, str]) -> Policy:
    """The refresh policy of a store with ``properties``; a lookup join's ``AUTO`` is
    ``INCREMENTAL``: a recompute enriches every row anew, so is never chosen for cost."""
    policy = Policy(properties.get(POLICY, DEFAULT_POLICY))
    if compiled.maintenance.rule.kind is Kind.LOOKUP and policy is Policy.AUTO:
        return Policy.INCREMENTAL
    return policy


def _inserts_only_rules(spark: Session) -> bool:
    """Whether the session lets a change that only inserts take the rules for inserted rows
    only (:data:`INSERTS_ONLY_RULES`)."""
    return (spark.conf.get(INSERTS_ONLY_RULES, "true") or "true").lower() != "false"


def _written_outside(
    store: DeltaLogReader, recorded: int, properties: dict[str, str]
) -> Obstacle | None:
    """What makes a refresh recompute a store written outside ivm since its latest record (at
    version ``recorded``), if it was."""
    outside = written_outside(store, recorded, is_logged(properties))
    if outside is None:
        return None
    return Obstacle(ObstacleKind.REINITIALIZE, f"its store was written outside ivm: {outside}")


def read_change_size(
    spark: Session, previous: dict[str, int], current: dict[str, int], size_sources_over: float
) -> ChangeSize:
    """What the logs say of the change from source versions ``previous`` to ``current`` (see
    the module's docstring). The changed sources' sizes cost a scan of their logs' state, so
    they are read only for a change over ``size_sources_over`` bytes, the least a cost rule
    can judge too large."""
    change_bytes, sized, inserts_only = 0, True, True
    logs: list[DeltaLogReader] = []
    for table, upto in current.items():
        after = previous[table]
        log = None if upto < after else DeltaLogReader.of(spark, delta_table(spark, table))
        commits = None if log is None else log.commits(after, upto)
        if found := _in_the_log(table, after, upto, log, commits):
            return ChangeSize(found=found)
        assert log is not None and commits is not None
        inserts_only = (
            inserts_only and appends_rows(spark, table) and all(c.inserts_only for c in commits)
        )
        sizes = [c.change_bytes for c in commits if c.change_bytes is not None]
        if len(sizes) < len(commits):
            sized = False
        else:
            change_bytes += sum(sizes)
            logs.append(log)
    if not sized:
        return ChangeSize(inserts_only=inserts_only)
    if change_bytes <= size_sources_over:
        return ChangeSize(change_bytes, inserts_only=inserts_only)
    sizes = [log.size_in_bytes() for log in logs]
    source_bytes = None if None in sizes else sum(s for s in sizes if s is not None)
    return ChangeSize(change_bytes, source_bytes, inserts_only)


def _in_the_log(
    table: str,
    after: int,
    upto: int,
    log: DeltaLogReader | None,
    commits: list[Commit] | None,
) -> Obstacle | None:
    """What the log of the source ``table`` shows in the way of reading its change from
    version ``after`` to ``upto`` (``commits``, None where the log no longer holds them all),
    if anything."""
    if log is None:
        return Obstacle(
            ObstacleKind.REINITIALIZE,
            f"{table} is at version {upto}, before version {after} that the view consumed",
        )
    if commits is None:
        return Obstacle(
            ObstacleKind.UNAVAILABLE,
            f"the log of {table} no longer holds every commit after version {after} "
            f"(log retention or VACUUM)",
        )
    if replacing := next((c for c in commits if c.replaces_table), None):
        return Obstacle(
            ObstacleKind.REINITIALIZE,
            f"{table} was replaced at version {replacing.version} ({replacing.operation})",
        )
    if off := next((c for c in commits if c.change_data_feed is False), None):
        return Obstacle(
            ObstacleKind.UNAVAILABLE,
            f"the change data feed of {table} was turned off at version {off.version}",
        )
    if changed := log.schema_changes(after, commits):
        return Obstacle(
            ObstacleKind.REINITIALIZE,
            f"the schema of {table} changed after version {after}, which the view consumed: "
            f"{'; '.join(changed)}",
        )
    return None


def reshaped(
    compiled: CompiledView, properties: dict[str, str], store_schema: StructType
) -> str | None:
    """Why the store of ``compiled`` (its ``properties``; ``store_schema``, its Spark schema)
    does not have the columns the definition now gives, if it does not: the definition's
    ``*`` was expanded anew over a source whose columns changed since the store was written.
    A recompute gives the store the definition's columns."""
    logged = (LOGGED,) if is_logged(properties) else ()
    changes = column_differences(compiled.store.columns + logged, tuple(store_schema.names))
    return f"its definition now has other columns than its store: {changes}" if changes else None


def column_differences(wanted: tuple[str, ...], stored: tuple[str, ...]) -> str | None:
    """How the columns ``stored`` differ from those ``wanted``, if they do.

    >>> column_differences(("k", "v", "x"), ("k", "v"))
    'x added'
    >>> column_differences(("k", "u"), ("k", "v", "w"))
    'v dropped, w dropped, u added'
    >>> column_differences(("v", "k"), ("k", "v"))
    'the same columns in another order'
    >>> column_differences(("k",), ("k",)) is None
    True
    """
    if wanted == stored:
        return None
    changes = [f"{c} dropped" for c in stored if c not in wanted]
    changes += [f"{c} added" for c in wanted if c not in stored]
    return ", ".join(changes) or "the same columns in another order"


def predict(spark: Session, view: str) -> RefreshPlan:
    """The plan of the next refresh of the materialized view ``view``, made now as the
    refresh would make it: its state tables' first (:func:`after_state_tables`). Each log is
    read once (those an enclosing
    :func:`~ivm.runtime.log.delta_log.reading_each_log_once` read stand)."""
    with reading_each_log_once(reuse=True):
        compiled = compile_definition(spark, view)
        states = [(table, _predict_one(spark, table)) for table, _ in compiled.states]
        if failing := next((plan for _, plan in states if plan.fails), None):
            return failing  # the view is refreshed after its state tables, or not at all
        requested = state_table_recomputed([(t, plan.mode) for t, plan in states], "is")
        own = _predict_one(spark, view, requested)
        return after_state_tables(own, [plan for _, plan in states])


def _predict_one(spark: Session, view: str, requested: Obstacle | None = None) -> RefreshPlan:
    """The plan of the next refresh of ``view`` (a view, or a state table) alone; where files
    of a source's unconsumed change are gone, what the refresh will learn as it reads them."""
    properties = view_properties(spark, view)
    compiled = compile_definition(spark, view, properties)
    schema = spark.table(store_name(view)).schema
    facts = gather(spark, view, compiled, properties, schema, requested)
    return decide(replace(facts, unreadable=unreadable(spark, view)))
