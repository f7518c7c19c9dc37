"""Refreshes: bring a materialized view up to its sources' latest versions, or recompute one
partition of it. This module is the driver; each attempt at refreshing a store
(:func:`~ivm.runtime.refresh.commit.retrying`) goes through four steps:

1. plan: the view's definition compiled under the settings it pins
   (:func:`~ivm.runtime.refresh.techniques.writing.prepared`);
2. gather: what is known before any of the change is read, the store's record and the
   sources' logs (:mod:`ivm.runtime.refresh.gather`), choosing nothing;
3. decide: nothing, apply the change, recompute, or fail, by one pure function
   (:mod:`ivm.runtime.decision.decide`);
4. write: the decision carried out by the write it calls for, in one committed write
   (:mod:`ivm.runtime.refresh.techniques`, :mod:`ivm.runtime.refresh.commit`).

An incremental write that learns, reading the change, that it cannot apply it returns a
:class:`~ivm.runtime.decision.decide.Revision`, a value, and the decision is revised once:
recompute, or fail. A write that another refresh of the view beat returns
:class:`~ivm.runtime.refresh.commit.LostRace`, and the attempt starts again from a fresh read
of the store.
"""

from __future__ import annotations

import time

from sqlglot import exp

from ivm.runtime.catalog.definition import compile_definition, named_view
from ivm.runtime.catalog.history import RefreshResult
from ivm.runtime.decision import (
    Mode,
    Obstacle,
    ObstacleKind,
    Revision,
    decide,
    state_table_recomputed,
)
from ivm.runtime.log.delta_log import reading_each_log_once
from ivm.runtime.refresh import faults, techniques
from ivm.runtime.refresh.commit import AttemptScope, LostRace, retrying, spark_errors
from ivm.runtime.refresh.gather import gather
from ivm.runtime.refresh.upkeep import compact_after_refresh
from ivm.runtime.spark.connect import Session


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
    with reading_each_log_once():  # with nothing written first, refreshes plan from these reads
        view = named_view(spark, name, "REFRESH")
        forced = Obstacle(ObstacleKind.REQUESTED, f"REFRESH {view} FULL") if full else None
        tables = [state for state, _ in compile_definition(spark, view).states]
        result = _refresh_with_states(spark, view, tables, forced)
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
    """Refresh the state tables ``tables`` of ``view``, then ``view`` from them. Each plans
    from the logs as the enclosing block read them until one of them writes; those after it
    read them anew (a state table's refresh that found nothing to do leaves them as read)."""
    states: list[RefreshResult] = []
    written = False
    for state in tables:
        with reading_each_log_once(reuse=not written):
            states.append(_refresh_one(spark, state, forced))
        written = written or states[-1].mode is not Mode.NOOP
        faults.reach("refresh.after_state")
    forced = forced or state_table_recomputed([(s.view, s.mode) for s in states], "was")
    with reading_each_log_once(reuse=not written):
        result = _refresh_one(spark, view, forced)
    result.states = states
    return result


def _refresh_one(spark: Session, view: str, forced: Obstacle | None) -> RefreshResult:
    """Refresh the store of ``view`` (a view, or a state table) alone; ``forced``: what makes
    it recompute whatever else stands in the way."""
    return retrying(spark, view, lambda scope: _refresh(scope, forced))


def refresh_partition(
    spark: Session, name: str, partition: dict[str, exp.Literal]
) -> RefreshResult:
    """Recompute the rows of the view ``name`` in one partition (``{column: value}``) from
    scratch, leaving every other partition as it is: a repair or backfill.

    The partition is computed from the source versions the store already reflects, so the
    store stays one consistent state; a later refresh applies newer changes as usual.
    """
    view = named_view(spark, name, "REFRESH")
    return retrying(spark, view, lambda scope: _refresh_partition(scope, partition))


def _refresh_partition(
    scope: AttemptScope, partition: dict[str, exp.Literal]
) -> RefreshResult | LostRace:
    """Carry out a partition refresh: a store checked as a refresh checks it, the sources
    at the versions it reflects, one partition overwritten."""
    start = time.perf_counter()
    attempt = techniques.prepared(scope)
    write = techniques.partition_write(scope.session, attempt, partition)
    outcome = techniques.carry_out(scope.session, write)
    assert not isinstance(outcome, Revision)  # a recompute is not revised
    return _finished(outcome, start, attempt)


def _refresh(scope: AttemptScope, forced: Obstacle | None) -> RefreshResult | LostRace:
    """One attempt at a refresh of ``view``: the phase ``plan`` (its definition compiled,
    :func:`~ivm.runtime.refresh.techniques.writing.prepared`), the facts gathered before any
    of the change is read (:mod:`ivm.runtime.refresh.gather`), the decision
    (:mod:`ivm.runtime.decision.decide`: nothing, apply the change, recompute, or fail), and
    the write that carries it out (:mod:`ivm.runtime.refresh.techniques`). An incremental
    write that learns, reading the change, that it cannot apply it (a change data file
    removed, a sum that overflows, a delta query planned dearer than a recompute) returns a
    :class:`~ivm.runtime.decision.decide.Revision`, and the decision revised once
    recomputes or fails as the policy says. A write that another refresh of the view beat
    returns :class:`~ivm.runtime.refresh.commit.LostRace`, and the refresh starts again."""
    start = time.perf_counter()
    spark, view = scope.session, scope.view
    attempt = techniques.prepared(scope)
    with scope.clock.phase("versions"), spark_errors(view, spark, attempt.compiled.sources):
        facts = gather(spark, view, attempt.compiled, scope.properties, attempt.schema, forced)
        plan = decide(facts)
        if plan.mode is Mode.NOOP:
            nothing = RefreshResult(view, Mode.NOOP, facts.current, facts.previous)
            return _finished(nothing, start, attempt)
        if plan.fails:
            raise plan.error(view)
    outcome, model = None, facts.model
    if plan.mode is Mode.INCREMENTAL:
        write = techniques.incremental(attempt, facts, plan)
        outcome = techniques.carry_out(spark, write)
        if isinstance(outcome, Revision):  # what reading the change showed: decided again
            plan = plan.revised(facts.policy, outcome)
            if plan.fails:
                raise plan.error(view)
            model = outcome.model or model
    if outcome is None or isinstance(outcome, Revision):  # a recompute, as planned or revised
        write = techniques.recompute(spark, attempt, facts, plan, model)
        outcome = techniques.carry_out(spark, write)
    assert not isinstance(outcome, Revision)  # a recompute is not revised
    return _finished(outcome, start, attempt)


def _finished(
    outcome: RefreshResult | LostRace, start: float, attempt: techniques.Attempt
) -> RefreshResult | LostRace:
    """``outcome`` of an attempt begun at ``start``, a result with its seconds and what was
    wrong with the catalog view that the attempt wrote anew."""
    if isinstance(outcome, RefreshResult):
        outcome.seconds = time.perf_counter() - start
        outcome.repaired = attempt.repaired
    return outcome
