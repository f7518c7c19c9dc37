"""Plan → sqlglot SELECT → Spark SQL text.

Nodes are compiled bottom-up into SELECT blocks. A node extends its input's block where SQL
allows it (a filter over a join is its WHERE, a projection its SELECT list, a filter over a
grouping its HAVING), and otherwise reads the input as a subquery. A :class:`~ivm.ir.Union`
becomes a named common table expression, so a delta reads as its sum of terms.

>>> from sqlglot import exp
>>> from ivm.ir import Filter, Join, Project, Scan
>>> o, c = Scan("orders", "o", ("cust_id", "amount")), Scan("customers", "c", ("id",))
>>> plan = Project(Filter(Join((o, c), exp.condition("o.cust_id = c.id")),
...                       exp.condition("o.amount > 0")), (("amount", exp.column("amount", "o")),))
>>> print(to_sql(plan, pretty=False))
SELECT o.amount AS amount FROM orders AS o JOIN customers AS c ON o.cust_id = c.id
WHERE o.amount > 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never

from sqlglot import exp

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
    aliases_of,
    columns,
)
from ivm.names import DIALECT
from ivm.store import parenthesized
from ivm.zset import WEIGHT, Read, relation_name

CHANGE_ROWS = "change_rows"
NO_COLUMN = "_ivm_no_column"
"""The column of a SELECT that reads no column of its input."""
JOIN_SQL = {
    JoinKind.LEFT: ("LEFT", None),
    JoinKind.RIGHT: ("RIGHT", None),
    JoinKind.FULL: ("FULL", None),
    JoinKind.SEMI: ("LEFT", "SEMI"),
    JoinKind.ANTI: ("LEFT", "ANTI"),
    JoinKind.LOOKUP: (None, None),
    JoinKind.LEFT_LOOKUP: ("LEFT", None),
}
"""The side and kind of the SQL JOIN of each join kind but INNER (whose ON may move); a lookup
join as the join it is at one version of its dimension."""


def table_name(scan: Scan) -> exp.Table:
    """The relation a scan reads, under its alias."""
    name = scan.table if scan.read is Read.TABLE else relation_name(scan.table, scan.read)
    table = (
        exp.to_table(name, dialect=DIALECT)
        if scan.read is Read.TABLE
        else exp.Table(this=exp.to_identifier(name))
    )
    table.set("alias", exp.TableAlias(this=exp.to_identifier(scan.alias)))
    return table


@dataclass
class _Block:
    """A SELECT being built: FROM/JOINs, LATERAL VIEWs, WHERE, GROUP BY (with named outputs),
    SELECT list."""

    source: exp.Expr
    joins: list[exp.Join] = field(default_factory=list[exp.Join])
    laterals: list[exp.Lateral] = field(default_factory=list[exp.Lateral])
    where: list[exp.Expr] = field(default_factory=list[exp.Expr])
    group: list[exp.Expr] | None = None
    grouped: dict[str, exp.Expr] = field(default_factory=dict[str, exp.Expr])
    having: list[exp.Expr] = field(default_factory=list[exp.Expr])
    select: list[exp.Expr] | None = None
    default_columns: list[exp.Expr] = field(default_factory=list[exp.Expr])
    distinct: bool = False

    def to_select(self) -> exp.Select:
        # A relation none of whose columns is read (the right input of a SEMI JOIN without
        # ON) still needs a column in SQL.
        select = exp.Select(
            expressions=self.select
            or (
                [exp.alias_(e.copy(), n) for n, e in self.grouped.items()]
                if self.group is not None
                else [c.copy() for c in self.default_columns]
            )
            or [exp.alias_(exp.true(), NO_COLUMN)]
        )
        select.set("from_", exp.From(this=self.source))
        if self.joins:
            select.set("joins", self.joins)
        if self.laterals:
            select.set("laterals", self.laterals)
        if self.where:
            select.set("where", exp.Where(this=exp.and_(*self.where)))
        if self.group is not None and self.group:
            select.set("group", exp.Group(expressions=self.group))
        if self.having:
            select.set("having", exp.Having(this=exp.and_(*self.having)))
        if self.distinct:
            select.set("distinct", exp.Distinct())
        return select


class _Compiler:
    def __init__(self):
        self.ctes: list[exp.CTE] = []
        self.cte_names: dict[Relation, str] = {}  # each shared node's CTE
        self.subqueries = 0

    def block(self, node: Relation) -> _Block:
        """The SELECT block computing ``node``, by its type."""
        match node:
            case Scan():
                return self.visit_Scan(node)
            case Subquery():
                return self.visit_Subquery(node)
            case Join():
                return self.visit_Join(node)
            case Filter():
                return self.visit_Filter(node)
            case Project():
                return self.visit_Project(node)
            case Aggregate():
                return self.visit_Aggregate(node)
            case Window():
                return self.visit_Window(node)
            case Generate():
                return self.visit_Generate(node)
            case Distinct():
                return self.visit_Distinct(node)
            case Union():
                return self.visit_Union(node)
            case SetOperation():
                return self.visit_SetOperation(node)
            case Restrict():
                return self.visit_Restrict(node)
            case Weighted():
                return self.visit_Weighted(node)
            case _:
                assert_never(node)

    def wrapped(self, block: _Block) -> _Block:
        """``block`` as a subquery, its columns read unqualified."""
        self.subqueries += 1
        alias = exp.TableAlias(this=exp.to_identifier(f"q{self.subqueries}"))
        return _Block(
            exp.Subquery(this=block.to_select(), alias=alias), default_columns=[exp.Star()]
        )

    def aliased(self, node: Relation, alias: str) -> exp.Expr:
        """``node`` as a FROM item named ``alias``: a table, or a subquery."""
        if isinstance(node, Scan) and node.alias == alias:
            return table_name(node)
        inner = node.input if isinstance(node, Subquery) else node
        return exp.Subquery(
            this=self.block(inner).to_select(), alias=exp.TableAlias(this=exp.to_identifier(alias))
        )

    def shared(self, node: Relation, name: str) -> exp.Table:
        """``node`` as a common table expression, computed once however often it is read.

        A CTE is listed after the CTEs it reads; names are made unique by a number.
        """
        if node not in self.cte_names:
            query = (
                self.union_select(node) if isinstance(node, Union) else self.block(node).to_select()
            )
            taken = set(self.cte_names.values())
            cte = (
                name
                if name not in taken
                else next(
                    f"{name}_{i}" for i in range(1, len(taken) + 2) if f"{name}_{i}" not in taken
                )
            )
            self.cte_names[node] = cte
            self.ctes.append(exp.CTE(this=query, alias=exp.TableAlias(this=exp.to_identifier(cte))))
        return exp.Table(this=exp.to_identifier(self.cte_names[node]))

    def from_block(self, node: Relation, kind: JoinKind) -> _Block:
        """A block whose FROM clause further joins can extend: its WHERE stays a WHERE unless
        the join pads the left input with NULLs.

        A filtered input with one alias reads as a derived table under any join but an inner
        one: this block may later be the left input of a join that pads it, where a WHERE
        would apply after the padding. Several inputs joined (inner or semi) and then filtered
        under a padding join take the filter into their last ON instead, where it applies
        before.
        """
        block = self.block(node)
        aliases = aliases_of(node)
        plain = (
            block.select is None
            and block.group is None
            and not block.distinct
            and not block.laterals
        )
        if (
            plain
            and (not block.where or not kind.pads_left)
            and not (isinstance(node, Filter) and len(aliases) == 1 and kind is not JoinKind.INNER)
        ):
            return block
        if (
            plain
            and len(aliases) > 1
            and block.joins
            and all(_filters_rows(j) for j in block.joins)
        ):
            last = block.joins[-1]
            on = [last.args["on"]] if last.args.get("on") is not None else []
            last.set("on", exp.and_(*on, *block.where))
            if (last.args.get("kind") or "").upper() == "CROSS":
                last.set("kind", None)
            block.where = []
            return block
        (alias,) = aliases_of(node)  # only a single-alias relation can be wrapped
        subquery = exp.Subquery(
            this=block.to_select(), alias=exp.TableAlias(this=exp.to_identifier(alias))
        )
        return _Block(
            subquery, default_columns=[exp.column(c.split(".", 1)[1], alias) for c in columns(node)]
        )

    def visit_Scan(self, node: Scan) -> _Block:
        names = list(node.columns) + ([WEIGHT] if node.read is Read.DELTA else [])
        return _Block(table_name(node), default_columns=[exp.column(c, node.alias) for c in names])

    def visit_Subquery(self, node: Subquery) -> _Block:
        return _Block(
            self.aliased(node, node.alias),
            default_columns=[exp.column(c.split(".", 1)[1], node.alias) for c in columns(node)],
        )

    def visit_Weighted(self, node: Weighted) -> _Block:
        return self.block(node.input)  # the weight is a factor of the row weight (weight_of)

    def visit_Restrict(self, node: Restrict) -> _Block:
        block = self.block(node.input)
        if (
            block.select is not None or block.group is not None or block.distinct or block.laterals
        ):  # a JOIN comes before any LATERAL VIEW
            block = self.wrapped(block)
        affected = self.shared(node.affected, "affected_keys")
        keys = columns(node.affected)
        alias = f"affected{len(block.joins)}"
        on = exp.and_(
            *(
                exp.NullSafeEQ(this=key.copy(), expression=exp.column(name, alias))
                for key, name in zip(node.keys, keys, strict=True)
            )
        )
        affected.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        block.joins.append(exp.Join(this=affected, side="LEFT", kind="SEMI", on=on))
        return block

    def visit_Join(self, node: Join) -> _Block:
        # Each conjunct goes to the first JOIN where every alias it names is in scope.
        pending = (
            list(node.condition.flatten())
            if isinstance(node.condition, exp.And)
            else ([node.condition] if node.condition is not None else [])
        )
        if node.kind is not JoinKind.INNER:
            pending = []
        block = self.from_block(node.inputs[0], node.kind)
        block.default_columns = list(block.default_columns)
        in_scope = set(aliases_of(node.inputs[0]))
        for right in node.inputs[1:]:
            (alias,) = aliases_of(right)
            in_scope.add(alias)
            join = exp.Join(this=self.aliased(right, alias))
            if node.kind is not JoinKind.INNER:
                side, kind = JOIN_SQL[node.kind]
                join.set("side", side)
                join.set("kind", kind)
                # a SEMI or ANTI JOIN may be written without ON: it pairs every two rows
                join.set("on", exp.true() if node.condition is None else node.condition.copy())
            else:
                ready = [
                    c for c in pending if {col.table for col in c.find_all(exp.Column)} <= in_scope
                ]
                pending = [c for c in pending if not any(c is r for r in ready)]
                if ready:
                    join.set("on", exp.and_(*(c.copy() for c in ready)))
                else:
                    join.set("kind", "CROSS")
            block.joins.append(join)
            if node.kind.keeps_right:
                block.default_columns += [
                    exp.column(c.split(".", 1)[1], alias) for c in columns(right)
                ]
        block.where += [c.copy() for c in pending]
        return block

    def visit_Filter(self, node: Filter) -> _Block:
        block = self.block(node.input)
        if block.select is None and block.group is None:
            block.where.append(node.predicate.copy())
        elif block.select is None:
            block.having.append(_substitute(node.predicate, block.grouped))
        else:
            block = self.wrapped(block)
            block.where.append(node.predicate.copy())
        return block

    def visit_Project(self, node: Project) -> _Block:
        block = self.block(node.input)
        if block.select is not None:
            block = self.wrapped(block)
        block.select = [
            exp.alias_(_substitute(e, block.grouped), name, quoted=None) for name, e in node.columns
        ]
        return block

    def visit_Aggregate(self, node: Aggregate) -> _Block:
        block = self.block(node.input)
        if block.select is not None or block.group is not None:
            block = self.wrapped(block)
        block.group = [e.copy() for _, e in node.keys]
        block.grouped = {name: e for name, e in node.keys}
        block.grouped.update({name: call.to_sql() for name, call in node.calls})
        return block

    def visit_Window(self, node: Window) -> _Block:
        block = self.block(node.input)
        if block.select is not None or block.group is not None or block.distinct:
            block = self.wrapped(block)
        block.select = [c.copy() for c in block.default_columns] + [
            exp.alias_(function.copy(), name, quoted=None) for name, function in node.functions
        ]
        return block

    def visit_Generate(self, node: Generate) -> _Block:
        block = self.block(node.input)
        if block.select is not None or block.group is not None or block.distinct:
            block = self.wrapped(block)
        alias = f"generated{len(block.laterals)}"
        block.laterals.append(
            exp.Lateral(
                this=node.generator.copy(),
                view=True,
                outer=node.outer,
                alias=exp.TableAlias(
                    this=exp.to_identifier(alias),
                    columns=[exp.to_identifier(n) for n in node.names],
                ),
            )
        )
        if not any(isinstance(c, exp.Star) for c in block.default_columns):
            block.default_columns = list(block.default_columns) + [
                exp.column(n, alias) for n in node.names
            ]
        return block

    def visit_Distinct(self, node: Distinct) -> _Block:
        block = self.block(node.input)
        if block.distinct or block.group is not None:
            block = self.wrapped(block)
        if block.select is None:
            block.select = [c.copy() for c in block.default_columns]
        block.distinct = True
        return block

    def visit_Union(self, node: Union) -> _Block:
        return _Block(self.shared(node, CHANGE_ROWS), default_columns=[exp.Star()])

    def visit_SetOperation(self, node: SetOperation) -> _Block:
        operation = exp.Intersect if node.kind == "intersect" else exp.Except
        query = operation(
            this=self.block(node.left).to_select(),
            expression=self.block(node.right).to_select(),
            distinct=not node.all,
        )
        self.subqueries += 1
        alias = exp.TableAlias(this=exp.to_identifier(f"q{self.subqueries}"))
        return _Block(exp.Subquery(this=query, alias=alias), default_columns=[exp.Star()])

    def union_select(self, node: Union) -> exp.Query:
        selects = [self.block(term).to_select() for term in node.inputs]
        union = selects[0]
        for select in selects[1:]:
            union = exp.Union(this=union, expression=select, distinct=False)
        return union


def _filters_rows(join: exp.Join) -> bool:
    """A JOIN clause that keeps only rows meeting its ON (an inner or a semi join): a WHERE
    after it may as well be part of its ON."""
    side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
    return (side, kind) in (("", ""), ("", "INNER"), ("", "CROSS"), ("LEFT", "SEMI"))


def _substitute(expression: exp.Expr, names: dict[str, exp.Expr]) -> exp.Expr:
    """``expression`` with unqualified references to ``names`` replaced by their definitions."""
    if not names:
        return expression.copy()

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name in names:
            return parenthesized(names[node.name].copy())
        return node

    return expression.copy().transform(replace)


def to_select(node: Relation) -> exp.Query:
    """The SELECT computing ``node``."""
    compiler = _Compiler()
    select = compiler.block(node).to_select()
    for cte in compiler.ctes:
        select = select.with_(cte.alias, as_=cte.this, copy=False)
    return select


def to_sql(node: Relation, pretty: bool = True) -> str:
    """Spark SQL text computing ``node``."""
    return to_select(node).sql(DIALECT, pretty=pretty)
