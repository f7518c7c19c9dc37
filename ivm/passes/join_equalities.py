"""Filters over an inner join give their equalities between two inputs to the join.

``σ[a.k = b.k ∧ p](A ⋈_c B) = σ[p](A ⋈_{c ∧ a.k = b.k} B)``: the same rows, but the join
rule now knows the equality as a join key and reads each snapshot only at the change's keys,
where a filter above a cross product would read them whole.
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Filter, Join, JoinKind, Relation, aliases_of, children, with_children


def join_on_equalities(plan: Relation) -> Relation:
    """``plan`` with every filter over an inner join rewritten, bottom up.

    >>> from ivm.ir import Scan
    >>> a, b = Scan("a", "a", ("k", "x")), Scan("b", "b", ("k",))
    >>> where = exp.and_(exp.column("k", "a").eq(exp.column("k", "b")),
    ...                  exp.column("x", "a").eq(exp.Literal.number(1)))
    >>> rewritten = join_on_equalities(Filter(Join((a, b)), where))
    >>> rewritten.predicate.sql(), rewritten.input.condition.sql()
    ('a.x = 1', 'a.k = b.k')
    """
    plan = with_children(plan, tuple(join_on_equalities(child) for child in children(plan)))
    if (
        isinstance(plan, Filter)
        and isinstance(plan.input, Join)
        and plan.input.kind is JoinKind.INNER
    ):
        return _joined(plan.input, plan.predicate)
    return plan


def _joined(join: Join, predicate: exp.Expr) -> Relation:
    owners = {alias: i for i, x in enumerate(join.inputs) for alias in aliases_of(x)}

    def relates_inputs(conjunct: exp.Expr) -> bool:
        if not isinstance(conjunct, exp.EQ) or conjunct.find(exp.Subquery, exp.AggFunc):
            return False
        sides = [
            {owners.get(c.table) for c in side.find_all(exp.Column)}
            for side in (conjunct.this, conjunct.expression)
        ]
        return all(len(side) == 1 and None not in side for side in sides) and sides[0] != sides[1]

    conjuncts = list(predicate.flatten()) if isinstance(predicate, exp.And) else [predicate]
    equalities = [c.copy() for c in conjuncts if relates_inputs(c)]
    rest = [c.copy() for c in conjuncts if not relates_inputs(c)]
    if not equalities:
        return Filter(join, predicate)
    on = [join.condition] if join.condition is not None else []
    joined = Join(join.inputs, exp.and_(*on, *equalities), join.kind)
    return Filter(joined, exp.and_(*rest)) if rest else joined
