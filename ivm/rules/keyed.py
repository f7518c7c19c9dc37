"""Affected-key recompute: the rule for every operator whose output for a key depends only on
the input rows with that key.

With ``K`` the keys that appear in the change of any input::

    K    = keys(ΔR) ∪ keys(ΔS)
    ΔOp  = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K)

``⋉ K`` keeps the rows whose key equals a key of ``K`` null-safely (a NULL key is a key like
any other). The terms read the inputs' snapshots after and before the change, restricted to
the affected keys; what they cost is the rows that share a key with the change. It maintains
GROUP BY with any aggregate (MIN, MAX, COUNT(DISTINCT), …), DISTINCT, and outer, semi and anti
equi-joins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from sqlglot import exp

from ivm.ir import (
    Distinct,
    Project,
    Relation,
    Restrict,
    Union,
    Weighted,
    aliases_of,
    columns,
    reading,
)
from ivm.rules.base import Differentiate, terms
from ivm.zset import WEIGHT, Read

KEY = "_ivm_k"


def key_names(count: int) -> tuple[str, ...]:
    return tuple(f"{KEY}{i}" for i in range(count))


def _keys(keys: Iterable[exp.Expr]) -> tuple[exp.Expr, ...]:
    """The key expressions; without any (a global aggregate), one constant key: K is then
    that key when anything changed, and empty when nothing did."""
    return tuple(keys) or (exp.Literal.number(1),)


def affected_keys(deltas_and_keys: Iterable[tuple[Union, Sequence[exp.Expr]]]) -> Distinct:
    """``K``: the distinct keys in the changes, from (delta, key expressions) pairs."""
    projected: list[Relation] = []
    for delta, given in deltas_and_keys:
        keys = _keys(given)
        projected += [
            Project(term, tuple(zip(key_names(len(keys)), keys, strict=True)))
            for term in terms(delta)
        ]
    return Distinct(Union(tuple(projected)))


def restricted(
    node: Relation, read: Read, keys: Iterable[exp.Expr], affected: Relation
) -> Restrict:
    """``node`` as of ``read``, restricted to the affected keys."""
    return Restrict(reading(node, read), _keys(keys), affected)


def signed(before: Relation, after: Relation) -> Union:
    """``after − before`` as a Z-set: every row of ``after`` weighs +1, of ``before`` −1.

    A relation with named columns carries its weight as a column; one whose columns a table
    alias qualifies (a join) as a :class:`~ivm.ir.Weighted` wrapper. Which one it is the
    relation says, not its names: a named column may contain a dot (``AS `a.b```).
    """

    def weigh(node: Relation, weight: int) -> Relation:
        if not aliases_of(node):
            return Project(
                node,
                tuple((n, exp.column(n)) for n in columns(node))
                + ((WEIGHT, exp.Literal.number(weight)),),
            )
        return Weighted(node, weight)

    return Union((weigh(after, 1), weigh(before, -1)))


def recompute(
    inputs_and_keys: Sequence[tuple[Relation, Sequence[exp.Expr]]],
    rebuild: Callable[..., Relation],
    differentiate: Differentiate,
) -> Union:
    """``Op(R' ⋉ K, …) − Op(R ⋉ K, …)`` for (input, key expressions) pairs.

    ``rebuild`` makes the operator over its restricted inputs, in the order given.
    """
    affected = affected_keys([(differentiate(node), keys) for node, keys in inputs_and_keys])

    def at(read: Read) -> Relation:
        return rebuild(*(restricted(node, read, keys, affected) for node, keys in inputs_and_keys))

    return signed(at(Read.BEFORE), at(Read.AFTER))
