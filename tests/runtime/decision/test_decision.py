"""The decision of a refresh, table-driven, without a JVM: every refresh policy against
every case of what a refresh can know before it reads the change (what stands in the way,
what the cost model predicts, state tables recomputed). Each row is the rule of
:mod:`ivm.runtime.decision.decide` written out for one case, not a copy of what the code
returned."""

from dataclasses import replace

import pytest

from ivm.runtime.decision.cost import CostModel
from ivm.runtime.decision.decide import (
    Facts,
    RefreshPlan,
    Revision,
    after_state_tables,
    decide,
    state_table_recomputed,
)
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind, Policy

pytestmark = pytest.mark.fast

MIB = 1024 * 1024
CHANGED = Facts(
    "d.v",
    Policy.AUTO,
    previous={"d.t": 1, "d.u": 3},
    current={"d.t": 2, "d.u": 3},
    consumed_ids={"d.t": "a1", "d.u": "b1"},
    ids={"d.t": "a1", "d.u": "b1"},
    change_bytes=1 * MIB,
    source_bytes=200 * MIB,
    full_bytes=300 * MIB,
    min_bytes=64 * MIB,
)
"""A refresh with one source changed by 1 MiB of 200, nothing in the way, no cost evidence."""
SLOW_INCREMENTAL = CostModel(bytes_per_second=300 * MIB, incremental=((MIB, 5.0),))
"""Evidence that a change of 1 MiB took 5 s, and a recompute of 300 MiB 1 s."""

FULL, INCREMENTAL, NOOP, FAILS = Mode.FULL, Mode.INCREMENTAL, Mode.NOOP, None
POLICIES = (Policy.AUTO, Policy.INCREMENTAL, Policy.INCREMENTAL_STRICT, Policy.FULL)
REQUESTED = Obstacle(ObstacleKind.REQUESTED, "REFRESH d.v FULL")
RESTORED = Obstacle(ObstacleKind.REINITIALIZE, "d.t is at version 0, before version 1")
FEED_OFF = Obstacle(ObstacleKind.UNAVAILABLE, "the change data feed of d.t was turned off")

CASES = {
    # case: (facts, what a refresh does under (AUTO, INCREMENTAL, INCREMENTAL STRICT, FULL),
    # words of the reason it gives where it recomputes or fails)
    "nothing in the way": (CHANGED, (INCREMENTAL, INCREMENTAL, INCREMENTAL, FULL), None),
    "no source changed": (
        replace(CHANGED, current=CHANGED.previous),
        (NOOP, NOOP, NOOP, NOOP),
        None,
    ),
    "REFRESH FULL": (replace(CHANGED, requested=REQUESTED), (FULL,) * 4, "REFRESH d.v FULL"),
    "REFRESH FULL, nothing changed": (
        replace(CHANGED, current=CHANGED.previous, requested=REQUESTED),
        (FULL,) * 4,
        "REFRESH d.v FULL",
    ),
    "a source replaced under its name": (
        replace(CHANGED, ids={"d.t": "a2", "d.u": "b1"}),
        (FULL,) * 4,
        "d.t was replaced",
    ),
    "other sources than the store records": (
        replace(CHANGED, current={"d.t": 2}),
        (FULL,) * 4,
        "other sources",
    ),
    "the store's columns not the definition's, nothing changed": (
        replace(CHANGED, current=CHANGED.previous, reshaped="x added"),
        (FULL,) * 4,
        "x added",
    ),
    "the store's columns not the definition's": (
        replace(CHANGED, reshaped="x added"),
        (FULL, FULL, FULL, FULL),
        "x added",
    ),
    "sums that cannot be added exactly": (
        replace(CHANGED, inexact="sums stored as DOUBLE"),
        (FULL, FULL, FAILS, FULL),
        "sums stored as DOUBLE",
    ),
    "a source restored to an older version": (
        replace(CHANGED, found=RESTORED, change_bytes=None, source_bytes=None),
        (FULL,) * 4,
        "before version 1",
    ),
    "the change data feed turned off": (
        replace(CHANGED, found=FEED_OFF, change_bytes=None, source_bytes=None),
        (FULL, FULL, FAILS, FULL),
        "turned off",
    ),
    "change files vacuumed": (
        replace(CHANGED, unreadable="version 2's change files are gone"),
        (FULL, FULL, FAILS, FULL),
        "are gone",
    ),
    "a change over the ratio of its sources": (
        replace(CHANGED, change_bytes=100 * MIB),
        (FULL, INCREMENTAL, INCREMENTAL, FULL),
        "is over 0.3 of the sources'",
    ),
    "a change over the ratio of sources under the least size": (
        replace(CHANGED, change_bytes=20 * MIB, source_bytes=30 * MIB),
        (INCREMENTAL, INCREMENTAL, INCREMENTAL, FULL),
        None,
    ),
    "the cost model predicts a recompute cheaper": (
        replace(CHANGED, model=SLOW_INCREMENTAL),
        (FULL, INCREMENTAL, INCREMENTAL, FULL),
        "a full recompute is predicted cheaper",
    ),
    "the cost model, sources under the least size": (
        replace(CHANGED, model=SLOW_INCREMENTAL, full_bytes=10 * MIB),
        (INCREMENTAL, INCREMENTAL, INCREMENTAL, FULL),
        None,
    ),
    "the latest delta query read more than a recompute": (
        replace(CHANGED, model=CostModel(planned=(MIB, 400 * MIB))),
        (FULL, INCREMENTAL, INCREMENTAL, FULL),
        "the latest delta query",
    ),
    "requested over a failing obstacle": (
        replace(CHANGED, requested=REQUESTED, found=FEED_OFF),
        (FULL,) * 4,
        "REFRESH d.v FULL",
    ),
}


