"""The relational IR: small, frozen, hashable plan nodes.

Scalar expressions stay sqlglot expressions; only the relational operators are ours. A node
never changes after it is built: passes and rules build new trees. Identical subtrees compare
and hash equal, which is how the circuit shares them.

Column references inside a node's expressions name the output columns of its input: a
:class:`Scan` outputs ``alias.column``; a :class:`Join` outputs the columns of all its inputs;
:class:`Project` and :class:`Aggregate` output unqualified names.

A function that switches on the node type matches every member of :data:`Relation` and ends in
``assert_never``: a node type added without its case fails there, rather than take a default.

>>> from sqlglot import exp
>>> orders = Scan("shop.orders", "o", ("id", "amount"))
>>> plan = Filter(orders, exp.condition("o.amount > 10"))
>>> plan.input.alias, columns(plan)
('o', ('o.id', 'o.amount'))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import assert_never

from sqlglot import exp

from ivm.errors import Position
from ivm.zset import Read


@dataclass(frozen=True)
class Scan:
    """Read ``columns`` of ``table`` under ``alias``; ``read`` says which version of it."""

    table: str
    alias: str
    columns: tuple[str, ...]
    read: Read = Read.TABLE
    position: Position | None = field(default=None, compare=False)

    def reading(self, read: Read) -> Scan:
        return replace(self, read=read)


@dataclass(frozen=True)
class Subquery:
    """A derived table: ``input``'s columns under ``alias`` (``alias.column``)."""

    input: Relation
    alias: str


class JoinKind(Enum):
    """How a join pairs the rows of its inputs."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    FULL = "full"
    SEMI = "semi"
    ANTI = "anti"
    LOOKUP = "lookup"
    LEFT_LOOKUP = "left lookup"

    @property
    def lookup(self) -> bool:
        """A lookup join (``FOR SYSTEM_TIME AS OF``): each left row is joined with the right
        input as it was when the row was first consumed (see :mod:`ivm.rules.lookup`)."""
        return self in (JoinKind.LOOKUP, JoinKind.LEFT_LOOKUP)

    @property
    def keeps_right(self) -> bool:
        """The output has the right input's columns (a semi or anti join only filters)."""
        return self not in (JoinKind.SEMI, JoinKind.ANTI)

    @property
    def pads_left(self) -> bool:
        """A right row without a match is output with NULLs for the left input's columns."""
        return self in (JoinKind.RIGHT, JoinKind.FULL)


@dataclass(frozen=True)
class Join:
    """Join of relations on ``condition`` (None: a cross product).

    An inner join may have any number of inputs; the other kinds (outer, semi, anti) have two.
    Every input but the first is a scan or a derived table, or a filter of one (a FROM clause
    reads left to right).
    """

    inputs: tuple[Relation, ...]
    condition: exp.Expr | None = None
    kind: JoinKind = JoinKind.INNER

    def __post_init__(self):
        if len(self.inputs) < 2:
            raise ValueError("a join has at least two inputs")
        if not isinstance(self.kind, JoinKind):  # pyright: ignore[reportUnnecessaryIsInstance]
            # (a caller without types may pass the kind's name)
            raise TypeError(f"a join kind is a JoinKind, got {self.kind!r}")
        if self.kind is not JoinKind.INNER and len(self.inputs) != 2:
            raise ValueError(f"a {self.kind.value} join has two inputs")
        aliases = [a for i in self.inputs for a in aliases_of(i)]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"join inputs need distinct aliases, got {aliases}")


@dataclass(frozen=True)
class Filter:
    input: Relation
    predicate: exp.Expr


