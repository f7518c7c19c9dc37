"""A refresh's write of its view's store, as every technique is given it (:class:`Write`),
what a technique comes to (:data:`Outcome`), and the writes a refresh makes: from what its
phase ``plan`` read (:func:`prepared`, an :class:`Attempt`), the write that applies the
change (:func:`incremental`) or recomputes the view (:func:`recompute`), as the decision
says (:mod:`ivm.runtime.decision.decide`); a partition refresh's is
:func:`~ivm.runtime.refresh.techniques.partition.partition_write`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias, TypedDict, Unpack

from pyspark.sql.types import StructType
from sqlglot import exp

from ivm import codegen
from ivm.compiler import CompiledView
from ivm.rules import Kind
from ivm.runtime.catalog.definition import compile_definition
from ivm.runtime.catalog.history import (
    INSERTS_ONLY,
    RefreshRecord,
    RefreshResult,
    Technique,
)
from ivm.runtime.catalog.properties import is_logged
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.decision.cost import CostModel
from ivm.runtime.decision.decide import Facts, RefreshPlan, Revision
from ivm.runtime.decision.terms import Mode
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.commit import AttemptScope, Commit, LostRace, repair_catalog_view
from ivm.runtime.refresh.gather import reshaped
from ivm.runtime.refresh.phases import PhaseClock
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import (
    apply_settings,
    evaluation_settings,
    plan_settings,
    store_write_settings,
)

Outcome: TypeAlias = RefreshResult | Revision | LostRace
"""What a write comes to: its result, once committed; or, for an incremental write that
learned it cannot apply the change, why (a :class:`Revision`: the refresh's decision is
revised, once); or that another write of the view committed first (:class:`LostRace`: the
refresh starts again)."""


class RowCounts(TypedDict, total=False):
    """The store rows a write changed, as its result counts them."""

    rows_inserted: int
    rows_updated: int
    rows_deleted: int


LOOKUP_RECOMPUTED = "; every fact row was enriched anew with the dimension as it is now"
"""What a recompute of a lookup join's state adds to its reason (see :mod:`ivm.rules.lookup`)."""


@dataclass(frozen=True)
class Write:
    """One write of the store of ``view`` by a refresh: the ``record`` it commits says its
    mode (``incremental``, ``full`` or ``partition``) and the source versions it brings the
    store to; it is computed from store version ``store_version`` (``schema``, the store's),
    which reflects the sources at ``previous``, by the query of ``compiled``, under the
    Spark ``settings`` for what it reads, and timed by ``clock``. An incremental write keeps
    the cost ``model`` it was planned with, and judges its delta query, once planned,
    against ``recheck_against`` (see :class:`~ivm.runtime.decision.decide.RefreshPlan`); a
    partition write overwrites the rows that match ``partition``."""

    view: str
    compiled: CompiledView
    schema: StructType
    store_version: int
    previous: dict[str, int]
    record: RefreshRecord
    clock: PhaseClock
    model: CostModel = field(default_factory=CostModel)
    recheck_against: int | None = None
    partition: exp.Condition | None = None
    logged: bool = False  # the store takes a change as an append (its layout is ``log``)
    settings: dict[str, str] = field(default_factory=dict[str, str])

    @property
    def store(self) -> str:
        return store_name(self.view)

    @property
    def committing(self) -> Commit:
        """The commit of this write's record (:mod:`ivm.runtime.refresh.commit`): Delta's
        idempotent transaction of the store version it was computed from."""
        return Commit(
            self.view,
            self.compiled,
            self.record,
            "refresh",
            self.store_version,
            self.clock,
            self.logged,
        )

    def result(self, technique: Technique, **counts: Unpack[RowCounts]) -> RefreshResult:
        """The result of this write, once committed by ``technique``, with its store rows
        ``counts``."""
        return RefreshResult(
            self.view,
            Mode(self.record.mode),
            self.record.sources,
            self.previous,
            reason=self.record.reason,
            rules=self.record.rules,
            technique=technique,
            **counts,
        )


