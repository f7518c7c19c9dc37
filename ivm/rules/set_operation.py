"""INTERSECT and EXCEPT [ALL] count each row on both sides: a row's output depends only on the
copies of that row, so they are maintained by affected-key recompute keyed on every column.

    ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K),   K = rows of ΔR ∪ rows of ΔS
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import SetOperation, Union, columns
from ivm.rules.base import Kind, Rule
from ivm.rules.keyed import affected_keys, restricted, signed
from ivm.zset import Read


def derive_set_operation(node: SetOperation, differentiate) -> Union:
    keys = [exp.column(name) for name in columns(node.left)]
    affected = affected_keys([(differentiate(node.left), keys),
                              (differentiate(node.right), keys)])

    def at(read: Read) -> SetOperation:
        return SetOperation(restricted(node.left, read, keys, affected),
                            restricted(node.right, read, keys, affected), node.kind, node.all)
    return signed(at(Read.BEFORE), at(Read.AFTER))


RULE = Rule(SetOperation, "intersect/except", Kind.KEYED,
            "ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K), K = rows of ΔR ∪ ΔS",
            "snapshots of both sides at the affected rows", derive_set_operation)
