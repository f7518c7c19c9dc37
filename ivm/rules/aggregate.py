"""GROUP BY with COUNT, SUM and AVG is invertible: fold the aggregated change into the groups.

Each aggregate is a function of additive accumulators (see :mod:`ivm.store`)::

    COUNT(*) = n          COUNT(x) = c_x          SUM(x) = s_x  (NULL while c_x = 0)
    AVG(x)   = s_x / c_x  (NULL while c_x = 0)

so for every group ``g`` touched by the change::

    acc'(g) = acc(g) + Σ_{r ∈ ΔR, key(r) = g} weight(r) · contribution(r)

and the group disappears when ``n'(g) = 0`` (a global aggregate, without GROUP BY, always
keeps its one row). No source is rescanned: the old accumulators are the view's own rows.

>>> from sqlglot import exp
>>> from ivm.ir import Aggregate, AggregateCall, Project, Scan
>>> from ivm.rules import differentiate
>>> t = Scan("t", "t", ("k", "v"))
>>> agg = Aggregate(t, (("_ivm_key0", exp.column("k", "t")),),
...                 (("_ivm_agg0", AggregateCall("avg", exp.column("v", "t"))),))
>>> m = maintain_aggregate(Project(agg, (("k", exp.column("_ivm_key0")),
...                                      ("mean", exp.column("_ivm_agg0")))), differentiate)
>>> m.store.columns
('k', 'mean', '_ivm_count', '_ivm_nonnull0', '_ivm_sum0')
>>> print(dict(m.store.visible)["mean"].sql())
CASE WHEN _ivm_nonnull0 > 0 THEN _ivm_sum0 / _ivm_nonnull0 END
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Aggregate, AggregateCall, Filter, Project, Relation, Union
from ivm.rules.base import Differentiate, Kind, Rule, copies, terms, weighted_project
from ivm.rules.keyed import recompute
from ivm.rules.maintenance import Maintenance
from ivm.store import ROWS, Accumulator, Store
from ivm.zset import BOOKKEEPING_PREFIX, WEIGHT


class _Accumulators:
    """The accumulators a view needs, each (kind, argument) once."""

    def __init__(self):
        self.all: list[Accumulator] = [ROWS]
        self.arguments: list[exp.Expr] = []

    def _index(self, argument: exp.Expr) -> int:
        for i, known in enumerate(self.arguments):
            if known == argument:
                return i
        self.arguments.append(argument)
        return len(self.arguments) - 1

    def get(
        self, kind: str, argument: exp.Expr, decimal: tuple[int, int] | None = None
    ) -> Accumulator:
        i = self._index(argument)
        name = f"{BOOKKEEPING_PREFIX}{kind}{i}"
        for acc in self.all:
            if acc.name == name:
                return acc
        guard = self.get("nonnull", argument).name if kind == "sum" else None
        acc = Accumulator(name, kind, argument, guard, decimal if kind == "sum" else None)
        self.all.append(acc)
        return acc

    def argument_name(self, argument: exp.Expr) -> str:
        return f"{BOOKKEEPING_PREFIX}arg{self._index(argument)}"


def _value(call: AggregateCall, accs: _Accumulators) -> exp.Expr:
    """The aggregate's value as an expression over accumulator columns."""
    if call.function == "count":
        return exp.column(
            (ROWS if call.argument is None else accs.get("nonnull", call.argument)).name
        )
    assert call.argument is not None  # SUM and AVG, the other invertible calls, take one
    total = accs.get("sum", call.argument, call.decimal)
    if call.function == "sum":
        return exp.column(total.name)
    assert total.guard is not None  # every sum is guarded by its nonnull count
    count = exp.column(total.guard)
    numerator, denominator = exp.column(total.name), count.copy()
    if call.decimal is not None:  # as Spark's AVG divides (see ivm.frontend.lower)
        numerator = exp.Cast(
            this=numerator, to=exp.DataType.build(f"DECIMAL(34, {call.decimal[1]})")
        )
        denominator = exp.Cast(this=denominator, to=exp.DataType.build("DECIMAL(20, 0)"))
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.GT(this=count, expression=exp.Literal.number(0)),
                true=exp.Div(this=numerator, expression=denominator, typed=False, safe=False),
            )
        ]
    )


