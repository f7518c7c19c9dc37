"""Named points in the writes of a refresh, where a test can make the refresh fail.

Exactly-once is a claim about every moment a refresh can die, so each moment has a name and
the code passes through it: :func:`reach` between writes, :func:`during` inside one (it
makes the Spark job that performs the write fail half-way). Nothing is armed outside tests,
and an unarmed point costs a dictionary lookup.

>>> with inject("refresh.after_commit"):
...     reach("refresh.after_commit")
Traceback (most recent call last):
...
ivm.runtime.faults.InjectedFault: injected fault at refresh.after_commit
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WRITE_POINTS = {
    "create.before_write": "a CREATE, before it writes anything",
    "create.during_write": "a CREATE, inside the job that writes the store",
    "create.after_commit": "a CREATE, after the store's commit, before the catalog view",
    "create.after_write": "a CREATE, after every write",
    "refresh.before_write": "a REFRESH, with its reads bound, before it writes",
    "refresh.during_write": "a REFRESH, inside the job of its MERGE or overwrite",
    "refresh.after_commit": "a REFRESH, after its commit, before it returns",
    "refresh.after_state": "a REFRESH, after a state table's commit, before the next write",
    "drop.after_view": "a DROP, after the catalog view, before the store",
}
"""Every point, with the moment it stands for."""

_armed: dict[str, Callable[[], object] | None] = {}


class InjectedFault(RuntimeError):
    """The failure a test injected."""


def reach(point: str) -> None:
    """Pass the write point ``point``: fail here if a test armed it, or, if it armed it
    with an action, disarm it and run the action (such as a competing refresh)."""
    assert point in WRITE_POINTS, point
    if point in _armed:
        action = _armed[point]
        if action is None:
            raise InjectedFault(f"injected fault at {point}")
        del _armed[point]
        action()


def during(point: str, frame: DataFrame) -> DataFrame:
    """``frame``, or, if ``point`` is armed, ``frame`` failing when a job computes its rows."""
    assert point in WRITE_POINTS, point
    if point not in _armed:
        return frame
    return frame.where(F.raise_error(F.lit(f"injected fault at {point}")).isNull())


@contextmanager
def inject(point: str, action=None):
    """Arm ``point`` for the block: to fail, or to run ``action`` once instead."""
    assert point in WRITE_POINTS, point
    _armed[point] = action
    try:
        yield
    finally:
        _armed.pop(point, None)
