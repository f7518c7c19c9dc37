"""INTERSECT and EXCEPT [ALL] count each row on both sides: a row's output depends only on the
copies of that row, so they are maintained by affected-key recompute keyed on every column.

    ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K),   K = rows of ΔR ∪ rows of ΔS
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Relation, SetOperation, Union, columns
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.rules.keyed import recompute


def derive_set_operation(node: SetOperation, differentiate: Differentiate) -> Union:
    keys = [exp.column(name) for name in columns(node.left)]

    def rebuilt(left: Relation, right: Relation) -> Relation:
        return SetOperation(left, right, node.kind, node.all)

    return recompute([(node.left, keys), (node.right, keys)], rebuilt, differentiate)


RULE = Rule(
    SetOperation,
    "intersect/except",
    Kind.KEYED,
    "ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K), K = rows of ΔR ∪ ΔS",
    "snapshots of both sides at the affected rows",
    derive_set_operation,
)
