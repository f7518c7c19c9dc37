"""Derivative rules, one module per operator, found through one registry.

:func:`differentiate` maps a plan to its delta, a sum of terms (see :mod:`ivm.rules.base`);
:func:`maintain` decides how a whole view is stored and updated, by the operator at its root.
An operator without a rule is refused with :class:`~ivm.errors.UnsupportedQuery`.
"""

from __future__ import annotations

from ivm.ir import Aggregate, Distinct, Join, JoinKind, Project, Relation, Restrict, Union, Weighted
from ivm.rules import (
    aggregate,
    distinct,
    filter,
    generate,
    integrate,
    join,
    lookup,
    project,
    scan,
    set_operation,
    subquery,
    union,
    window,
)
from ivm.rules.base import AnyRule, Derivation, Kind, Rule
from ivm.rules.maintenance import Maintenance

RULES: dict[type[Relation], Rule[Derivation]] = {
    r.operator: r
    for r in (
        scan.RULE,
        filter.RULE,
        project.RULE,
        join.RULE,
        subquery.RULE,
        union.RULE,
        aggregate.KEYED_RULE,
        distinct.KEYED_RULE,
        set_operation.RULE,
        window.RULE,
        generate.RULE,
    )
}
"""Rules whose delta is a Z-set, usable anywhere in a plan (the cheapest that is correct)."""

VIEW_RULES = (aggregate.RULE, distinct.RULE, integrate.RULE, lookup.RULE)
"""Rules that decide how a view is stored, applied at the root."""


def differentiate(node: Relation) -> Union:
    """The delta of ``node``: a sum of terms over changes and snapshots of its sources."""
    return RULES[type(node)].derive(node, differentiate)


def maintain(plan: Relation, name: str | None = None) -> Maintenance:
    """How the view defined by ``plan`` (named ``name``) is stored, filled from scratch, and
    updated.

    A GROUP BY at the root whose aggregates are all invertible keeps accumulators in the
    store; a DISTINCT at the root keeps counts; lookup joins keep what they enriched; any
    other view integrates its delta, and, named, has the rules for changes that insert rows
    only where they apply (:mod:`ivm.rules.append`).
    """
    if lookup.is_lookup_state(plan):
        if name is None:
            raise ValueError("a lookup join's state reads its own store: name it")
        return lookup.maintain_lookup(plan, differentiate, name)
    if isinstance(plan, Distinct):
        return distinct.maintain_distinct(plan, differentiate)
    if (
        isinstance(plan, Project)
        and isinstance(plan.input, Aggregate)
        and all(call.invertible for _, call in plan.input.calls)
    ):
        return aggregate.maintain_aggregate(plan, differentiate)
    return integrate.maintain_rows(plan, differentiate, name=name)


def rule_for(node: Relation) -> AnyRule | None:
    """The rule that handles ``node`` inside a plan (for explain); None for a node that only
    rules build, inside a delta."""
    match node:
        case Join() if node.kind.lookup:
            return lookup.JOIN_RULE
        case Join() if node.kind is not JoinKind.INNER:
            return join.KEYED_RULE
        case Restrict() | Weighted():
            return None
        case _:
            return RULES[type(node)]


__all__ = [
    "Kind",
    "Maintenance",
    "RULES",
    "Rule",
    "VIEW_RULES",
    "differentiate",
    "maintain",
    "rule_for",
]
