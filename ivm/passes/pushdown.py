"""Filters move down to the inputs they read, so that a change's rows they drop give no keys.

A conjunct of a ``WHERE`` (or of an inner join's ``ON``) that reads one input of a join is
applied to that input rather than to the join's rows::

    σ[p ∧ r](A ⋈_c B)  =  σ[r](σ[p]A ⋈_c B)     p reads only A
    A ⋈_{c ∧ p} B      =  σ[p]A ⋈_c B           p reads only A

The join rule restricts the other inputs' snapshots to the keys in a change: with ``p`` on
``A``, rows of ``ΔA`` that ``p`` drops give no keys, and the snapshots of ``A`` the terms read
(restricted to keys, their ranges pruning files) are ``σ[p]A``. Likewise an affected-key rule
above (an outer join, a ``MIN``) takes its keys from the filtered change. Within one query
Spark moves ``p`` onto ``A``'s scan itself; the key sets are queries of their own, which it
cannot move ``p`` into. Equalities between two inputs stay where they are:
:func:`~ivm.passes.join_on_equalities` makes them join keys.

Outer, semi and anti joins keep a row that has no match, so only these move::

    σ[p](A ⟕_c B)      =  σ[p]A ⟕_c B           p reads only A, the preserved input
    A ⟕_{c ∧ q} B      =  A ⟕_c σ[q]B           q reads only B, the NULL-padded input
    σ[p](A ⋉_c B)      =  σ[p]A ⋉_c B           also for ▷ (anti)
    A ⋉_{c ∧ p ∧ q} B  =  σ[p]A ⋉_c σ[q]B       for ▷ only q: a row failing p is output

(``⟖`` mirrors ``⟕``.) A ``WHERE`` conjunct on a NULL-padded input stays above the join: it
decides on the padded rows, which filtering that input first would keep. A ``FULL`` join pads
both inputs, and keeps its conjuncts; so does an ``ON`` whose every conjunct would move.

Through the other operators, a conjunct is rewritten to read the operator's input::

    σ[p](π_e R)        =  π_e(σ[p[e]] R)         the projected expressions substituted
    σ[p](Q AS a)       =  (σ[p] Q) AS a          a derived table
    σ[p](γ_k R)        =  γ_k(σ[p[k]] R)         p reads only group keys (and there are keys)
    σ[p](W_k R)        =  W_k(σ[p] R)            p reads only PARTITION BY columns
    σ[p](gen R)        =  gen(σ[p] R)            p reads only R's columns (LATERAL VIEW)
    σ[p](δ R)          =  δ(σ[p] R)              DISTINCT
    σ[p](R ∪ S)        =  σ[p]R ∪ σ[p]S          also for ∩ and − (INTERSECT, EXCEPT [ALL])
    σ[p](σ[q] R)       =  σ[q ∧ p] R             stacked filters merge

Each holds exactly, NULLs and three-valued logic included, under these conditions, which the
pass checks and otherwise leaves a conjunct where it is:

* the conjunct, and every expression substituted into it, is deterministic and holds no
  subquery, aggregate or window function (evaluated on other rows, or more often, it could
  give another answer);
* a group, partition or set operation puts rows whose values are equal together, so the
  conjunct must give equal rows one answer: a column it reads there must not be FLOAT or
  DOUBLE (``0.0`` and ``-0.0``, and every ``NaN``, are equal, yet ``CAST(x AS STRING)`` tells
  them apart) and must have a type sqlglot inferred;
* the branches of a set operation give a column one type (Spark casts each branch to it, and a
  conjunct pushed into a branch sees the value before the cast): the column's inferred type
  must be the same in every branch, and not a DECIMAL, whose precision and scale after
  arithmetic sqlglot does not infer as Spark does.

>>> from ivm.ir import Scan
>>> o = Scan("orders", "o", ("cust", "status"))
>>> c = Scan("customers", "c", ("id",))
>>> plan = Filter(Join((o, c), exp.condition("o.cust = c.id")),
...               exp.condition("o.status <> 'void'"))
>>> pushed = push_down_predicates(plan)
>>> pushed.condition.sql(), pushed.inputs[0].predicate.sql(), pushed.inputs[1] == c
('o.cust = c.id', "o.status <> 'void'", True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import assert_never

from sqlglot import exp
from sqlglot.expressions.datatypes import DType

from ivm.frontend.functions import nondeterministic
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
    children,
    columns,
    with_children,
)
from ivm.store import parenthesized

Move = Callable[[exp.Expr], "exp.Expr | None"]
"""A conjunct as it reads an operator's input, or None where it cannot move there."""