@dataclass(frozen=True)
class Project:
    """Output ``columns``: (name, expression over the input's columns) pairs."""

    input: Relation
    columns: tuple[tuple[str, exp.Expr], ...]

    def __post_init__(self):
        names = [name for name, _ in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate output column names in {names}")


INVERTIBLE_AGGREGATES = ("count", "sum", "avg")

FLOATING_STATISTICS = (
    exp.Stddev,
    exp.StddevPop,
    exp.StddevSamp,
    exp.Variance,
    exp.VariancePop,
    exp.Corr,
    exp.CovarPop,
    exp.CovarSamp,
    exp.Skewness,
    exp.Kurtosis,
    exp.RegrAvgx,
    exp.RegrAvgy,
    exp.RegrIntercept,
    exp.RegrR2,
    exp.RegrSlope,
    exp.RegrSxx,
    exp.RegrSxy,
    exp.RegrSyy,
)
"""Aggregates Spark accumulates in floating point, whatever their argument's type."""


@dataclass(frozen=True)
class AggregateCall:
    """``function(argument)``, function lower-case; argument None is ``*``.

    ``call``, where given, is the aggregate as the user wrote it (``MAX(x)``,
    ``COUNT(DISTINCT x)``, ``SUM(x) FILTER (WHERE …)``): rules that recompute a group run it as is.
    ``decimal``: for a SUM or AVG of a DECIMAL, the argument's (precision, scale) as typed
    against the schema; None for an integer argument.
    """

    function: str
    argument: exp.Expr | None = None
    call: exp.Expr | None = None
    decimal: tuple[int, int] | None = None

    @property
    def invertible(self) -> bool:
        """A group's value follows from additive accumulators (see :mod:`ivm.store`)."""
        return self.function in INVERTIBLE_AGGREGATES and self.call is None

    @property
    def order_dependent(self) -> bool:
        """Its value depends on the order Spark adds the rows in, which differs from one query
        to another over the same rows: a SUM or AVG of floating-point values (or of values of
        a type not known), a statistic accumulated in floating point (STDDEV, CORR, …)."""
        call = self.call.this if isinstance(self.call, exp.Filter) else self.call
        if isinstance(call, FLOATING_STATISTICS):
            return True
        if not isinstance(call, (exp.Sum, exp.Avg)):
            return False
        argument = call.this
        if isinstance(argument, exp.Distinct):
            argument = argument.expressions[0]
        typed = argument.type
        return typed is None or typed.this in (exp.DType.UNKNOWN, *exp.DataType.FLOAT_TYPES)

    def to_sql(self) -> exp.Expr:
        if self.call is not None:
            return self.call.copy()
        arg = exp.Star() if self.argument is None else self.argument.copy()
        return {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg}[self.function](this=arg)


@dataclass(frozen=True)
class Aggregate:
    """GROUP BY ``keys``, computing ``calls``; outputs key names then call names.

    No keys is a global aggregate: exactly one output row, also over an empty input.
    """

    input: Relation
    keys: tuple[tuple[str, exp.Expr], ...]
    calls: tuple[tuple[str, AggregateCall], ...]


@dataclass(frozen=True)
class Window:
    """The input's rows, each with window ``functions`` (``name``, ``f(…) OVER (…)``) computed
    over its partition; all functions share ``PARTITION BY partition`` (none: one partition).

    The input's columns are named (a projection), so the output is those names, then the
    functions' names.
    """

    input: Relation
    partition: tuple[exp.Expr, ...]
    functions: tuple[tuple[str, exp.Window], ...]


@dataclass(frozen=True)
class Generate:
    """Each row of ``input`` once per row that ``generator`` yields for it (``LATERAL VIEW``),
    followed by that row's values as ``names``; a row for which it yields none is dropped, or,
    ``outer``, kept once with NULL values.

    ``generator`` is a table-valued function (``explode``, ``posexplode``, ``inline``) of the
    input's columns. As for :class:`Window`, the input's columns are named (a projection) and
    the output is those names, then ``names``.
    """

    input: Relation
    generator: exp.Expr
    names: tuple[str, ...]
    outer: bool = False

    def __post_init__(self):
        clash = set(self.names) & set(columns(self.input))
        if clash or len(set(self.names)) != len(self.names):
            raise ValueError(f"generated column names {self.names} repeat a name")


@dataclass(frozen=True)
class Distinct:
    """Set semantics: each distinct input row once."""

    input: Relation


@dataclass(frozen=True)
class Union:
    """UNION ALL of inputs with the same columns (a sum of Z-sets)."""

    inputs: tuple[Relation, ...]


@dataclass(frozen=True)
class SetOperation:
    """``left INTERSECT right`` or ``left EXCEPT right``, by position; ``all`` keeps counts
    (INTERSECT ALL: min of the counts, EXCEPT ALL: their difference, at least 0)."""

    left: Relation
    right: Relation
    kind: str
    all: bool

    def __post_init__(self):
        if self.kind not in ("intersect", "except"):
            raise ValueError(f"unknown set operation {self.kind}")


@dataclass(frozen=True)
class Restrict:
    """The rows of ``input`` whose ``keys`` equal, null-safely, a row of ``affected``.

    ``affected`` has one column per key. This is the ``R ⋉ K`` of affected-key recompute.
    """

    input: Relation
    keys: tuple[exp.Expr, ...]
    affected: Relation


@dataclass(frozen=True)
class Weighted:
    """``input`` read as a Z-set in which every row weighs ``weight`` (+1 or -1)."""

    input: Relation
    weight: int


Relation = (
    Scan
    | Subquery
    | Join
    | Filter
    | Project
    | Aggregate
    | Window
    | Generate
    | Distinct
    | Union
    | SetOperation
    | Restrict
    | Weighted
)
"""Any plan node: each denotes a relation (under a delta plan, a Z-set)."""


def columns(node: Relation) -> tuple[str, ...]:
    """Output column names of ``node`` (qualified ``alias.column`` for scans and joins)."""
    match node:
        case Scan():
            return tuple(f"{node.alias}.{c}" for c in node.columns)
        case Subquery():
            return tuple(f"{node.alias}.{c}" for c in columns(node.input))
        case Join():
            kept = node.inputs if node.kind.keeps_right else node.inputs[:1]
            return tuple(c for i in kept for c in columns(i))
        case Filter() | Distinct() | Restrict() | Weighted():
            return columns(node.input)
        case Project():
            return tuple(name for name, _ in node.columns)
        case Aggregate():
            return tuple(name for name, _ in node.keys) + tuple(name for name, _ in node.calls)
        case Window():
            return columns(node.input) + tuple(name for name, _ in node.functions)
        case Generate():
            return columns(node.input) + node.names
        case Union():
            return columns(node.inputs[0])
        case SetOperation():
            return columns(node.left)
        case _:
            assert_never(node)


def aliases_of(node: Relation) -> tuple[str, ...]:
    """The table aliases that qualify ``node``'s columns (none for named columns)."""
    match node:
        case Scan() | Subquery():
            return (node.alias,)
        case Join():
            kept = node.inputs if node.kind.keeps_right else node.inputs[:1]
            return tuple(a for i in kept for a in aliases_of(i))
        case Filter() | Restrict() | Weighted():
            return aliases_of(node.input)
        case (
            Project() | Aggregate() | Window() | Generate() | Distinct() | Union() | SetOperation()
        ):
            return ()
        case _:
            assert_never(node)


def children(node: Relation) -> tuple[Relation, ...]:
    """The input relations of ``node``."""
    match node:
        case Scan():
            return ()
        case Join() | Union():
            return node.inputs
        case Restrict():
            return (node.input, node.affected)
        case SetOperation():
            return (node.left, node.right)
        case (
            Subquery()
            | Filter()
            | Project()
            | Aggregate()
            | Window()
            | Generate()
            | Distinct()
            | Weighted()
        ):
            return (node.input,)
        case _:
            assert_never(node)


def with_children(node: Relation, new: tuple[Relation, ...]) -> Relation:
    """``node`` reading ``new`` instead of its inputs (in :func:`children`'s order)."""
    match node:
        case Scan():
            return node
        case Join() | Union():
            return replace(node, inputs=tuple(new))
        case Restrict():
            return replace(node, input=new[0], affected=new[1])
        case SetOperation():
            return replace(node, left=new[0], right=new[1])
        case (
            Subquery()
            | Filter()
            | Project()
            | Aggregate()
            | Window()
            | Generate()
            | Distinct()
            | Weighted()
        ):
            return replace(node, input=new[0])
        case _:
            assert_never(node)


def scans(node: Relation) -> list[Scan]:
    """Every scan under ``node``, left to right."""
    if isinstance(node, Scan):
        return [node]
    return [s for child in children(node) for s in scans(child)]


def reading(node: Relation, read: Read) -> Relation:
    """``node`` with every scan of a live table reading ``read`` instead."""
    if isinstance(node, Scan):
        return node.reading(read) if node.read is Read.TABLE else node
    return with_children(node, tuple(reading(c, read) for c in children(node)))


def lookup_chain(node: Relation) -> tuple[Relation, list[Join]]:
    """The facts a chain of lookup joins enriches, and the joins, innermost first (none where
    ``node`` is no lookup join)."""
    chain: list[Join] = []
    while isinstance(node, Join) and node.kind.lookup:
        chain.append(node)
        node = node.inputs[0]
    return node, chain[::-1]


def equalities(
    condition: exp.Expr, left: Relation, right: Relation
) -> list[tuple[exp.Expr, exp.Expr]]:
    """(left, right) expression pairs of ``condition``'s equalities between two relations.

    >>> pairs = equalities(exp.condition("a.k = b.k AND a.x > b.y AND b.j = a.i"),
    ...                    Scan("t", "a", ("k",)), Scan("u", "b", ("k",)))
    >>> [(l.sql(), r.sql()) for l, r in pairs]
    [('a.k', 'b.k'), ('a.i', 'b.j')]
    """
    lefts, rights = set(aliases_of(left)), set(aliases_of(right))
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    pairs: list[tuple[exp.Expr, exp.Expr]] = []
    for c in conjuncts:
        if not isinstance(c, exp.EQ):
            continue
        sides = [{col.table for col in e.find_all(exp.Column)} for e in (c.this, c.expression)]
        if sides[0] and sides[1] and sides[0] <= lefts and sides[1] <= rights:
            pairs.append((c.this, c.expression))
        elif sides[0] and sides[1] and sides[0] <= rights and sides[1] <= lefts:
            pairs.append((c.expression, c.this))
    return pairs
