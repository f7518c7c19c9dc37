"""Window functions are recomputed per affected partition.

A window function's value for a row depends only on the rows of its partition, so with ``K``
the partitions that appear in the change::

    ΔWindow(R) = Window(R' ⋉ K) − Window(R ⋉ K),    K = partitions of ΔR

Top-N per key (``ROW_NUMBER() … <= N``, ``QUALIFY``) is a filter over this delta, and a global
``ORDER BY … LIMIT N`` is ``ROW_NUMBER()`` over one partition: then ``K`` is that one partition
whenever anything changed, and the rule recomputes the whole input.

The rule is only correct if each evaluation gives the same answer on the same rows, so
functions whose value depends on a row's position among rows tied in ``ORDER BY``
(``ROW_NUMBER``, ``LAG``, ``FIRST_VALUE``, a ``ROWS`` frame, …) are ordered further by every
input column when the query is lowered (:func:`ivm.frontend.windows.deterministic`): any
order of tied rows is a valid answer of the query, and a fixed one keeps refreshes consistent.
"""

from __future__ import annotations

from ivm.ir import Relation, Union, Window
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.rules.keyed import recompute


def derive_window(node: Window, differentiate: Differentiate) -> Union:
    def rebuilt(rows: Relation) -> Relation:
        return Window(rows, node.partition, node.functions)

    return recompute([(node.input, list(node.partition))], rebuilt, differentiate)


RULE = Rule(
    Window,
    "window",
    Kind.KEYED,
    "ΔWindow(R) = Window(R' ⋉ K) − Window(R ⋉ K), K = partitions of ΔR",
    "input snapshots at the affected partitions",
    derive_window,
)
