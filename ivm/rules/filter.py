"""Filter is linear: filter the change, weights carried through.

    Δ σ_p(R) = σ_p(ΔR)

>>> from sqlglot import exp
>>> from ivm.ir import Filter, Scan
>>> from ivm.rules import differentiate
>>> delta = differentiate(Filter(Scan("t", "t", ("x",)), exp.condition("t.x > 1")))
>>> [(type(t).__name__, t.input.read.value) for t in delta.inputs]
[('Filter', 'delta')]
"""

from ivm.ir import Filter, Union
from ivm.rules.base import Differentiate, Kind, Rule, terms


def derive_filter(node: Filter, differentiate: Differentiate) -> Union:
    return Union(tuple(Filter(term, node.predicate) for term in terms(differentiate(node.input))))


RULE = Rule(
    Filter, "filter", Kind.LINEAR, "Δ σ(R) = σ(ΔR)", "nothing but the change", derive_filter
)
