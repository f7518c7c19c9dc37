"""Subqueries in expressions become joins, so that join rules maintain them.

For an outer query over ``R`` and a subquery over ``S`` (``p`` its conditions on ``S`` alone)::

    WHERE EXISTS (SELECT … FROM S WHERE S.k = R.k AND p)     R ⋉ σp(S)  ON S.k = R.k
    WHERE NOT EXISTS (…)                                      R ▷ σp(S)  ON S.k = R.k
    WHERE x IN (SELECT y FROM S …)                            R ⋉ S      ON x = y
    WHERE x NOT IN (SELECT y FROM S …)                        (R ▷ S ON x = y) × C
                                                WHERE C.n = 0 OR (x IS NOT NULL AND C.nulls = 0)
    (SELECT agg FROM S …), uncorrelated                       R × (SELECT agg FROM S …)
    (SELECT agg FROM S WHERE S.k = R.k AND p), correlated     R ⟕ (SELECT agg, S.k FROM σp(S)
                                                                    GROUP BY S.k)  ON S.k = R.k

``C = SELECT COUNT(*) AS n, COUNT(*) - COUNT(y) AS nulls FROM S`` carries SQL's rule for
``NOT IN``: it is true over an empty ``S``, and unknown (so false in WHERE) for a NULL ``x``
or when ``S`` holds a NULL. An uncorrelated ``EXISTS`` is ``R × (SELECT COUNT(*) AS n FROM
S) WHERE n > 0``. A scalar subquery must be an aggregate without ``GROUP BY``, so it has
exactly one row (per correlation key). A correlated one is an inner join where it is compared
in a conjunct of WHERE (an unmatched row fails the comparison either way), else a left join;
a key without rows takes the aggregate's value over no rows (``COUNT`` 0, the others NULL).

Correlation is by conditions in the subquery's WHERE: for a scalar subquery, equalities
between its columns and the outer query's; for ``EXISTS``, any (an equality gives the semi or
anti join a key, see :mod:`ivm.rules.join`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from sqlglot import exp

from ivm.ir import JoinKind, Relation, Subquery

SUBQUERY_PREFIX = "_ivm_sq"
VALUE, FOUND = "value", "found"
COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


@dataclass
class Unnested:
    """A SELECT with its subqueries replaced by columns of the joins that compute them.

    ``crossed`` are one-row relations joined to the FROM clause before WHERE; ``steps``
    apply after WHERE, in order: a ``(kind, relation, condition)`` join, or a filter
    ``(None, None, predicate)``.
    """

    select: exp.Select
    crossed: list = field(default_factory=list)
    steps: list = field(default_factory=list)

    def expressions(self) -> list[exp.Expr]:
        """The conditions of the joins and filters (they read the outer query's columns)."""
        return [condition for _, _, condition in self.steps if condition is not None]


class Lowering(Protocol):
    """What unnesting asks of the lowering that calls it (:func:`ivm.frontend.lower.lower`):
    the plan of a subquery, a refusal that names the SQL, and the count that numbers the
    relations computing subqueries, shared by every SELECT of the query."""

    subqueries: int

    def query(self, query: exp.Expr) -> Relation: ...

    def refuse(
        self, construct: str, node: exp.Expr | None, hint: str | None = None, **kw: str
    ) -> NoReturn: ...


def sources_of(select: exp.Select) -> set[str]:
    """The aliases a SELECT's FROM clause defines, its lateral views' among them."""
    from_ = select.args.get("from_")
    items = (
        ([from_.this] if from_ is not None else [])
        + [j.this for j in select.args.get("joins") or []]
        + list(select.args.get("laterals") or [])
    )
    return {item.alias_or_name for item in items}


def unnest(lowering: Lowering, select: exp.Select) -> Unnested:
    """``select`` (a copy) with every supported subquery in WHERE, SELECT and HAVING
    replaced; what is left (a subquery under OR, in ON, …) the caller refuses."""
    return _Unnesting(lowering, select.copy()).run()


class _Unnesting:
    def __init__(self, lowering: Lowering, select: exp.Select):
        self.lowering = lowering
        self.result = Unnested(select)
        self.outer = sources_of(select)

    def refuse(self, construct, node, hint=None, **kw) -> NoReturn:
        self.lowering.refuse(construct, node, hint, **kw)

    def alias(self) -> str:
        self.lowering.subqueries += 1
        return f"{SUBQUERY_PREFIX}{self.lowering.subqueries - 1}"

    def run(self) -> Unnested:
        select = self.result.select
        where = select.args.get("where")
        kept = []
        if where is not None:
            for conjunct in _conjuncts(where.this):
                if not self.membership(conjunct):
                    kept.append(conjunct)
        late = []  # conjuncts that read a correlated scalar: filtered after its join
        for conjunct in kept:
            compared = [
                s
                for s in _scalars(conjunct)
                if isinstance(s.parent, COMPARISONS) and s.parent is conjunct
            ]
            before = len(self.result.steps)
            for scalar in _scalars(conjunct):
                self.scalar(scalar, inner_join=any(scalar is c for c in compared))
            if len(self.result.steps) > before:
                late.append(conjunct)
        select.set(
            "where",
            exp.Where(this=exp.and_(*(c for c in kept if not any(c is x for x in late))))
            if len(kept) > len(late)
            else None,
        )
        for conjunct in late:
            self.result.steps.append((None, None, conjunct))
        for item in select.expressions:
            for scalar in _scalars(item):
                self.scalar(scalar, inner_join=False)
        having = select.args.get("having")
        if having is not None:
            for scalar in _scalars(having):
                if self.correlation(scalar.this)[0]:
                    self.refuse(
                        "correlated subquery in HAVING",
                        scalar,
                        "join the subquery's table and group it in a subquery",
                    )
                self.scalar(scalar, inner_join=False)
        return self.result

    # -- EXISTS and IN ----------------------------------------------------------------------

    def membership(self, conjunct: exp.Expr) -> bool:
        """Turn a conjunct ``[NOT] EXISTS (…)`` or ``x [NOT] IN (…)`` into a join step."""
        negated = isinstance(conjunct, exp.Not)
        test = conjunct.this if negated else conjunct
        if isinstance(test, exp.Exists):
            self.exists(test, negated)
            return True
        if isinstance(test, exp.In) and test.args.get("query") is not None:
            self.in_query(test, negated)
            return True
        return False

    def exists(self, node: exp.Exists, negated: bool) -> None:
        query = node.this
        if not isinstance(query, exp.Select):
            self.refuse("EXISTS over a set operation", node, "use EXISTS for each branch")
        correlated, local = self.correlation(query)
        if not correlated:
            counted = exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(
                exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier("e")))
            )
            alias = self.alias()
            self.result.crossed.append(Subquery(self.lowering.query(counted), alias))
            test = exp.EQ if negated else exp.GT
            self.result.steps.append(
                (None, None, test(this=exp.column("n", alias), expression=exp.Literal.number(0)))
            )
            return
        self.refuse_grouped(query, "EXISTS")
        alias = self.alias()
        inner, condition = self.correlated_inner(query, local, correlated, alias)
        kind = JoinKind.ANTI if negated else JoinKind.SEMI
        self.result.steps.append((kind, Subquery(inner, alias), condition))

    def in_query(self, node: exp.In, negated: bool) -> None:
        query = node.args["query"].this
        probe = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
        selected = query.selects if isinstance(query, exp.Select) else None
        correlated, local = self.correlation(query) if selected is not None else ([], [])
        width = len(selected) if selected is not None else len(query.named_selects)
        if width != len(probe):
            self.refuse(
                f"IN with {len(probe)} column(s) against a subquery of {width}",
                node,
                "select as many columns in the subquery as you compare",
            )
        alias = self.alias()
        if correlated:
            assert selected is not None  # only a SELECT is searched for correlation
            if negated:
                self.refuse("correlated NOT IN", node, "write it as NOT EXISTS")
            self.refuse_grouped(query, "IN")
            names = [f"{VALUE}{i}" for i in range(width)]
            inner, condition = self.correlated_inner(
                query,
                local,
                correlated,
                alias,
                list(
                    zip(
                        names,
                        (s.this if isinstance(s, exp.Alias) else s for s in selected),
                        strict=True,
                    )
                ),
            )
        else:
            names = [f"{VALUE}{i}" for i in range(width)]
            inner = self.lowering.query(_renamed(query, names))
            condition = None
        equal = [
            exp.EQ(this=x.copy(), expression=exp.column(n, alias))
            for x, n in zip(probe, names, strict=True)
        ]
        condition = exp.and_(*equal, *([condition] if condition is not None else []))
        kind = JoinKind.ANTI if negated else JoinKind.SEMI
        self.result.steps.append((kind, Subquery(inner, alias), condition))
        if negated:
            if width != 1:
                self.refuse("NOT IN of several columns", node, "write it as NOT EXISTS")
            self.not_in_nulls(query, probe[0], names[0])

    def not_in_nulls(self, query, probe: exp.Expr, name: str) -> None:
        """The rows ``x NOT IN (S)`` keeps beyond the anti join: ``S`` empty, or ``x`` and
        every value of ``S`` not NULL."""
        source = exp.Subquery(
            this=_renamed(query, [name]), alias=exp.TableAlias(this=exp.to_identifier("e"))
        )
        counts = exp.select(
            exp.alias_(exp.Count(this=exp.Star()), "n"),
            exp.alias_(
                exp.Sub(
                    this=exp.Count(this=exp.Star()),
                    expression=exp.Count(this=exp.column(name, "e")),
                ),
                "nulls",
            ),
        ).from_(source)
        alias = self.alias()
        self.result.steps.append(
            (JoinKind.INNER, Subquery(self.lowering.query(counts), alias), None)
        )
        empty = exp.EQ(this=exp.column("n", alias), expression=exp.Literal.number(0))
        known = exp.and_(
            exp.Not(this=exp.Is(this=probe.copy(), expression=exp.Null())),
            exp.EQ(this=exp.column("nulls", alias), expression=exp.Literal.number(0)),
        )
        self.result.steps.append((None, None, exp.or_(empty, known)))

    # -- scalar subqueries ------------------------------------------------------------------

    def scalar(self, node: exp.Subquery, inner_join: bool) -> None:
        """Replace a scalar subquery by a column of a joined one-row (per key) relation."""
        query = node.this
        if (
            not isinstance(query, exp.Select)
            or len(query.selects) != 1
            or query.args.get("group") is not None
            or not query.selects[0].find(exp.AggFunc)
        ):
            self.refuse(
                "scalar subquery that is not one aggregate",
                node,
                reason="only an aggregate without GROUP BY is sure to return one row",
                hint="aggregate it, e.g. (SELECT MAX(x) FROM …)",
            )
        correlated, local = self.correlation(query)
        alias = self.alias()
        value = query.selects[0]
        value = value.this if isinstance(value, exp.Alias) else value
        if not correlated:
            self.result.crossed.append(
                Subquery(self.lowering.query(_renamed(query, [VALUE])), alias)
            )
            node.replace(exp.column(VALUE, alias))
            return
        if query.args.get("having") is not None:
            self.refuse("HAVING in a correlated subquery", query.args["having"])
        empty = _over_no_rows(value)
        inner_join = inner_join and isinstance(empty, exp.Null)
        columns = [(VALUE, value)] + ([] if inner_join else [(FOUND, exp.Literal.number(1))])
        inner, condition = self.correlated_inner(
            query, local, correlated, alias, columns, grouped=True
        )
        kind = JoinKind.INNER if inner_join else JoinKind.LEFT
        self.result.steps.append((kind, Subquery(inner, alias), condition))
        found = exp.column(VALUE, alias)
        if not inner_join:
            found = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.Is(this=exp.column(FOUND, alias), expression=exp.Null()),
                        true=empty,
                    )
                ],
                default=found,
            )
        node.replace(found)

    # -- correlation ------------------------------------------------------------------------

    def correlation(self, query) -> tuple[list, list]:
        """(correlated, local) conjuncts of a subquery's WHERE; refuses a correlated
        reference anywhere else."""
        if not isinstance(query, exp.Select):
            return [], []
        inner = sources_of(query)
        where = query.args.get("where")
        correlated, local = [], []
        for conjunct in _conjuncts(where.this) if where is not None else []:
            outer = self.outer_columns(conjunct, inner)
            (correlated if outer else local).append(conjunct)
        for part in [e for e in query.expressions] + [
            query.args.get(a) for a in ("group", "having", "joins") if query.args.get(a)
        ]:
            for piece in part if isinstance(part, list) else [part]:
                if self.outer_columns(piece, inner):
                    self.refuse(
                        "correlated reference outside the subquery's WHERE",
                        piece,
                        "correlate the subquery in its WHERE clause",
                    )
        return correlated, local

    def outer_columns(self, expression: exp.Expr, inner: set[str]) -> list[exp.Column]:
        """The columns of ``expression`` that belong to the outer query."""
        found = []
        for column in expression.find_all(exp.Column):
            if column.table and column.table not in inner and not _nested(column, expression):
                if column.table not in self.outer:
                    self.lowering.refuse(
                        "subquery correlated with a query two levels out",
                        column,
                        "join the tables one level at a time",
                    )
                found.append(column)
        return found

    def correlated_inner(
        self, query: exp.Select, local, correlated, alias, columns=(), grouped: bool = False
    ):
        """The subquery without its correlated conjuncts, selecting ``columns`` and the
        inner sides of the correlation (grouped by them when ``grouped``); returns its
        plan and the join condition over ``alias``."""
        inner_aliases = sources_of(query)
        keys: list[exp.Expr] = []
        condition = []
        for conjunct in correlated:
            if grouped:  # a scalar: only equalities, each between an inner and an outer side
                keys.append(self.inner_side(conjunct, inner_aliases))
                continue

            def to_inner(node, conjunct=conjunct):
                if isinstance(node, exp.Column) and node.table in inner_aliases:
                    if all(node != k for k in keys):
                        keys.append(node.copy())
                    return exp.column(f"key{[k == node for k in keys].index(True)}", alias)
                return node

            condition.append(conjunct.copy().transform(to_inner))
        if grouped:
            condition = [
                exp.EQ(
                    this=exp.column(f"key{i}", alias),
                    expression=next(
                        c for c in (conjunct.this, conjunct.expression) if c is not key
                    ).copy(),
                )
                for i, (key, conjunct) in enumerate(zip(keys, correlated, strict=True))
            ]
        body = exp.Select(
            expressions=[exp.alias_(e.copy(), n) for n, e in columns]
            + [exp.alias_(k.copy(), f"key{i}") for i, k in enumerate(keys)]
        )
        body.set("from_", query.args["from_"].copy())
        for clause in ("joins", "laterals"):
            if query.args.get(clause):
                body.set(clause, [c.copy() for c in query.args[clause]])
        if local:
            body.set("where", exp.Where(this=exp.and_(*(c.copy() for c in local))))
        if grouped:
            body.set("group", exp.Group(expressions=[k.copy() for k in keys]))
        if not body.expressions:
            body.set("expressions", [exp.alias_(exp.Literal.number(1), "one")])
        return self.lowering.query(body), exp.and_(*condition)

    def inner_side(self, conjunct: exp.Expr, inner_aliases) -> exp.Expr:
        """The inner side of ``conjunct``, a correlated scalar subquery's equality between an
        inner and an outer side; any other condition is refused."""
        sides = None
        if isinstance(conjunct, exp.EQ):
            left, right = conjunct.this, conjunct.expression
            if not self.outer_columns(left, inner_aliases):
                sides = (left, right)
            elif not self.outer_columns(right, inner_aliases):
                sides = (right, left)
        if sides is None or not sides[0].find(exp.Column):
            self.refuse(
                "correlated scalar subquery with a condition other than column equality",
                conjunct,
                "correlate with equalities (inner.column = outer.column)",
            )
        return sides[0]

    def refuse_grouped(self, query: exp.Select, what: str) -> None:
        for arg in ("group", "having", "limit", "distinct"):
            if query.args.get(arg):
                self.refuse(
                    f"correlated {what} subquery with {arg.upper()}",
                    query.args[arg],
                    "compute the grouped relation in a CTE and correlate with it",
                )
        if any(s.find(exp.AggFunc) for s in query.selects) and what == "IN":
            self.refuse(
                f"correlated {what} subquery with an aggregate",
                query,
                "compute the aggregate in a CTE and join it",
            )


