"""Rewrites of the IR between lowering and the rules: each pass maps a plan to an equal plan
that is cheaper to maintain. :func:`optimize` runs them in the order of :data:`PASSES`.

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

Pass = Callable[[Relation], Relation]

PASSES: tuple[Pass, ...] = (join_on_equalities,)


def optimize(plan: Relation) -> Relation:
    """``plan`` after every pass of :data:`PASSES`."""
    for rewrite in PASSES:
        plan = rewrite(plan)
    return plan
