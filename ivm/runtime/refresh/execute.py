"""Refreshes: bring a materialized view up to its sources' latest versions, or recompute one
partition of it.

An incremental refresh folds the change of every source since the versions the store records
into the store by one MERGE; a full one overwrites the store with the query's result. Either
is one committed write (:mod:`ivm.runtime.refresh.commit`), retried from a fresh read of the store
when another refresh of the view committed first.

A refresh carries out the plan made before any data is read
(:mod:`ivm.runtime.decision.decide`) as one
:class:`~ivm.runtime.refresh.techniques.writing.Write` (:mod:`ivm.runtime.refresh.techniques`);
an incremental write that learns,
reading the change, that it cannot apply it returns a
:class:`~ivm.runtime.decision.decide.Revision` instead of committing, and the refresh then
recomputes or fails as the revised plan says.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import networkx as nx
from py4j.protocol import Py4JNetworkError
from pyspark.sql.types import StructType
from sqlglot import exp

from ivm import codegen
from ivm.codegen.store import LOGGED
from ivm.compiler import CompiledView
from ivm.errors import CatalogError, SourceError, StateError, ViewsNotRefreshed
from ivm.names import DIALECT
from ivm.rules import Kind
from ivm.runtime.catalog.definition import compile_definition, named_view
from ivm.runtime.catalog.graph import dependency_graph, materialized_views, refresh_order
from ivm.runtime.catalog.history import (
    INSERTS_ONLY,
    RefreshRecord,
    RefreshResult,
    latest_record,
)
from ivm.runtime.catalog.properties import is_logged
from ivm.runtime.catalog.tables import qualified_name, store_name
from ivm.runtime.decision.decide import (
    Revision,
    decide,
    replaced_source,
    state_table_recomputed,
)
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once
from ivm.runtime.messages import one_line
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.commit import (
    LostRace,
    repair_catalog_view,
    retrying,
    spark_errors,
)
from ivm.runtime.refresh.gather import gather, reshaped
from ivm.runtime.refresh.phases import PhaseClock
from ivm.runtime.refresh.sources import (
    latest_sources,
    total_source_bytes,
)
from ivm.runtime.refresh.techniques import carry_out
from ivm.runtime.refresh.techniques.writing import Write
from ivm.runtime.refresh.upkeep import compact_after_refresh
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import (
    apply_settings,
    evaluation_settings,
    plan_settings,
    session_settings,
    store_write_settings,
)

LOOKUP_RECOMPUTED = "; every fact row was enriched anew with the dimension as it is now"
"""What a recompute of a lookup join's state adds to its reason (see :mod:`ivm.rules.lookup`)."""


def refresh_view(spark: Session, name: str, *, full: bool = False) -> RefreshResult:
    """Bring the materialized view ``name`` up to its sources' latest versions.

    Incremental unless ``full``, or unless the view's refresh policy recomputes for what
    stands in the way (:mod:`ivm.runtime.decision.decide`): the change of every source since the
    versions the store records is folded into the store by one MERGE. A full refresh
    overwrites the store with the query's result instead, which also repairs a store that
    disagrees with its sources.

    The view's state tables are refreshed first, each in a commit of its own (``full`` too),
    and the view then consumes their change as that of any other materialized view it
    reads: a refresh that dies between those commits leaves the view as it was, and the
    next one consumes what the state tables committed. Where a state table was recomputed,
    so is the view, from the state tables: their change would be all their rows twice.

    Each store the refresh wrote is then compacted if it is due (:mod:`ivm.runtime.refresh.upkeep`);
    a compaction that fails is reported in the result, not raised.
    """
    view = qualified_name(spark, name)
    forced = Obstacle(ObstacleKind.REQUESTED, f"REFRESH {view} FULL") if full else None
    with reading_each_log_once():
        named_view(spark, view, "REFRESH")
        tables = [state for state, _ in compile_definition(spark, view).states]
        # with nothing written first, the refresh plans from these reads
        result = None if tables else _refresh_one(spark, view, forced)
    result = result or _refresh_with_states(spark, view, tables, forced)
    result.upkeep = [
        step
        for written in [*result.states, result]
        if written.mode != Mode.NOOP
        if (step := compact_after_refresh(spark, written.view)) is not None
    ]
    return result


