"""The column types of a set operation, made explicit.

Spark gives each column of ``A UNION ALL B`` (or ``INTERSECT``, ``EXCEPT``) the wider of its
branches' types and casts each branch to it, implicitly. A delta query distributes what reads
the union over its branches' changes (``π(ΔA ∪ ΔB) = π(ΔA) ∪ π(ΔB)``), where each change has
its branch's own type: ``b = 0.2`` over a ``DECIMAL(18, 8)`` is not ``b = 0.2`` over the same
value cast to the union's ``DECIMAL(38, 0)`` (which rounds it to 0, as Spark casts the
literal too). So the lowering casts each branch column whose type is not the union's to it,
where every branch's type is known exactly (:func:`exact_types`), and the rules then see the
types the full query computes with.

The wider type is Spark's (ANSI mode, Spark 4), measured on Spark's own unions
(:func:`wider_type`). Where a branch's type is not known exactly (an expression whose type
sqlglot infers otherwise than Spark, such as decimal arithmetic), nothing is cast.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from ivm.ir import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    Project,
    Relation,
    Restrict,
    Scan,
    Subquery,
    Union,
    Weighted,
    Window,
    columns,
)
from ivm.names import DIALECT

T = exp.DataType.Type
INTEGRAL_DIGITS = {T.TINYINT: 3, T.SMALLINT: 5, T.INT: 10, T.BIGINT: 20}
"""Each integral type as the DECIMAL(p, 0) that Spark widens it to beside a DECIMAL."""
FLOATING = {T.FLOAT, T.DOUBLE}
STRING_BESIDE = {T.DATE, T.TIMESTAMPTZ, T.TIMESTAMPNTZ, T.BOOLEAN}
"""Types that a STRING widens to (Spark casts the strings)."""
MAX_DIGITS = 38


def _decimal(data_type: exp.DataType) -> tuple[int, int]:
    """(precision, scale) of a DECIMAL, or of the DECIMAL an integral type widens to."""
    if data_type.this in INTEGRAL_DIGITS:
        return INTEGRAL_DIGITS[data_type.this], 0
    params = [int(p.name) for p in data_type.expressions]
    return (params + [10, 0][len(params) :])[0], (params + [0, 0])[1]


def _build(name: str) -> exp.DataType:
    """The type spelled ``name`` in Spark SQL (where ``TIMESTAMP`` has a time zone)."""
    return exp.DataType.build(name, dialect=DIALECT)


def wider_type(a: exp.DataType, b: exp.DataType) -> exp.DataType | None:
    """The type Spark gives a set operation's column of types ``a`` and ``b``; None where
    ivm does not know it (Spark may still: a struct, a map).

    Decimals keep the most integer digits and the largest scale of the two, and where that
    is more than 38 digits, fewer decimals (not fewer integer digits)::

        range = max(p₁ − s₁, p₂ − s₂),  scale = max(s₁, s₂)
        DECIMAL(min(range + scale, 38), min(scale, 38 − range))

    >>> def w(a, b):
    ...     return wider_type(_build(a), _build(b)).sql("spark")
    >>> w("DECIMAL(18, 8)", "DECIMAL(38, 0)"), w("DECIMAL(30, 0)", "DECIMAL(20, 18)")
    ('DECIMAL(38, 0)', 'DECIMAL(38, 8)')
    >>> w("INT", "DECIMAL(5, 5)"), w("BIGINT", "DECIMAL(18, 8)"), w("BIGINT", "DECIMAL(38, 30)")
    ('DECIMAL(15, 5)', 'DECIMAL(28, 8)', 'DECIMAL(38, 18)')
    >>> w("TINYINT", "INT"), w("INT", "FLOAT"), w("DECIMAL(10, 2)", "DOUBLE")
    ('INT', 'DOUBLE', 'DOUBLE')
    >>> w("STRING", "INT"), w("STRING", "DECIMAL(10, 2)"), w("STRING", "DATE")
    ('BIGINT', 'DOUBLE', 'DATE')
    >>> w("DATE", "TIMESTAMP"), w("TIMESTAMP_NTZ", "TIMESTAMP"), w("ARRAY<INT>", "ARRAY<BIGINT>")
    ('TIMESTAMP', 'TIMESTAMP', 'ARRAY<BIGINT>')
    >>> wider_type(_build("INT"), _build("DATE")) is None  # Spark refuses the union
    True
    """
    if a == b:
        return a
    kinds = {a.this, b.this}
    if kinds <= INTEGRAL_DIGITS.keys():
        return max(a, b, key=lambda t: INTEGRAL_DIGITS[t.this])
    if kinds & FLOATING and kinds <= FLOATING | INTEGRAL_DIGITS.keys() | {T.DECIMAL}:
        return _build("DOUBLE")
    if kinds <= INTEGRAL_DIGITS.keys() | {T.DECIMAL}:
        (p1, s1), (p2, s2) = _decimal(a), _decimal(b)
        integer, scale = max(p1 - s1, p2 - s2), max(s1, s2)
        return _build(
            f"DECIMAL({min(integer + scale, MAX_DIGITS)}, {min(scale, MAX_DIGITS - integer)})"
        )
    if T.TEXT in kinds and len(kinds) == 2:
        (other,) = kinds - {T.TEXT}
        if other in INTEGRAL_DIGITS:
            return _build("BIGINT")
        if other in FLOATING or other is T.DECIMAL:
            return _build("DOUBLE")
        if other in STRING_BESIDE:
            return a if a.this is other else b
        return None
    if kinds == {T.DATE, T.TIMESTAMPTZ} or kinds == {T.TIMESTAMPTZ, T.TIMESTAMPNTZ}:
        return _build("TIMESTAMP")
    if kinds == {T.DATE, T.TIMESTAMPNTZ}:
        return _build("TIMESTAMP_NTZ")
    if kinds == {T.ARRAY} and a.expressions and b.expressions:
        element = wider_type(a.expressions[0], b.expressions[0])
        return None if element is None else _build(f"ARRAY<{element.sql(DIALECT)}>")
    return None


def _known(data_type: exp.DataType | None) -> exp.DataType | None:
    """``data_type`` where it is a type (not unknown, not NULL's), fully spelled."""
    if data_type is None or data_type.this in (T.UNKNOWN, T.NULL, T.USERDEFINED):
        return None
    if data_type.this is T.ARRAY and not (
        data_type.expressions and _known(data_type.expressions[0])
    ):
        return None
    return data_type


def _scans(node: Relation) -> dict[str, Relation]:
    """The tables and derived tables a SELECT block reads, by alias."""
    match node:
        case Scan() | Subquery():
            return {node.alias: node}
        case Join():
            return {alias: n for i in node.inputs for alias, n in _scans(i).items()}
        case Filter() | Restrict() | Weighted():
            return _scans(node.input)
        case _:
            return {}


def _type_of(
    expression: exp.Expr, inner: dict[str, exp.DataType], read: dict[str, Relation]
) -> exp.DataType | None:
    """The type Spark gives ``expression`` over a block whose input has the exact types
    ``inner`` and reads the tables and derived tables ``read`` (by alias), where it is
    certain: a column of a source table (its schema's type), of a derived table or an inner
    block (its exact type there), or a CAST."""
    if isinstance(expression, exp.Cast):
        to = _known(expression.to)
        return to if to is None or to.this is not T.DECIMAL or to.expressions else None
    if not isinstance(expression, exp.Column):
        return None
    if not expression.table:
        return inner.get(expression.name)
    table = read.get(expression.table)
    if isinstance(table, Scan):
        return _known(expression.type)
    if isinstance(table, Subquery):
        return exact_types(table.input).get(expression.name)
    return None


def exact_types(node: Relation) -> dict[str, exp.DataType]:
    """The output columns of ``node`` whose type Spark gives is known exactly, and that type
    (see :func:`_type_of`); a set operation's, where :func:`wider_type` knows it."""
    match node:
        case Project() | Aggregate():
            inner, read = exact_types(node.input), _scans(node.input)
            named = node.columns if isinstance(node, Project) else node.keys
            found = {name: _type_of(e, inner, read) for name, e in named}
            return {name: t for name, t in found.items() if t is not None}
        case Filter() | Distinct() | Restrict() | Weighted() | Window():
            return exact_types(node.input)
        case Union():
            return _union_types([exact_types(b) for b in node.inputs], columns(node))
        case _:
            return {}


def _union_types(
    branches: Sequence[dict[str, exp.DataType]], names: Sequence[str]
) -> dict[str, exp.DataType]:
    """Each column's wider type over ``branches`` (their exact types), where every branch's
    is known and Spark's widening of them is."""
    widened = {}
    for name in names:
        types = [b.get(name) for b in branches]
        if any(t is None for t in types):
            continue
        wider: exp.DataType | None = types[0]
        for t in types[1:]:
            if wider is not None and t is not None:
                wider = wider_type(wider, t)
        if wider is not None:
            widened[name] = wider
    return widened


def widened(branches: Sequence[Relation]) -> list[Relation]:
    """``branches`` of a set operation (columns aligned by name) with each column cast to the
    set operation's type where a branch's type is not it (see the module docstring)."""
    names = columns(branches[0])
    own = [exact_types(b) for b in branches]
    wider = _union_types(own, names)
    cast = []
    for branch, types in zip(branches, own, strict=True):
        changed = [n for n in names if n in wider and types[n] != wider[n]]
        if not changed:
            cast.append(branch)
            continue
        projected = []
        for name in names:
            if name in changed:
                value = exp.Cast(this=exp.column(name), to=wider[name].copy())
                value.type = wider[name].copy()
                projected.append((name, value))
            else:
                projected.append((name, exp.column(name)))
        cast.append(Project(branch, tuple(projected)))
    return cast
