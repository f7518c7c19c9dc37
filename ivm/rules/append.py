"""Changes that only insert rows: a top-N or a MIN/MAX view folds them into its own rows.

Where every source's change since the last refresh inserts rows and removes none (its
commits add data files only, which :mod:`ivm.runtime.refresh.gather` reads in the logs), a row
outside a key's top N stays outside, as inserted rows only push it further down, and a
group's MIN, MAX, COUNT and SUM combine its old value with the change's. The view's own rows
at the affected keys ``K`` then stand for the input before the change::

    TopN(R + ΔR) ⋉ K = TopN(TopN(R) ⋉ K + ΔR)                            ΔR ≥ 0
    Agg(R + ΔR) ⋉ K  = Agg∘(Agg(R) ⋉ K + ΔR)    Agg∘ combines partial values (MIN, MAX, SUM)
    ΔV = V' ⋉ K − V ⋉ K                          V ⋉ K: the store at K

A refresh reads the change and the store at ``K``, where the affected-key rule it stands in
for (:mod:`ivm.rules.keyed`) reads the source before and after the change at ``K``: all of
it, where the source is not laid out by the key.

They apply to a view that is, under projections and derived tables that name its columns as
they are,

* a filter ``f ≤ n`` (``= 1``, ``< n``) over one ``ROW_NUMBER``, ``RANK`` or ``DENSE_RANK``
  ``f`` (a dedup, a top-N per key, ``ORDER BY … LIMIT n``): inserted rows only raise the
  others' ranks. The view names every column of the window's input, which rebuilds the
  stored rows as input rows;
* a GROUP BY of ``MIN``, ``MAX``, ``COUNT`` and ``SUM`` of an exact type, the view naming
  every key and aggregate;

whose input's change reads nothing but one source's change (a table under filters and
projections), so that it holds the inserted rows alone, each of weight 1 or more. A row of
negative weight there would mean the change was not inserts only: the refresh fails rather
than fold it.

>>> from sqlglot import exp
>>> from ivm.ir import Aggregate, AggregateCall, Project, Scan, scans
>>> from ivm.rules import differentiate
>>> t = Scan("t", "t", ("k", "v"))
>>> top = Aggregate(t, (("_ivm_key0", exp.column("k", "t")),), (("_ivm_agg0", AggregateCall(
...     "max", call=exp.Max(this=exp.column("v", "t")))),))
>>> view = Project(top, (("k", exp.column("_ivm_key0")), ("top", exp.column("_ivm_agg0"))))
>>> delta = appended(view, differentiate, "db.v")
>>> sorted({(s.table, s.read.value) for s in scans(delta)})
[('db.v', 'store'), ('t', 'delta')]
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import (
    Aggregate,
    AggregateCall,
    Filter,
    Project,
    Relation,
    Scan,
    Subquery,
    Union,
    Window,
    children,
    columns,
    with_children,
)
from ivm.rules.base import COPY, Differentiate, Kind, Rule, copies, terms, weighted_project
from ivm.rules.join import reads_only_change
from ivm.rules.keyed import affected_keys, restricted
from ivm.store import EXACT_TYPES
from ivm.zset import COUNT, WEIGHT, Read

STORED = "stored"
RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank)
NOT_INSERTS = "ivm: a change read as inserts only removes rows"
"""The message a refresh fails with if a change its sources' logs show as inserts only holds
a row of negative weight (it never should)."""


def appended(plan: Relation, differentiate: Differentiate, view: str) -> Relation | None:
    """The change of the view ``plan`` (named ``view``, whose store it reads) as view rows
    with their weights, for changes that insert rows only; None where the rules do not
    apply."""
    found = _operator(plan)
    if found is None:
        return None
    operator, ranks = found
    needed = set(columns(operator.input) if isinstance(operator, Window) else columns(operator))
    named = exposed(plan, needed)
    if not needed <= set(named) or not reads_only_change(operator.input):
        return None
    if isinstance(operator, Window):
        if not _window_applies(operator, ranks):
            return None
        keys = list(operator.partition)
    else:
        if not all(_combinable(call) for _, call in operator.calls):
            return None
        keys = [e for _, e in operator.keys]
    change = differentiate(operator.input)
    affected = affected_keys([(change, keys)])
    stored = stored_at(view, plan, operator, keys, named, affected)
    if isinstance(operator, Window):
        rebuilt: Relation = Window(
            _window_input(operator, stored, change, named), operator.partition, operator.functions
        )
    else:
        rebuilt = _combined(operator, stored, change, named)
    return replacing(replaced(plan, operator, rebuilt), stored, plan, not keys, affected)


def stored_at(
    view: str,
    plan: Relation,
    operator: Window | Aggregate,
    keys: list[exp.Expr],
    named: dict[str, str],
    affected: Relation,
) -> Relation:
    """The store of the view ``plan`` (named ``view``) at the affected keys ``K`` of its
    ``operator`` (``keys``, the view columns that hold them ``named``): its rows and counts."""
    return restricted(
        Scan(view, STORED, columns(plan) + (COUNT,), Read.STORE),
        Read.STORE,
        [stored_key(k, operator, named) for k in keys],
        affected,
    )


def replacing(
    after: Relation, stored: Relation, plan: Relation, keyless: bool, affected: Relation
) -> Union:
    """``ΔV = V' ⋉ K − V ⋉ K``: the rows of the view ``plan`` after the change at the affected
    keys ``K`` (``after``), each of weight 1, less its ``stored`` rows there, each of weight its
    count. A global aggregate (``keyless``) has its one row over no input: only where K is."""
    if keyless:
        after = restricted(after, Read.STORE, [], affected)
    names = columns(plan)
    before = Project(
        stored,
        tuple((n, exp.column(n, STORED)) for n in names)
        + ((WEIGHT, exp.Neg(this=exp.column(COUNT, STORED))),),
    )
    weighted = tuple((n, exp.column(n)) for n in names)
    return Union((Project(after, (*weighted, (WEIGHT, exp.Literal.number(1)))), before))


def _operator(plan: Relation) -> tuple[Window | Aggregate, list[exp.Expr]] | None:
    """The window or GROUP BY under the view's projections and derived tables, and the
    predicates of the filters right above a window; None where there is none."""
    ranks: list[exp.Expr] = []
    node = plan
    while isinstance(node, (Project, Subquery)):
        node = node.input
    while isinstance(node, Filter):
        ranks.append(node.predicate)
        node = node.input
    if isinstance(node, Window) or (isinstance(node, Aggregate) and not ranks):
        return node, ranks
    return None


def exposed(plan: Relation, wanted: set[str]) -> dict[str, str]:
    """Each output column of the operator (among ``wanted``) that a view column names as it
    is, and the first such view column."""
    found: dict[str, str] = {}
    for name in columns(plan):
        traced = _trace(plan, name, wanted)
        if traced is not None:
            found.setdefault(traced, name)
    return found


def _trace(node: Relation, name: str, wanted: set[str]) -> str | None:
    """The operator's output column that the column ``name`` of ``node`` is, passed on by
    projections, derived tables and filters; None where a projection computes it."""
    while True:
        match node:
            case Project():
                expression = dict(node.columns)[name]
                if not isinstance(expression, exp.Column):
                    return None
                name, node = expression.name, node.input
            case Subquery() | Filter():
                node = node.input
            case _:
                return name if name in wanted else None


def _window_applies(window: Window, ranks: list[exp.Expr]) -> bool:
    """One ranking function, which every filter above bounds from above."""
    if len(window.functions) != 1:
        return False
    ((name, function),) = window.functions
    if not isinstance(function.this, RANKS):
        return False
    conjuncts = [c for p in ranks for c in (p.flatten() if isinstance(p, exp.And) else [p])]
    return bool(conjuncts) and all(_bounds(c, name) for c in conjuncts)


def _bounds(predicate: exp.Expr, rank: str) -> bool:
    """``predicate`` keeps the rows whose ``rank`` is at most a constant: ``rank = 1``,
    ``rank <= n``, ``rank < n`` (either way round)."""
    flipped = {exp.GTE: exp.LTE, exp.GT: exp.LT}
    this, other = predicate.args.get("this"), predicate.args.get("expression")
    kind = type(predicate)
    if kind in flipped:
        kind, this, other = flipped[kind], other, this
    elif kind is exp.EQ and isinstance(this, exp.Literal):
        this, other = other, this
    if kind not in (exp.EQ, exp.LTE, exp.LT):
        return False
    is_rank = isinstance(this, exp.Column) and not this.table and this.name == rank
    if not (is_rank and isinstance(other, exp.Literal) and other.is_int):
        return False
    return kind is not exp.EQ or int(other.name) == 1


def _combinable(call: AggregateCall) -> bool:
    """An aggregate whose value over ``R + ΔR`` follows from its value over ``R`` and the
    rows of ``ΔR``: MIN, MAX, COUNT, and SUM of an exact type."""
    if call.function in ("min", "max"):
        return (
            isinstance(call.call, (exp.Min, exp.Max))
            and not call.call.expressions
            and not isinstance(call.call.this, exp.Distinct)
        )
    if call.function == "count":
        return call.call is None
    if call.function == "sum" and call.call is None and call.argument is not None:
        typed = call.argument.type
        return call.decimal is not None or (typed is not None and typed.this.name in EXACT_TYPES)
    return False


def stored_key(key: exp.Expr, operator: Window | Aggregate, named: dict[str, str]) -> exp.Expr:
    """A key of the operator as the store's column that holds it."""
    if isinstance(operator, Aggregate):
        name = next(n for n, e in operator.keys if e == key)
        return exp.column(named[name], STORED)
    assert isinstance(key, exp.Column)  # a window's input is named: its partition, columns
    return exp.column(named[key.name], STORED)


