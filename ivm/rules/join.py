"""Joins. An inner join is bilinear: one term per input, that input's change joined with
snapshots of the others.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS``; for n inputs the product telescopes::

    Δ(R1 ⋈ … ⋈ Rn) = Σ_i  R1' ⋈ … ⋈ R(i-1)'  ⋈  ΔRi  ⋈  R(i+1) ⋈ … ⋈ Rn

where ``R`` is an input *before* the change and ``R' = R + ΔR`` *after* it. The weight of a
joined row is the product of its rows' weights. A term whose ``ΔRi`` is empty (the source did
not change) contributes nothing; the runtime binds it empty and Spark prunes it.

Outer, semi and anti joins are not bilinear (a padded or filtered row depends on the absence
of matches), but their output for a join key depends only on the rows with that key: they are
maintained by affected-key recompute (:mod:`ivm.rules.keyed`) on the equalities of their ON.

>>> from sqlglot import exp
>>> from ivm.ir import Join, Scan
>>> r, s, t = (Scan(n, n, ("k",)) for n in "rst")
>>> delta = derive_join(Join((r, s, t), exp.condition("r.k = s.k AND s.k = t.k")), None)
>>> [" ⋈ ".join(f"{x.alias}:{x.read.value}" for x in term.inputs) for term in delta.inputs]
['r:delta ⋈ s:before ⋈ t:before', 'r:after ⋈ s:delta ⋈ t:before', 'r:after ⋈ s:after ⋈ t:delta']
"""

from __future__ import annotations

from ivm.ir import Join, Scan, Union, equalities, reading
from ivm.rules.base import Kind, Rule, terms
from ivm.rules.keyed import affected_keys, restricted, signed
from ivm.zset import Read


def _delta_of(node, differentiate) -> Union:
    return Union((node.reading(Read.DELTA),)) if isinstance(node, Scan) else differentiate(node)


def derive_join(node: Join, differentiate) -> Union:
    if node.kind != "inner":
        return derive_keyed_join(node, differentiate)
    inputs = node.inputs
    return Union(tuple(
        Join(tuple(reading(x, Read.AFTER) if j < i else term if j == i
                   else reading(x, Read.BEFORE) for j, x in enumerate(inputs)), node.condition)
        for i, changed in enumerate(inputs)
        for term in terms(_delta_of(changed, differentiate))))


def derive_keyed_join(node: Join, differentiate) -> Union:
    left, right = node.inputs
    pairs = equalities(node.condition, left, right)  # lowering ensures there is one
    left_keys, right_keys = [l for l, _ in pairs], [r for _, r in pairs]
    affected = affected_keys([(_delta_of(left, differentiate), left_keys),
                              (_delta_of(right, differentiate), right_keys)])

    def at(read: Read) -> Join:
        return Join((restricted(left, read, left_keys, affected),
                     restricted(right, read, right_keys, affected)), node.condition, node.kind)
    return signed(at(Read.BEFORE), at(Read.AFTER))


RULE = Rule(Join, "join", Kind.BILINEAR, "Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS",
            "snapshots of the other inputs before and after the change", derive_join)

KEYED_RULE = Rule(Join, "outer/semi/anti join", Kind.KEYED,
                  "Δ(R ⟕ S) = (R' ⋉ K ⟕ S' ⋉ K) − (R ⋉ K ⟕ S ⋉ K), K = keys(ΔR) ∪ keys(ΔS)",
                  "snapshots of both inputs at the affected join keys", derive_keyed_join)
