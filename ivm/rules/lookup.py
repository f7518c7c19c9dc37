"""Lookup joins: each fact row enriched once, with the dimension as it was then.

A lookup join (``F JOIN D FOR SYSTEM_TIME AS OF F.t``) is not a function of its inputs'
current contents: a fact row keeps the dimension rows it met when it was first consumed.
Its state table ``E`` (see :mod:`ivm.passes.states`) holds, for each fact value ``f`` (the
fact columns it keeps), ``f ⟕ D`` as of the refresh since which rows ``f`` have been present
without a break, each enriched row counted ``n_f · m`` times (``n_f`` rows ``f`` in ``F``,
``m`` copies of the dimension row). For the change ``ΔF`` of the facts (rows ``f`` weighing
``w``)::

    ΔE = Σ_{(f, w) ∈ ΔF, f ∈ E}  w · E(f) / n_f        the stored enrichment, per fact row
       + Σ_{(f, w) ∈ ΔF, f ∉ E}  w · (f ⟕ D')           enriched now

``E`` as the refresh found it is the store itself (``Read.STORE``); ``n_f`` is counted in
``F`` as of before the change, at the changed values only (``F ⋉ keys(ΔF)``). A change of
``D`` costs nothing and changes nothing. A full refresh computes ``F ⟕ D'``: every row is
enriched anew with the current dimension. The view above reads ``E``'s change as any
other, an inner lookup keeping the rows its dimension matched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeGuard

from sqlglot import exp

from ivm.ir import (
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Join,
    JoinKind,
    Project,
    Relation,
    Restrict,
    Scan,
    Subquery,
    Union,
    aliases_of,
    columns,
    equalities,
    lookup_chain,
    reading,
)
from ivm.rules.base import Differentiate, Kind, Rule, terms, weighted_project
from ivm.rules.join import derive_join
from ivm.rules.keyed import affected_keys, key_names
from ivm.rules.maintenance import Maintenance
from ivm.store import ROWS, Store
from ivm.zset import BOOKKEEPING_PREFIX, COUNT, WEIGHT, Read

CHANGE, STORED, COUNTED = "change", "stored", "counted"
FACTS = f"{BOOKKEEPING_PREFIX}facts"
"""The number of fact rows with a value, as of before the change."""


def is_lookup_state(plan: Relation) -> TypeGuard[Project]:
    """``plan`` is the state of lookup joins: their projection."""
    return isinstance(plan, Project) and isinstance(plan.input, Join) and plan.input.kind.lookup


def _same(names: Sequence[str], left: str, right: str) -> exp.Expr:
    """Null-safe equality of the columns ``names`` of two aliases."""
    return (
        exp.and_(
            *(
                exp.NullSafeEQ(this=exp.column(n, left), expression=exp.column(n, right))
                for n in names
            )
        )
        if names
        else exp.true()
    )


def maintain_lookup(plan: Project, differentiate: Differentiate, table: str) -> Maintenance:
    """The store and refresh of the lookup state ``plan`` (named ``table``)."""
    fact, chain = lookup_chain(plan.input)
    own = set(aliases_of(fact))
    facts = [
        (name, e) for name, e in plan.columns if {c.table for c in e.find_all(exp.Column)} <= own
    ]
    fact_names = [name for name, _ in facts]
    names = columns(plan)
    keys = tuple((n, exp.column(n)) for n in names)
    store = Store(keys=names, visible=keys, accumulators=(ROWS,), repeat_rows=True)
    full = Aggregate(plan, keys, ((COUNT, ROWS.full_call()),))

    change = Union(tuple(weighted_project(term, facts) for term in terms(differentiate(fact))))
    stored = Scan(table, STORED, names + (COUNT,), Read.STORE)
    affected = Distinct(
        Project(
            change,
            tuple(
                zip(key_names(len(fact_names)), (exp.column(n) for n in fact_names), strict=True)
            ),
        )
    )
    counted = Aggregate(
        Restrict(
            Project(reading(fact, Read.BEFORE), tuple(facts)),
            tuple(exp.column(n) for n in fact_names),
            affected,
        ),
        tuple((n, exp.column(n)) for n in fact_names),
        ((FACTS, AggregateCall("count")),),
    )
    present = Join(
        (Subquery(change, CHANGE), stored, Subquery(counted, COUNTED)),
        exp.and_(_same(fact_names, CHANGE, STORED), _same(fact_names, CHANGE, COUNTED)),
    )
    share = exp.IntDiv(
        this=exp.Mul(this=exp.column(WEIGHT, CHANGE), expression=exp.column(COUNT, STORED)),
        expression=exp.column(FACTS, COUNTED),
    )
    kept = Project(present, tuple((n, exp.column(n, STORED)) for n in names) + ((WEIGHT, share),))

    by_expression = {e: name for name, e in facts}

    def over_change(expression: exp.Expr, alias: str | None = CHANGE) -> exp.Expr:
        def replaced(node: exp.Expr) -> exp.Expr:
            return exp.column(by_expression[node], alias) if node in by_expression else node

        return expression.copy().transform(replaced)

    enriched: Relation = Join(
        (Subquery(change, CHANGE), stored), _same(fact_names, CHANGE, STORED), JoinKind.ANTI
    )
    for lookup in chain:
        condition = over_change(lookup.condition) if lookup.condition is not None else None
        enriched = Join(
            (enriched, _at_keys(lookup, change, own, partial(over_change, alias=None))),
            condition,
            JoinKind.LEFT,
        )
    new = Project(
        enriched,
        tuple(
            (n, exp.column(n, CHANGE) if n in fact_names else over_change(e))
            for n, e in plan.columns
        )
        + ((WEIGHT, exp.column(WEIGHT, CHANGE)),),
    )

    grouped = Aggregate(
        Union((kept, new)), keys, ((COUNT, ROWS.change_call(None, exp.column(WEIGHT))),)
    )
    delta = Filter(grouped, exp.NEQ(this=exp.column(COUNT), expression=exp.Literal.number(0)))
    return Maintenance(store, full, delta, RULE)


def _at_keys(
    lookup: Join,
    change: Union,
    facts: set[str],
    over_change: Callable[[exp.Expr], exp.Expr],
) -> Relation:
    """The dimension of ``lookup`` as of after the change, restricted to the keys its
    condition's equalities take from the fact values in ``change`` (where it has such
    equalities): the rows the new fact values can meet, and files Delta can skip."""
    dimension = lookup.inputs[1]
    pairs = (
        [
            (f, d)
            for f, d in equalities(lookup.condition, lookup.inputs[0], dimension)
            if {c.table for c in f.find_all(exp.Column)} <= facts
        ]
        if lookup.condition is not None
        else []
    )
    if not pairs or not (isinstance(dimension, Subquery) and isinstance(dimension.input, Project)):
        return reading(dimension, Read.AFTER)
    flagged = dimension.input  # the dimension's columns and its found flag (ivm.passes.states)
    affected = affected_keys([(change, [over_change(f) for f, _ in pairs])])
    restricted = Restrict(reading(flagged.input, Read.AFTER), tuple(d for _, d in pairs), affected)
    return Subquery(Project(restricted, flagged.columns), dimension.alias)


RULE = Rule(
    Project,
    "lookup",
    Kind.LOOKUP,
    "ΔE = Σ_{ΔF, f ∈ E} w·E(f)/n_f + Σ_{ΔF, f ∉ E} w·(f ⟕ D')",
    "the change of the facts, the state's own rows and the facts before the change "
    "at the changed facts, and the dimension's latest snapshot at their join keys",
    maintain_lookup,
)


JOIN_RULE = Rule(
    Join,
    "lookup join",
    Kind.LOOKUP,
    "Δ(F ⋈ₗ D) = ΔF ⋈ D as of first consumption",
    "its state table (a change of the dimension costs nothing)",
    derive_join,
)
