"""The decision of a refresh, made before any of the change is read: do nothing, apply the
change, recompute the view, or fail; and why.

One pure function, :func:`plan_refresh`, makes it from what is known before reading
(:class:`Known`: the view's refresh policy and cost model, the source versions and Delta table
ids it consumed and the sources' now, and what their logs say stands in the way,
:mod:`ivm.runtime.refresh.obstacles`). A refresh carries the plan out
(:mod:`ivm.runtime.refresh.execute`), and ``ivm explain`` and ``ivm status`` show the plan of
the next refresh (:func:`predict`), made by the same function from the same facts: what they
say is what the refresh then does, but for what only reading the change can show (a sum that
overflows while it is folded, a delta query whose plan reads more than a recompute). Files of
the change removed by a VACUUM shorter than the table's retention, which a refresh learns as it
reads them, a prediction looks for.

The order of the decision:

1. ``REFRESH … FULL`` (or a state table of the view recomputed), other sources than the store
   reflects, or a source replaced under its name: recompute;
2. no source changed: nothing to do, unless the store's columns are not the definition's
   (:func:`reshaped`): recompute;
3. ``REFRESH POLICY FULL``, a store that keeps sums no refresh can add exactly, or what the
   sources' logs show (:func:`~ivm.runtime.refresh.obstacles.estimate`): recompute or fail, as the
   policy says (:func:`verdict`);
4. the store's columns not the definition's: recompute (a change has no rows for them);
5. under ``AUTO``, the cost model's prediction before reading (rule 1 of
   :mod:`ivm.runtime.refresh.policy`): recompute if that is predicted cheaper;
6. otherwise apply the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from ivm.codegen.store import LOGGED
from ivm.compiler import CompiledView
from ivm.rules import Kind
from ivm.runtime.catalog.definition import compile_definition, view_properties
from ivm.runtime.catalog.history import latest_record, written_outside
from ivm.runtime.catalog.properties import POLICY, is_logged
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once
from ivm.runtime.messages import size
from ivm.runtime.refresh.obstacles import (
    DEFAULT_MIN_BYTES,
    MIN_BYTES,
    Estimate,
    estimate,
    replaced_source,
)
from ivm.runtime.refresh.policy import (
    DEFAULT_POLICY,
    CostModel,
    NotIncrementalizable,
    Obstacle,
    ObstacleKind,
    Policy,
    never_incremental,
)
from ivm.runtime.refresh.retention import unreadable
from ivm.runtime.refresh.sources import latest_sources, total_source_bytes
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import number_setting


class Decision(StrEnum):
    """What a refresh does, as a plan says: its value is the mode the refresh then records
    (:class:`~ivm.runtime.catalog.history.Mode`), but for ``fails``."""

    NOOP = "noop"
    INCREMENTAL = "incremental"
    FULL = "full"
    FAILS = "fails"


@dataclass(frozen=True)
class Known:
    """What is known of a refresh of ``view`` before any of its change is read.

    ``policy``: its refresh policy (a lookup join's ``AUTO`` taken as ``INCREMENTAL``: a
    recompute enriches every fact row anew, so is never chosen for cost); ``previous`` and
    ``consumed_ids``: the source versions and table ids the store reflects, ``current`` and
    ``ids`` the sources' now; ``requested``: what makes it recompute whatever else holds
    (``REFRESH … FULL``, a state table recomputed); ``inexact``: why no refresh of its store
    can apply a change, if none can; ``estimate``: what the sources' logs say of the change
    (None where it was not read: no source changed, or the sources are not the ones the store
    reflects); ``unreadable``: why the change cannot be read, where files it needs are gone
    (VACUUM), which a prediction looks for and a refresh learns as it reads the change;
    ``full_bytes``: what a recompute reads; ``min_bytes``: the sources' size under which the
    cost model predicts nothing; ``reshaped``: why the store's columns are not those the
    definition now gives, if they are not (:func:`reshaped`)."""

    view: str
    policy: Policy
    previous: dict[str, int]
    current: dict[str, int]
    consumed_ids: dict[str, str] | None
    ids: dict[str, str]
    requested: Obstacle | None = None
    inexact: str | None = None
    estimate: Estimate | None = None
    unreadable: str | None = None
    model: CostModel = field(default_factory=CostModel)
    full_bytes: int | None = None
    min_bytes: float = 0
    reshaped: str | None = None

    @property
    def changed(self) -> list[str]:
        """The sources whose version the refresh moves (the others have no change).

        >>> Known("v", Policy.AUTO, {"t": 1, "u": 4}, {"t": 2, "u": 4}, None, {}).changed
        ['t']
        """
        return [t for t, version in self.current.items() if self.previous.get(t) != version]


@dataclass(frozen=True)
class RefreshPlan:
    """What a refresh does: ``mode`` ``noop``, ``incremental``, ``full`` or ``fails``; the
    ``obstacle`` that makes it recompute or fail; ``prediction``, the cost model's words where
    it chose to recompute; the ``change_bytes`` it reads (None where the log does not say);
    ``inserts_only``: every source's change inserts rows and removes none;
    ``recheck_against``: under ``AUTO``, the bytes a recompute reads, against which the cost
    model judges the delta query once it is planned (rule 2 of
    :mod:`ivm.runtime.refresh.policy`). That, and what only reading the change shows, is where
    a refresh may revise an incremental plan, once (:meth:`revised`)."""

    mode: Decision
    obstacle: Obstacle | None = None
    prediction: str | None = None
    change_bytes: int | None = None
    inserts_only: bool = False
    recheck_against: int | None = None

    def __str__(self) -> str:
        """The plan in words.

        >>> str(RefreshPlan(Decision.INCREMENTAL, change_bytes=698))
        'incremental, a change of 698 B'
        >>> off = Obstacle(ObstacleKind.UNAVAILABLE, "change data feed off on t")
        >>> str(RefreshPlan(Decision.FAILS, off))
        'fails: change data feed off on t'
        """
        if self.mode is Decision.NOOP:
            return "nothing to do (no source changed)"
        if self.mode is Decision.INCREMENTAL:
            return "incremental" + (
                "" if self.change_bytes is None else f", a change of {size(self.change_bytes)}"
            )
        assert self.obstacle is not None  # a full or failing plan says why
        done = "a full recompute" if self.mode is Decision.FULL else "fails"
        return f"{done}: {self.obstacle.reason}"

    def revised(self, policy: Policy, revision: Revision) -> RefreshPlan:
        """The plan once an incremental refresh under ``policy`` learned, reading the change,
        that it cannot apply it: a recompute, or a failure.

        >>> plan = RefreshPlan(Decision.INCREMENTAL, change_bytes=698)
        >>> overflow = Revision(Obstacle(ObstacleKind.UNAVAILABLE, "a sum overflowed"))
        >>> str(plan.revised(Policy.AUTO, overflow))
        'a full recompute: a sum overflowed'
        >>> str(plan.revised(Policy.INCREMENTAL_STRICT, overflow).mode)
        'fails'
        """
        assert self.mode is Decision.INCREMENTAL, self.mode
        mode = verdict(policy, revision.obstacle)
        # a refresh returns only obstacles its policy heeds
        assert mode is not Decision.INCREMENTAL, revision
        return RefreshPlan(mode, revision.obstacle, revision.prediction)

    def error(self, view: str) -> NotIncrementalizable:
        """The error a refresh of ``view`` that this plan fails raises."""
        assert self.obstacle is not None
        return not_incremental(view, self.obstacle)


@dataclass(frozen=True)
class Revision:
    """What an incremental refresh learned once reading the change that keeps it from
    applying it: the ``obstacle`` (a change data file removed, a sum that overflows, a delta
    query planned to read at least a recompute's bytes); for cost, the cost model's
    ``prediction`` and the ``model`` carried on, which keeps the delta query's plan."""

    obstacle: Obstacle
    prediction: str | None = None
    model: CostModel | None = None


def not_incremental(view: str, obstacle: Obstacle) -> NotIncrementalizable:
    """The error of a refresh of ``view`` under ``INCREMENTAL STRICT`` that ``obstacle``
    keeps from applying the change."""
    return NotIncrementalizable(
        f"{view} cannot be refreshed incrementally: {obstacle.reason}",
        hint=f"its REFRESH POLICY is {Policy.INCREMENTAL_STRICT}: "
        f"run REFRESH MATERIALIZED VIEW {view} FULL, "
        f"or ALTER MATERIALIZED VIEW {view} SET REFRESH POLICY INCREMENTAL to let "
        f"refreshes recompute when they must",
    )


def verdict(policy: Policy, obstacle: Obstacle) -> Decision:
    """What a refresh under ``policy`` does for ``obstacle``: ``full``, ``incremental`` (the
    policy ignores it) or ``fails``.

    >>> cost = Obstacle(ObstacleKind.COST, "cheaper")
    >>> str(verdict(Policy.AUTO, cost)), str(verdict(Policy.INCREMENTAL, cost))
    ('full', 'incremental')
    >>> strict = Policy.INCREMENTAL_STRICT
    >>> str(verdict(strict, Obstacle(ObstacleKind.REINITIALIZE, "t was replaced")))
    'full'
    >>> str(verdict(strict, Obstacle(ObstacleKind.UNAVAILABLE, "change data feed off")))
    'fails'
    """
    if obstacle.kind is ObstacleKind.COST:
        return Decision.FULL if policy is Policy.AUTO else Decision.INCREMENTAL
    if obstacle.kind is ObstacleKind.UNAVAILABLE and policy is Policy.INCREMENTAL_STRICT:
        return Decision.FAILS
    return Decision.FULL


def plan_refresh(known: Known) -> RefreshPlan:
    """The plan of a refresh from what is known before reading (see the module's docstring).

    >>> known = Known("v", Policy.AUTO, {"t": 1}, {"t": 2}, None, {"t": "a"},
    ...               estimate=Estimate(698, None))
    >>> str(plan_refresh(known))
    'incremental, a change of 698 B'
    >>> from dataclasses import replace
    >>> str(plan_refresh(replace(known, policy=Policy.FULL)))
    'a full recompute: REFRESH POLICY FULL'
    >>> off = Obstacle(ObstacleKind.UNAVAILABLE, "the change data feed of t was off")
    >>> strict = replace(known, policy=Policy.INCREMENTAL_STRICT)
    >>> str(plan_refresh(replace(strict, estimate=Estimate(None, None, off))))
    'fails: the change data feed of t was off'
    >>> str(plan_refresh(replace(known, current={"t": 1}, reshaped="x added")))
    'a full recompute: x added'
    """
    obstacle = known.requested
    if obstacle is None and set(known.previous) != set(known.current):
        obstacle = Obstacle(
            ObstacleKind.REINITIALIZE, "the store records other sources than the definition reads"
        )
    if obstacle is None and (replaced := replaced_source(known.consumed_ids, known.ids)):
        obstacle = Obstacle(ObstacleKind.REINITIALIZE, replaced)
    if obstacle is None and known.previous == known.current:
        if known.reshaped is None:
            return RefreshPlan(Decision.NOOP)
        obstacle = Obstacle(ObstacleKind.REINITIALIZE, known.reshaped)
    if obstacle is None and known.policy is Policy.FULL:
        obstacle = Obstacle(ObstacleKind.REQUESTED, "REFRESH POLICY FULL")
    if obstacle is None and known.inexact is not None:
        obstacle = Obstacle(ObstacleKind.UNAVAILABLE, known.inexact)
    estimate = known.estimate or Estimate(None, None)
    if obstacle is None:
        obstacle = estimate.obstacle
    if obstacle is None and known.unreadable is not None:
        obstacle = Obstacle(ObstacleKind.UNAVAILABLE, known.unreadable)
    if (
        obstacle is not None
        and (mode := verdict(known.policy, obstacle)) is not Decision.INCREMENTAL
    ):
        return RefreshPlan(mode, obstacle)
    if known.reshaped is not None:
        return RefreshPlan(Decision.FULL, Obstacle(ObstacleKind.REINITIALIZE, known.reshaped))
    if known.policy is Policy.AUTO:
        cheaper, words = known.model.before_reading(
            estimate.change_bytes, known.full_bytes, known.min_bytes
        )
        if cheaper is not None:
            return RefreshPlan(Decision.FULL, cheaper, words)
    return RefreshPlan(
        Decision.INCREMENTAL,
        change_bytes=estimate.change_bytes,
        inserts_only=estimate.inserts_only,
        recheck_against=known.full_bytes if known.policy is Policy.AUTO else None,
    )


def what_is_known(
    spark: Session,
    view: str,
    compiled: CompiledView,
    properties: dict[str, str],
    store_schema,
    requested: Obstacle | None = None,
) -> Known:
    """What is known of a refresh of ``view`` (a view, or a state table; ``compiled``, its
    store's ``properties`` and schema) before any of its change is read: its latest record,
    the sources' logs. The sources' logs are read for the change only where the plan can use
    it (nothing requested, some source changed, no policy or store that recomputes anyway)."""
    policy = Policy(properties.get(POLICY, DEFAULT_POLICY))
    if compiled.maintenance.rule.kind is Kind.LOOKUP and policy is Policy.AUTO:
        policy = Policy.INCREMENTAL  # a recompute enriches every row anew: never for cost
    store = DeltaLogReader.of(spark, store_name(view))
    recorded, last = latest_record(store)
    if requested is None and (outside := written_outside(store, recorded, is_logged(properties))):
        requested = Obstacle(
            ObstacleKind.REINITIALIZE, f"its store was written outside ivm: {outside}"
        )
    model = CostModel.from_record(last.cost).observed(
        last.mode, last.planned_bytes, last.read_bytes, last.seconds
    )
    previous = last.sources
    current, ids = latest_sources(spark, compiled.sources)
    other_columns = reshaped(compiled, properties, store_schema)
    # the store's types say nothing of sums in columns it does not have
    inexact = None if other_columns else never_incremental(compiled, store_schema)
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
    return Known(
        view,
        policy,
        previous,
        current,
        last.table_ids,
        ids,
        requested,
        inexact,
        estimate=estimate(spark, previous, current) if readable else None,
        model=model,
        full_bytes=None if noop else total_source_bytes(spark, current),
        min_bytes=number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES),
        reshaped=other_columns,
    )


