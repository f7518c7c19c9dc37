"""The words a refresh's decision is made in: the view's refresh :class:`Policy`, the
:class:`Obstacle` to applying the change, the :class:`Mode` a refresh goes in.

A view's **refresh policy** (``REFRESH POLICY`` on CREATE and ALTER, Databricks' spelling,
kept in the store's property ``ivm.refreshPolicy``) says how a refresh chooses:

* ``AUTO`` (the default): incremental where it can be, unless recomputing is predicted
  cheaper (:mod:`ivm.runtime.decision.cost`);
* ``INCREMENTAL``: incremental where it can be, whatever it costs;
* ``INCREMENTAL STRICT``: incremental, or the refresh fails and says why it cannot be;
* ``FULL``: every refresh recomputes.

What stops a refresh from applying the change is an :class:`Obstacle` of one of four kinds:

* ``requested``: ``REFRESH ... FULL``, or the policy ``FULL``;
* ``reinitialize``: the change no longer describes the view's input (a source was replaced,
  or its schema changed); every policy recomputes;
* ``unavailable``: the change cannot be applied (part of it is gone from the log, the change
  data feed was off, a sum overflowed or cannot be added exactly); ``INCREMENTAL STRICT``
  fails, the other policies recompute;
* ``cost``: recomputing is predicted cheaper; only ``AUTO`` recomputes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Mode(StrEnum):
    """How a write of a store, or a refresh that wrote nothing, went; its value is what the
    record and the history say."""

    CREATE = "create"
    INCREMENTAL = "incremental"  # the change folded into the store
    FULL = "full"  # the store overwritten with the query's result
    PARTITION = "partition"  # one partition of the store overwritten
    NOOP = "noop"  # no source changed: nothing written


class Policy(StrEnum):
    """A view's refresh policy, spelled as ``REFRESH POLICY`` and its store property spell it
    (see the module's docstring)."""

    AUTO = "AUTO"
    INCREMENTAL = "INCREMENTAL"
    INCREMENTAL_STRICT = "INCREMENTAL STRICT"
    FULL = "FULL"


DEFAULT_POLICY = Policy.AUTO


class ObstacleKind(StrEnum):
    """What an obstacle to applying the change is (see the module's docstring)."""

    REQUESTED = "requested"
    REINITIALIZE = "reinitialize"
    UNAVAILABLE = "unavailable"
    COST = "cost"


@dataclass(frozen=True)
class Obstacle:
    """Why a refresh does not apply the change, and of what ``kind``."""

    kind: ObstacleKind
    reason: str