def _refresh_with_states(
    spark: Session, view: str, tables: list[str], forced: Obstacle | None
) -> RefreshResult:
    """Refresh the state tables ``tables`` of ``view``, then ``view`` from them."""
    states = []
    for state in tables:
        states.append(_refresh_one(spark, state, forced))
        faults.reach("refresh.after_state")
    forced = forced or state_table_recomputed([(s.view, s.mode) for s in states], "was")
    result = _refresh_one(spark, view, forced)
    result.states = states
    return result


def _refresh_one(spark: Session, view: str, forced: Obstacle | None) -> RefreshResult:
    """Refresh the store of ``view`` (a view, or a state table) alone; ``forced``: what makes
    it recompute whatever else stands in the way."""
    clock = PhaseClock(spark)
    with clock.running():
        result = retrying(
            spark,
            view,
            lambda work, view, properties: _refresh(work, view, properties, forced, clock),
        )
    clock.count_jobs()
    result.phases = clock.phases
    return result


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
    results, failures, failed = [], {}, []
    first: Exception | None = None
    for view in refresh_order(graph):
        reads = nx.ancestors(graph, view)
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


def refresh_partition(
    spark: Session, name: str, partition: dict[str, exp.Literal]
) -> RefreshResult:
    """Recompute the rows of the view ``name`` in one partition (``{column: value}``) from
    scratch, leaving every other partition as it is: a repair or backfill.

    The partition is computed from the source versions the store already reflects, so the
    store stays one consistent state; a later refresh applies newer changes as usual.
    """
    view = qualified_name(spark, name)
    named_view(spark, view, "REFRESH")
    clock = PhaseClock(spark)
    with clock.running():
        result = retrying(
            spark,
            view,
            lambda work, view, properties: _refresh_partition(
                work, view, properties, partition, clock
            ),
        )
    clock.count_jobs()
    result.phases = clock.phases
    return result


def _refresh_partition(
    spark: Session,
    view: str,
    properties: dict[str, str],
    partition: dict[str, exp.Literal],
    clock: PhaseClock,
) -> RefreshResult | LostRace:
    """Carry out a partition refresh: a store checked as a refresh checks it, the sources
    at the versions it reflects, one partition overwritten."""
    start = time.perf_counter()
    compiled, schema, repaired = _prepared(spark, view, properties, clock)
    store = store_name(view)
    if (other_columns := reshaped(compiled, properties, schema)) is not None:
        raise StateError(
            f"{view} cannot recompute a partition: {other_columns}",
            hint=f"REFRESH MATERIALIZED VIEW {view} recomputes it with its definition's columns",
        )
    with clock.phase("versions"):
        log = DeltaLogReader(spark, store)
        partitioned_by = [c for c in log.partition_columns() if c != LOGGED]
        unknown = [c for c in partition if c not in partitioned_by]
        if unknown or not partition:
            raise CatalogError(
                f"{', '.join(unknown) or 'PARTITION ()'} is not a partition column of {view}",
                hint=f"{view} is partitioned by {', '.join(partitioned_by) or 'nothing'}",
            )
        store_version = log.version()
        last = latest_record(log)[1]
        _, ids = latest_sources(spark, compiled.sources)
        if replaced := replaced_source(last.table_ids, ids):
            raise SourceError(
                f"{view} cannot recompute a partition: {replaced}",
                hint=f"run REFRESH MATERIALIZED VIEW {view}",
            )
    spec = ", ".join(f"{c} = {v.sql(DIALECT)}" for c, v in partition.items())
    write = Write(
        view,
        compiled,
        schema,
        store_version,
        last.sources,
        RefreshRecord(
            Mode.PARTITION,
            last.sources,
            reason=f"PARTITION ({spec})",
            table_ids=last.table_ids,
            started_ms=clock.started_ms,
            cost=last.cost,  # the model carries on
        ),
        clock,
        partition=exp.and_(*(exp.column(c).eq(v) for c, v in partition.items())),
        logged=is_logged(properties),
    )
    evaluation = evaluation_settings(spark, total_source_bytes(spark, compiled.sources))
    with session_settings(spark, evaluation):
        result = carry_out(spark, write)
    if isinstance(result, LostRace):
        return result
    assert isinstance(result, RefreshResult)
    result.seconds = time.perf_counter() - start
    result.repaired = repaired
    return result


