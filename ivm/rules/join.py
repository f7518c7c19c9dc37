"""Joins. An inner join is bilinear: one term per input, that input's change joined with
snapshots of the others.

For two inputs ``Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS``; for n inputs the product telescopes::

    Δ(R1 ⋈ … ⋈ Rn) = Σ_i  R1' ⋈ … ⋈ R(i-1)'  ⋈  ΔRi  ⋈  R(i+1) ⋈ … ⋈ Rn

where ``R`` is an input *before* the change and ``R' = R + ΔR`` *after* it. The weight of a
joined row is the product of its rows' weights. A term whose ``ΔRi`` is empty (the source did
not change) contributes nothing; the runtime binds it empty and Spark prunes it.

A snapshot joined to the change by equalities only meets it at the change's join keys, so a
term reads it restricted to them: ``ΔR ⋈_{r=s} S = ΔR ⋈ (S ⋉ π_r(ΔR))``. The restriction is
exact whatever it costs; it pays when the runtime turns the keys into ranges that Delta's data
skipping prunes files with (:mod:`ivm.runtime.pruning`).

Outer, semi and anti joins are not bilinear (a padded or filtered row depends on the absence
of matches), but their output for a join key depends only on the rows with that key: they are
maintained by affected-key recompute (:mod:`ivm.rules.keyed`) on the equalities of their ON.
One without an equality in its ON has no key, and is recomputed whole when an input changes.

>>> from sqlglot import exp
>>> from ivm.ir import Join, Scan
>>> from ivm.rules import differentiate
>>> r, s, t = (Scan(n, n, ("k",)) for n in "rst")
>>> delta = differentiate(Join((r, s, t), exp.condition("r.k = s.k AND s.k = t.k")))
>>> def read(x):
...     return f"{x.alias}:{x.read.value}" if isinstance(x, Scan) else f"{read(x.input)}⋉Δ"
>>> [" ⋈ ".join(read(x) for x in term.inputs) for term in delta.inputs]
['r:delta ⋈ s:before⋉Δ ⋈ t:before', 'r:after⋉Δ ⋈ s:delta ⋈ t:before⋉Δ', 'r:after ⋈ s:after⋉Δ ⋈ t:delta']
"""

from __future__ import annotations

from ivm.ir import Join, JoinKind, Union, equalities, reading
from ivm.rules.base import Kind, Rule, terms
from ivm.rules.keyed import affected_keys, recompute, restricted
from ivm.zset import Read


def derive_join(node: Join, differentiate) -> Union:
    if node.kind is not JoinKind.INNER:
        return derive_keyed_join(node, differentiate)
    inputs = node.inputs

    def snapshot(x, read: Read, term, changed):
        """``x`` as of ``read``, restricted to the join keys of ``term`` (a change of the
        input ``changed``) where an equality of the ON relates the two."""
        pairs = equalities(node.condition, changed, x) if node.condition is not None else []
        if not pairs:
            return reading(x, read)
        keys = affected_keys([(Union((term,)), [c for c, _ in pairs])])
        return restricted(x, read, [s for _, s in pairs], keys)

    return Union(tuple(
        Join(tuple(snapshot(x, Read.AFTER, term, changed) if j < i else term if j == i
                   else snapshot(x, Read.BEFORE, term, changed)
                   for j, x in enumerate(inputs)), node.condition)
        for i, changed in enumerate(inputs)
        for term in terms(differentiate(changed))))


def derive_keyed_join(node: Join, differentiate) -> Union:
    left, right = node.inputs
    # Without an equality there is no key: K is "everything" whenever an input changed.
    pairs = equalities(node.condition, left, right) if node.condition is not None else []
    return recompute([(left, [l for l, _ in pairs]), (right, [r for _, r in pairs])],
                     lambda l, r: Join((l, r), node.condition, node.kind), differentiate)


RULE = Rule(Join, "join", Kind.BILINEAR, "Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS",
            "snapshots of the other inputs before and after the change, at the change's join "
            "keys where an equality relates them", derive_join)

KEYED_RULE = Rule(Join, "outer/semi/anti join", Kind.KEYED,
                  "Δ(R ⟕ S) = (R' ⋉ K ⟕ S' ⋉ K) − (R ⋉ K ⟕ S ⋉ K), K = keys(ΔR) ∪ keys(ΔS)",
                  "snapshots of both inputs at the affected join keys", derive_keyed_join)
