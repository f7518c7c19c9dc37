"""Lower a qualified sqlglot query to the relational IR, refusing what has no rule.

One SELECT block becomes, bottom-up::

    Scan | Subquery | Join  →  Filter(WHERE)  →  Aggregate(GROUP BY)  →  Filter(HAVING)
        →  Project(SELECT)  →  Distinct

A derived table or a common table expression becomes a :class:`~ivm.ir.Subquery` over its
own plan (a CTE read twice is one plan read twice); ``UNION ALL`` a :class:`~ivm.ir.Union`.

>>> from ivm.frontend.parse import parse_query, qualify_query
>>> sql = "SELECT k, SUM(v) AS total FROM t WHERE v > 0 GROUP BY k"
>>> plan = lower(qualify_query(parse_query(sql), sql, {"t": {"k": "INT", "v": "INT"}}), sql)
>>> type(plan).__name__, type(plan.input).__name__, type(plan.input.input).__name__
('Project', 'Aggregate', 'Filter')
"""

from __future__ import annotations

from sqlglot import exp

from ivm.errors import CatalogError, UnsupportedQuery
from ivm.frontend.positions import position_of
from ivm.ir import (Aggregate, AggregateCall, Distinct, Filter, Join, Project, Scan,
                    SetOperation, Subquery, Union, columns, equalities)
from ivm.zset import BOOKKEEPING_PREFIX

INVERTIBLE = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg"}

NONDETERMINISTIC = {"rand", "random", "randn", "uuid", "shuffle", "current_timestamp", "now",
                    "current_date", "curdate", "localtimestamp", "unix_timestamp",
                    "monotonically_increasing_id", "spark_partition_id", "input_file_name"}

ORDER_DEPENDENT_AGGREGATES = {"first", "last", "first_value", "last_value", "any_value",
                              "collect_list", "array_agg", "collect_set", "string_agg",
                              "listagg", "group_concat"}
"""Aggregates whose value depends on the order rows arrive in: no refresh can reproduce it."""

# Clauses of a SELECT that this version does not maintain, with what to do instead.
REFUSED_CLAUSES = {
    "order": ("ORDER BY", "a view has no order: order the rows when you query the view"),
    "limit": ("LIMIT", "top-N views are not supported yet; filter on a column instead"),
    "offset": ("OFFSET", "query the view with OFFSET instead"),
    "qualify": ("QUALIFY", "window filters are not supported yet"),
    "windows": ("WINDOW clause", "window functions are not supported yet"),
    "laterals": ("LATERAL VIEW", "explode the data into a source table first"),
    "pivots": ("PIVOT", "pivot when you query the view, or GROUP BY the pivot column"),
    "sample": ("TABLESAMPLE", "sampling is not deterministic; remove it"),
    "cluster": ("CLUSTER BY", "remove it: a view has no order"),
    "distribute": ("DISTRIBUTE BY", "remove it: a view has no physical order"),
    "sort": ("SORT BY", "remove it: a view has no order"),
}

JOIN_KINDS = {("", ""): "inner", ("", "INNER"): "inner", ("", "CROSS"): "inner",
              ("LEFT", ""): "left", ("LEFT", "OUTER"): "left",
              ("RIGHT", ""): "right", ("RIGHT", "OUTER"): "right",
              ("FULL", ""): "full", ("FULL", "OUTER"): "full",
              ("LEFT", "SEMI"): "semi", ("", "SEMI"): "semi",
              ("LEFT", "ANTI"): "anti", ("", "ANTI"): "anti"}

