"""INTERSECT and EXCEPT [ALL] count each row on both sides: a row's output depends only on the
copies of that row, so they are maintained by affected-key recompute keyed on every column.

    ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K),   K = rows of ΔR ∪ rows of ΔS
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import SetOperation, Union, columns
from ivm.rules.base import Kind, Rule
from ivm.rules.keyed import recompute


def derive_set_operation(node: SetOperation, differentiate) -> Union:
    keys = [exp.column(name) for name in columns(node.left)]
    return recompute(
        [(node.left, keys), (node.right, keys)],
        lambda left, right: SetOperation(left, right, node.kind, node.all),
        differentiate,
    )


RULE = Rule(
    SetOperation,
    "intersect/except",
    Kind.KEYED,
    "ΔOp(R, S) = Op(R' ⋉ K, S' ⋉ K) − Op(R ⋉ K, S ⋉ K), K = rows of ΔR ∪ ΔS",
    "snapshots of both sides at the affected rows",
    derive_set_operation,
)
