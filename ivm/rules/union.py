"""UNION ALL is linear: the change of a sum is the sum of the changes.

    Δ(R ∪all S) = ΔR ∪all ΔS

(``UNION`` is ``DISTINCT`` over ``UNION ALL``.)
"""

from ivm.ir import Union
from ivm.rules.base import Differentiate, Kind, Rule, terms


def derive_union(node: Union, differentiate: Differentiate) -> Union:
    return Union(tuple(t for branch in node.inputs for t in terms(differentiate(branch))))


RULE = Rule(
    Union, "union all", Kind.LINEAR, "Δ(R ∪ S) = ΔR ∪ ΔS", "nothing but the change", derive_union
)
