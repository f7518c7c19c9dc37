"""Where a sqlglot node came from in the SQL text.

sqlglot records ``line``, ``col`` (1-based, of the token's *last* character), ``start`` and
``end`` (0-based offsets) in the ``meta`` of the identifiers and literals it parses.
"""

from __future__ import annotations

from sqlglot import exp

from ivm.errors import Position


def _start(meta: dict) -> Position | None:
    if "line" not in meta or "col" not in meta:
        return None
    width = meta.get("end", 0) - meta.get("start", 0)
    return Position(meta["line"], meta["col"] - width)


def position_of(node: exp.Expr | None) -> Position | None:
    """The earliest recorded position in ``node``'s subtree, or None."""
    if node is None:
        return None
    best = None
    for child in node.walk():
        meta = getattr(child, "_meta", None) or {}
        pos = _start(meta)
        if pos is not None and (best is None or (pos.line, pos.column) < (best.line, best.column)):
            best = pos
    return best


def position_at_offset(sql: str, offset: int) -> Position:
    """The position of the character at ``offset`` in ``sql``."""
    before = sql[:offset]
    return Position(before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1)
