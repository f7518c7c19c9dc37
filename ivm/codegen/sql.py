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
SELECT o.amount AS amount FROM orders AS o JOIN customers AS c ON o.cust_id = c.id WHERE o.amount > 0
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ivm.ir import Aggregate, Distinct, Filter, Join, Project, Scan, Union
from ivm.store import parenthesized
from ivm.zset import WEIGHT, Read, relation_name

DIALECT = "spark"
CHANGE_ROWS = "change_rows"


def table_name(scan: Scan) -> exp.Table:
    """The relation a scan reads, under its alias."""
    name = scan.table if scan.read is Read.TABLE else relation_name(scan.table, scan.read)
    table = exp.to_table(name, dialect=DIALECT) if scan.read is Read.TABLE else exp.Table(
        this=exp.to_identifier(name))
    table.set("alias", exp.TableAlias(this=exp.to_identifier(scan.alias)))
    return table


@dataclass
class _Block:
    """A SELECT being built: FROM/JOINs, WHERE, GROUP BY (with named outputs), SELECT list."""

    source: exp.Expression
    joins: list[exp.Join] = field(default_factory=list)
    where: list[exp.Expression] = field(default_factory=list)
    group: list[exp.Expression] | None = None
    grouped: dict[str, exp.Expression] = field(default_factory=dict)
    having: list[exp.Expression] = field(default_factory=list)
    select: list[exp.Expression] | None = None
    default_columns: list[exp.Expression] = field(default_factory=list)
    distinct: bool = False

    def to_select(self) -> exp.Select:
        select = exp.Select(expressions=self.select or (
            [exp.alias_(e.copy(), n) for n, e in self.grouped.items()] if self.group is not None
            else [c.copy() for c in self.default_columns]))
        select.set("from_", exp.From(this=self.source))
        if self.joins:
            select.set("joins", self.joins)
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
        self.subqueries = 0

    def block(self, node) -> _Block:
        visit = getattr(self, f"visit_{type(node).__name__}")
        return visit(node)

    def wrapped(self, node) -> _Block:
        """``node`` as a subquery, its columns read unqualified."""
        self.subqueries += 1
        alias = f"q{self.subqueries}"
        inner = self.block(node).to_select()
        return _Block(exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias))),
                      default_columns=[exp.Star()])

    def visit_Scan(self, node: Scan) -> _Block:
        names = list(node.columns) + ([WEIGHT] if node.read is Read.DELTA else [])
        return _Block(table_name(node), default_columns=[exp.column(c, node.alias) for c in names])

    def visit_Join(self, node: Join) -> _Block:
        # Each conjunct goes to the first JOIN where every alias it names is in scope.
        pending = list(node.condition.flatten()) if isinstance(node.condition, exp.And) else (
            [node.condition] if node.condition is not None else [])
        first = self.visit_Scan(node.inputs[0])
        block = _Block(first.source, default_columns=list(first.default_columns))
        in_scope = {node.inputs[0].alias}
        for scan in node.inputs[1:]:
            in_scope.add(scan.alias)
            ready = [c for c in pending if {col.table for col in c.find_all(exp.Column)} <= in_scope]
            pending = [c for c in pending if not any(c is r for r in ready)]
            join = exp.Join(this=table_name(scan))
            if ready:
                join.set("on", exp.and_(*(c.copy() for c in ready)))
            else:
                join.set("kind", "CROSS")
            block.joins.append(join)
            block.default_columns += self.visit_Scan(scan).default_columns
        block.where += [c.copy() for c in pending]
        return block

    def visit_Filter(self, node: Filter) -> _Block:
        block = self.block(node.input)
        if block.select is None and block.group is None:
            block.where.append(node.predicate.copy())
        elif block.select is None:
            block.having.append(_substitute(node.predicate, block.grouped))
        else:
            block = self.wrapped(node.input)
            block.where.append(node.predicate.copy())
        return block

    def visit_Project(self, node: Project) -> _Block:
        block = self.block(node.input)
        if block.select is not None:
            block = self.wrapped(node.input)
        block.select = [exp.alias_(_substitute(e, block.grouped), name, quoted=None)
                        for name, e in node.columns]
        return block

    def visit_Aggregate(self, node: Aggregate) -> _Block:
        block = self.block(node.input)
        if block.select is not None or block.group is not None:
            block = self.wrapped(node.input)
        block.group = [e.copy() for _, e in node.keys]
        block.grouped = {name: e for name, e in node.keys}
        block.grouped.update({name: call.to_sql() for name, call in node.calls})
        return block

    def visit_Distinct(self, node: Distinct) -> _Block:
        block = self.block(node.input)
        if block.distinct or block.select is None:
            block = self.wrapped(node.input)
        block.distinct = True
        return block

    def visit_Union(self, node: Union) -> _Block:
        selects = [self.block(term).to_select() for term in node.inputs]
        union = selects[0]
        for select in selects[1:]:
            union = exp.Union(this=union, expression=select, distinct=False)
        name = CHANGE_ROWS if not self.ctes else f"{CHANGE_ROWS}_{len(self.ctes)}"
        self.ctes.append(exp.CTE(this=union, alias=exp.TableAlias(this=exp.to_identifier(name))))
        return _Block(exp.Table(this=exp.to_identifier(name)), default_columns=[exp.Star()])


def _substitute(expression: exp.Expression, names: dict[str, exp.Expression]) -> exp.Expression:
    """``expression`` with unqualified references to ``names`` replaced by their definitions."""
    if not names:
        return expression.copy()

    def replace(node):
        if isinstance(node, exp.Column) and not node.table and node.name in names:
            return parenthesized(names[node.name].copy())
        return node
    return expression.copy().transform(replace)


def to_select(node) -> exp.Query:
    """The SELECT computing ``node``."""
    compiler = _Compiler()
    select = compiler.block(node).to_select()
    for cte in compiler.ctes:
        select = select.with_(cte.alias, as_=cte.this, copy=False)
    return select


def to_sql(node, pretty: bool = True) -> str:
    """Spark SQL text computing ``node``."""
    return to_select(node).sql(DIALECT, pretty=pretty)