def _renamed(query: exp.Query, names: list[str]) -> exp.Query:
    """``query`` selecting its columns under ``names`` (a set operation: its first branch)."""
    query = query.copy()
    first = query
    while isinstance(first, exp.SetOperation):
        first = first.this
    first.set(
        "expressions",
        [
            exp.alias_(s.this if isinstance(s, exp.Alias) else s, n)
            for s, n in zip(first.selects, names, strict=True)
        ],
    )
    return query


def _nested(node: exp.Expr | None, root: exp.Expr) -> bool:
    """Whether ``node`` sits in a subquery of ``root`` (which resolves it on its own)."""
    while node is not root and node is not None:
        if isinstance(node, (exp.Subquery, exp.Exists)):
            return True
        node = node.parent
    return False


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    condition = condition.unnest() if isinstance(condition, exp.Paren) else condition
    if isinstance(condition, exp.And):
        return [c for part in (condition.this, condition.expression) for c in _conjuncts(part)]
    return [condition]


def _scalars(expression: exp.Expr) -> list[exp.Subquery]:
    """The scalar subqueries of ``expression`` (not those under EXISTS, IN or another
    subquery, which their own query lowers)."""
    return [
        s
        for s in expression.find_all(exp.Subquery)
        if isinstance(s.this, exp.Query)
        and not isinstance(s.parent, (exp.In, exp.Exists, exp.From, exp.Join))
        and s.parent is not None
        and not s.parent.find_ancestor(exp.Subquery, exp.Exists, exp.In)
    ]


def _over_no_rows(value: exp.Expr) -> exp.Expr:
    """``value`` (an expression over aggregates) evaluated over no rows: COUNT is 0, every
    other aggregate NULL. NULL itself where nothing else can come of it."""
    if isinstance(value, exp.AggFunc) and not isinstance(value, exp.Count):
        return exp.Null()
    if (
        not value.find(exp.Count)
        and isinstance(value, (exp.Binary, exp.Paren, exp.Neg))
        and not value.find(exp.Coalesce, exp.Case, exp.If, exp.Is)
    ):
        return exp.Null()
    return value.copy().transform(
        lambda n: (
            exp.Literal.number(0)
            if isinstance(n, exp.Count)
            else exp.Null()
            if isinstance(n, exp.AggFunc)
            else n
        )
    )
