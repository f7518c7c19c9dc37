"""The decision of a refresh, made before any of the change is read: do nothing, apply the
change, recompute the view, or fail; and why.

One pure function, :func:`decide`, makes it from :class:`Facts` that
:mod:`ivm.runtime.refresh.gather` reads from the store's record, the sources' logs and the
session: the refresh carries it out, and ``ivm explain``, ``ivm status`` and ``DESCRIBE``
show the decision of the next refresh, made by the same function from the same facts. What
only reading the change shows (a change data file removed, a sum that overflows while it is
folded, a delta query planned to read more than a recompute) makes the refresh revise an
incremental decision once, by value (:class:`Revision`, :meth:`RefreshPlan.revised`).

The order of the decision:

1. ``REFRESH … FULL`` (or a state table of the view recomputed, or its store written outside
   ivm), other sources than the store reflects, or a source replaced under its name:
   recompute;
2. no source changed: nothing to do, unless the store's columns are not the definition's:
   recompute;
3. ``REFRESH POLICY FULL``, a store that keeps sums no refresh can add exactly, what the
   sources' logs show, a change over ``ratio`` of the changed sources' bytes (once they hold
   ``min_bytes``), or change files gone: recompute or fail, as the policy says
   (:func:`verdict`);
4. the store's columns not the definition's: recompute (a change has no rows for them);
5. under ``AUTO``, the cost model's prediction before reading (rule 1 of
   :mod:`ivm.runtime.decision.cost`): recompute if that is predicted cheaper;
6. otherwise apply the change.

A view with state tables is decided after them (:func:`after_state_tables`).

Every plan names the ways it weighed (:class:`Alternative`, as Databricks records a refresh's
``technique_information``): applying the change and recomputing, each with what it reads,
whether it could be taken, and why it was not, which the refresh's record keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ivm.compiler import CompiledView
from ivm.errors import IvmError
from ivm.runtime.decision.cost import CostModel
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind, Policy
from ivm.runtime.messages import size
from ivm.store import is_exact

RATIO = "spark.ivm.refresh.fullRecomputeRatio"
"""The setting of ``ratio`` (:class:`Facts`): a change over this share of the changed
sources' bytes is recomputed under ``AUTO``."""
MIN_BYTES = "spark.ivm.refresh.fullRecomputeMinBytes"
"""The setting of ``min_bytes`` (:class:`Facts`): sources under this size are not predicted
by any cost rule (a refresh of them costs its fixed overhead either way)."""
DEFAULT_RATIO = 0.3
DEFAULT_MIN_BYTES = 64 * 1024 * 1024


class NotIncrementalizable(IvmError):
    """A refresh under ``REFRESH POLICY INCREMENTAL STRICT`` (or a CREATE or ALTER to
    ``INCREMENTAL``) that cannot apply the change."""


@dataclass(frozen=True)
class Facts:
    """What is known of a refresh of ``view`` before any of its change is read.

    ``policy``: its refresh policy (a lookup join's ``AUTO`` taken as ``INCREMENTAL``: a
    recompute enriches every fact row anew, so is never chosen for cost); ``previous`` and
    ``consumed_ids``: the source versions and table ids the store reflects, ``current`` and
    ``ids`` the sources' now; ``requested``: what makes it recompute whatever else holds
    (``REFRESH … FULL``, a state table recomputed, a store written outside ivm);
    ``inexact``: why no refresh of its store can apply a change, if none can; ``found``: what
    the sources' logs show standing in the way (a source replaced or restored, a schema
    change, commits gone, the change data feed off); ``change_bytes`` and ``source_bytes``:
    the change's size and the changed sources' (None where the logs do not say, or were not
    read); ``inserts_only``: every source's change inserts rows and removes none;
    ``unreadable``: why the change cannot be read, where files it needs are gone (VACUUM),
    which a prediction looks for and a refresh learns as it reads the change; ``full_bytes``:
    what a recompute reads; ``min_bytes``: the sources' size under which no cost rule
    predicts; ``ratio``: the share of the sources' bytes over which a change is recomputed
    under ``AUTO``; ``reshaped``: why the store's columns are not those the definition now
    gives, if they are not; ``inserts_only_rules``: whether a change that only inserts may
    take the rules for inserted rows only (a session setting turns them off)."""

    view: str
    policy: Policy
    previous: dict[str, int]
    current: dict[str, int]
    consumed_ids: dict[str, str] | None
    ids: dict[str, str]
    requested: Obstacle | None = None
    inexact: str | None = None
    found: Obstacle | None = None
    change_bytes: int | None = None
    source_bytes: int | None = None
    inserts_only: bool = False
    unreadable: str | None = None
    model: CostModel = field(default_factory=CostModel)
    full_bytes: int | None = None
    min_bytes: float = 0
    ratio: float = DEFAULT_RATIO
    reshaped: str | None = None
    inserts_only_rules: bool = True

    @property
    def changed(self) -> list[str]:
        """The sources whose version the refresh moves (the others have no change).

        >>> Facts("v", Policy.AUTO, {"t": 1, "u": 4}, {"t": 2, "u": 4}, None, {}).changed
        ['t']
        """
        return [t for t, version in self.current.items() if self.previous.get(t) != version]