def _unit_weights(change: Relation, names: tuple[str, ...]) -> Project:
    """``change`` with each row of weight w repeated |w| times at weight sign(w)."""
    weight = exp.column(WEIGHT)
    sign = exp.If(
        this=exp.GT(this=weight.copy(), expression=exp.Literal.number(0)),
        true=exp.Literal.number(1),
        false=exp.Literal.number(-1),
    )
    return Project(
        change,
        tuple((n, exp.column(n)) for n in names)
        + (
            copies(exp.Abs(this=weight.copy())),
            (WEIGHT, exp.Cast(this=sign, to=exp.DataType.build("BIGINT"))),
        ),
    )


def maintain_aggregate(plan: Project, differentiate: Differentiate) -> Maintenance:
    aggregate = plan.input
    assert isinstance(aggregate, Aggregate)  # the rule of a GROUP BY under its projection
    accs = _Accumulators()
    values = {name: _value(call, accs) for name, call in aggregate.calls}

    # A key the view selects as is is stored under the view's column name; others are hidden.
    key_columns: dict[str, str] = {}
    for key_name, _ in aggregate.keys:
        key_columns[key_name] = next(
            (
                name
                for name, e in plan.columns
                if e == exp.column(key_name) and name not in key_columns.values()
            ),
            key_name,
        )

    def over_store(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            if node.name in key_columns:
                return exp.column(key_columns[node.name])
            if node.name in values:
                return values[node.name].copy()
        return node

    visible = tuple((name, e.copy().transform(over_store)) for name, e in plan.columns)
    store = Store(
        keys=tuple(key_columns.values()),
        visible=visible,
        accumulators=tuple(accs.all),
        single_row=not aggregate.keys,
    )

    full_calls = aggregate.calls + tuple((acc.name, acc.full_call()) for acc in accs.all)
    full = Project(
        Aggregate(aggregate.input, aggregate.keys, full_calls),
        plan.columns
        + tuple((k, exp.column(k)) for k in store.hidden_keys)
        + tuple((acc.name, exp.column(acc.name)) for acc in accs.all),
    )

    change_columns = tuple((key_columns[name], e) for name, e in aggregate.keys) + tuple(
        (accs.argument_name(a), a) for a in accs.arguments
    )
    change = Union(
        tuple(
            weighted_project(term, change_columns) for term in terms(differentiate(aggregate.input))
        )
    )
    if any(acc.decimal is not None for acc in accs.all):
        change = _unit_weights(change, tuple(name for name, _ in change_columns))
    weight = exp.column(WEIGHT)
    change_calls = tuple(
        (
            acc.name,
            acc.change_call(
                None if acc.argument is None else exp.column(accs.argument_name(acc.argument)),
                weight,
            ),
        )
        for acc in accs.all
    )
    grouped = Aggregate(change, tuple((k, exp.column(k)) for k in store.keys), change_calls)
    # A group's count changed, or, in a change that has rows (an empty change of a view
    # without GROUP BY is one row of NULLs), another accumulator did: a change's sum is NULL
    # only where it overflowed, and the fold must see it to fail.
    rows = exp.column(ROWS.name)
    touched = exp.NEQ(this=rows, expression=exp.Literal.number(0))
    others = [
        exp.Not(
            this=exp.paren(
                exp.NullSafeEQ(this=exp.column(acc.name), expression=exp.Literal.number(0))
            )
        )
        for acc in accs.all
        if acc is not ROWS
    ]
    if others:
        touched = exp.or_(
            touched,
            exp.and_(exp.Not(this=exp.Is(this=rows, expression=exp.Null())), exp.or_(*others)),
        )
    return Maintenance(store, full, Filter(grouped, touched), RULE)


def derive_keyed_aggregate(node: Aggregate, differentiate: Differentiate) -> Union:
    """Δ of a GROUP BY inside a plan: recompute the groups the change touches."""

    def rebuilt(rows: Relation) -> Relation:
        return Aggregate(rows, node.keys, node.calls)

    return recompute([(node.input, [e for _, e in node.keys])], rebuilt, differentiate)


KEYED_RULE = Rule(
    Aggregate,
    "aggregate",
    Kind.KEYED,
    "ΔAgg(R) = Agg(R' ⋉ K) − Agg(R ⋉ K), K = groups of ΔR",
    "input snapshots at the affected groups",
    derive_keyed_aggregate,
)

RULE = Rule(
    Aggregate,
    "aggregate",
    Kind.INVERTIBLE,
    "acc'(g) = acc(g) + Σ_{ΔR, key = g} weight · contribution",
    "the view's own rows (group accumulators)",
    maintain_aggregate,
)
