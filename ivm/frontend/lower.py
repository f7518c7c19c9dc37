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

from typing import NoReturn

from sqlglot import exp

from ivm import store
from ivm.errors import InvalidQuery, ReservedName, UnsupportedQuery
from ivm.frontend.functions import (
    COLLECTIONS,
    ORDER_DEPENDENT_AGGREGATES,
    SESSION_DEPENDENT,
    function_name,
    nondeterministic,
)
from ivm.frontend.generators import (
    MARK,
    as_derived_table,
    default_names,
    fresh_name,
    is_generator,
    plain_generator,
    select_list_generator,
    written,
)
from ivm.frontend.grouping_sets import (
    GROUPING_ID_TYPE,
    GROUPING_TYPE,
    grouping_sets,
    grouping_value,
    has_grouping_sets,
)
from ivm.frontend.lookups import check_marks_facts, has_lookups, is_lookup
from ivm.frontend.positions import position_of
from ivm.frontend.subqueries import SUBQUERY_PREFIX, unnest
from ivm.frontend.widening import widened
from ivm.frontend.windows import deterministic
from ivm.ir import (
    Aggregate,
    AggregateCall,
    Distinct,
    Filter,
    Generate,
    Join,
    JoinKind,
    Project,
    Relation,
    Scan,
    SetOperation,
    Subquery,
    Union,
    Window,
    aliases_of,
    children,
    columns,
)
from ivm.names import join
from ivm.zset import BOOKKEEPING_PREFIX

WINDOW_PREFIX = f"{BOOKKEEPING_PREFIX}win"
ORDER_PREFIX = f"{BOOKKEEPING_PREFIX}order"
RANK = f"{BOOKKEEPING_PREFIX}rank"
SET_TAG = f"{BOOKKEEPING_PREFIX}set"
"""The column numbering the grouping set a row of an expanded input counts for."""

INVERTIBLE = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg"}

EXACT_TYPES = store.EXACT_TYPES
"""SUM and AVG of any other type (DOUBLE, FLOAT, or a type not inferred) are recomputed per
affected group, like MIN/MAX: floating-point addition cannot be undone."""

AVERAGED_DECIMALS = (24, 2)
"""AVG of a DECIMAL(p, s) is folded for p <= 24 and s >= 2 only: then ``sum / count`` over
the accumulators, its sum cast to DECIMAL(34, s), rounds once to scale s + 4, as Spark's AVG
does (a division's scale is at least 6, and a wider sum leaves it fewer than s + 4 digits)."""

# Clauses of a SELECT that this version does not maintain, with what to do instead.
REFUSED_CLAUSES = {
    "offset": ("OFFSET", "query the view with OFFSET instead"),
    "windows": ("WINDOW clause", "write each window's OVER (...) in full instead of naming it"),
    "pivots": ("PIVOT", "pivot when you query the view, or GROUP BY the pivot column"),
    "sample": ("TABLESAMPLE", "sampling is not deterministic; remove it"),
    "cluster": ("CLUSTER BY", "remove it: a view has no order"),
    "distribute": ("DISTRIBUTE BY", "remove it: a view has no physical order"),
    "sort": ("SORT BY", "remove it: a view has no order"),
}

LOOKUPS = {JoinKind.INNER: JoinKind.LOOKUP, JoinKind.LEFT: JoinKind.LEFT_LOOKUP}
"""The lookup join of each join kind that has one."""

JOIN_KINDS = {
    ("", ""): JoinKind.INNER,
    ("", "INNER"): JoinKind.INNER,
    ("", "CROSS"): JoinKind.INNER,
    ("LEFT", ""): JoinKind.LEFT,
    ("LEFT", "OUTER"): JoinKind.LEFT,
    ("RIGHT", ""): JoinKind.RIGHT,
    ("RIGHT", "OUTER"): JoinKind.RIGHT,
    ("FULL", ""): JoinKind.FULL,
    ("FULL", "OUTER"): JoinKind.FULL,
    ("LEFT", "SEMI"): JoinKind.SEMI,
    ("", "SEMI"): JoinKind.SEMI,
    ("LEFT", "ANTI"): JoinKind.ANTI,
    ("", "ANTI"): JoinKind.ANTI,
}


def lower(query: exp.Expr, sql: str):
    """The IR of a qualified query; raises :class:`UnsupportedQuery` for what has no rule."""
    return _Lowering(sql).query(query)