@dataclass(frozen=True)
class Alternative:
    """A way a refresh was weighed to go (``mode`` ``incremental`` or ``full``): whether it
    was ``chosen``, whether it was ``applicable`` at all (a change that cannot be applied is
    not), the bytes it reads as far as is known (``cost_bytes``), and ``reason``, why it was
    not chosen."""

    mode: Mode
    chosen: bool
    applicable: bool
    cost_bytes: int | None
    reason: str | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "mode": str(self.mode),
            "chosen": self.chosen,
            "applicable": self.applicable,
            "cost_bytes": self.cost_bytes,
            "reason": self.reason,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Alternative:
        return cls(
            Mode(record["mode"]),
            bool(record["chosen"]),
            bool(record["applicable"]),
            record.get("cost_bytes"),
            record.get("reason"),
        )

    def __str__(self) -> str:
        """The way in words, as DESCRIBE shows it.

        >>> str(Alternative(Mode.FULL, False, True, 2048, "the change is small"))
        'full (not chosen; reads 2.0 KiB): the change is small'
        >>> str(Alternative(Mode.INCREMENTAL, False, False, None, "t was replaced"))
        'incremental (not applicable): t was replaced'
        """
        state = "chosen" if self.chosen else "not chosen" if self.applicable else "not applicable"
        reads = "" if self.cost_bytes is None else f"; reads {size(self.cost_bytes)}"
        return f"{self.mode} ({state}{reads})" + (f": {self.reason}" if self.reason else "")


@dataclass(frozen=True)
class RefreshPlan:
    """What a refresh does: ``mode`` ``noop``, ``incremental`` or ``full``, or None where it
    fails; the ``obstacle`` that makes it recompute or fail; ``prediction``, the cost model's
    words where it chose to recompute; the ``change_bytes`` it reads (None where the log
    does not say); ``inserts_only``: it takes the rules for inserted rows only;
    ``recheck_against``: under ``AUTO``, the bytes a recompute reads, against which the cost
    model judges the delta query once it is planned (rule 2 of
    :mod:`ivm.runtime.decision.cost`). That, and what only reading the change shows, is where
    a refresh may revise an incremental plan, once (:meth:`revised`). ``alternatives``: the
    ways weighed, the chosen one first (none for a refresh with nothing to do)."""

    mode: Mode | None
    obstacle: Obstacle | None = None
    prediction: str | None = None
    change_bytes: int | None = None
    inserts_only: bool = False
    recheck_against: int | None = None
    alternatives: tuple[Alternative, ...] = ()

    @property
    def fails(self) -> bool:
        return self.mode is None

    def __str__(self) -> str:
        """The plan in words.

        >>> str(RefreshPlan(Mode.INCREMENTAL, change_bytes=698))
        'incremental, a change of 698 B'
        >>> off = Obstacle(ObstacleKind.UNAVAILABLE, "change data feed off on t")
        >>> str(RefreshPlan(None, off))
        'fails: change data feed off on t'
        """
        if self.mode is Mode.NOOP:
            return "nothing to do (no source changed)"
        if self.mode is Mode.INCREMENTAL:
            return "incremental" + (
                "" if self.change_bytes is None else f", a change of {size(self.change_bytes)}"
            )
        assert self.obstacle is not None  # a full or failing plan says why
        done = "a full recompute" if self.mode is Mode.FULL else "fails"
        return f"{done}: {self.obstacle.reason}"

    def revised(self, policy: Policy, revision: Revision) -> RefreshPlan:
        """The plan once an incremental refresh under ``policy`` learned, reading the change,
        that it cannot apply it: a recompute, or a failure.

        >>> plan = RefreshPlan(Mode.INCREMENTAL, change_bytes=698)
        >>> overflow = Revision(Obstacle(ObstacleKind.UNAVAILABLE, "a sum overflowed"))
        >>> str(plan.revised(Policy.AUTO, overflow))
        'a full recompute: a sum overflowed'
        >>> plan.revised(Policy.INCREMENTAL_STRICT, overflow).fails
        True
        """
        assert self.mode is Mode.INCREMENTAL, self.mode
        mode = verdict(policy, revision.obstacle)
        # a refresh returns only obstacles its policy heeds
        assert mode is not Mode.INCREMENTAL, revision
        costs = {a.mode: a.cost_bytes for a in self.alternatives}
        plan = RefreshPlan(mode, revision.obstacle, revision.prediction)
        return _weighed(plan, policy, costs.get(Mode.INCREMENTAL), costs.get(Mode.FULL))

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


