"""Lower a qualified sqlglot SELECT to the relational IR, refusing what has no rule.

One SELECT block becomes, bottom-up::

    Scan | Join(scans)  →  Filter(WHERE)  →  Aggregate(GROUP BY)  →  Project(SELECT)  →  Distinct

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
from ivm.ir import Aggregate, AggregateCall, Distinct, Filter, Join, Project, Scan
from ivm.zset import BOOKKEEPING_PREFIX

SUPPORTED_AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg"}

NONDETERMINISTIC = {"rand", "random", "randn", "uuid", "shuffle", "current_timestamp", "now",
                    "current_date", "curdate", "localtimestamp", "unix_timestamp",
                    "monotonically_increasing_id", "spark_partition_id", "input_file_name"}

# Clauses of a SELECT that this version does not maintain, with what to do instead.
REFUSED_CLAUSES = {
    "with_": ("WITH (common table expression)",
              "common table expressions are not supported yet; join the tables directly"),
    "pivots": ("PIVOT", "pivot when you query the view, or GROUP BY the pivot column"),
    "order": ("ORDER BY", "a view has no order: order the rows when you query the view"),
    "limit": ("LIMIT", "top-N views are not supported yet; filter on a column instead"),
    "offset": ("OFFSET", "query the view with OFFSET instead"),
    "having": ("HAVING", "HAVING is not supported yet; filter the view when you query it"),
    "qualify": ("QUALIFY", "window filters are not supported yet"),
    "windows": ("WINDOW clause", "window functions are not supported yet"),
    "laterals": ("LATERAL VIEW", "explode the data into a source table first"),
    "sample": ("TABLESAMPLE", "sampling is not deterministic; remove it"),
    "cluster": ("CLUSTER BY", "remove it: a view has no order"),
    "distribute": ("DISTRIBUTE BY", "remove it: a view has no physical order"),
    "sort": ("SORT BY", "remove it: a view has no order"),
}


def lower(query: exp.Expression, sql: str) -> Project | Distinct:
    """The IR of a qualified query; raises :class:`UnsupportedQuery` for what has no rule."""
    if isinstance(query, exp.SetOperation):
        name = {exp.Union: "UNION", exp.Intersect: "INTERSECT", exp.Except: "EXCEPT"}.get(
            type(query), "set operation")
        raise UnsupportedQuery(name, sql, position_of(query.right),
                               hint="set operations are not supported yet")
    if not isinstance(query, exp.Select):
        raise UnsupportedQuery(query.key.upper(), sql, position_of(query))
    _refuse_clauses(query, sql)
    _refuse_expressions(query, sql)

    relation = _lower_from(query, sql)
    where = query.args.get("where")
    if where is not None:
        relation = Filter(relation, where.this.copy())

    outputs = _output_columns(query, sql)
    group = query.args.get("group")
    if group is not None or any(e.find(exp.AggFunc) for _, e in outputs):
        relation, outputs = _lower_aggregate(relation, group, outputs, sql)
    plan = Project(relation, tuple(outputs))
    distinct = query.args.get("distinct")
    if distinct is not None:
        if distinct.args.get("on"):
            raise UnsupportedQuery("DISTINCT ON", sql, position_of(distinct))
        if isinstance(plan.input, Aggregate):
            raise UnsupportedQuery("SELECT DISTINCT together with GROUP BY", sql,
                                   position_of(query), hint="the groups are already distinct "
                                   "when every GROUP BY key is selected; drop DISTINCT")
        return Distinct(plan)
    return plan


def _refuse_clauses(select: exp.Select, sql: str) -> None:
    for arg, (name, hint) in REFUSED_CLAUSES.items():
        value = select.args.get(arg)
        if value:
            node = value[0] if isinstance(value, list) else value
            raise UnsupportedQuery(name, sql, position_of(node), hint=hint)
    group = select.args.get("group")
    if group is not None:
        for arg, name in (("rollup", "ROLLUP"), ("cube", "CUBE"),
                          ("grouping_sets", "GROUPING SETS")):
            if group.args.get(arg):
                raise UnsupportedQuery(name, sql, position_of(group),
                                       hint="define one view per grouping instead")


def _refuse_expressions(select: exp.Select, sql: str) -> None:
    for node in select.walk():
        if isinstance(node, exp.Window):
            raise UnsupportedQuery("window function", sql, position_of(node),
                                   hint="window functions are not supported yet")
        if isinstance(node, (exp.Subquery, exp.Exists)) or (
                isinstance(node, exp.Select) and node is not select):
            raise UnsupportedQuery("subquery", sql, position_of(node),
                                   hint="subqueries are not supported yet; join the tables")
        if isinstance(node, exp.Func):
            name = (node.sql_name() if not isinstance(node, exp.Anonymous)
                    else node.name).lower()
            if name in NONDETERMINISTIC or isinstance(node, (exp.Rand, exp.Randn, exp.Uuid,
                                                             exp.CurrentTimestamp,
                                                             exp.CurrentDate)):
                raise UnsupportedQuery(
                    f"non-deterministic function {name}()", sql, position_of(node),
                    reason="its value changes between refreshes, so no change of the "
                    "sources explains a change of the view",
                    hint="compute the value into a source column when the row is written")


def _lower_from(select: exp.Select, sql: str) -> Scan | Join:
    from_ = select.args.get("from_")
    if from_ is None:
        raise UnsupportedQuery("SELECT without FROM", sql, position_of(select),
                               hint="a materialized view reads at least one table")
    used = _used_columns(select)
    scans = [_scan(from_.this, used, sql)]
    conditions = []
    for join in select.args.get("joins") or []:
        kind = (join.args.get("kind") or "").upper()
        side = (join.args.get("side") or "").upper()
        if side or kind not in ("", "INNER", "CROSS"):
            name = " ".join(p for p in (side, kind) if p) + " JOIN"
            raise UnsupportedQuery(name, sql, position_of(join),
                                   hint="only inner joins are supported in this version")
        scans.append(_scan(join.this, used, sql))
        if join.args.get("on") is not None:
            conditions.append(join.args["on"].copy())
    if len(scans) == 1:
        return scans[0]
    condition = exp.and_(*conditions) if conditions else None
    return Join(tuple(scans), condition)


def _scan(source: exp.Expression, used: dict[str, list[str]], sql: str) -> Scan:
    if not isinstance(source, exp.Table):
        raise UnsupportedQuery("subquery in FROM", sql, position_of(source),
                               hint="subqueries are not supported yet; join the tables")
    if source.args.get("version") is not None:
        raise UnsupportedQuery("time travel (VERSION/TIMESTAMP AS OF)", sql,
                               position_of(source),
                               hint="a view follows its sources' latest version")
    table = ".".join(part.name for part in source.parts)
    alias = source.alias_or_name
    return Scan(table, alias, tuple(used.get(alias, ())), position=position_of(source))


def _used_columns(select: exp.Select) -> dict[str, list[str]]:
    """Columns referenced per table alias, in order of first use."""
    used: dict[str, list[str]] = {}
    for column in select.find_all(exp.Column):
        names = used.setdefault(column.table, [])
        if column.name not in names:
            names.append(column.name)
    return used


def _output_columns(select: exp.Select, sql: str) -> list[tuple[str, exp.Expression]]:
    """(name, expression) per SELECT item; names must be unique, valid and not ours."""
    outputs = []
    for item in select.expressions:
        name = item.alias_or_name
        expression = item.this if isinstance(item, exp.Alias) else item
        if not isinstance(expression, exp.Column) and name.startswith("_col_"):
            raise CatalogError("a computed column of a materialized view needs a name", sql,
                               position_of(item),
                               hint=f"name it: {expression.sql('spark')} AS some_name")
        if name.startswith(BOOKKEEPING_PREFIX):
            raise CatalogError(f"column name {name} is reserved for ivm's bookkeeping", sql,
                               position_of(item), hint="rename the column")
        if any(name.lower() == seen.lower() for seen, _ in outputs):  # Delta ignores case
            raise CatalogError(f"the view would have two columns named {name}", sql,
                               position_of(item), hint="give one of them an alias")
        outputs.append((name, expression.copy()))
    return outputs


def _lower_aggregate(relation, group: exp.Group | None, outputs, sql: str):
    """Aggregate(keys, calls) under a Project whose columns name keys and calls."""
    keys: list[tuple[str, exp.Expression]] = []
    for expression in (group.expressions if group is not None else []):
        if expression.find(exp.AggFunc):
            raise UnsupportedQuery("aggregate in GROUP BY", sql, position_of(expression))
        if all(expression != key for _, key in keys):
            keys.append((f"{BOOKKEEPING_PREFIX}key{len(keys)}", expression.copy()))
    calls: list[tuple[str, AggregateCall]] = []

    def replace(node: exp.Expression) -> exp.Expression:
        for name, key in keys:
            if node == key:
                return exp.column(name)
        if isinstance(node, exp.AggFunc):
            call = _aggregate_call(node, sql)
            for name, existing in calls:
                if existing == call:
                    return exp.column(name)
            name = f"{BOOKKEEPING_PREFIX}agg{len(calls)}"
            calls.append((name, call))
            return exp.column(name)
        if isinstance(node, exp.Column):
            raise CatalogError(
                f"column {node.sql('spark')} is neither in GROUP BY nor inside an aggregate",
                sql, position_of(node), hint="add it to GROUP BY or aggregate it")
        return node

    projected = [(name, expression.copy().transform(replace)) for name, expression in outputs]
    return Aggregate(relation, tuple(keys), tuple(calls)), projected


def _aggregate_call(node: exp.AggFunc, sql: str) -> AggregateCall:
    function = SUPPORTED_AGGREGATES.get(type(node))
    if function is None:
        name = node.sql_name().upper() if not isinstance(node, exp.Anonymous) else node.name
        raise UnsupportedQuery(f"aggregate function {name}", sql, position_of(node),
                               hint="COUNT, SUM and AVG are maintained in this version")
    argument = node.this
    if isinstance(argument, exp.Distinct):
        raise UnsupportedQuery(f"{function.upper()}(DISTINCT …)", sql, position_of(node),
                               hint="aggregates of distinct values are not supported yet")
    if node.find(exp.Filter) is not None or isinstance(node.parent, exp.Filter):
        raise UnsupportedQuery("aggregate FILTER (WHERE …)", sql, position_of(node),
                               hint="use SUM(CASE WHEN … THEN x END) instead")
    if isinstance(argument, exp.Star) or argument is None:
        if function != "count":
            raise UnsupportedQuery(f"{function.upper()}(*)", sql, position_of(node))
        return AggregateCall("count")
    if argument.find(exp.AggFunc):
        raise UnsupportedQuery("aggregate of an aggregate", sql, position_of(node))
    return AggregateCall(function, argument.copy())
