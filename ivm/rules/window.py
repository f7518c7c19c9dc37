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
input column (see :func:`deterministic`): any order of tied rows is a valid answer of the
query, and a fixed one keeps refreshes consistent.

>>> from sqlglot import exp
>>> w = exp.maybe_parse("ROW_NUMBER() OVER (PARTITION BY k ORDER BY t DESC)", dialect="spark")
>>> deterministic(w, ["t", "v"]).sql("spark")
'ROW_NUMBER() OVER (PARTITION BY k ORDER BY t DESC, t ASC, v ASC)'
>>> deterministic(exp.maybe_parse("RANK() OVER (ORDER BY t)", dialect="spark"), ["t"]).sql()
'RANK() OVER (ORDER BY t)'
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Union, Window
from ivm.rules.base import Kind, Rule
from ivm.rules.keyed import recompute

POSITIONAL = (exp.RowNumber, exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)
"""Window functions whose value depends on the order of rows tied in ORDER BY."""

POSITIONAL_NAMES = {"ntile"}


def _positional(window: exp.Window) -> bool:
    function = window.this
    while isinstance(function, (exp.IgnoreNulls, exp.RespectNulls)):
        function = function.this
    spec = window.args.get("spec")
    rows_frame = spec is not None and (spec.args.get("kind") or "").upper() == "ROWS"
    name = function.name.lower() if isinstance(function, exp.Anonymous) else ""
    return isinstance(function, POSITIONAL) or name in POSITIONAL_NAMES or rows_frame


def deterministic(window: exp.Window, columns) -> exp.Window:
    """``window`` ordered further by ``columns`` where its value depends on tie order."""
    if not _positional(window):
        return window
    window = window.copy()
    order = window.args.get("order") or exp.Order(expressions=[])
    order.set("expressions", list(order.expressions) + [
        exp.Ordered(this=exp.column(c), desc=False, nulls_first=True) for c in columns])
    window.set("order", order)
    return window


def derive_window(node: Window, differentiate) -> Union:
    return recompute([(node.input, list(node.partition))],
                     lambda rows: Window(rows, node.partition, node.functions), differentiate)


RULE = Rule(Window, "window", Kind.KEYED,
            "ΔWindow(R) = Window(R' ⋉ K) − Window(R ⋉ K), K = partitions of ΔR",
            "input snapshots at the affected partitions", derive_window)