class _Lowering:
    def __init__(self, sql: str):
        self.sql = sql
        self.ctes: dict[str, Relation] = {}
        self.subqueries = 0  # numbers the relations that compute subqueries

    def refuse(self, construct: str, node, hint: str | None = None, **kw) -> NoReturn:
        raise UnsupportedQuery(construct, self.sql, position_of(node), hint=hint, **kw)

    def query(self, query: exp.Expr) -> Relation:
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
        union = Union(tuple(widened(aligned)))
        plan = union if query.args.get("distinct") is False else Distinct(union)
        return self.limited(query, plan)

    def set_operation(self, query: exp.SetOperation):
        self.refuse_set_clauses(query)
        left = self.query(query.left)
        right = _renamed(self.query(query.right), _output_names(left), self, query)
        left, right = widened([left, right])
        kind = "intersect" if isinstance(query, exp.Intersect) else "except"
        plan = SetOperation(left, right, kind, all=query.args.get("distinct") is False)
        return self.limited(query, plan)

    def refuse_set_clauses(self, query: exp.SetOperation) -> None:
        if query.args.get("offset"):
            name, hint = REFUSED_CLAUSES["offset"]
            self.refuse(name, query.args["offset"], hint)

    def limited(self, query: exp.Query, plan):
        """``plan`` cut to the query's ``ORDER BY … LIMIT n``, whose keys name its columns."""
        names = list(columns(plan))
        ordered = self.ordering(query, [(n, exp.column(n)) for n in names])
        return self.top_n(query, plan, ordered, names) if ordered is not None else plan

    def select(self, select: exp.Select):
        if select.meta.get(MARK):
            return self.generated(select)
        # a later branch of a set operation takes its column names from the first one
        named = not (
            isinstance(select.parent, exp.SetOperation) and select is select.parent.expression
        )
        select = select_list_generator(select, self.refuse)
        if select.args.get("laterals") or has_lookups(select, self.sql):
            select = as_derived_table(select)
        self.refuse_clauses(select)
        unnested = unnest(self, select)
        select = unnested.select
        self.refuse_expressions(select)
        relation = self.from_clause(select, unnested.expressions())
        for crossed in unnested.crossed:  # one-row subqueries, read by WHERE and beyond
            relation = (
                Join(relation.inputs + (crossed,), relation.condition)
                if isinstance(relation, Join) and relation.kind is JoinKind.INNER
                else Join((relation, crossed))
            )
        where = select.args.get("where")
        if where is not None:
            relation = Filter(relation, where.this.copy())
        for kind, right, condition in unnested.steps:  # EXISTS, IN, correlated subqueries
            relation = (
                Filter(relation, condition)
                if right is None
                else Join((relation, right), condition, kind)
            )

        outputs = self.output_columns(select, named)
        visible = [name for name, _ in outputs]
        ordered = self.ordering(select, outputs)  # may add hidden outputs to sort by
        distinct = select.args.get("distinct")
        if distinct is not None and len(outputs) > len(visible):
            self.refuse(
                "ORDER BY a column not in the SELECT DISTINCT list",
                select.args["order"],
                "order by the selected columns only",
            )
        outputs, windows, qualify = _extract_windows(
            outputs, select.args["qualify"].this if select.args.get("qualify") else None
        )
        group, having = select.args.get("group"), select.args.get("having")
        if (
            group is not None
            or having is not None
            or any(e.find(exp.AggFunc) for _, e in outputs)
            or any(_window_inside(w).find(exp.AggFunc) for _, w in windows)
        ):
            relation, outputs, windows = self.aggregate(relation, group, having, outputs, windows)
        if windows or qualify is not None:
            relation, outputs = self.windowed(relation, outputs, windows, qualify)
        plan = Project(relation, tuple(outputs))
        if distinct is not None:
            if distinct.args.get("on"):
                self.refuse("DISTINCT ON", distinct)
            plan = Distinct(plan)
        return self.top_n(select, plan, ordered, visible) if ordered is not None else plan

    def ordering(self, query: exp.Query, outputs: list) -> list[exp.Ordered] | None:
        """The ``ORDER BY`` keys of a query with ``LIMIT``, over output names; None without
        LIMIT. A key that is no output is appended to ``outputs`` as a hidden column."""
        order, limit = query.args.get("order"), query.args.get("limit")
        if order is None and limit is None:
            return None
        if limit is None:
            self.refuse(
                "ORDER BY without LIMIT",
                order,
                "a view has no order: order the rows when you query the view "
                "(ORDER BY is kept with LIMIT, as a top-N view)",
            )
        if order is None:
            self.refuse(
                "LIMIT without ORDER BY",
                limit,
                reason="which rows LIMIT keeps is arbitrary",
                hint="add an ORDER BY that decides which rows to keep",
            )
        keys = []
        for item in order.expressions:
            key = item.this
            name = next((n for n, e in outputs if e == key), None)
            if (
                isinstance(key, exp.Column)
                and not key.table
                and any(key.name == n for n, _ in outputs)
            ):
                name = key.name
            elif isinstance(key, exp.Literal) and not key.is_string:
                position = int(key.this)
                if not 1 <= position <= len(outputs):
                    self.refuse(
                        f"ORDER BY position {position}",
                        key,
                        f"the query has {len(outputs)} columns",
                    )
                name = outputs[position - 1][0]
            if name is None:
                name = f"{ORDER_PREFIX}{len(keys)}"
                outputs.append((name, key.copy()))
            keys.append(
                exp.Ordered(
                    this=exp.column(name),
                    desc=bool(item.args.get("desc")),
                    nulls_first=item.args.get("nulls_first"),
                )
            )
        return keys

    def top_n(self, query: exp.Query, plan, keys: list[exp.Ordered], visible: list[str]):
        """The first ``LIMIT n`` rows of ``plan`` in the order of ``keys``: a ``ROW_NUMBER()``
        over one partition, filtered to ``<= n``, then only the visible columns."""
        limit = query.args["limit"]
        count = limit.expression
        if not (isinstance(count, exp.Literal) and not count.is_string and count.this.isdigit()):
            self.refuse("LIMIT of anything but a number", limit, "write LIMIT as a number")
        rank = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=keys))
        ranked = Window(plan, (), ((RANK, deterministic(rank, columns(plan))),))
        kept = Filter(ranked, exp.LTE(this=exp.column(RANK), expression=count.copy()))
        return Project(kept, tuple((name, exp.column(name)) for name in visible))

    def windowed(self, relation, outputs, windows, qualify):
        """Window functions over ``relation``, then QUALIFY; returns the relation and the
        outputs over it.

        The columns the outputs and windows read are first projected under plain names, so a
        window's partition is a key of its input (see :mod:`ivm.rules.window`).
        """
        used: list[exp.Column] = []
        for expression in [e for _, e in outputs] + [w for _, w in windows] + [qualify]:
            for column in expression.find_all(exp.Column) if expression is not None else ():
                placeholder = not column.table and column.name.startswith(WINDOW_PREFIX)
                if not placeholder and column not in used:
                    used.append(column)
        names = {
            c: c.name if not c.table else f"{BOOKKEEPING_PREFIX}c{i}" for i, c in enumerate(used)
        }

        def rename(expression):
            return expression.copy().transform(
                lambda n: exp.column(names[n]) if isinstance(n, exp.Column) and n in names else n
            )

        named = tuple((names[c], c.copy()) for c in used) or (
            (f"{BOOKKEEPING_PREFIX}c0", exp.Literal.number(1)),
        )
        relation = Project(relation, named)
        order_by = [name for name, _ in named]
        partitions: dict[tuple, list] = {}
        for name, window in windows:
            window = rename(window)
            key = tuple(window.args.get("partition_by") or ())
            window = deterministic(window, [n for n in order_by if exp.column(n) not in key])
            partitions.setdefault(key, []).append((name, window))
        for partition, functions in partitions.items():
            relation = Window(relation, partition, tuple(functions))
        if qualify is not None:
            relation = Filter(relation, rename(qualify))
        return relation, [(name, rename(e)) for name, e in outputs]

    def generated(self, select: exp.Select):
        """The derived table of a FROM clause with lateral views or lookup joins (see
        :mod:`ivm.frontend.generators`): the joined rows' columns it reads under plain names
        (its SELECT list's, and those a lookup join's condition reads, which key its state),
        then a :class:`Generate` per lateral view."""
        self.refuse_expressions(select)
        relation = self.from_clause(select, [])
        names = {
            (item.this.table, item.this.name): item.alias
            for item in select.expressions
            if isinstance(item.this, exp.Column)
        }
        taken = {name.lower() for name in names.values()}
        joined = set(aliases_of(relation))
        read = {
            (c.table, c.name): c
            for item in select.expressions
            for c in item.find_all(exp.Column)
            if c.table in joined
        }
        laterals = select.args.get("laterals") or []
        # a lookup join's state is keyed by the fact columns its condition reads too
        lookups = [
            j.args["on"]
            for j in select.args.get("joins") or []
            if is_lookup(j, self.sql) and j.args.get("on") is not None
        ]
        for read_by in [lateral.this for lateral in laterals] + lookups:
            read |= {
                (c.table, c.name): c
                for c in read_by.find_all(exp.Column)
                if c.table in joined and (c.table, c.name) not in read
            }
        for key in read:
            names.setdefault(key, fresh_name(key[1], taken))
        relation = Project(
            relation,
            tuple((names[key], column.copy()) for key, column in read.items())
            or ((fresh_name(f"{BOOKKEEPING_PREFIX}row", taken), exp.true()),),
        )
        for lateral in laterals:
            if not is_generator(lateral.this):
                self.refuse(
                    f"LATERAL VIEW {_spelled(lateral.this)}",
                    lateral.this,
                    "explode, posexplode or inline (or their _outer forms) are maintained",
                )
            generator, outer = plain_generator(lateral.this)
            alias = lateral.args.get("alias")
            expected = default_names(generator)
            given = (
                [c.name for c in alias.columns] if alias is not None and alias.columns else expected
            )
            if given is None:
                self.refuse(
                    "a LATERAL VIEW whose columns cannot be named",
                    lateral,
                    "name its columns: LATERAL VIEW explode(x) alias AS name",
                )
            if expected is not None and len(given) != len(expected):
                self.refuse(
                    f"a LATERAL VIEW naming {len(given)} of the {len(expected)} "
                    f"columns of {_spelled(generator)}",
                    lateral,
                    f"name each: AS {', '.join(expected)}",
                )
            generator = generator.transform(
                lambda n: (
                    exp.column(names[(n.table, n.name)])
                    if isinstance(n, exp.Column) and (n.table, n.name) in names
                    else n
                )
            )
            outputs = []
            for name in given:
                names.setdefault((lateral.alias_or_name, name), fresh_name(name, taken))
                outputs.append(names[(lateral.alias_or_name, name)])
            relation = Generate(
                relation, generator, tuple(outputs), outer or bool(lateral.args.get("outer"))
            )
        return relation

    def refuse_clauses(self, select: exp.Select) -> None:
        for arg, (name, hint) in REFUSED_CLAUSES.items():
            value = select.args.get(arg)
            if value:
                self.refuse(name, value[0] if isinstance(value, list) else value, hint)

    def refuse_expressions(self, select: exp.Select) -> None:
        for node in _own_nodes(select):
            if isinstance(node, exp.Window):
                clause = node.find_ancestor(
                    exp.Where, exp.Group, exp.Having, exp.Join, exp.AggFunc, exp.Window
                )
                if clause is not None:
                    self.refuse(
                        f"window function in {_clause_name(clause)}",
                        node,
                        "compute it in a subquery and filter on its result, or filter with QUALIFY",
                    )
            if isinstance(node, (exp.Exists, exp.In)) and node.find(exp.Select):
                what = "EXISTS" if isinstance(node, exp.Exists) else "IN (subquery)"
                self.refuse(
                    f"{what} other than as a condition of WHERE",
                    node,
                    "test it in a conjunct of WHERE (… AND EXISTS (…)), or join the "
                    "subquery's table",
                )
            if isinstance(node, exp.Subquery) and not isinstance(
                node.parent, (exp.From, exp.Join, exp.In, exp.Exists)
            ):
                clause = node.find_ancestor(exp.Group, exp.Order, exp.Join, exp.AggFunc, exp.Window)
                where = {
                    exp.Group: "GROUP BY",
                    exp.Order: "ORDER BY",
                    exp.Join: "a join condition",
                }.get(type(clause), "an aggregate")
                self.refuse(
                    f"subquery in {where}",
                    node,
                    "compute it in a subquery in FROM, then refer to its column",
                )
            if isinstance(node, exp.Func):
                name = function_name(node)
                if nondeterministic(node):
                    self.refuse(
                        f"non-deterministic function {name}()",
                        node,
                        reason="its value changes between refreshes, so no change of the "
                        "sources explains a change of the view",
                        hint="compute the value into a source column when the row is written",
                    )
                if name in SESSION_DEPENDENT:
                    self.refuse(
                        f"session-dependent function {name}()",
                        node,
                        reason="its value is that of the session running the query, and "
                        "refreshes run in other sessions",
                        hint="write the value as a literal, or into a source column",
                    )

    def from_clause(self, select: exp.Select, conditions: list[exp.Expr]):
        """The FROM clause's relation; ``conditions`` (of subqueries' joins) read it too."""
        from_ = select.args.get("from_")
        if from_ is None:
            self.refuse(
                "SELECT without FROM", select, "a materialized view reads at least one table"
            )
        used = _used_columns(select, conditions)
        relation = self.table(from_.this, used)
        inner: list = [relation]
        conditions = []
        looked_up = False
        facts = [from_.this.alias_or_name]  # the tables a lookup join enriches the rows of
        for clause in select.args.get("joins") or []:
            side = (clause.args.get("side") or "").upper()
            kind = JOIN_KINDS.get((side, (clause.args.get("kind") or "").upper()))
            if kind is None:
                self.refuse(f"{side} {clause.args.get('kind')} JOIN".strip(), clause)
            lookup = is_lookup(clause, self.sql)
            if lookup:
                kind = LOOKUPS.get(kind) or self.refuse(
                    f"{kind.value.upper()} lookup join",
                    clause,
                    "a lookup join is an inner or a LEFT join",
                )
                check_marks_facts(clause, facts, self.sql)
            elif looked_up:
                self.refuse(
                    "a join after a lookup join",
                    clause,
                    "join the other tables first: lookup joins come last in FROM",
                )
            else:
                facts.append(clause.this.alias_or_name)
            looked_up = looked_up or lookup
            right = self.table(clause.this, used, lookup)
            on = clause.args.get("on")
            if kind is JoinKind.INNER:
                inner.append(right)
                if on is not None:
                    conditions.append(on.copy())
                continue
            left = (
                inner[0]
                if len(inner) == 1
                else Join(tuple(inner), exp.and_(*conditions) if conditions else None)
            )
            inner, conditions = [Join((left, right), on.copy() if on else None, kind)], []
        if len(inner) == 1 and not conditions:
            return inner[0]
        if len(inner) == 1:
            return Filter(inner[0], exp.and_(*conditions))
        return Join(tuple(inner), exp.and_(*conditions) if conditions else None)

    def table(self, source: exp.Expr, used: dict[str, list[str]], lookup: bool = False):
        """The relation a FROM item reads; ``lookup``: the dimension of a lookup join."""
        alias = source.alias_or_name
        if isinstance(source, exp.Subquery):
            return Subquery(self.query(source.this), alias)
        if not isinstance(source, exp.Table):
            self.refuse(f"{source.key.upper()} in FROM", source)
        if source.args.get("version") is not None and not lookup:
            self.refuse(
                "time travel (VERSION/TIMESTAMP AS OF)",
                source,
                "a view follows its sources' latest version (for Flink's lookup "
                "join, write JOIN t FOR SYSTEM_TIME AS OF fact.column)",
            )
        if not source.args.get("db") and source.name in self.ctes:
            return Subquery(self.ctes[source.name], alias)
        table = join(part.name for part in source.parts)
        read = tuple(used.get(alias, ()))
        for column in read:
            if column.lower().startswith(BOOKKEEPING_PREFIX):
                uses = [
                    (p, c)
                    for c in source.root().find_all(exp.Column)
                    if c.table == alias and c.name == column and (p := position_of(c))
                ]
                _, where = min(
                    uses, key=lambda use: (use[0].line, use[0].column), default=(None, source)
                )
                raise ReservedName(
                    f"column name {column} of {table} is reserved for ivm's bookkeeping "
                    f"(names starting with {BOOKKEEPING_PREFIX})",
                    self.sql,
                    position_of(where),
                    hint=f"rename it in the source table (ALTER TABLE {table} RENAME COLUMN "
                    f"{column} TO ..., with Delta column mapping), or leave it unread",
                )
        return Scan(table, alias, read, position=position_of(source))

    def output_columns(self, select: exp.Select, named: bool = True) -> list[tuple[str, exp.Expr]]:
        """(name, expression) per SELECT item; names must be unique, valid and not ours."""
        outputs = []
        for item in select.expressions:
            name = item.alias_or_name
            expression = item.this if isinstance(item, exp.Alias) else item
            if named and not isinstance(expression, exp.Column) and name.startswith("_col_"):
                raise InvalidQuery(
                    "a computed column of a materialized view needs a name",
                    self.sql,
                    position_of(item),
                    hint=f"name it: {expression.sql('spark')} AS some_name",
                )
            if name.startswith(BOOKKEEPING_PREFIX):
                raise ReservedName(
                    f"column name {name} is reserved for ivm's bookkeeping",
                    self.sql,
                    position_of(item),
                    hint="rename the column",
                )
            if any(name.lower() == seen.lower() for seen, _ in outputs):  # Delta ignores case
                raise InvalidQuery(
                    f"the view would have two columns named {name}",
                    self.sql,
                    position_of(item),
                    hint="give one of them an alias",
                )
            outputs.append((name, expression.copy()))
        return outputs

    def aggregate(self, relation, group, having, outputs, windows):
        """Aggregate(keys, calls) [→ Filter(HAVING)] under a Project naming keys and calls;
        window functions (evaluated after grouping) read the keys and calls too."""
        analytics = has_grouping_sets(group)
        expressions, sets = (
            grouping_sets(group)
            if analytics
            else (list(group.expressions) if group is not None else [], [])
        )
        # A one-row subquery's column is the same in every group: group by it as well.
        constants = [
            c
            for e in [e for _, e in outputs] + ([having.this] if having else [])
            for c in e.find_all(exp.Column)
            if c.table.startswith(SUBQUERY_PREFIX) and not c.find_ancestor(exp.AggFunc)
        ]
        keys: list[tuple[str, exp.Expr]] = []
        for expression in expressions + constants:
            if expression.find(exp.AggFunc):
                self.refuse("aggregate in GROUP BY", expression)
            if all(expression != key for _, key in keys):
                keys.append((f"{BOOKKEEPING_PREFIX}key{len(keys)}", expression.copy()))
        calls: list[tuple[str, AggregateCall]] = []
        self.scanned = _scan_aliases(relation)

        def replace(node: exp.Expr) -> exp.Expr:
            for name, key in keys:
                if node == key:
                    return exp.column(name)
            if isinstance(node, (exp.Grouping, exp.GroupingId)):
                return self.grouping(node, expressions, sets)
            if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
                node = node.this  # agg(x) FILTER (WHERE …) is one aggregate call
            if isinstance(node, exp.AggFunc) or _sorted_collection(node):
                call = self.aggregate_call(node)
                for name, existing in calls:
                    if existing == call:
                        return exp.column(name)
                name = f"{BOOKKEEPING_PREFIX}agg{len(calls)}"
                calls.append((name, call))
                return exp.column(name)
            if isinstance(node, exp.Column) and not (
                not node.table and node.name.startswith(WINDOW_PREFIX)
            ):
                raise InvalidQuery(
                    f"column {written(node)} is neither in GROUP BY nor inside an aggregate",
                    self.sql,
                    position_of(node),
                    hint="add it to GROUP BY or aggregate it",
                )
            return node

        projected = [(name, e.copy().transform(replace)) for name, e in outputs]
        over_groups = [
            (name, _window_inside(w, lambda e: e.transform(replace))) for name, w in windows
        ]
        predicate = having.this.copy().transform(replace) if having is not None else None
        if analytics:
            relation, keys, calls = _expanded(relation, keys, calls, len(expressions), sets)
        relation = Aggregate(relation, tuple(keys), tuple(calls))
        if predicate is not None:
            relation = Filter(relation, predicate)
        return relation, projected, over_groups

    def grouping(self, node: exp.Grouping | exp.GroupingId, expressions, sets) -> exp.Expr:
        """``grouping(e)`` or ``grouping_id(…)`` as a function of the grouping set's tag."""
        spelled = "grouping" if isinstance(node, exp.Grouping) else "grouping_id"
        if not sets:
            self.refuse(
                f"{spelled}() without GROUPING SETS, ROLLUP or CUBE",
                node,
                "group by ROLLUP, CUBE or GROUPING SETS, or remove it",
            )
        arguments = list(node.expressions)
        if isinstance(node, exp.Grouping) and len(arguments) != 1:
            self.refuse("grouping() of other than one column", node, "write grouping(column)")
        positions = [next((i for i, e in enumerate(expressions) if e == a), -1) for a in arguments]
        if -1 in positions:
            self.refuse(
                f"{spelled}() of an expression not in GROUP BY",
                node,
                "pass it expressions of the GROUP BY, as written there",
            )
        if (
            isinstance(node, exp.GroupingId)
            and arguments
            and positions != list(range(len(expressions)))
        ):
            self.refuse(
                "grouping_id() of other than all GROUP BY expressions",
                node,
                "write grouping_id() (over all of them, in order)",
            )
        if isinstance(node, exp.GroupingId):
            return grouping_value(
                sets, exp.column(SET_TAG), list(range(len(expressions))), GROUPING_ID_TYPE
            )
        return grouping_value(sets, exp.column(SET_TAG), positions, GROUPING_TYPE)

    def aggregate_call(self, node: exp.Expr) -> AggregateCall:
        if _sorted_collection(node):  # array_sort(collect_set(x)): recomputed per group
            collection = node.this.this if isinstance(node.this, exp.Filter) else node.this
            return AggregateCall(function_name(collection), None, node.copy())
        assert isinstance(node, exp.AggFunc)
        name = function_name(node)
        if name in ORDER_DEPENDENT_AGGREGATES:
            spelled = node.sql("spark").split("(", 1)[0]  # as Spark spells it
            self.refuse(
                f"aggregate function {spelled}",
                node,
                reason="its value depends on the order rows arrive in",
                hint=f"sort it: array_sort({node.sql('spark')}), or take its size"
                if name in COLLECTIONS
                else "use MIN or MAX, or an aggregate that does not depend on order",
            )
        argument = node.this
        if (
            argument is not None
            and not isinstance(argument, exp.Star)
            and argument.find(exp.AggFunc)
        ):
            self.refuse(
                "aggregate of an aggregate",
                node,
                "aggregate in a subquery, then aggregate its result",
            )
        function = INVERTIBLE.get(type(node))
        if (
            function is None
            or isinstance(argument, exp.Distinct)
            or isinstance(node.parent, exp.Filter)
        ):
            whole = node.parent if isinstance(node.parent, exp.Filter) else node
            return AggregateCall(name, None, _ties_broken(whole.copy()))
        if isinstance(argument, exp.Star) or argument is None:
            return AggregateCall("count")
        if function == "count":
            return AggregateCall("count", argument.copy())
        exact, decimal = _exact_argument(argument)
        if exact and decimal is not None and function == "avg":
            precision, scale = decimal
            exact = (
                precision <= AVERAGED_DECIMALS[0]
                and scale >= AVERAGED_DECIMALS[1]
                and self.typed_from_schema(argument)
            )
        if not exact:
            return AggregateCall(name, None, node.copy())
        return AggregateCall(function, argument.copy(), decimal=decimal)

    def typed_from_schema(self, argument: exp.Expr) -> bool:
        """``argument`` is a column of a source table, so its type is the schema's (sqlglot
        may type a derived column narrower than Spark does)."""
        return isinstance(argument, exp.Column) and argument.table in self.scanned