def verdict(policy: Policy, obstacle: Obstacle) -> Mode | None:
    """What a refresh under ``policy`` does for ``obstacle``: ``full``, ``incremental`` (the
    policy ignores it) or None, it fails.

    >>> cost = Obstacle(ObstacleKind.COST, "cheaper")
    >>> str(verdict(Policy.AUTO, cost)), str(verdict(Policy.INCREMENTAL, cost))
    ('full', 'incremental')
    >>> strict = Policy.INCREMENTAL_STRICT
    >>> str(verdict(strict, Obstacle(ObstacleKind.REINITIALIZE, "t was replaced")))
    'full'
    >>> verdict(strict, Obstacle(ObstacleKind.UNAVAILABLE, "change data feed off")) is None
    True
    """
    if obstacle.kind is ObstacleKind.COST:
        return Mode.FULL if policy is Policy.AUTO else Mode.INCREMENTAL
    if obstacle.kind is ObstacleKind.UNAVAILABLE and policy is Policy.INCREMENTAL_STRICT:
        return None
    return Mode.FULL


def decide(facts: Facts) -> RefreshPlan:
    """The plan of a refresh from what is known before reading (see the module's docstring),
    with the ways it weighed.

    >>> facts = Facts("v", Policy.AUTO, {"t": 1}, {"t": 2}, None, {"t": "a"}, change_bytes=698)
    >>> str(decide(facts))
    'incremental, a change of 698 B'
    >>> from dataclasses import replace
    >>> str(decide(replace(facts, policy=Policy.FULL)))
    'a full recompute: REFRESH POLICY FULL'
    >>> off = Obstacle(ObstacleKind.UNAVAILABLE, "the change data feed of t was off")
    >>> str(decide(replace(facts, policy=Policy.INCREMENTAL_STRICT, found=off)))
    'fails: the change data feed of t was off'
    >>> str(decide(replace(facts, current={"t": 1}, reshaped="x added")))
    'a full recompute: x added'
    >>> [(str(a.mode), a.chosen, a.reason) for a in decide(facts).alternatives][1]
    ('full', False, "the sources' size is not known: incremental")
    """
    plan, words = _decided(facts)
    return _weighed(plan, facts.policy, facts.change_bytes, facts.full_bytes, words)


def _decided(facts: Facts) -> tuple[RefreshPlan, str | None]:
    """The plan of :func:`decide`, and the cost model's words where it weighed the two."""
    obstacle = facts.requested or _other_input(facts)
    if obstacle is None and facts.previous == facts.current:
        if facts.reshaped is None:
            return RefreshPlan(Mode.NOOP), None
        obstacle = Obstacle(ObstacleKind.REINITIALIZE, facts.reshaped)
    obstacle = obstacle or _in_the_way(facts)
    if obstacle is not None and (mode := verdict(facts.policy, obstacle)) is not Mode.INCREMENTAL:
        return RefreshPlan(mode, obstacle), None
    if facts.reshaped is not None:
        return RefreshPlan(Mode.FULL, Obstacle(ObstacleKind.REINITIALIZE, facts.reshaped)), None
    words = None
    if facts.policy is Policy.AUTO:
        cheaper, words = facts.model.before_reading(
            facts.change_bytes, facts.full_bytes, facts.min_bytes
        )
        if cheaper is not None:
            return RefreshPlan(Mode.FULL, cheaper, words), words
    incremental = RefreshPlan(
        Mode.INCREMENTAL,
        change_bytes=facts.change_bytes,
        inserts_only=facts.inserts_only and facts.inserts_only_rules,
        recheck_against=facts.full_bytes if facts.policy is Policy.AUTO else None,
    )
    return incremental, words


