"""Named points in the writes of a refresh, where a test can make the refresh fail.

Exactly-once is a claim about every moment a refresh can die, so each moment has a name and
the code passes through it: :func:`reach` between writes, :func:`during` inside one (it
makes the Spark job that performs the write fail half-way). Nothing is armed outside tests,
and an unarmed point costs a dictionary lookup.

>>> with inject("refresh.after_commit"):
...     reach("refresh.after_commit")
Traceback (most recent call last):
...
ivm.runtime.refresh.faults.InjectedFault: injected fault at refresh.after_commit

A test of a fault that never fired would pass for the wrong reason, so a block that armed a
point the code did not pass through fails:

>>> with inject("refresh.after_commit"):
...     pass
Traceback (most recent call last):
...
ivm.runtime.refresh.faults.FaultNotFired: the fault armed at refresh.after_commit never fired
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

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


class InjectedFault(RuntimeError):
    """The failure a test injected."""


class FaultNotFired(AssertionError):
    """A block armed a point that the code it ran did not fail at."""


@dataclass
class Fault:
    """A point armed for a block: to fail, or to run ``action`` once instead; ``fired``
    once it did."""

    point: str
    action: Callable[[], object] | None = None
    fired: bool = False

    @property
    def message(self) -> str:
        return f"injected fault at {self.point}"


_armed: dict[str, Fault] = {}


def reach(point: str) -> None:
    """Pass the write point ``point``: fail here if a test armed it, or, if it armed it
    with an action, disarm it and run the action (such as a competing refresh)."""
    assert point in WRITE_POINTS, point
    fault = _armed.get(point)
    if fault is None:
        return
    fault.fired = True
    if fault.action is None:
        raise InjectedFault(fault.message)
    del _armed[point]
    fault.action()


def during(point: str, frame: DataFrame) -> DataFrame:
    """``frame``, or, if ``point`` is armed, ``frame`` failing when a job computes its rows
    (the fault fires when that failure leaves the block that armed it: see :func:`inject`)."""
    assert point in WRITE_POINTS, point
    fault = _armed.get(point)
    if fault is None:
        return frame
    return frame.where(F.raise_error(F.lit(fault.message)).isNull())


@contextmanager
def inject(point: str, action: Callable[[], object] | None = None, *, must_fire: bool = True):
    """Arm ``point`` for the block: to fail, or to run ``action`` once instead. The block
    gets the :class:`Fault`; it fails with :class:`FaultNotFired` if the fault did not fire:
    :func:`reach` failed or ran the action, or, for :func:`during`, a failure carrying the
    fault's message left the block (so put the block inside any ``pytest.raises`` or
    ``except`` that catches it). ``must_fire=False`` only where the block may rightly not
    reach the point, and the test then checks ``fired`` itself."""
    assert point in WRITE_POINTS, point
    fault = _armed[point] = Fault(point, action)
    try:
        yield fault
    except Exception as error:
        fault.fired = fault.fired or fault.message in str(error)
        raise
    else:
        if must_fire and not fault.fired:
            raise FaultNotFired(f"the fault armed at {point} never fired")
    finally:
        if _armed.get(point) is fault:
            del _armed[point]