def _ties_broken(call: exp.Expr) -> exp.Expr:
    """``call`` with a ``max_by(v, o)`` or ``min_by(v, o)`` in it ordered by ``(o, v)``, so
    that rows tied in ``o`` give one answer whatever order they are read in (the largest
    ``v`` for ``max_by``, the smallest for ``min_by``); a row whose ``o`` is NULL still
    counts for nothing.

    >>> from ivm.names import DIALECT
    >>> print(_ties_broken(exp.maybe_parse("max_by(z, seq)", dialect=DIALECT)).sql(DIALECT))
    MAX_BY(z, IF(seq IS NULL, NULL, STRUCT(seq, z)))
    """
    for by in list(call.find_all(exp.ArgMax, exp.ArgMin)):
        order, value = by.expression, by.this
        by.set(
            "expression",
            exp.If(
                this=exp.Is(this=order.copy(), expression=exp.Null()),
                true=exp.Null(),
                false=exp.Struct(expressions=[order.copy(), value.copy()]),
            ),
        )
    return call


def _spelled(node: exp.Expr) -> str:
    """A function's name as :func:`function_name` gives it; another node's kind."""
    return function_name(node) if isinstance(node, exp.Func) else node.key


def _sorted_collection(node: exp.Expr) -> bool:
    """``node`` sorts (or counts) an aggregate that collects values into an array, so its
    value does not depend on the order rows arrive in: ``array_sort(collect_set(x))``,
    ``sort_array(collect_list(x) FILTER (WHERE …))``, ``size(collect_set(x))``."""
    wraps = isinstance(node, (exp.ArraySort, exp.ArraySize)) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == "cardinality"
    )
    inner = node.this if wraps else None
    if isinstance(inner, exp.Filter):
        inner = inner.this
    return isinstance(inner, exp.AggFunc) and function_name(inner) in COLLECTIONS


