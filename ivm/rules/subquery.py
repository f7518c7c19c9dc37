"""A derived table (a subquery in FROM, or a common table expression) is linear: its change
is the change of its query, under the same alias.

    Δ (Q AS a) = (ΔQ) AS a
"""

from ivm.ir import Subquery, Union
from ivm.rules.base import Differentiate, Kind, Rule, terms


def derive_subquery(node: Subquery, differentiate: Differentiate) -> Union:
    return Union(tuple(Subquery(term, node.alias) for term in terms(differentiate(node.input))))


RULE = Rule(
    Subquery,
    "subquery",
    Kind.LINEAR,
    "Δ(Q AS a) = ΔQ AS a",
    "nothing but the change",
    derive_subquery,
)