def push_down_predicates(plan: Relation) -> Relation:
    """``plan`` with every filter's conjuncts as close to the sources as they go.

    >>> from ivm.ir import Scan
    >>> a, b = Scan("a", "a", ("k", "x")), Scan("b", "b", ("k", "y"))
    >>> left = Join((a, b), exp.condition("a.k = b.k AND b.y > 0"), JoinKind.LEFT)
    >>> pushed = push_down_predicates(Filter(left, exp.condition("a.x = 1 AND b.y < 5")))
    >>> pushed.predicate.sql(), pushed.input.condition.sql()
    ('b.y < 5', 'a.k = b.k')
    >>> [x.predicate.sql() for x in pushed.input.inputs]
    ['a.x = 1', 'b.y > 0']
    """
    return _pushed(plan, [])


def _pushed(node: Relation, conjuncts: list[exp.Expr]) -> Relation:
    """``σ[conjuncts](node)``, the conjuncts and the filters in ``node`` moved down."""
    match node:
        case Filter():
            return _pushed(node.input, _conjuncts(node.predicate) + conjuncts)
        case Join():
            return _join(node, conjuncts)
        case Subquery():
            moved, kept = _split(conjuncts, lambda c: _into_subquery(node, c))
            return _filtered(Subquery(_pushed(node.input, moved), node.alias), kept)
        case Project():
            moved, kept = _split(conjuncts, lambda c: _substituted(c, dict(node.columns)))
            return _filtered(Project(_pushed(node.input, moved), node.columns), kept)
        case Aggregate():
            types = _types(node)
            keys = {name: e for name, e in node.keys if _grouped_by_value(types[name])}
            moved, kept = _split(conjuncts, lambda c: _substituted(c, keys) if keys else None)
            return _filtered(Aggregate(_pushed(node.input, moved), node.keys, node.calls), kept)
        case Window():
            types = _types(node.input)
            partition = {
                e.name: exp.column(e.name)
                for e in node.partition
                if isinstance(e, exp.Column)
                and not e.table
                and _grouped_by_value(types.get(e.name))
            }
            moved, kept = _split(conjuncts, lambda c: _substituted(c, partition))
            return _filtered(
                Window(_pushed(node.input, moved), node.partition, node.functions), kept
            )
        case Generate():
            own = {name: exp.column(name) for name in columns(node.input)}
            moved, kept = _split(conjuncts, lambda c: _substituted(c, own))
            return _filtered(
                Generate(_pushed(node.input, moved), node.generator, node.names, node.outer), kept
            )
        case Distinct():
            types = _types(node.input)
            rows = {name: exp.column(name) for name, t in types.items() if _grouped_by_value(t)}
            moved, kept = _split(conjuncts, lambda c: _substituted(c, rows))
            return _filtered(Distinct(_pushed(node.input, moved)), kept)
        case Union():
            moved, kept = _split(conjuncts, _into_branches(node.inputs, _typed_alike))
            return _filtered(
                Union(tuple(_pushed(b, [c.copy() for c in moved]) for b in node.inputs)), kept
            )
        case SetOperation():
            moved, kept = _split(
                conjuncts,
                _into_branches(
                    (node.left, node.right), lambda t: _typed_alike(t) and _grouped_by_value(t)
                ),
            )
            return _filtered(
                SetOperation(
                    _pushed(node.left, moved),
                    _pushed(node.right, [c.copy() for c in moved]),
                    node.kind,
                    node.all,
                ),
                kept,
            )
        case Scan():
            return _filtered(node, conjuncts)
        case Restrict() | Weighted():  # built by rules, inside deltas: nothing to move
            return _filtered(
                with_children(node, tuple(_pushed(c, []) for c in children(node))), conjuncts
            )
        case _:
            assert_never(node)


