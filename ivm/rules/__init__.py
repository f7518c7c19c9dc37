"""Derivative rules, one module per operator, found through one registry.

:func:`differentiate` maps a plan to its delta, a sum of terms (see :mod:`ivm.rules.base`);
:func:`maintain` decides how a whole view is stored and updated, by the operator at its root.
An operator without a rule is refused with :class:`~ivm.errors.UnsupportedQuery`.
"""

from __future__ import annotations

from ivm.errors import UnsupportedQuery
from ivm.ir import Aggregate, Distinct, Project, Union
from ivm.rules import aggregate, distinct, filter, integrate, join, project, scan
from ivm.rules.base import Kind, Rule
from ivm.rules.maintenance import Maintenance

RULES: dict[type, Rule] = {r.operator: r for r in (scan.RULE, filter.RULE, project.RULE,
                                                   join.RULE)}
"""Rules whose delta is a Z-set, usable anywhere in a plan."""

VIEW_RULES = (aggregate.RULE, distinct.RULE, integrate.RULE)
"""Rules that decide how a view is stored, applied at the root."""


def differentiate(node) -> Union:
    """The delta of ``node``: a sum of terms over changes and snapshots of its sources."""
    rule = RULES.get(type(node))
    if rule is None:
        construct = {Aggregate: "GROUP BY below another operator",
                     Distinct: "DISTINCT below another operator"}.get(type(node),
                                                                     type(node).__name__)
        raise UnsupportedQuery(construct, hint="nested aggregation is not supported yet")
    return rule.derive(node, differentiate)


def maintain(plan) -> Maintenance:
    """How the view defined by ``plan`` is stored, filled from scratch, and updated."""
    if isinstance(plan, Distinct):
        return distinct.maintain_distinct(plan, differentiate)
    if isinstance(plan, Project) and isinstance(plan.input, Aggregate):
        return aggregate.maintain_aggregate(plan, differentiate)
    return integrate.maintain_rows(plan, differentiate)


def rule_for(node) -> Rule | None:
    """The rule that handles ``node`` inside a plan (for explain)."""
    if isinstance(node, Aggregate):
        return aggregate.RULE
    if isinstance(node, Distinct):
        return distinct.RULE
    return RULES.get(type(node))


__all__ = ["Kind", "Maintenance", "RULES", "Rule", "VIEW_RULES", "differentiate", "maintain",
           "rule_for"]