@dataclass(frozen=True)
class Attempt:
    """One attempt at refreshing ``view`` (a view, or a state table), as its phase ``plan``
    left it (:func:`prepared`): its store's ``properties``, ``schema`` and the version
    ``store_version`` of its log they were read at, its definition ``compiled`` under the
    settings it pins, what was wrong with its catalog view outside ivm (``repaired``; None:
    nothing), and the ``clock`` that times the refresh."""

    view: str
    properties: dict[str, str]
    compiled: CompiledView
    schema: StructType
    store_version: int
    repaired: str | None
    clock: PhaseClock

    @property
    def logged(self) -> bool:
        """Whether the store takes a change as an append (its layout is ``log``)."""
        return is_logged(self.properties)


def prepared(scope: AttemptScope) -> Attempt:
    """The phase ``plan`` of every refresh of ``scope``'s view: its definition compiled
    under the settings it pins, its catalog view repaired if need be (where the store has
    the columns the definition writes; where it has not, the refresh recomputes it, and
    writes the catalog view anew). The store's version is read from its log as the facts
    are (:func:`~ivm.runtime.log.delta_log.DeltaLogReader.of`, once per attempt): a write
    computed from it commits only over it."""
    spark, view, properties = scope.session, scope.view, scope.properties
    with scope.clock.phase("plan"):
        compiled = compile_definition(spark, view, properties)
        apply_settings(spark, plan_settings(compiled))
        store = DeltaLogReader.of(spark, store_name(view))
        schema, store_version = store.schema(), store.version()
        repaired = None
        if reshaped(compiled, properties, schema) is None:
            repaired = repair_catalog_view(spark, view, compiled, properties, schema)
    return Attempt(view, properties, compiled, schema, store_version, repaired, scope.clock)


def incremental(attempt: Attempt, facts: Facts, plan: RefreshPlan) -> Write:
    """The write that applies the change, as ``plan`` decided from ``facts``: the rules for
    inserted rows only where the plan takes them, and the delta terms of the sources that
    changed alone."""
    inserting = attempt.compiled.inserting() if plan.inserts_only else None
    record = RefreshRecord(
        Mode.INCREMENTAL,
        facts.current,
        read_bytes=plan.change_bytes,
        table_ids=facts.ids,
        started_ms=attempt.clock.started_ms,
        cost=facts.model.to_record(),
        rules=None if inserting is None else INSERTS_ONLY,
        alternatives=[way.to_record() for way in plan.alternatives],
    )
    return Write(
        attempt.view,
        (inserting or attempt.compiled).changed_only(facts.changed),
        attempt.schema,
        attempt.store_version,
        facts.previous,
        record,
        attempt.clock,
        model=facts.model,
        recheck_against=plan.recheck_against,
        logged=attempt.logged,
    )


def recompute(
    spark: Session,
    attempt: Attempt,
    facts: Facts,
    plan: RefreshPlan,
    model: CostModel,
) -> Write:
    """The write that recomputes the view, for the reason ``plan`` (decided from ``facts``,
    or revised) gives, the cost ``model`` carried on; under the settings for reading the
    sources whole, and writing the store in key order."""
    assert plan.obstacle is not None
    lookup = attempt.compiled.maintenance.rule.kind is Kind.LOOKUP
    record = RefreshRecord(
        Mode.FULL,
        facts.current,
        plan.obstacle.reason + (LOOKUP_RECOMPUTED if lookup else ""),
        facts.full_bytes,
        table_ids=facts.ids,
        started_ms=attempt.clock.started_ms,
        planned_bytes=facts.full_bytes,
        cost=model.after(Mode.FULL, plan.prediction is not None).to_record(),
        prediction=plan.prediction,
        alternatives=[way.to_record() for way in plan.alternatives],
    )
    in_key_order = codegen.in_key_order(attempt.compiled.store)
    return Write(
        attempt.view,
        attempt.compiled,
        attempt.schema,
        attempt.store_version,
        facts.previous,
        record,
        attempt.clock,
        logged=attempt.logged,
        settings=evaluation_settings(spark, facts.full_bytes) | store_write_settings(in_key_order),
    )
