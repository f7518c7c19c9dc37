"""The delta query of a refresh in which some sources did not change: the terms that read
their change dropped.

A source whose version a refresh does not move has no change, ``ΔR = ∅``, and a term of the
delta query that multiplies it by anything is empty too. The rules write every term for
every source (a join of n inputs has n terms or more), so a refresh whose change comes from
the fact table alone runs terms for every dimension's change that can only be empty. Spark
would find them empty while it optimizes the query, but only after it parsed, analysed and
resolved every table of them; this pass removes them before the query is written:

    ∅ ⋈ X = X ⋈ ∅ = ∅ ⋉ X = X ⋉ ∅ = ∅ ▷ X = ∅,     σ(∅) = π(∅) = γ_keys(∅) = ∅,
    X ∪ ∅ = X

A global aggregate (no keys) has one row over no rows; an anti-join, a left outer join or an
``EXCEPT`` keeps its left input's rows whatever the right one holds (a right outer join its
right input's, a full one both), so none of them is taken as empty for the other input alone.
A union whose inputs are all empty keeps its first, which Spark then finds empty; what the
query computes is the same either way.

>>> from sqlglot import exp
>>> from ivm.ir import Join, Scan, Union, scans
>>> from ivm.zset import Read
>>> fact, dim = Scan("f", "f", ("k",)), Scan("d", "d", ("k",))
>>> on = exp.column("k", "f").eq(exp.column("k", "d"))
>>> delta = Union((
...     Join((fact.reading(Read.DELTA), dim.reading(Read.AFTER)), on),
...     Join((fact.reading(Read.BEFORE), dim.reading(Read.DELTA)), on),
... ))
>>> [s.table + ":" + s.read.value for s in scans(without_unchanged(delta, {"d"}))]
['f:delta', 'd:after']
>>> without_unchanged(delta, {"e"}) is delta
True
"""

from __future__ import annotations

from collections.abc import Collection
from typing import assert_never

from ivm.ir import (
    Aggregate,
    Distinct,
    Filter,
    Generate,
    Join,
    JoinKind,
    Project,
    Relation,
    Restrict,
    Scan,
    SetOperation,
    Subquery,
    Union,
    Weighted,
    Window,
    children,
    with_children,
)
from ivm.zset import Read


def without_unchanged(delta: Relation, unchanged: Collection[str]) -> Relation:
    """``delta`` without the union inputs that read only empty changes, the tables
    ``unchanged`` having none (see the module's docstring); ``delta`` itself where none is
    dropped."""
    if not unchanged:
        return delta
    tables = frozenset(unchanged)
    simplified: dict[int, Relation] = {}  # by node identity: shared subtrees stay shared

    def simplify(node: Relation) -> Relation:
        if id(node) in simplified:
            return simplified[id(node)]
        old = children(node)
        kept = (
            tuple(i for i in old if not is_empty(i, tables)) or old[:1]
            if isinstance(node, Union)
            else old
        )
        new = tuple(simplify(i) for i in kept)
        same = len(new) == len(old) and all(a is b for a, b in zip(new, old, strict=True))
        result = node if same else with_children(node, new)
        simplified[id(node)] = result
        return result

    return simplify(delta)


def is_empty(node: Relation, unchanged: frozenset[str]) -> bool:
    """Whether ``node`` has no rows whatever the sources hold, the tables ``unchanged``
    having no change.

    >>> from ivm.ir import Aggregate
    >>> change = Scan("t", "t", ("k",), Read.DELTA)
    >>> is_empty(change, frozenset({"t"})), is_empty(change.reading(Read.AFTER), frozenset({"t"}))
    (True, False)
    >>> is_empty(Aggregate(change, (), ()), frozenset({"t"}))  # one row over none
    False
    """
    match node:
        case Scan():
            return node.read is Read.DELTA and node.table in unchanged
        case Union():
            return all(is_empty(i, unchanged) for i in node.inputs)
        case Join():
            return _join_is_empty(node, [is_empty(i, unchanged) for i in node.inputs])
        case Restrict():
            return is_empty(node.input, unchanged) or is_empty(node.affected, unchanged)
        case SetOperation():
            left = is_empty(node.left, unchanged)
            return left or (node.kind == "intersect" and is_empty(node.right, unchanged))
        case Aggregate():
            return bool(node.keys) and is_empty(node.input, unchanged)
        case Filter() | Project() | Subquery() | Distinct() | Weighted() | Window() | Generate():
            return is_empty(node.input, unchanged)
        case _:
            assert_never(node)


def _join_is_empty(join: Join, empty: list[bool]) -> bool:
    """Whether ``join`` is empty, given which of its inputs are."""
    match join.kind:
        case JoinKind.INNER | JoinKind.SEMI:
            return any(empty)
        case JoinKind.RIGHT:
            return empty[1]
        case JoinKind.FULL:
            return all(empty)
        case _:  # left outer, anti, lookups: the left input's rows are kept or dropped
            return empty[0]