def _join(join: Join, above: list[exp.Expr]) -> Relation:
    """``σ[above](join)``: each conjunct of ``above`` and of the ON that may, onto an input."""
    on = _conjuncts(join.condition) if join.condition is not None else []
    targets: list[list[exp.Expr]] = [[] for _ in join.inputs]
    kept_on: list[exp.Expr] = []
    for conjunct in on:
        i = _on_target(join, conjunct)
        (targets[i] if i is not None else kept_on).append(conjunct)
    if join.kind is not JoinKind.INNER and not kept_on:  # it keeps an ON to match rows by
        targets, kept_on = [[] for _ in join.inputs], on
    kept_above: list[exp.Expr] = []
    for conjunct in above:
        i = _where_target(join, conjunct)
        (targets[i] if i is not None else kept_above).append(conjunct)
    inputs = tuple(_pushed(x, moved) for x, moved in zip(join.inputs, targets, strict=True))
    condition = exp.and_(*kept_on) if kept_on else None
    return _filtered(Join(inputs, condition, join.kind), kept_above)


def _where_target(join: Join, conjunct: exp.Expr) -> int | None:
    """The input a conjunct over ``join``'s rows may filter instead, if any."""
    left, right = join.inputs[0], join.inputs[-1]
    match join.kind:
        case JoinKind.INNER | JoinKind.LOOKUP:
            return next((i for i, x in enumerate(join.inputs) if _fits(x, conjunct)), None)
        case JoinKind.LEFT | JoinKind.SEMI | JoinKind.ANTI | JoinKind.LEFT_LOOKUP:
            return 0 if _fits(left, conjunct) else None
        case JoinKind.RIGHT:
            return 1 if _fits(right, conjunct) else None
        case JoinKind.FULL:
            return None
        case _:
            assert_never(join.kind)


def _on_target(join: Join, conjunct: exp.Expr) -> int | None:
    """The input a conjunct of ``join``'s ON may filter instead, if any."""
    left, right = join.inputs[0], join.inputs[-1]
    on_right = 1 if _fits(right, conjunct) else None
    match join.kind:
        case JoinKind.INNER | JoinKind.LOOKUP:
            return _where_target(join, conjunct)
        case JoinKind.LEFT | JoinKind.ANTI | JoinKind.LEFT_LOOKUP:
            return on_right
        case JoinKind.RIGHT:
            return 0 if _fits(left, conjunct) else None
        case JoinKind.SEMI:
            return on_right if on_right is not None else _where_target(join, conjunct)
        case JoinKind.FULL:
            return None
        case _:
            assert_never(join.kind)


def _fits(node: Relation, conjunct: exp.Expr) -> bool:
    """``conjunct`` may filter ``node``, an input of a join, instead of the join's rows."""
    return _reads_only(conjunct, node) and _lands(node, conjunct)


def _reads_only(conjunct: exp.Expr, node: Relation) -> bool:
    """``conjunct`` reads columns of ``node`` and no others, and may move."""
    tables = {column.table for column in conjunct.find_all(exp.Column)}
    return bool(tables) and tables <= set(aliases_of(node)) and _movable(conjunct)


def _lands(node: Relation, conjunct: exp.Expr) -> bool:
    """A conjunct over ``node``, an input of a join, moves below it or onto a filter of it, so
    that the join's inputs stay scans, derived tables and joins, or filters of those."""
    match node:
        case Scan() | Filter():
            return True
        case Subquery():
            return _into_subquery(node, conjunct) is not None
        case Join():
            return _where_target(node, conjunct) is not None
        case _:
            return False


def _into_subquery(node: Subquery, conjunct: exp.Expr) -> exp.Expr | None:
    """``conjunct`` over the derived table's query: ``alias.c`` read as the query's ``c``."""
    if aliases_of(node.input) or not _movable(conjunct):
        return None
    names = set(columns(node.input))
    if not all(c.table == node.alias and c.name in names for c in conjunct.find_all(exp.Column)):
        return None

    def unqualified(node: exp.Expr) -> exp.Expr:
        return exp.Column(this=node.this.copy()) if isinstance(node, exp.Column) else node

    return conjunct.transform(unqualified)


def _substituted(conjunct: exp.Expr, names: Mapping[str, exp.Expr]) -> exp.Expr | None:
    """``conjunct`` with each column it reads replaced by its expression in ``names``; None if
    it reads another column, or it or a replacement may not move."""
    read = list(conjunct.find_all(exp.Column))
    if (
        not _movable(conjunct)
        or not all(not c.table and c.name in names for c in read)
        or not all(_movable(names[c.name]) for c in read)
    ):
        return None

    def replaced(node: exp.Expr) -> exp.Expr:
        return parenthesized(names[node.name].copy()) if isinstance(node, exp.Column) else node

    return conjunct.transform(replaced)


