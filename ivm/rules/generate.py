"""A generator (``LATERAL VIEW explode(…)``) is linear: generate from the change.

    Δ gen(R) = gen(ΔR)

Each output row comes from one input row and carries its weight: an inserted row adds the
rows it generates, a deleted row takes them away. The generator reads only its own row, so no
snapshot is read.

>>> from sqlglot import exp
>>> from ivm.ir import Generate, Project, Scan
>>> from ivm.rules import differentiate
>>> tags = Project(Scan("t", "t", ("tags",)), (("tags", exp.column("tags", "t")),))
>>> delta = differentiate(Generate(tags, exp.Explode(this=exp.column("tags")), ("tag",)))
>>> delta.inputs[0].names, delta.inputs[0].input.input.read.value
(('tag',), 'delta')
"""

from dataclasses import replace

from ivm.ir import Generate, Union
from ivm.rules.base import Differentiate, Kind, Rule, terms


def derive_generate(node: Generate, differentiate: Differentiate) -> Union:
    return Union(tuple(replace(node, input=term) for term in terms(differentiate(node.input))))


RULE = Rule(
    Generate,
    "generate",
    Kind.LINEAR,
    "Δ gen(R) = gen(ΔR)",
    "nothing but the change",
    derive_generate,
)