JOIN_NAMES = {"left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN",
              "semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}


def lower(query: exp.Expression, sql: str):
    """The IR of a qualified query; raises :class:`UnsupportedQuery` for what has no rule."""
    return _Lowering(sql).query(query)


class _Lowering:
    def __init__(self, sql: str):
        self.sql = sql
        self.ctes: dict[str, object] = {}

    def refuse(self, construct: str, node, hint: str | None = None, **kw):
        raise UnsupportedQuery(construct, self.sql, position_of(node), hint=hint, **kw)

    def query(self, query: exp.Expression):
        with_ = query.args.get("with_")
        if with_ is not None:
            if with_.args.get("recursive"):
                self.refuse("WITH RECURSIVE", with_, "recursive queries are not supported")
            for cte in with_.expressions:
                self.ctes[cte.alias_or_name] = self.query(cte.this)
        if isinstance(query, exp.Union):
            return self.union(query)
        if isinstance(query, (exp.Intersect, exp.Except)):
            return self.set_operation(query)
        if isinstance(query, exp.Subquery):
            return self.query(query.this)
        if not isinstance(query, exp.Select):
            self.refuse(query.key.upper(), query)
        return self.select(query)

    def union(self, query: exp.Union):
        self.refuse_set_clauses(query)
        branches = []
        for side in (query.left, query.right):
            plan = self.query(side)
            same_kind = isinstance(side, exp.Union) and side.args.get("distinct") is False
            # a UNION ALL chain is one sum of its branches
            branches += list(plan.inputs) if isinstance(plan, Union) and same_kind else [plan]
        names = _output_names(branches[0])
        aligned = [branches[0]] + [_renamed(b, names, self, query) for b in branches[1:]]
        union = Union(tuple(aligned))
        return union if query.args.get("distinct") is False else Distinct(union)

    def set_operation(self, query: exp.SetOperation):
        self.refuse_set_clauses(query)
        left = self.query(query.left)
        right = _renamed(self.query(query.right), _output_names(left), self, query)
        kind = "intersect" if isinstance(query, exp.Intersect) else "except"
        return SetOperation(left, right, kind, all=query.args.get("distinct") is False)

    def refuse_set_clauses(self, query: exp.SetOperation) -> None:
        for arg in ("order", "limit", "offset"):
            if query.args.get(arg):
                name, hint = REFUSED_CLAUSES[arg]
                self.refuse(name, query.args[arg], hint)

    def select(self, select: exp.Select):
        self.refuse_clauses(select)
        self.refuse_expressions(select)
        relation = self.from_clause(select)
        where = select.args.get("where")
        if where is not None:
            relation = Filter(relation, where.this.copy())

        outputs = self.output_columns(select)
        group, having = select.args.get("group"), select.args.get("having")
        if group is not None or having is not None or any(
                e.find(exp.AggFunc) for _, e in outputs):
            relation, outputs = self.aggregate(relation, group, having, outputs)
        plan = Project(relation, tuple(outputs))
        distinct = select.args.get("distinct")
        if distinct is not None:
            if distinct.args.get("on"):
                self.refuse("DISTINCT ON", distinct)
            return Distinct(plan)
        return plan

    def refuse_clauses(self, select: exp.Select) -> None:
        for arg, (name, hint) in REFUSED_CLAUSES.items():
            value = select.args.get(arg)
            if value:
                self.refuse(name, value[0] if isinstance(value, list) else value, hint)
        group = select.args.get("group")
        if group is not None:
            for arg, name in (("rollup", "ROLLUP"), ("cube", "CUBE"),
                              ("grouping_sets", "GROUPING SETS")):
                if group.args.get(arg):
                    self.refuse(name, group, "define one view per grouping instead")

    def refuse_expressions(self, select: exp.Select) -> None:
        for node in _own_nodes(select):
            if isinstance(node, exp.Window):
                self.refuse("window function", node, "window functions are not supported yet")
            if isinstance(node, (exp.Exists, exp.In)) and node.find(exp.Select) or isinstance(
                    node, exp.Subquery) and not isinstance(node.parent, (exp.From, exp.Join)):
                self.refuse("subquery", node,
                            "subqueries in expressions are not supported yet; join the tables")
            if isinstance(node, exp.Func):
                name = (node.sql_name() if not isinstance(node, exp.Anonymous)
                        else node.name).lower()
                if name in NONDETERMINISTIC or isinstance(node, (
                        exp.Rand, exp.Randn, exp.Uuid, exp.CurrentTimestamp, exp.CurrentDate)):
                    self.refuse(
                        f"non-deterministic function {name}()", node,
                        reason="its value changes between refreshes, so no change of the "
                        "sources explains a change of the view",
                        hint="compute the value into a source column when the row is written")

    def from_clause(self, select: exp.Select):
        from_ = select.args.get("from_")
        if from_ is None:
            self.refuse("SELECT without FROM", select,
                        "a materialized view reads at least one table")
        used = _used_columns(select)
        relation = self.table(from_.this, used)
        inner: list = [relation]
        conditions: list[exp.Expression] = []
        for join in select.args.get("joins") or []:
            side = (join.args.get("side") or "").upper()
            kind = JOIN_KINDS.get((side, (join.args.get("kind") or "").upper()))
            if kind is None:
                self.refuse(f"{side} {join.args.get('kind')} JOIN".strip(), join)
            right = self.table(join.this, used)
            on = join.args.get("on")
            if kind == "inner":
                inner.append(right)
                if on is not None:
                    conditions.append(on.copy())
                continue
            left = inner[0] if len(inner) == 1 else Join(
                tuple(inner), exp.and_(*conditions) if conditions else None)
            if on is None or not equalities(on, left, right):
                self.refuse(f"{JOIN_NAMES[kind]} without an equality between its two sides",
                            join, "join on at least one column of each side: ON a.k = b.k")
            inner, conditions = [Join((left, right), on.copy(), kind)], []
        if len(inner) == 1 and not conditions:
            return inner[0]
        if len(inner) == 1:
            return Filter(inner[0], exp.and_(*conditions))
        return Join(tuple(inner), exp.and_(*conditions) if conditions else None)

    def table(self, source: exp.Expression, used: dict[str, list[str]]):
        alias = source.alias_or_name
        if isinstance(source, exp.Subquery):
            return Subquery(self.query(source.this), alias)
        if not isinstance(source, exp.Table):
            self.refuse(f"{source.key.upper()} in FROM", source)
        if source.args.get("version") is not None:
            self.refuse("time travel (VERSION/TIMESTAMP AS OF)", source,
                        "a view follows its sources' latest version")
        if not source.args.get("db") and source.name in self.ctes:
            return Subquery(self.ctes[source.name], alias)
        table = ".".join(part.name for part in source.parts)
        return Scan(table, alias, tuple(used.get(alias, ())), position=position_of(source))

    def output_columns(self, select: exp.Select) -> list[tuple[str, exp.Expression]]:
        """(name, expression) per SELECT item; names must be unique, valid and not ours."""
        outputs = []
        for item in select.expressions:
            name = item.alias_or_name
            expression = item.this if isinstance(item, exp.Alias) else item
            if not isinstance(expression, exp.Column) and name.startswith("_col_"):
                raise CatalogError("a computed column of a materialized view needs a name",
                                   self.sql, position_of(item),
                                   hint=f"name it: {expression.sql('spark')} AS some_name")
            if name.startswith(BOOKKEEPING_PREFIX):
                raise CatalogError(f"column name {name} is reserved for ivm's bookkeeping",
                                   self.sql, position_of(item), hint="rename the column")
            if any(name.lower() == seen.lower() for seen, _ in outputs):  # Delta ignores case
                raise CatalogError(f"the view would have two columns named {name}", self.sql,
                                   position_of(item), hint="give one of them an alias")
            outputs.append((name, expression.copy()))
        return outputs

    def aggregate(self, relation, group, having, outputs):
        """Aggregate(keys, calls) [→ Filter(HAVING)] under a Project naming keys and calls."""
        keys: list[tuple[str, exp.Expression]] = []
        for expression in (group.expressions if group is not None else []):
            if expression.find(exp.AggFunc):
                self.refuse("aggregate in GROUP BY", expression)
            if all(expression != key for _, key in keys):
                keys.append((f"{BOOKKEEPING_PREFIX}key{len(keys)}", expression.copy()))
        calls: list[tuple[str, AggregateCall]] = []

        def replace(node: exp.Expression) -> exp.Expression:
            for name, key in keys:
                if node == key:
                    return exp.column(name)
            if isinstance(node, exp.AggFunc):
                call = self.aggregate_call(node)
                for name, existing in calls:
                    if existing == call:
                        return exp.column(name)
                name = f"{BOOKKEEPING_PREFIX}agg{len(calls)}"
                calls.append((name, call))
                return exp.column(name)
            if isinstance(node, exp.Column):
                raise CatalogError(
                    f"column {node.sql('spark')} is neither in GROUP BY nor inside an "
                    "aggregate", self.sql, position_of(node),
                    hint="add it to GROUP BY or aggregate it")
            return node

        projected = [(name, e.copy().transform(replace)) for name, e in outputs]
        predicate = having.this.copy().transform(replace) if having is not None else None
        relation = Aggregate(relation, tuple(keys), tuple(calls))
        if predicate is not None:
            relation = Filter(relation, predicate)
        return relation, projected

    def aggregate_call(self, node: exp.AggFunc) -> AggregateCall:
        name = (node.sql_name() if not isinstance(node, exp.Anonymous) else node.name).lower()
        if name in ORDER_DEPENDENT_AGGREGATES:
            spelled = node.sql("spark").split("(", 1)[0]  # as Spark spells it
            self.refuse(f"aggregate function {spelled}", node,
                        reason="its value depends on the order rows arrive in",
                        hint="use MIN or MAX, or an aggregate that does not depend on order")
        argument = node.this
        if argument is not None and not isinstance(argument, exp.Star) and \
                argument.find(exp.AggFunc):
            self.refuse("aggregate of an aggregate", node,
                        "aggregate in a subquery, then aggregate its result")
        function = INVERTIBLE.get(type(node))
        plain = function is not None and not isinstance(argument, exp.Distinct) and \
            not isinstance(node.parent, exp.Filter)
        if not plain:
            whole = node.parent if isinstance(node.parent, exp.Filter) else node
            return AggregateCall(name, None, whole.copy())
        if isinstance(argument, exp.Star) or argument is None:
            return AggregateCall("count")
        return AggregateCall(function, argument.copy())


def _own_nodes(select: exp.Select):
    """The nodes of ``select`` outside its nested queries (those are lowered on their own)."""
    def prune(node):
        return node is not select and isinstance(node, (exp.Select, exp.SetOperation))
    return select.walk(prune=prune)


def _used_columns(select: exp.Select) -> dict[str, list[str]]:
    """Columns referenced per table alias in ``select``'s own scope, in order of first use."""
    used: dict[str, list[str]] = {}
    for column in _own_nodes(select):
        if isinstance(column, exp.Column) and column.table:
            names = used.setdefault(column.table, [])
            if column.name not in names:
                names.append(column.name)
    return used


def _output_names(plan) -> list[str]:
    return list(columns(plan))


def _renamed(plan, names: list[str], lowering: _Lowering, query: exp.SetOperation):
    """``plan`` with its columns renamed, by position, to ``names`` (a set operation's)."""
    own = _output_names(plan)
    if len(own) != len(names):
        name = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}[type(query)]
        lowering.refuse(f"{name} of queries with different numbers of columns", query.right,
                        "select the same number of columns in every branch")
    if own == names:
        return plan
    return Project(plan, tuple((n, exp.column(o)) for n, o in zip(names, own)))