def _into_branches(
    branches: Sequence[Relation], alike: Callable[[exp.DataType | None], bool]
) -> Move:
    """A conjunct over a set operation, as it reads each branch: where its columns are the
    branches' own, of one type that ``alike`` accepts."""
    names = columns(branches[0])
    types = [_types(b) for b in branches]
    if any(columns(b) != names for b in branches) or aliases_of(branches[0]):
        return lambda conjunct: None

    def move(conjunct: exp.Expr) -> exp.Expr | None:
        read = [c.name for c in conjunct.find_all(exp.Column)]
        if not _movable(conjunct) or any(c.table for c in conjunct.find_all(exp.Column)):
            return None
        if not all(
            name in types[0]
            and alike(types[0][name])
            and all(t.get(name) == types[0][name] for t in types)
            for name in read
        ):
            return None
        return conjunct.copy()

    return move


def _types(node: Relation) -> dict[str, exp.DataType | None]:
    """The type sqlglot inferred for each named output column of ``node``, None if unknown;
    empty for a relation whose columns a table alias qualifies."""
    match node:
        case Project():  # a column renamed has its input's type
            inner = _types(node.input)
            return {
                name: inner.get(e.name)
                if _known(e.type) is None and isinstance(e, exp.Column) and not e.table
                else _known(e.type)
                for name, e in node.columns
            }
        case Aggregate():
            return {name: _known(e.type) for name, e in node.keys} | {
                name: None for name, _ in node.calls
            }
        case Window():
            return _types(node.input) | {name: None for name, _ in node.functions}
        case Generate():
            return _types(node.input) | {name: None for name in node.names}
        case Filter() | Distinct():
            return _types(node.input)
        case Union() | SetOperation():
            branches = [_types(b) for b in children(node)]
            return {
                name: t if all(b.get(name) == t for b in branches) else None
                for name, t in branches[0].items()
            }
        case Scan() | Subquery() | Join() | Restrict() | Weighted():
            return {}
        case _:
            assert_never(node)


def _known(data_type: exp.DataType | None) -> exp.DataType | None:
    unknown = data_type is None or data_type.this in (
        exp.DataType.Type.UNKNOWN,
        exp.DataType.Type.NULL,
    )
    return None if unknown else data_type


def _known_without(data_type: exp.DataType | None, kinds: Set[DType]) -> bool:
    """``data_type`` is known, and neither it nor a type nested in it is one of ``kinds``."""
    known = _known(data_type)
    return known is not None and not any(
        isinstance(t, exp.DataType) and t.this in kinds for t in known.walk()
    )


def _grouped_by_value(data_type: exp.DataType | None) -> bool:
    """Values of this type that are equal (as GROUP BY, PARTITION BY, DISTINCT and set
    operations compare them) are the same value: a known type without floating point."""
    return _known_without(data_type, exp.DataType.FLOAT_TYPES)


def _typed_alike(data_type: exp.DataType | None) -> bool:
    """A type that sqlglot infers as Spark does, where branches agree on it: known, and
    without DECIMAL (whose precision and scale after arithmetic it infers otherwise)."""
    return _known_without(data_type, exp.DataType.REAL_TYPES - exp.DataType.FLOAT_TYPES)


def _movable(expression: exp.Expr) -> bool:
    """``expression`` gives the same answer wherever, and however often, it is evaluated on a
    row: no subquery, aggregate, window or non-deterministic function."""
    return expression.find(exp.Subquery, exp.Select, exp.AggFunc, exp.Window) is None and not any(
        nondeterministic(f) for f in expression.find_all(exp.Func)
    )


def _split(conjuncts: list[exp.Expr], move: Move) -> tuple[list[exp.Expr], list[exp.Expr]]:
    """The conjuncts that move (as ``move`` rewrites them), and those that stay."""
    moved: list[exp.Expr] = []
    kept: list[exp.Expr] = []
    for conjunct in conjuncts:
        rewritten = move(conjunct)
        if rewritten is None:
            kept.append(conjunct)
        else:
            moved.append(rewritten)
    return moved, kept


def _conjuncts(predicate: exp.Expr) -> list[exp.Expr]:
    """The operands of ``predicate``'s top-level ANDs (through parentheses)."""
    while isinstance(predicate, exp.Paren):
        predicate = predicate.this
    if isinstance(predicate, exp.And):
        return _conjuncts(predicate.this) + _conjuncts(predicate.expression)
    return [predicate]


def _filtered(node: Relation, conjuncts: list[exp.Expr]) -> Relation:
    return Filter(node, exp.and_(*conjuncts)) if conjuncts else node
