"""Inner join is bilinear: one term per input, that input's change joined with snapshots.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS``; for n inputs the product telescopes::

    Δ(R1 ⋈ … ⋈ Rn) = Σ_i  R1' ⋈ … ⋈ R(i-1)'  ⋈  ΔRi  ⋈  R(i+1) ⋈ … ⋈ Rn

where ``R`` is an input *before* the change and ``R' = R + ΔR`` *after* it. The weight of a
joined row is the product of its rows' weights. A term whose ``ΔRi`` is empty (the source did
not change) contributes nothing; the runtime binds it empty and Spark prunes it.

>>> from sqlglot import exp
>>> from ivm.ir import Join, Scan
>>> r, s, t = (Scan(n, n, ("k",)) for n in "rst")
>>> delta = derive_join(Join((r, s, t), exp.condition("r.k = s.k AND s.k = t.k")), None)
>>> [" ⋈ ".join(f"{x.alias}:{x.read.value}" for x in term.inputs) for term in delta.inputs]
['r:delta ⋈ s:before ⋈ t:before', 'r:after ⋈ s:delta ⋈ t:before', 'r:after ⋈ s:after ⋈ t:delta']
"""

from ivm.ir import Join, Union
from ivm.rules.base import Kind, Rule
from ivm.zset import Read


def derive_join(node: Join, differentiate) -> Union:
    inputs = node.inputs
    return Union(tuple(
        Join(tuple(scan.reading(Read.AFTER if j < i else Read.DELTA if j == i else Read.BEFORE)
                   for j, scan in enumerate(inputs)), node.condition)
        for i in range(len(inputs))))


RULE = Rule(Join, "join", Kind.BILINEAR, "Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS",
            "snapshots of the other inputs before and after the change", derive_join)