def _as_rows(change: Union, named: list[tuple[str, exp.Expr]]) -> list[Relation]:
    """The rows of ``change``, each term projected on ``named``, a row of weight w repeated
    w times (a negative weight fails the refresh)."""
    rows: list[Relation] = []
    for term in terms(change):
        weighted = weighted_project(term, named)
        weight = exp.column(WEIGHT)
        count = exp.If(
            this=exp.GT(this=weight.copy(), expression=exp.Literal.number(0)),
            true=weight,
            false=exp.func("RAISE_ERROR", exp.Literal.string(NOT_INSERTS)),
        )
        rows.append(
            Project(weighted, tuple((n, exp.column(n)) for n, _ in named) + (copies(count),))
        )
    return rows


def _window_input(window: Window, stored: Relation, change: Union, named: dict[str, str]) -> Union:
    """The window's input at ``K``: its stored rows, each as often as the store counts it,
    and the inserted rows."""
    names = columns(window.input)
    old = Project(
        stored,
        tuple((n, exp.column(named[n], STORED)) for n in names)
        + (copies(exp.column(COUNT, STORED)),),
    )
    return Union((old, *_as_rows(change, [(n, exp.column(n)) for n in names])))


def _partial(call: AggregateCall) -> exp.Expr:
    """An input row's part in the aggregate's value: its argument, or for a count 1 where
    it counts."""
    if call.function == "count":
        if call.argument is None:
            return exp.Literal.number(1)
        return exp.If(
            this=exp.Is(this=call.argument.copy(), expression=exp.Null()),
            true=exp.Literal.number(0),
            false=exp.Literal.number(1),
        )
    if call.function == "sum":
        assert call.argument is not None  # _combinable
        return call.argument.copy()
    assert isinstance(call.call, (exp.Min, exp.Max))
    return call.call.this.copy()


