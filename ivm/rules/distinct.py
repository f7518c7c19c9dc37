"""DISTINCT counts: the store keeps how many input rows each distinct row has.

DISTINCT is ``GROUP BY`` every column with a count. The view shows a row while its count is
positive; a change that moves a count across 0 inserts or deletes the row::

    count'(r) = count(r) + Σ ΔR(r),   Δ distinct(R)(r) = [count'(r) > 0] - [count(r) > 0]

>>> from sqlglot import exp
>>> from ivm.ir import Distinct, Project, Scan
>>> from ivm.rules import differentiate
>>> plan = Distinct(Project(Scan("t", "t", ("x",)), (("x", exp.column("x", "t")),)))
>>> m = maintain_distinct(plan, differentiate)
>>> m.store.keys, m.store.repeat_rows
(('x',), False)
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ivm.ir import Distinct, Union, columns
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.rules.integrate import maintain_rows
from ivm.rules.keyed import recompute
from ivm.rules.maintenance import Maintenance


def maintain_distinct(plan: Distinct, differentiate: Differentiate) -> Maintenance:
    return replace(maintain_rows(plan.input, differentiate, repeat_rows=False), rule=RULE)


def derive_keyed_distinct(node: Distinct, differentiate: Differentiate) -> Union:
    """Δ of a DISTINCT inside a plan: recompute the rows the change touches."""
    return recompute(
        [(node.input, [exp.column(name) for name in columns(node.input)])], Distinct, differentiate
    )


KEYED_RULE = Rule(
    Distinct,
    "distinct",
    Kind.KEYED,
    "Δdistinct(R) = distinct(R' ⋉ K) − distinct(R ⋉ K), K = rows of ΔR",
    "input snapshots at the affected rows",
    derive_keyed_distinct,
)


RULE = Rule(
    Distinct,
    "distinct",
    Kind.COUNTING,
    "count'(r) = count(r) + ΔR(r); r shown while count'(r) > 0",
    "the view's own rows and their hidden counts",
    maintain_distinct,
)
