"""GROUPING SETS, ROLLUP and CUBE: one aggregate over the input expanded once per set.

``GROUP BY GROUPING SETS (s_0, …, s_{n-1})`` over expressions ``e_1 … e_m`` groups each input
row once per set. As Spark plans it (an ``Expand`` under the aggregate), each row is repeated
``n`` times, the ``i``-th copy tagged ``i`` with the expressions outside ``s_i`` set to NULL,
and the aggregate groups by the expressions and the tag::

    γ[e'_1 … e'_m, i](gen_{i ∈ 0…n-1} R)      e'_j = CASE WHEN i IN {sets holding e_j} THEN e_j END

The expansion is a generator (``explode(array(0, …, n-1))``), linear, so the aggregate above
it keeps its rule: accumulators for COUNT/SUM/AVG, affected groups for the others. Over an
empty input there are no groups, not even the grand total (as in Spark).
``grouping(e_j)`` is 1 where ``e_j`` is outside the row's set; ``grouping_id()`` is those bits
over ``e_1 … e_m``, ``e_1`` the highest.

``ROLLUP(a, b)`` is the sets ``(a, b), (a), ()``; ``CUBE(a, b)`` every subset; items of a
GROUP BY list combine by cross product (``GROUP BY a, ROLLUP(b)`` is ``(a, b), (a)``).

>>> from sqlglot import parse_one
>>> group = parse_one("SELECT 1 FROM t GROUP BY a, ROLLUP(b, c)", read="spark").args["group"]
>>> expressions, sets = grouping_sets(group)
>>> [e.sql() for e in expressions], sets
(['a', 'b', 'c'], [(0, 1, 2), (0, 1), (0,)])

An expression is the same whatever parentheses it is written in, as Spark reads it:

>>> sql = "SELECT 1 FROM t GROUP BY GROUPING SETS ((a, (a = 0)), ((a = 0)), ())"
>>> expressions, sets = grouping_sets(parse_one(sql, read="spark").args["group"])
>>> [e.sql() for e in expressions], sets
(['a', 'a = 0'], [(0, 1), (1,), ()])
"""

from __future__ import annotations

from itertools import combinations, product

from sqlglot import exp

ANALYTICS = (exp.Rollup, exp.Cube, exp.GroupingSets)
GROUPING_TYPE = exp.DataType.build("TINYINT")
"""The type of ``grouping(e)`` in Spark."""
GROUPING_ID_TYPE = exp.DataType.build("BIGINT")
"""The type of ``grouping_id()`` in Spark."""


def has_grouping_sets(group: exp.Group | None) -> bool:
    """``group`` is a GROUP BY with ROLLUP, CUBE or GROUPING SETS (not plain expressions)."""
    return group is not None and (
        any(group.args.get(arg) for arg in ("rollup", "cube", "grouping_sets"))
        or any(isinstance(e, ANALYTICS) for e in group.expressions)
    )


def _members(item: exp.Expr) -> list[exp.Expr]:
    """The expressions of one element of a grouping set list: ``(a, b)``, ``(a)``, ``a``;
    each without the parentheses around it, so that ``(a = 0)`` and ``a = 0`` are one."""
    if isinstance(item, exp.Tuple):
        return [member.unnest() for member in item.expressions]
    if isinstance(item, exp.Paren):
        return _members(item.this)
    return [item]


def _sets_of(item: exp.Expr) -> list[list[exp.Expr]]:
    """The grouping sets one item of a GROUP BY list stands for."""
    if isinstance(item, exp.Rollup):
        elements = [_members(e) for e in item.expressions]
        return [[m for e in elements[:n] for m in e] for n in range(len(elements), -1, -1)]
    if isinstance(item, exp.Cube):
        elements = [_members(e) for e in item.expressions]
        return [
            [m for e in chosen for m in e]
            for n in range(len(elements), -1, -1)
            for chosen in combinations(elements, n)
        ]
    if isinstance(item, exp.GroupingSets):
        return [
            s
            for e in item.expressions
            for s in (_sets_of(e) if isinstance(e, ANALYTICS) else [_members(e)])
        ]
    return [[item]]


def grouping_sets(group: exp.Group) -> tuple[list[exp.Expr], list[tuple[int, ...]]]:
    """The GROUP BY's expressions (each once, in order of appearance) and its grouping sets,
    each as the positions of the expressions it holds."""
    items = [_sets_of(e) for e in group.expressions]
    if group.args.get("rollup"):  # GROUP BY a, b WITH ROLLUP
        items = [_sets_of(exp.Rollup(expressions=list(group.expressions)))]
    elif group.args.get("cube"):
        items = [_sets_of(exp.Cube(expressions=list(group.expressions)))]
    expressions: list[exp.Expr] = []
    for sets in items:
        for member in (m for s in sets for m in s):
            if all(member != e for e in expressions):
                expressions.append(member)

    def position(member: exp.Expr) -> int:
        return next(i for i, e in enumerate(expressions) if e == member)

    combined = [
        tuple(sorted({position(m) for s in chosen for m in s})) for chosen in product(*items)
    ]
    return expressions, combined


def grouping_value(
    sets: list[tuple[int, ...]], tag: exp.Expr, positions: list[int], data_type: exp.DataType
) -> exp.Expr:
    """The value of ``grouping_id`` over the expressions at ``positions`` (``grouping`` of one)
    for the row of the set numbered ``tag``: bit ``k`` (from the last) is 1 where the
    ``k``-th expression from the last is outside the set.

    >>> print(grouping_value([(0, 1), (0,), ()], exp.column("s"), [0, 1], GROUPING_ID_TYPE).sql())
    CAST(CASE s WHEN 0 THEN 0 WHEN 1 THEN 1 WHEN 2 THEN 3 END AS BIGINT)
    """

    def bits(held: tuple[int, ...]) -> int:
        return sum(1 << k for k, p in enumerate(reversed(positions)) if p not in held)

    case = exp.Case(
        this=tag.copy(),
        ifs=[
            exp.If(this=exp.Literal.number(i), true=exp.Literal.number(bits(held)))
            for i, held in enumerate(sets)
        ],
    )
    return exp.Cast(this=case, to=data_type.copy())
