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

from ivm.ir import Aggregate, Filter, Project, columns
from ivm.rules.base import Kind, Rule
from ivm.rules.maintenance import Maintenance
from ivm.store import ROWS, Store
from ivm.zset import COUNT, WEIGHT


def maintain_rows(plan, differentiate, repeat_rows: bool = True) -> Maintenance:
    names = columns(plan)
    keys = tuple((name, exp.column(name)) for name in names)
    store = Store(keys=names, visible=keys, accumulators=(ROWS,), repeat_rows=repeat_rows)
    full = Aggregate(plan, keys, ((COUNT, ROWS.full_call()),))
    change = Aggregate(differentiate(plan), keys,
                       ((COUNT, ROWS.change_call(None, exp.column(WEIGHT))),))
    delta = Filter(change, exp.NEQ(this=exp.column(COUNT), expression=exp.Literal.number(0)))
    return Maintenance(store, full, delta, RULE)


RULE = Rule(Project, "integrate", Kind.LINEAR, "count'(r) = count(r) + Σ ΔV(r)",
            "the view's own rows (MERGE on every column)", maintain_rows)