def reshaped(compiled: CompiledView, properties: dict[str, str], store_schema) -> str | None:
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
    refresh would make it: its state tables' first, each of which, recomputed, makes the view
    recompute too (its change would be the state table twice over). Each log is read once
    (those an enclosing :func:`~ivm.runtime.log.delta_log.reading_each_log_once` read stand)."""
    with reading_each_log_once(reuse=True):
        compiled = compile_definition(spark, view)
        plans = [(table, _predict_one(spark, table)) for table, _ in compiled.states]
        if failing := next((plan for _, plan in plans if plan.mode is Decision.FAILS), None):
            return failing
        recomputed = [table for table, plan in plans if plan.mode is Decision.FULL]
        requested = (
            Obstacle(ObstacleKind.REINITIALIZE, f"its state table {recomputed[0]} is recomputed")
            if recomputed
            else None
        )
        plan = _predict_one(spark, view, requested)
        if plan.mode is Decision.NOOP and any(p.mode is not Decision.NOOP for _, p in plans):
            return RefreshPlan(Decision.INCREMENTAL)  # the change of its state tables
        return plan


def _predict_one(spark: Session, view: str, requested: Obstacle | None = None) -> RefreshPlan:
    """The plan of the next refresh of ``view`` (a view, or a state table) alone; where files
    of a source's unconsumed change are gone, what the refresh will learn as it reads them."""
    properties = view_properties(spark, view)
    compiled = compile_definition(spark, view, properties)
    schema = spark.table(store_name(view)).schema
    known = what_is_known(spark, view, compiled, properties, schema, requested)
    return plan_refresh(replace(known, unreadable=unreadable(spark, view)))