def _weighed(
    plan: RefreshPlan,
    policy: Policy,
    change_bytes: int | None,
    full_bytes: int | None,
    words: str | None = None,
) -> RefreshPlan:
    """``plan`` with the ways it weighed: the chosen one first, then the other, with why it
    was not chosen (``words``: the cost model's, where it weighed them).

    >>> cost = Obstacle(ObstacleKind.COST, "a full recompute is predicted cheaper: …")
    >>> [a.to_record() for a in _weighed(RefreshPlan(Mode.FULL, cost), Policy.AUTO, 5, 9)
    ...  .alternatives]  # doctest: +NORMALIZE_WHITESPACE
    [{'mode': 'full', 'chosen': True, 'applicable': True, 'cost_bytes': 9, 'reason': None},
     {'mode': 'incremental', 'chosen': False, 'applicable': True, 'cost_bytes': 5,
      'reason': 'a full recompute is predicted cheaper: …'}]
    """
    if plan.mode is Mode.NOOP:
        return plan
    if plan.mode is Mode.INCREMENTAL:
        why = words or f"REFRESH POLICY {policy} recomputes only where the change cannot be applied"
        ways = (
            Alternative(Mode.INCREMENTAL, True, True, change_bytes),
            Alternative(Mode.FULL, False, True, full_bytes, why),
        )
    else:
        assert plan.obstacle is not None
        applicable = plan.obstacle.kind in (ObstacleKind.COST, ObstacleKind.REQUESTED)
        incremental = Alternative(
            Mode.INCREMENTAL, False, applicable, change_bytes, plan.obstacle.reason
        )
        full = Alternative(
            Mode.FULL,
            plan.mode is Mode.FULL,
            True,
            full_bytes,
            None
            if plan.mode is Mode.FULL
            else f"REFRESH POLICY {policy} does not recompute for it",
        )
        ways = (full, incremental) if plan.mode is Mode.FULL else (incremental, full)
    return replace(plan, alternatives=ways)


def _other_input(facts: Facts) -> Obstacle | None:
    """Why the store reflects other sources than the refresh reads, if it does: other names,
    or a source replaced under its name (the versions of two tables are not comparable)."""
    if set(facts.previous) != set(facts.current):
        return Obstacle(
            ObstacleKind.REINITIALIZE, "the store records other sources than the definition reads"
        )
    if replaced := replaced_source(facts.consumed_ids, facts.ids):
        return Obstacle(ObstacleKind.REINITIALIZE, replaced)
    return None


def _in_the_way(facts: Facts) -> Obstacle | None:
    """What stands in the way of applying a change, in the order the module's docstring
    gives (rule 3)."""
    if facts.policy is Policy.FULL:
        return Obstacle(ObstacleKind.REQUESTED, "REFRESH POLICY FULL")
    if facts.inexact is not None:
        return Obstacle(ObstacleKind.UNAVAILABLE, facts.inexact)
    if facts.found is not None:
        return facts.found
    if too_large := _over_ratio(facts):
        return too_large
    if facts.unreadable is not None:
        return Obstacle(ObstacleKind.UNAVAILABLE, facts.unreadable)
    return None


def _over_ratio(facts: Facts) -> Obstacle | None:
    """An obstacle of kind ``cost`` where the change is over ``ratio`` of the changed
    sources' bytes, once they hold at least ``min_bytes``.

    >>> f = Facts("v", Policy.AUTO, {"t": 1}, {"t": 2}, None, {}, change_bytes=40,
    ...           source_bytes=100, min_bytes=64)
    >>> _over_ratio(f).reason
    "the change (40 bytes) is over 0.3 of the sources' 100 bytes
    (spark.ivm.refresh.fullRecomputeRatio)"
    >>> _over_ratio(Facts("v", Policy.AUTO, {}, {}, None, {}, change_bytes=40)) is None
    True
    """
    change, sources = facts.change_bytes, facts.source_bytes
    if change is None or sources is None or sources < facts.min_bytes:
        return None
    if change <= facts.ratio * sources:
        return None
    return Obstacle(
        ObstacleKind.COST,
        f"the change ({change} bytes) is over {facts.ratio:g} of the sources' {sources} bytes "
        f"({RATIO})",
    )


