"""Joins. An inner join is bilinear: one term per input, that input's change joined with
snapshots of the others.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS``; for n inputs the product telescopes::

    Δ(R1 ⋈ … ⋈ Rn) = Σ_i  R1' ⋈ … ⋈ R(i-1)'  ⋈  ΔRi  ⋈  R(i+1) ⋈ … ⋈ Rn

where ``R`` is an input *before* the change and ``R' = R + ΔR`` *after* it. The weight of a
joined row is the product of its rows' weights. A term whose ``ΔRi`` is empty (the source did
not change) contributes nothing; the runtime binds it empty and Spark prunes it.

An input whose change reads nothing but its sources' change (a table under filters and
projections) is read before the change as ``R = R' − ΔR``, one relation whose rows carry
their weight (+1 from ``R'``, the change's negated): ``ΔR1 ⋈ R2 = ΔR1 ⋈ (R2' − ΔR2)``. A
refresh then reads each such source as of one version, the latest, instead of two: every
version a query reads costs Delta a reconstruction of its file list (two Spark jobs), and
the older version is the one views refreshed from, not shared with anything else.

A snapshot joined to the change by equalities only meets it at the change's join keys, so a
term reads it restricted to them: ``ΔR ⋈_{r=s} S = ΔR ⋈ (S ⋉ π_r(ΔR))``. The restriction is
exact whatever it costs; it pays when the runtime turns the keys into ranges that Delta's data
skipping prunes files with (:mod:`ivm.runtime.refresh.pruning`).

Outer, semi and anti joins are not bilinear (a padded or filtered row depends on the absence
of matches), but their output for a join key depends only on the rows with that key: they are
maintained by affected-key recompute (:mod:`ivm.rules.keyed`) on the equalities of their ON.
One without an equality in its ON has no key, and is recomputed whole when an input changes.

>>> from sqlglot import exp
>>> from ivm.ir import Aggregate, Join, Restrict, Scan, Subquery
>>> from ivm.rules import differentiate
>>> r, s, t = (Scan(n, n, ("k",)) for n in "rst")
>>> def read(x):
...     if isinstance(x, Scan):
...         return f"{x.alias}:{x.read.value}"
...     if isinstance(x, Restrict):
...         return f"{read(x.input)}⋉Δ"
...     if isinstance(x, Subquery) and isinstance(x.input, Union):   # x' − Δx
...         return "(" + " − ".join(read(branch.input) for branch in x.input.inputs) + ")"
...     return read(x.input)
>>> def show(delta):
...     return [" ⋈ ".join(read(x) for x in term.inputs) for term in delta.inputs]
>>> show(differentiate(Join((r, s, t), exp.condition("r.k = s.k AND s.k = t.k"))))
['r:delta ⋈ (s:after⋉Δ − s:delta) ⋈ (t:after − t:delta)',
 'r:after⋉Δ ⋈ s:delta ⋈ (t:after⋉Δ − t:delta)',
 'r:after ⋈ s:after⋉Δ ⋈ t:delta']

An input whose change reads snapshots itself (here an aggregate) is read before the change:

>>> totals = Subquery(Aggregate(t, (("k", exp.column("k", "t")),), ()), "u")
>>> show(differentiate(Join((r, totals), exp.condition("r.k = u.k"))))[0]
'r:delta ⋈ t:before⋉Δ'
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import (
    Filter,
    Join,
    JoinKind,
    Project,
    Relation,
    Scan,
    Subquery,
    Union,
    aliases_of,
    columns,
    equalities,
    reading,
)
from ivm.rules.base import Differentiate, Kind, Rule, terms, weight_of
from ivm.rules.keyed import affected_keys, recompute, restricted
from ivm.zset import WEIGHT, Read


def derive_join(node: Join, differentiate: Differentiate) -> Union:
    if node.kind.lookup:  # never differentiated: its state is split off (ivm.passes.states)
        raise TypeError("a lookup join is maintained by its state table")
    if node.kind is not JoinKind.INNER:
        return derive_keyed_join(node, differentiate)
    inputs = node.inputs

    def snapshot(x: Relation, read: Read, term: Relation, changed: Relation) -> Relation:
        """``x`` as of ``read``, restricted to the join keys of ``term`` (a change of the
        input ``changed``) where an equality of the ON relates the two."""
        pairs = equalities(node.condition, changed, x) if node.condition is not None else []
        if not pairs:
            return reading(x, read)
        keys = affected_keys([(Union((term,)), [c for c, _ in pairs])])
        return restricted(x, read, [s for _, s in pairs], keys)

    def before(x: Relation, term: Relation, changed: Relation) -> Relation:
        """``x`` before the change, as ``term`` reads it: its snapshot before the change, or,
        where its change reads only its sources' change, ``x' − Δx`` as a derived table of
        ``x``'s name whose rows carry their weight."""
        if not reads_only_change(x):
            return snapshot(x, Read.BEFORE, term, changed)
        (alias,) = aliases_of(x)
        names = [c.split(".", 1)[1] for c in columns(x)]

        def weighing(relation: Relation, weight: exp.Expr) -> Project:
            return Project(
                relation, tuple((n, exp.column(n, alias)) for n in names) + ((WEIGHT, weight),)
            )

        after = weighing(snapshot(x, Read.AFTER, term, changed), exp.Literal.number(1))
        change = [weighing(t, exp.Neg(this=weight_of(t))) for t in terms(differentiate(x))]
        return Subquery(Union((after, *change)), alias)

    return Union(
        tuple(
            Join(
                tuple(
                    snapshot(x, Read.AFTER, term, changed)
                    if j < i
                    else term
                    if j == i
                    else before(x, term, changed)
                    for j, x in enumerate(inputs)
                ),
                node.condition,
            )
            for i, changed in enumerate(inputs)
            for term in terms(differentiate(changed))
        )
    )


def reads_only_change(node: Relation) -> bool:
    """Whether the change of ``node`` reads nothing but its sources' change: a table under
    filters, projections and derived-table names, whose rule is linear."""
    match node:
        case Scan():
            return True
        case Filter() | Project() | Subquery():
            return reads_only_change(node.input)
        case _:
            return False


def derive_keyed_join(node: Join, differentiate: Differentiate) -> Union:
    left, right = node.inputs
    # Without an equality there is no key: K is "everything" whenever an input changed.
    pairs = equalities(node.condition, left, right) if node.condition is not None else []

    def rejoined(a: Relation, b: Relation) -> Relation:
        return Join((a, b), node.condition, node.kind)

    return recompute(
        [(left, [a for a, _ in pairs]), (right, [b for _, b in pairs])], rejoined, differentiate
    )


RULE = Rule(
    Join,
    "join",
    Kind.BILINEAR,
    "Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS, S = S' − ΔS",
    "snapshots of the other inputs after the change (before it, for an input whose "
    "change reads snapshots), at the change's join keys where an equality relates "
    "them",
    derive_join,
)

KEYED_RULE = Rule(
    Join,
    "outer/semi/anti join",
    Kind.KEYED,
    "Δ(R ⟕ S) = (R' ⋉ K ⟕ S' ⋉ K) − (R ⋉ K ⟕ S ⋉ K), K = keys(ΔR) ∪ keys(ΔS)",
    "snapshots of both inputs at the affected join keys",
    derive_keyed_join,
)
