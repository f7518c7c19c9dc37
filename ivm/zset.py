"""The vocabulary of Z-sets, fixed once.

A *Z-set* is a multiset whose rows carry an integer *weight*: +1 an insert, -1 a delete, an
update is -1 of the old row and +1 of the new. A change to a table is a Z-set, and applying a
change is addition. In SQL a Z-set is a relation with one extra BIGINT column, :data:`WEIGHT`.

The delta of a query reads each source table three ways, each bound to a relation name by the
runtime before the delta query runs:

* ``DELTA``  - the net change of the source since the view last consumed it (a Z-set),
* ``BEFORE`` - the source as of the version the view last consumed (a snapshot, weight 1),
* ``AFTER``  - the source as of the version being consumed now (a snapshot, weight 1).

A delta query may also read its own store as the refresh found it (``STORE``): the rows a
lookup join enriched (:mod:`ivm.rules.lookup`).

>>> relation_name("default.orders", Read.DELTA)
'delta__default__orders'
>>> relation_name("default.`order`", Read.AFTER)
'after__default__order'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum

from ivm.names import split

WEIGHT = "_ivm_weight"
"""The weight column of every Z-set relation (BIGINT)."""

COUNT = "_ivm_count"
"""The store column holding how many input rows a stored row stands for (BIGINT)."""

BOOKKEEPING_PREFIX = "_ivm_"
"""Every column ivm adds to a store starts with this; user columns may not."""


class Read(Enum):
    """How a scan reads its table."""

    TABLE = "table"  # the live table: the query as the user wrote it
    DELTA = "delta"  # the change since the last refresh, weighted
    BEFORE = "before"  # snapshot at the version last consumed
    AFTER = "after"  # snapshot at the version consumed now
    STORE = "store"  # the view's own store, before this refresh writes it


def relation_name(table: str, read: Read) -> str:
    """The name a delta query uses for ``table`` read as ``read`` (not for ``Read.TABLE``):
    one identifier, unquoted."""
    if read is Read.TABLE:
        raise ValueError("the live table is named by its own name")
    return "__".join([read.value, *split(table)])


def match_within(
    rows: Sequence[tuple[tuple, int, int]], tolerant: set[int], tolerance: float
) -> bool:
    """Whether every surplus row of the left side takes a surplus row of the right side that
    equals it, within ``tolerance`` in the columns numbered ``tolerant``, and none is left.

    >>> match_within([((1, 1.0), 1, 0), ((1, 1.0 + 1e-15), 0, 1)], {1}, 1e-12)
    True
    >>> match_within([((1, 0.0), 1, 0), ((1, 1.0), 0, 1)], {1}, 1e-12)
    False
    """
    surplus_left = [row for row, a, b in rows for _ in range(a - b)]
    surplus_right = [row for row, a, b in rows for _ in range(b - a)]
    if len(surplus_left) != len(surplus_right):
        return False
    for row in surplus_left:
        match = next(
            (
                i
                for i, other in enumerate(surplus_right)
                if all(
                    _same(x, y, n in tolerant, tolerance)
                    for n, (x, y) in enumerate(zip(row, other, strict=True))
                )
            ),
            None,
        )
        if match is None:
            return False
        surplus_right.pop(match)
    return True


def _same(a, b, tolerant: bool, tolerance: float) -> bool:
    """Equal as grouping matches values (NULL with NULL, NaN with NaN), or within the
    relative ``tolerance`` when ``tolerant``."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=tolerance) if tolerant else a == b
    return a == b