def replaced_source(consumed: dict[str, str] | None, current: dict[str, str]) -> str | None:
    """Why a refresh must recompute because a source is another table than the one the
    view read, if one is: ``consumed`` and ``current`` map sources to Delta table ids, then
    and now. A source without a consumed id (the view's records predate them) is taken to be
    the same table.

    >>> replaced_source({"d.s": "a1"}, {"d.s": "a1"}) is None
    True
    >>> replaced_source(None, {"d.s": "b2"}) is None
    True
    >>> replaced_source({"d.s": "a1"}, {"d.s": "b2"})
    'd.s was replaced or dropped and re-created since the view read it (Delta table id a1, now b2)'
    """
    for table, table_id in current.items():
        before = (consumed or {}).get(table)
        if before is not None and before != table_id:
            return (
                f"{table} was replaced or dropped and re-created since the view read it "
                f"(Delta table id {before}, now {table_id})"
            )
    return None


def state_table_recomputed(states: list[tuple[str, Mode | None]], done: str) -> Obstacle | None:
    """What makes a view recompute after its state tables, ``(table, mode)`` in order, were
    refreshed (``done``: "was") or planned (``done``: "is"): one of them recomputed, whose
    change would be all its rows twice over.

    >>> state_table_recomputed([("s1", Mode.NOOP), ("s2", Mode.FULL)], "was").reason
    'its state table s2 was recomputed'
    >>> state_table_recomputed([("s1", Mode.INCREMENTAL)], "is") is None
    True
    """
    recomputed = [table for table, mode in states if mode is Mode.FULL]
    if not recomputed:
        return None
    return Obstacle(ObstacleKind.REINITIALIZE, f"its state table {recomputed[0]} {done} recomputed")


def after_state_tables(view: RefreshPlan, states: list[RefreshPlan]) -> RefreshPlan:
    """The plan of a view given its state tables' plans, none failing (the view's own made
    with :func:`state_table_recomputed`): the view's, which has the state tables' change to
    apply where its own sources did not change.

    >>> incremental, noop = RefreshPlan(Mode.INCREMENTAL), RefreshPlan(Mode.NOOP)
    >>> str(after_state_tables(noop, [incremental]))
    'incremental'
    >>> str(after_state_tables(noop, [noop]))
    'nothing to do (no source changed)'
    """
    if view.mode is Mode.NOOP and any(plan.mode is not Mode.NOOP for plan in states):
        return RefreshPlan(Mode.INCREMENTAL)  # the change of its state tables
    return view


def never_incremental(compiled: CompiledView, types: dict[str, str]) -> str | None:
    """Why no refresh of a view whose store has the column ``types`` (name → Spark SQL type)
    can apply a change, if none can: a sum stored as a type whose addition is inexact
    (floating point)."""
    inexact = [
        f"{acc.name} {types[acc.name].upper()}"
        for acc in compiled.store.accumulators
        if acc.kind == "sum" and not is_exact(types[acc.name])
    ]
    return (
        f"sums stored as types that cannot be added exactly ({', '.join(inexact)})"
        if inexact
        else None
    )


def admit(view: str, policy: Policy, never: str | None) -> None:
    """At CREATE or ALTER: a view that no refresh can maintain incrementally (``never`` says
    why, from :func:`never_incremental`) cannot take an ``INCREMENTAL`` policy."""
    if never is not None and policy in (Policy.INCREMENTAL, Policy.INCREMENTAL_STRICT):
        raise NotIncrementalizable(
            f"{view} cannot be refreshed incrementally under REFRESH POLICY {policy}: {never}",
            hint="use REFRESH POLICY AUTO or FULL, or change the query",
        )


def maintained(policy: Policy, never: str | None) -> str:
    """How a view is maintained under ``policy`` (``never``: why no refresh can apply a
    change, if none can), as ``ivm explain`` says it.

    >>> maintained(Policy.AUTO, None)
    'maintained: incrementally, unless a refresh predicts a full recompute cheaper'
    >>> maintained(Policy.INCREMENTAL_STRICT, "sums as DOUBLE")
    'maintained: no, CREATE fails: sums as DOUBLE'
    """
    if policy is Policy.FULL:
        return "maintained: by a full recompute on every refresh (REFRESH POLICY FULL)"
    if never and policy in (Policy.INCREMENTAL, Policy.INCREMENTAL_STRICT):
        return f"maintained: no, CREATE fails: {never}"
    if never:
        return f"maintained: by a full recompute on every refresh: {never}"
    return "maintained: incrementally" + (
        ", unless a refresh predicts a full recompute cheaper" if policy is Policy.AUTO else ""
    )