def _expanded(relation, keys, calls, grouped: int, sets: list[tuple[int, ...]]):
    """The input of a GROUPING SETS aggregate expanded once per set, and its keys (the first
    ``grouped`` its GROUP BY expressions, NULL outside their sets, then the set's tag) and
    calls over the expansion's columns (see :mod:`ivm.frontend.grouping_sets`)."""
    read: dict[tuple[str, str], tuple[str, exp.Column]] = {}

    def plain(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            key = (node.table, node.name)
            if key not in read:
                read[key] = (f"{BOOKKEEPING_PREFIX}c{len(read)}", node.copy())
            return exp.column(read[key][0])
        return node

    def renamed(expression: exp.Expr | None) -> exp.Expr | None:
        return expression.copy().transform(plain) if expression is not None else None

    tag = exp.column(SET_TAG)
    new_keys = []
    for position, (name, expression) in enumerate(keys):
        holding = [i for i, held in enumerate(sets) if position in held]
        value = renamed(expression)
        if position < grouped and len(holding) < len(sets):
            value = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.In(
                            this=tag.copy(), expressions=[exp.Literal.number(i) for i in holding]
                        ),
                        true=value,
                    )
                ]
            )
        new_keys.append((name, value))
    new_calls = [
        (
            name,
            AggregateCall(call.function, renamed(call.argument), renamed(call.call), call.decimal),
        )
        for name, call in calls
    ]
    named = Project(
        relation, tuple(read.values()) or ((f"{BOOKKEEPING_PREFIX}c0", exp.Literal.number(1)),)
    )
    expansion = Generate(
        named,
        exp.Explode(this=exp.Array(expressions=[exp.Literal.number(i) for i in range(len(sets))])),
        (SET_TAG,),
    )
    return expansion, new_keys + [(SET_TAG, tag)], new_calls


