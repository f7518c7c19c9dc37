"""Rewrites of the IR between lowering and the rules: each pass maps a plan to an equal plan
that is cheaper to maintain. :func:`optimize` runs them in the order of :data:`PASSES`.

Predicates move down first: that merges stacked filters and brings a filter over a derived
table (or an aggregate's ``HAVING`` on its keys) down to the join under it, so the equalities
between two inputs of an inner join then meet that join as one filter over it, which is the
only place :func:`join_on_equalities` looks; and the filter it leaves there holds only what
reads two inputs or more.

>>> from sqlglot import exp
>>> from ivm.ir import Filter, Join, Scan
>>> a, b = Scan("a", "a", ("k",)), Scan("b", "b", ("k",))
>>> optimize(Filter(Join((a, b)), exp.column("k", "a").eq(exp.column("k", "b")))).condition.sql()
'a.k = b.k'
"""

from __future__ import annotations

from collections.abc import Callable

from ivm.ir import Relation
from ivm.passes.join_equalities import join_on_equalities
from ivm.passes.pushdown import push_down_predicates

Pass = Callable[[Relation], Relation]

PASSES: tuple[Pass, ...] = (push_down_predicates, join_on_equalities)


def optimize(plan: Relation) -> Relation:
    """``plan`` after every pass of :data:`PASSES`."""
    for rewrite in PASSES:
        plan = rewrite(plan)
    return plan
