"""Projection (without DISTINCT) is linear: project the change, weights carried through.

    Δ π(R) = π(ΔR)

Projection keeps duplicates, so the weight of an output row is the weight of its input row.

>>> from sqlglot import exp
>>> from ivm.ir import Project, Scan
>>> from ivm.rules import differentiate
>>> delta = differentiate(Project(Scan("t", "t", ("x",)), (("y", exp.column("x", "t")),)))
>>> [name for name, _ in delta.inputs[0].columns]
['y', '_ivm_weight']
"""

from ivm.ir import Project, Union
from ivm.rules.base import Differentiate, Kind, Rule, terms, weighted_project


def derive_project(node: Project, differentiate: Differentiate) -> Union:
    return Union(
        tuple(weighted_project(term, node.columns) for term in terms(differentiate(node.input)))
    )


RULE = Rule(
    Project, "project", Kind.LINEAR, "Δ π(R) = π(ΔR)", "nothing but the change", derive_project
)
