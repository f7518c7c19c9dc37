"""The relational IR: small, frozen, hashable plan nodes.

Scalar expressions stay sqlglot expressions; only the relational operators are ours. A node
never changes after it is built: passes and rules build new trees. Identical subtrees compare
and hash equal, which is how the circuit shares them.

Column references inside a node's expressions name the output columns of its input: a
:class:`Scan` outputs ``alias.column``; a :class:`Join` outputs the columns of all its inputs;
:class:`Project` and :class:`Aggregate` output unqualified names.

>>> from sqlglot import exp
>>> orders = Scan("shop.orders", "o", ("id", "amount"))
>>> plan = Filter(orders, exp.condition("o.amount > 10"))
>>> plan.input.alias, columns(plan)
('o', ('o.id', 'o.amount'))
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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

    def reading(self, read: Read) -> "Scan":
        return replace(self, read=read)


@dataclass(frozen=True)
class Join:
    """Inner join of aliased scans on ``condition`` (None: a cross product)."""

    inputs: tuple[Scan, ...]
    condition: exp.Expression | None = None

    def __post_init__(self):
        if len(self.inputs) < 2:
            raise ValueError("a join has at least two inputs")
        aliases = [scan.alias for scan in self.inputs]
        if len(set(aliases)) != len(aliases):
            raise ValueError(f"join inputs need distinct aliases, got {aliases}")


@dataclass(frozen=True)
class Filter:
    input: "Relation"
    predicate: exp.Expression


@dataclass(frozen=True)
class Project:
    """Output ``columns``: (name, expression over the input's columns) pairs."""

    input: "Relation"
    columns: tuple[tuple[str, exp.Expression], ...]

    def __post_init__(self):
        names = [name for name, _ in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate output column names in {names}")


@dataclass(frozen=True)
class AggregateCall:
    """``function(argument)``; function is lower-case (count, sum, avg); argument None is ``*``."""

    function: str
    argument: exp.Expression | None = None

    def to_sql(self) -> exp.Expression:
        arg = exp.Star() if self.argument is None else self.argument.copy()
        return {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg}[self.function](this=arg)


@dataclass(frozen=True)
class Aggregate:
    """GROUP BY ``keys``, computing ``calls``; outputs key names then call names.

    No keys is a global aggregate: exactly one output row, also over an empty input.
    """

    input: "Relation"
    keys: tuple[tuple[str, exp.Expression], ...]
    calls: tuple[tuple[str, AggregateCall], ...]


@dataclass(frozen=True)
class Distinct:
    """Set semantics: each distinct input row once."""

    input: "Relation"


@dataclass(frozen=True)
class Union:
    """UNION ALL of inputs with the same columns (a sum of Z-sets)."""

    inputs: tuple["Relation", ...]


Relation = Scan | Join | Filter | Project | Aggregate | Distinct | Union
"""Any plan node: each denotes a relation (under a delta plan, a Z-set)."""


def columns(node) -> tuple[str, ...]:
    """Output column names of ``node`` (qualified ``alias.column`` for scans and joins)."""
    if isinstance(node, Scan):
        return tuple(f"{node.alias}.{c}" for c in node.columns)
    if isinstance(node, Join):
        return tuple(c for scan in node.inputs for c in columns(scan))
    if isinstance(node, (Filter, Distinct)):
        return columns(node.input)
    if isinstance(node, Project):
        return tuple(name for name, _ in node.columns)
    if isinstance(node, Aggregate):
        return tuple(name for name, _ in node.keys) + tuple(name for name, _ in node.calls)
    if isinstance(node, Union):
        return columns(node.inputs[0])
    raise TypeError(f"not a relation: {node!r}")


def children(node) -> tuple:
    """The input relations of ``node``."""
    if isinstance(node, Scan):
        return ()
    if isinstance(node, Join):
        return node.inputs
    if isinstance(node, Union):
        return node.inputs
    return (node.input,)


def scans(node) -> list[Scan]:
    """Every scan under ``node``, left to right."""
    if isinstance(node, Scan):
        return [node]
    return [s for child in children(node) for s in scans(child)]


def reading(node, read: Read):
    """``node`` with every scan of a live table reading ``read`` instead."""
    if isinstance(node, Scan):
        return node.reading(read) if node.read is Read.TABLE else node
    if isinstance(node, Join):
        return replace(node, inputs=tuple(reading(s, read) for s in node.inputs))
    if isinstance(node, Union):
        return replace(node, inputs=tuple(reading(s, read) for s in node.inputs))
    return replace(node, input=reading(node.input, read))