def _combined(
    aggregate: Aggregate, stored: Relation, change: Union, named: dict[str, str]
) -> Aggregate:
    """The GROUP BY at ``K`` over the stored groups' values and the inserted rows' parts,
    each aggregate combining the two (a count by summing them)."""
    names = [n for n, _ in aggregate.keys] + [n for n, _ in aggregate.calls]
    old = Project(
        stored, tuple((n, exp.column(named[n], STORED)) for n in names) + ((COPY, exp.true()),)
    )
    parts = list(aggregate.keys) + [(n, _partial(call)) for n, call in aggregate.calls]

    def combine(name: str, call: AggregateCall) -> AggregateCall:
        if call.function in ("min", "max"):
            function = exp.Min if call.function == "min" else exp.Max
            return AggregateCall(call.function, call=function(this=exp.column(name)))
        return AggregateCall("sum", exp.column(name))

    return Aggregate(
        Union((old, *_as_rows(change, parts))),
        tuple((n, exp.column(n)) for n, _ in aggregate.keys),
        tuple((n, combine(n, call)) for n, call in aggregate.calls),
    )


def replaced(node: Relation, old: Relation, new: Relation) -> Relation:
    """``node`` with its subtree ``old`` replaced by ``new``."""
    if node == old:
        return new
    return with_children(node, tuple(replaced(c, old, new) for c in children(node)))


RULE = Rule(
    Project,
    "inserts only",
    Kind.KEYED,
    "ΔV = V(V ⋉ K + ΔR) − V ⋉ K, K = keys of ΔR, ΔR ≥ 0",
    "the change and the view's own rows at the affected keys (a top-N, MIN, MAX)",
    appended,
)
