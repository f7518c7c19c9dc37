"""Window functions whose value depends on the order of rows tied in ``ORDER BY``, ordered
further by every input column: the rule of :mod:`ivm.rules.window` needs each evaluation to
give the same answer on the same rows.

>>> from ivm.names import DIALECT
>>> w = exp.maybe_parse("ROW_NUMBER() OVER (PARTITION BY k ORDER BY t DESC)", dialect=DIALECT)
>>> deterministic(w, ["t", "v"]).sql(DIALECT)
'ROW_NUMBER() OVER (PARTITION BY k ORDER BY t DESC, t ASC, v ASC)'
>>> deterministic(exp.maybe_parse("RANK() OVER (ORDER BY t)", dialect=DIALECT), ["t"]).sql()
'RANK() OVER (ORDER BY t)'
"""

from __future__ import annotations

from sqlglot import exp

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
    order.set(
        "expressions",
        list(order.expressions)
        + [exp.Ordered(this=exp.column(c), desc=False, nulls_first=True) for c in columns],
    )
    window.set("order", order)
    return window