def _prepared(
    spark: Session, view: str, properties: dict[str, str], clock: PhaseClock
) -> tuple[CompiledView, StructType, str | None]:
    """The phase ``plan`` of every refresh of ``view``: its definition compiled under the
    settings it pins, its catalog view repaired if need be (where the store has the columns
    the definition writes; where it has not, the refresh recomputes it, and writes the
    catalog view anew); the compiled view, the store's schema, and what was wrong with the
    catalog view outside ivm (None: nothing)."""
    with clock.phase("plan"):
        compiled = compile_definition(spark, view, properties)
        apply_settings(spark, plan_settings(compiled))
        schema = spark.table(store_name(view)).schema
        repaired = None
        if reshaped(compiled, properties, schema) is None:
            repaired = repair_catalog_view(spark, view, compiled, properties, schema)
    return compiled, schema, repaired


def _refresh(
    spark: Session,
    view: str,
    properties: dict[str, str],
    forced: Obstacle | None,
    clock: PhaseClock,
) -> RefreshResult | LostRace:
    """Carry out the plan of a refresh (:mod:`ivm.runtime.decision.decide`), made once the
    store's and the sources' logs are read: nothing, apply the change, recompute, or fail. An
    incremental refresh that learns, reading the change, that it cannot apply it (a change
    data file removed, a sum that overflows, a delta query planned dearer than a recompute)
    returns a :class:`~ivm.runtime.decision.decide.Revision`, and the plan revised
    recomputes or fails as the policy says."""
    start = time.perf_counter()
    compiled, schema, repaired = _prepared(spark, view, properties, clock)
    with clock.phase("versions"), spark_errors(view, spark, compiled.sources):
        known = gather(spark, view, compiled, properties, schema, forced)
        plan = decide(known)
        if plan.mode is Mode.NOOP:
            seconds = time.perf_counter() - start
            return RefreshResult(
                view, Mode.NOOP, known.current, known.previous, seconds=seconds, repaired=repaired
            )
        if plan.fails:
            raise plan.error(view)
        store_version = DeltaLogReader.of(spark, store_name(view)).version()
    model = known.model
    outcome = None
    if plan.mode is Mode.INCREMENTAL:
        inserting = compiled.inserting() if plan.inserts_only else None
        rules = None if inserting is None else INSERTS_ONLY
        record = RefreshRecord(
            Mode.INCREMENTAL,
            known.current,
            read_bytes=plan.change_bytes,
            table_ids=known.ids,
            started_ms=clock.started_ms,
            cost=model.to_record(),
            rules=rules,
        )
        outcome = carry_out(
            spark,
            Write(
                view,
                (inserting or compiled).changed_only(known.changed),
                schema,
                store_version,
                known.previous,
                record,
                clock,
                model=model,
                recheck_against=plan.recheck_against,
                logged=is_logged(properties),
            ),
        )
        if isinstance(outcome, Revision):
            plan = plan.revised(known.policy, outcome)
            if plan.fails:
                raise plan.error(view)
            model = outcome.model or model
    if outcome is None or isinstance(outcome, Revision):  # a recompute, as planned or revised
        assert plan.obstacle is not None
        lookup = compiled.maintenance.rule.kind is Kind.LOOKUP
        record = RefreshRecord(
            Mode.FULL,
            known.current,
            plan.obstacle.reason + (LOOKUP_RECOMPUTED if lookup else ""),
            known.full_bytes,
            table_ids=known.ids,
            started_ms=clock.started_ms,
            planned_bytes=known.full_bytes,
            cost=model.after(Mode.FULL, plan.prediction is not None).to_record(),
            prediction=plan.prediction,
        )
        with session_settings(
            spark,
            evaluation_settings(spark, known.full_bytes)
            | store_write_settings(codegen.in_key_order(compiled.store)),
        ):
            outcome = carry_out(
                spark,
                Write(
                    view,
                    compiled,
                    schema,
                    store_version,
                    known.previous,
                    record,
                    clock,
                    logged=is_logged(properties),
                ),
            )
    if isinstance(outcome, LostRace):
        return outcome
    assert isinstance(outcome, RefreshResult)  # a recompute is not revised
    outcome.seconds = time.perf_counter() - start
    outcome.repaired = repaired
    return outcome