@pytest.mark.parametrize(
    ("facts", "policy", "expected", "reason"),
    [
        pytest.param(facts, policy, modes[i], reason, id=f"{case} / {policy}")
        for case, (facts, modes, reason) in CASES.items()
        for i, policy in enumerate(POLICIES)
    ],
)
def test_the_decision_of_each_policy_in_each_case(facts, policy, expected, reason):
    plan = decide(replace(facts, policy=policy))
    assert plan.mode is expected, str(plan)
    assert_weighed(plan)
    if expected is INCREMENTAL:
        assert plan.obstacle is None
        assert plan.change_bytes == facts.change_bytes
        assert plan.recheck_against == (facts.full_bytes if policy is Policy.AUTO else None)
    elif expected is NOOP:
        assert str(plan) == "nothing to do (no source changed)"
    else:  # a recompute or a failure says why
        assert plan.obstacle is not None
        by_policy = policy is Policy.FULL and plan.obstacle.reason == "REFRESH POLICY FULL"
        if reason is not None and not by_policy:
            assert reason in plan.obstacle.reason
        if expected is FAILS:
            error = plan.error(facts.view)
            assert "cannot be refreshed incrementally" in error.message
            assert "REFRESH MATERIALIZED VIEW d.v FULL" in (error.hint or "")


def assert_weighed(plan: RefreshPlan) -> None:
    """``plan`` names the two ways, applying the change and recomputing, the chosen one first
    (none where it fails), each one not chosen with its reason; applying the change is not
    applicable where the change cannot be applied, whatever the policy."""
    if plan.mode is NOOP:
        assert plan.alternatives == ()
        return
    ways = {way.mode: way for way in plan.alternatives}
    assert sorted(ways) == sorted([INCREMENTAL, FULL]) and len(plan.alternatives) == 2
    assert [way.mode for way in plan.alternatives if way.chosen] == (
        [] if plan.fails else [plan.mode]
    )
    if not plan.fails:
        assert plan.alternatives[0].mode is plan.mode
    assert all(way.reason for way in plan.alternatives if not way.chosen)
    assert ways[FULL].applicable
    cannot = plan.obstacle is not None and plan.obstacle.kind in (
        ObstacleKind.REINITIALIZE,
        ObstacleKind.UNAVAILABLE,
    )
    assert ways[INCREMENTAL].applicable is not cannot
    if plan.obstacle is not None and plan.mode is not INCREMENTAL:
        assert ways[INCREMENTAL].reason == plan.obstacle.reason


def test_under_refresh_policy_full_every_changed_refresh_says_so():
    plan = decide(replace(CHANGED, policy=Policy.FULL))
    assert (plan.mode, plan.obstacle) == (
        FULL,
        Obstacle(ObstacleKind.REQUESTED, "REFRESH POLICY FULL"),
    )


@pytest.mark.parametrize("inserts_only", [True, False])
@pytest.mark.parametrize("rules_on", [True, False])
def test_the_rules_for_inserts_only_are_taken_where_the_change_inserts_and_the_setting_allows(
    inserts_only, rules_on
):
    facts = replace(CHANGED, inserts_only=inserts_only, inserts_only_rules=rules_on)
    assert decide(facts).inserts_only is (inserts_only and rules_on)


@pytest.mark.parametrize(
    ("policy", "kind", "expected"),
    [
        (policy, kind, expected)
        for kind, by_policy in {
            ObstacleKind.UNAVAILABLE: (FULL, FULL, FAILS),
            ObstacleKind.COST: (FULL, None, None),  # only AUTO revises for cost
        }.items()
        for policy, expected in zip(POLICIES[:3], by_policy, strict=True)
        if not (kind is ObstacleKind.COST and policy is not Policy.AUTO)
    ],
)
def test_an_incremental_plan_is_revised_once_by_what_reading_the_change_shows(
    policy, kind, expected
):
    plan = decide(replace(CHANGED, policy=policy))
    assert plan.mode is INCREMENTAL
    revised = plan.revised(policy, Revision(Obstacle(kind, "a sum overflowed")))
    assert revised.mode is expected
    assert revised.obstacle == Obstacle(kind, "a sum overflowed")
    assert_weighed(revised)
    assert {way.mode: way.cost_bytes for way in revised.alternatives} == {
        INCREMENTAL: CHANGED.change_bytes,
        FULL: CHANGED.full_bytes,
    }


def test_a_view_recomputes_after_a_state_table_recomputed_and_applies_the_state_tables_change():
    states = [("d.s1", Mode.INCREMENTAL), ("d.s2", Mode.FULL)]
    forced = state_table_recomputed(states, "was")
    assert forced == Obstacle(ObstacleKind.REINITIALIZE, "its state table d.s2 was recomputed")
    assert decide(replace(CHANGED, requested=forced)).mode is FULL
    assert state_table_recomputed([("d.s1", Mode.INCREMENTAL)], "is") is None
    unchanged = decide(replace(CHANGED, current=CHANGED.previous))
    assert after_state_tables(unchanged, [RefreshPlan(INCREMENTAL)]).mode is INCREMENTAL
    assert after_state_tables(unchanged, [RefreshPlan(NOOP)]).mode is NOOP