def _exact_type(data_type: exp.DataType | None) -> tuple[bool, tuple[int, int] | None]:
    """Whether a SUM of values of ``data_type`` is exact, and (precision, scale) if it is a
    DECIMAL.

    >>> _exact_type(exp.DataType.build("DECIMAL(38, 18)")), _exact_type(exp.DataType.build("INT"))
    ((True, (38, 18)), (True, None))
    >>> _exact_type(exp.DataType.build("DOUBLE")), _exact_type(None)
    ((False, None), (False, None))
    >>> _exact_type(exp.DataType.build("DECIMAL(38, 38)"))
    (False, (38, 38))
    """
    if data_type is None or data_type.this.name not in EXACT_TYPES:
        return False, None
    if data_type.this.name != "DECIMAL":
        return True, None
    params = [int(p.name) for p in data_type.expressions] + [10, 0][len(data_type.expressions) :]
    precision, scale = params[0], params[1] if len(data_type.expressions) != 1 else 0
    return scale < 38, (precision, scale)  # no + of two DECIMAL(38, 38) keeps every digit


def _exact_argument(argument: exp.Expr) -> tuple[bool, tuple[int, int] | None]:
    """:func:`_exact_type` of ``argument``, exact only if every number in it is: sqlglot
    types ``d * 1.5e0`` or ``COALESCE(d, f)`` as DECIMAL where Spark computes a DOUBLE.

    Spark reads ``1.5`` as a DECIMAL, ``1.5e0`` as a DOUBLE.
    """
    for node in argument.walk():
        if isinstance(node, exp.Literal):
            if node.is_number and "e" in node.this.lower():
                return False, None
        elif (
            node.type is not None
            and node.type.this in exp.DataType.NUMERIC_TYPES
            and not _exact_type(node.type)[0]
        ):
            return False, None
    return _exact_type(argument.type)


