"""Integrate: a view without aggregate or DISTINCT keeps its rows as a consolidated Z-set.

The store holds each distinct view row once, with its multiplicity ``_ivm_count``; the view
repeats each row that many times. A refresh adds the change, consolidated per row::

    count'(r) = count(r) + Σ_{ΔV rows equal to r} weight        (rows whose count is 0 go)

>>> from sqlglot import exp
>>> from ivm.ir import Project, Scan
>>> from ivm.rules import differentiate
>>> m = maintain_rows(Project(Scan("t", "t", ("x",)), (("x", exp.column("x", "t")),)),
...                   differentiate)
>>> m.store.keys, m.store.repeat_rows
(('x',), True)
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Aggregate, Filter, Project, Relation, columns
from ivm.rules import append, replace
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.rules.maintenance import Maintenance
from ivm.store import ROWS, Store
from ivm.zset import COUNT, WEIGHT


def maintain_rows(
    plan: Relation, differentiate: Differentiate, repeat_rows: bool = True, name: str | None = None
) -> Maintenance:
    """``name``: the view's, whose store the rules for a GROUP BY or window at the root
    (:mod:`ivm.rules.replace`) and for changes that insert rows only (:mod:`ivm.rules.append`)
    read; without it, they are not derived."""
    names = columns(plan)
    keys = tuple((n, exp.column(n)) for n in names)
    store = Store(keys=names, visible=keys, accumulators=(ROWS,), repeat_rows=repeat_rows)
    full = Aggregate(plan, keys, ((COUNT, ROWS.full_call()),))
    appended = None if name is None else append.appended(plan, differentiate, name)
    regrouped = None if name is None else replace.replaced_keys(plan, differentiate, name)
    return Maintenance(
        store,
        full,
        _consolidated(differentiate(plan) if regrouped is None else regrouped[1], keys),
        RULE,
        None if appended is None else _consolidated(appended, keys),
        None if regrouped is None else regrouped[0],
    )


def _consolidated(change: Relation, keys: tuple[tuple[str, exp.Expr], ...]) -> Filter:
    """The weighted rows of ``change`` summed per view row, those that change its count."""
    counted = Aggregate(change, keys, ((COUNT, ROWS.change_call(None, exp.column(WEIGHT))),))
    return Filter(counted, exp.NEQ(this=exp.column(COUNT), expression=exp.Literal.number(0)))


RULE = Rule(
    Project,
    "integrate",
    Kind.LINEAR,
    "count'(r) = count(r) + Σ ΔV(r)",
    "the view's own rows (MERGE on every column)",
    maintain_rows,
)
