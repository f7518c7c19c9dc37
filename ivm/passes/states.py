"""State tables: the input of an operator that would recompute all of it, kept as a view.

A window without ``PARTITION BY`` (a global top-N, ``ORDER BY … LIMIT N``, a global rank) has
one partition, so its affected-key rule reads its whole input before and after every change::

    ΔW(R) = W(R') − W(R)

Where ``R`` is itself a query (a join, an aggregate), each refresh computes it twice from
the sources: more than a full recompute reads. A *state table* keeps ``R`` instead, as a
hidden materialized view ``S`` of the view, maintained by its own rules (an aggregate by its
accumulators, at the cost of the change), refreshed before the view in the same refresh.
The window then reads ``S``'s snapshots and change feed in place of ``R``'s::

    ΔW = W(S') − W(S)              S' = S + ΔS, both read from the state table

which costs the size of ``R``'s result (the groups under a top-N), not of its sources.

An aggregate whose value depends on the order Spark adds its rows in (a SUM of DOUBLEs,
STDDEV; :attr:`ivm.ir.AggregateCall.order_dependent`) is a state table too, unless it is the
view's own root: recomputed over the input before a change, a group's value need not be the
one the rows above it were computed from, and a refresh could not retract those rows. Its
state table retracts its rows as it stored them (:mod:`ivm.rules.replace`), and the view
above reads them as they were stored.

A lookup join (``JOIN d FOR SYSTEM_TIME AS OF …``) is always a state table (split off before
the passes, :func:`split_lookups`): it holds each fact row as enriched when first consumed,
which its own rule reads back (see :mod:`ivm.rules.lookup`); the view above reads the
enriched rows as any other change.

>>> from sqlglot import exp
>>> from ivm.ir import Aggregate, AggregateCall, Project, Scan, Window
>>> groups = Aggregate(Scan("db.t", "t", ("k", "v")), (("k", exp.column("k", "t")),),
...                    (("total", AggregateCall("sum", exp.column("v", "t"))),))
>>> rank = exp.maybe_parse("ROW_NUMBER() OVER (ORDER BY total)", dialect="spark")
>>> ranked = Window(Project(groups, (("k", exp.column("k")), ("total", exp.column("total")))),
...                 (), (("r", rank),))
>>> plan, states = split_states(ranked, "db.v")
>>> from ivm.ir import scans
>>> [s.table for s in states], scans(plan)[0].table
(['db__ivm.v__ivm_state1'], 'db__ivm.v__ivm_state1')

A state table lives where the view's store does: in the internal database of the view's
(:func:`ivm.names.internal_database`), or, for a view created before ivm kept its tables
there (``legacy_layout``), beside the view.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ivm.ir import (
    Aggregate,
    Distinct,
    Filter,
    Join,
    JoinKind,
    Project,
    Relation,
    Scan,
    SetOperation,
    Subquery,
    Window,
    aliases_of,
    children,
    columns,
    lookup_chain,
    with_children,
)
from ivm.names import internal_table
from ivm.zset import BOOKKEEPING_PREFIX

STATE_SUFFIX = "__ivm_state"


def state_name(view: str, number: int, legacy_layout: bool = False) -> str:
    """The name of the ``number``-th state table of ``view`` (``legacy_layout``: beside it,
    see :func:`ivm.names.internal_table`).

    >>> state_name("db.`order`", 2), state_name("db.`order`", 2, legacy_layout=True)
    ('db__ivm.order__ivm_state2', 'db.order__ivm_state2')
    """
    return internal_table(view, f"{STATE_SUFFIX}{number}", legacy_layout)


@dataclass(frozen=True)
class StatePlan:
    """A state table: its name, and the plan whose result it holds."""

    table: str
    plan: Relation


def _costly(node: Relation) -> bool:
    """Computing ``node`` reads more than its result: it joins, groups or compares rows."""
    return isinstance(node, (Join, Aggregate, Distinct, SetOperation, Window)) or any(
        _costly(child) for child in children(node)
    )


def _stored_name(name: str, taken: set[str]) -> str:
    """``name`` as a state table's column: without the prefix reserved for the columns ivm
    adds to a store (a window's input names its columns so when they came from a join)."""
    if not name.startswith(BOOKKEEPING_PREFIX):
        return name
    stored = name[len(BOOKKEEPING_PREFIX) :]
    while stored in taken:
        stored += "_"
    return stored


FOUND = f"{BOOKKEEPING_PREFIX}found"
"""A lookup state's column that is TRUE where its dimension matched, NULL where it did not."""


def _stored_names(names: list[str]) -> list[str]:
    """``names`` as a state table's columns (see :func:`_stored_name`)."""
    stored: list[str] = []
    for name in names:
        stored.append(_stored_name(name, set(names) | set(stored)))
    return stored


def split_lookups(
    plan: Relation, view: str, legacy_layout: bool = False
) -> tuple[Relation, tuple[StatePlan, ...]]:
    """``plan`` reading a state table of ``view`` in place of each projection of lookup joins
    (numbered from 1; ``legacy_layout``: see :func:`state_name`), and those state tables.

    A state keeps every fact row, matched or not (its lookups are LEFT joins), with a column
    :data:`FOUND` per dimension; the view drops the rows an inner lookup did not match.
    """
    states: list[StatePlan] = []
    done: dict[Relation, Relation] = {}  # a CTE read twice is one state

    def visit(node: Relation) -> Relation:
        if node not in done:
            done[node] = lookups_read(with_children(node, tuple(visit(c) for c in children(node))))
        return done[node]

    def lookups_read(new: Relation) -> Relation:
        if not (isinstance(new, Project) and isinstance(new.input, Join) and new.input.kind.lookup):
            return new
        fact, chain = lookup_chain(new.input)
        joined: Relation = fact
        found: list[tuple[str, exp.Expr]] = []
        inner: list[str] = []
        for number, lookup in enumerate(chain):
            dimension = lookup.inputs[1]
            (alias,) = aliases_of(dimension)
            flagged = Subquery(
                Project(
                    dimension,
                    tuple(
                        (c.split(".", 1)[1], exp.column(c.split(".", 1)[1], alias))
                        for c in columns(dimension)
                    )
                    + ((FOUND, exp.true()),),
                ),
                alias,
            )
            joined = Join((joined, flagged), lookup.condition, JoinKind.LEFT_LOOKUP)
            found.append((f"{FOUND}{number}", exp.column(FOUND, alias)))
            if lookup.kind is JoinKind.LOOKUP:
                inner.append(f"{FOUND}{number}")
        number = len(states) + 1
        table = state_name(view, number, legacy_layout)
        names = [name for name, _ in new.columns] + [name for name, _ in found]
        stored = _stored_names(names)
        states.append(
            StatePlan(
                table,
                Project(
                    joined,
                    tuple(
                        (s, e) for s, (_, e) in zip(stored, new.columns + tuple(found), strict=True)
                    ),
                ),
            )
        )
        alias = f"state{number}"
        read: Relation = Scan(table, alias, tuple(stored))
        if inner:
            kept = dict(zip(names, stored, strict=True))
            read = Filter(
                read,
                exp.and_(
                    *(
                        exp.Not(this=exp.Is(this=exp.column(kept[f], alias), expression=exp.Null()))
                        for f in inner
                    )
                ),
            )
        return Project(
            read,
            tuple(
                (n, exp.column(s, alias))
                for n, s in zip(names, stored, strict=True)
                if n in dict(new.columns)
            ),
        )

    return visit(plan), tuple(states)


def split_states(
    plan: Relation,
    view: str,
    first: int = 1,
    legacy_layout: bool = False,
    kept: Relation | None = None,
) -> tuple[Relation, tuple[StatePlan, ...]]:
    """``plan`` reading state tables of ``view`` (numbered from ``first``; ``legacy_layout``:
    see :func:`state_name`) in place of the inputs of its global windows that are costly to
    compute and of its order-dependent aggregates but ``kept`` (the view's root, whose store
    holds its rows), and those state tables, each before any that reads it."""
    states: list[StatePlan] = []
    done: dict[Relation, Relation] = {}

    def visit(node: Relation) -> Relation:
        if node in done:
            return done[node]
        new = with_children(node, tuple(visit(c) for c in children(node)))
        if (
            isinstance(new, Window)
            and not new.partition
            and isinstance(new.input, Project)
            and _costly(new.input)
        ):
            new = Window(_read_state(new.input), new.partition, new.functions)
        elif (
            isinstance(new, Aggregate)
            and node is not kept
            and any(call.order_dependent for _, call in new.calls)
        ):
            new = _read_state(Project(new, tuple((n, exp.column(n)) for n in columns(new))))
        done[node] = new
        return new

    def _read_state(named: Project) -> Project:
        number = first + len(states)
        names = list(columns(named))
        stored = _stored_names(names)
        table = state_name(view, number, legacy_layout)
        states.append(
            StatePlan(
                table,
                Project(
                    named.input,
                    tuple((s, e) for s, (_, e) in zip(stored, named.columns, strict=True)),
                ),
            )
        )
        alias = f"state{number}"
        return Project(
            Scan(table, alias, tuple(stored)),
            tuple((n, exp.column(s, alias)) for n, s in zip(names, stored, strict=True)),
        )

    return visit(plan), tuple(states)