def _scan_aliases(relation) -> set[str]:
    """The aliases of the source tables ``relation`` reads directly (not in a subquery)."""
    if isinstance(relation, Scan):
        return {relation.alias}
    if isinstance(relation, Subquery):
        return set()
    return {alias for child in children(relation) for alias in _scan_aliases(child)}


def _clause_name(node: exp.Expr) -> str:
    if isinstance(node, exp.AggFunc):
        return "an aggregate"
    if isinstance(node, exp.Window):
        return "a window function"
    return {
        exp.Where: "WHERE",
        exp.Group: "GROUP BY",
        exp.Having: "HAVING",
        exp.Join: "a join condition",
    }[type(node)]


def _extract_windows(outputs, qualify):
    """Replace each window function in ``outputs`` and ``qualify`` by a column naming it;
    returns the outputs, the ``(name, window)`` pairs (each distinct window once) and the
    qualify predicate."""
    windows: list[tuple[str, exp.Window]] = []

    def replace(node):
        if not isinstance(node, exp.Window):
            return node
        for name, known in windows:
            if known == node:
                return exp.column(name)
        name = f"{WINDOW_PREFIX}{len(windows)}"
        windows.append((name, node.copy()))
        return exp.column(name)

    outputs = [(name, e.transform(replace)) for name, e in outputs]
    qualify = qualify.copy().transform(replace) if qualify is not None else None
    return outputs, windows, qualify


def _window_inside(window: exp.Window, transform=None) -> exp.Expr:
    """What a window function reads: its arguments, PARTITION BY and ORDER BY.

    Without ``transform``, those as one tuple expression (to search); with it, ``window``
    with ``transform`` applied to each of them (not to the function itself).
    """
    window = window.copy()
    function = window.this
    while isinstance(function, (exp.IgnoreNulls, exp.RespectNulls)):
        function = function.this
    parts = [(function, key) for key in function.args] + [
        (window, key) for key in ("partition_by", "order")
    ]
    if transform is None:
        found = []
        for owner, key in parts:
            value = owner.args.get(key)
            found += [
                v
                for v in (value if isinstance(value, list) else [value])
                if isinstance(v, exp.Expr)
            ]
        return exp.Tuple(expressions=found)
    for owner, key in parts:
        value = owner.args.get(key)
        if isinstance(value, list):
            owner.set(key, [transform(v) if isinstance(v, exp.Expr) else v for v in value])
        elif isinstance(value, exp.Expr):
            owner.set(key, transform(value))
    return window


def _own_nodes(root: exp.Expr):
    """The nodes of ``root`` outside its nested queries (those are lowered on their own)."""

    def prune(node):
        return node is not root and isinstance(node, (exp.Select, exp.SetOperation))

    return root.walk(prune=prune)


def _used_columns(select: exp.Select, conditions) -> dict[str, list[str]]:
    """Columns referenced per table alias in ``select``'s own scope and in ``conditions``,
    in order of first use."""
    used: dict[str, list[str]] = {}
    nodes = [n for node in [select, *conditions] for n in _own_nodes(node)]
    for column in nodes:
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
        lowering.refuse(
            f"{name} of queries with different numbers of columns",
            query.right,
            "select the same number of columns in every branch",
        )
    if own == names:
        return plan
    return Project(plan, tuple((n, exp.column(o)) for n, o in zip(names, own, strict=True)))
