"""Which way a refresh goes: fold the change into the store, or recompute the view.

A view's **refresh policy** (``REFRESH POLICY`` on CREATE and ALTER, Databricks' spelling,
kept in the store's property ``ivm.refreshPolicy``) says how a refresh chooses:

* ``AUTO`` (the default): incremental where it can be, unless recomputing is predicted
  cheaper;
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

**The cost model.** b is what a refresh reads, in bytes: an incremental refresh, what the
delta query's optimized plan reads after pruning (the change, and the files of the snapshots
that Delta keeps after data skipping by the change's keys); a full one, the sources' size.
The predicted seconds are

    T_full(b) = b / r        T_incremental(b) = f + b / r

with r the bytes per second a full refresh of this view reads, and f the seconds an
incremental refresh spends beyond its reads (its fixed cost: the change read, the key sets,
the MERGE and its commit). Both are learned from the view's own refreshes: after one that
read b bytes in T seconds,

    full (or CREATE):  r ← mean(r, b / T)
    incremental:       f ← mean(f, max(0, T − b / r))

where mean(x, y) is (x + y) / 2, or y while x is unknown: one slow refresh moves the
estimate half-way. The model travels from record to record in the store's history, so a
refresh reads nothing but the latest record for it. While r is unknown, bytes are compared
with bytes (f = 0). After :data:`REMEASURE_AFTER` recomputes in a row chosen by cost, one
refresh is incremental again, so that f follows the engine and the data rather than one old
measurement.

The decision is taken twice. Before the change is read, with b as the latest delta query
planned it (0 where none did): a view whose fixed cost alone exceeds a full recompute
recomputes without reading the change. Then, once the change is read and the delta query is
planned, with b as planned; a refresh that recomputes then has spent its change read. Views whose sources hold
less than ``spark.ivm.refresh.fullRecomputeMinBytes`` (64 MiB) are not predicted: a refresh
of them costs its fixed overhead either way, and stays incremental.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ivm.compiler import CompiledView
from ivm.errors import IvmError
from ivm.runtime.messages import size
from ivm.store import is_exact

POLICY = "ivm.refreshPolicy"
"""The store property that keeps the view's refresh policy."""
POLICIES = ("AUTO", "INCREMENTAL", "INCREMENTAL STRICT", "FULL")
DEFAULT_POLICY = "AUTO"
REMEASURE_AFTER = 8
"""Recomputes in a row, chosen by cost, after which one refresh is incremental again."""


class NotIncrementalizable(IvmError):
    """A refresh under ``REFRESH POLICY INCREMENTAL STRICT`` (or a CREATE or ALTER to
    ``INCREMENTAL``) that cannot apply the change."""


@dataclass(frozen=True)
class Obstacle:
    """Why a refresh does not apply the change: ``kind`` is ``reinitialize``,
    ``unavailable`` or ``cost`` (see the module's docstring)."""

    kind: str
    reason: str


def recomputes(policy: str, obstacle: Obstacle, view: str) -> bool:
    """Whether a refresh of ``view`` under ``policy`` recomputes for ``obstacle``; raises
    :class:`NotIncrementalizable` where the policy forbids both.

    >>> recomputes("AUTO", Obstacle("cost", "cheaper"), "v")
    True
    >>> recomputes("INCREMENTAL", Obstacle("cost", "cheaper"), "v")
    False
    >>> recomputes("INCREMENTAL STRICT", Obstacle("reinitialize", "replaced"), "v")
    True
    """
    if obstacle.kind == "requested":
        return True
    if obstacle.kind == "cost":
        return policy == "AUTO"
    if obstacle.kind == "unavailable" and policy == "INCREMENTAL STRICT":
        raise NotIncrementalizable(
            f"{view} cannot be refreshed incrementally: {obstacle.reason}",
            hint=f"its REFRESH POLICY is INCREMENTAL STRICT: run REFRESH MATERIALIZED VIEW "
                 f"{view} FULL, or ALTER MATERIALIZED VIEW {view} SET REFRESH POLICY "
                 f"INCREMENTAL to let refreshes recompute when they must")
    return True


def never_incremental(compiled: CompiledView, schema) -> str | None:
    """Why no refresh of a view with the store ``schema`` (a Spark StructType) can apply a
    change, if none can: a sum stored as a type whose addition is inexact (floating
    point)."""
    types = {f.name: f.dataType.simpleString() for f in schema}
    inexact = [f"{acc.name} {types[acc.name].upper()}" for acc in compiled.store.accumulators
               if acc.kind == "sum" and not is_exact(types[acc.name])]
    return f"sums stored as types that cannot be added exactly ({', '.join(inexact)})" \
        if inexact else None


def check_policy(view: str, policy: str, compiled: CompiledView, schema) -> None:
    """At CREATE or ALTER: a view that no refresh can maintain incrementally cannot take an
    ``INCREMENTAL`` policy."""
    reason = never_incremental(compiled, schema)
    if reason is not None and policy.startswith("INCREMENTAL"):
        raise NotIncrementalizable(
            f"{view} cannot be refreshed incrementally under REFRESH POLICY {policy}: "
            f"{reason}", hint="use REFRESH POLICY AUTO or FULL, or change the query")


@dataclass(frozen=True)
class CostModel:
    """What refreshes of one view cost (see the module's docstring): ``bytes_per_second`` r,
    ``fixed_seconds`` f, how many refreshes in a row recomputed by cost, and the b of the
    latest delta query planned."""

    bytes_per_second: float | None = None
    fixed_seconds: float | None = None
    recomputed_in_a_row: int = 0
    incremental_bytes: int | None = None    # what the latest delta query planned to read

    @classmethod
    def from_record(cls, stored: dict | None) -> "CostModel":
        return cls(**stored) if stored else cls()

    def to_record(self) -> dict:
        return asdict(self)

    def observed(self, mode: str, read_bytes: int | None, seconds: float | None) -> "CostModel":
        """The model after a refresh of ``mode`` that read ``read_bytes`` in ``seconds``.

        >>> CostModel().observed("create", 1000, 2.0).bytes_per_second
        500.0
        >>> CostModel(500.0, 1.0).observed("incremental", 500, 3.0).fixed_seconds
        1.5
        """
        if read_bytes is None or not seconds or seconds <= 0:
            return self
        if mode in ("create", "full"):
            return replace(self, bytes_per_second=_mean(self.bytes_per_second,
                                                        read_bytes / seconds))
        if mode == "incremental" and self.bytes_per_second:
            fixed = max(0.0, seconds - read_bytes / self.bytes_per_second)
            return replace(self, fixed_seconds=_mean(self.fixed_seconds, fixed))
        return self

    def choose(self, incremental_bytes: int | None, full_bytes: int | None,
               min_bytes: float = 0) -> tuple[Obstacle | None, str]:
        """An obstacle of kind ``cost`` if recomputing is predicted cheaper than applying a
        change that reads ``incremental_bytes`` (None: no obstacle), and the prediction in
        words. Sources of less than ``min_bytes`` are not worth a prediction: a refresh of
        them costs its fixed overhead either way.

        >>> CostModel(1e6, 0.5).choose(100_000, 2_000_000)[1]
        'incremental 0.60 s (0.50 s + 97.7 KiB at 976.6 KiB/s), full 2.00 s (1.9 MiB)'
        >>> CostModel(1e6, 0.5).choose(100_000, 400_000)[0].kind
        'cost'
        """
        if incremental_bytes is None or full_bytes is None:
            return None, "the reads are not known: incremental"
        if full_bytes < min_bytes:
            return None, (f"the sources ({size(full_bytes)}) are under {size(int(min_bytes))}: "
                          f"incremental")
        if self.recomputed_in_a_row >= REMEASURE_AFTER:
            return None, (f"incremental, to measure its cost again after "
                          f"{self.recomputed_in_a_row} recomputes in a row")
        if not self.bytes_per_second:
            prediction = (f"incremental reads {size(incremental_bytes)}, full "
                          f"{size(full_bytes)}")
            cheaper = full_bytes <= incremental_bytes
        else:
            rate, fixed = self.bytes_per_second, self.fixed_seconds or 0.0
            incremental = fixed + incremental_bytes / rate
            full = full_bytes / rate
            prediction = (f"incremental {incremental:.2f} s ({fixed:.2f} s + "
                          f"{size(incremental_bytes)} at {size(int(rate))}/s), full {full:.2f} s "
                          f"({size(full_bytes)})")
            cheaper = full <= incremental
        if cheaper:
            return Obstacle("cost", f"a full recompute is predicted cheaper: {prediction}"), \
                prediction
        return None, prediction

    def before_reading(self, full_bytes: int | None,
                       min_bytes: float = 0) -> tuple[Obstacle | None, str]:
        """:meth:`choose` before the change is read, for the reads the latest delta query
        planned (none known: 0 bytes, so that only a fixed cost above a full recompute's
        recomputes). A refresh that would recompute anyway need not read the change first.

        >>> CostModel(1e6, 3.0).before_reading(2_000_000)[0].kind
        'cost'
        >>> CostModel(1e6, 1.0).before_reading(2_000_000)[0] is None
        True
        """
        cheaper, prediction = self.choose(self.incremental_bytes or 0, full_bytes, min_bytes)
        if cheaper is None:
            return None, prediction
        prediction += ", the delta query's reads as the latest one planned them"
        return Obstacle("cost", f"a full recompute is predicted cheaper: {prediction}"), \
            prediction

    def after(self, mode: str, by_cost: bool,
              incremental_bytes: int | None = None) -> "CostModel":
        """The model carried into the record of a refresh of ``mode`` (``by_cost``: chosen
        by the cost model) that planned a delta query reading ``incremental_bytes``."""
        streak = self.recomputed_in_a_row + 1 if mode == "full" and by_cost else 0
        planned = self.incremental_bytes if incremental_bytes is None else incremental_bytes
        return replace(self, recomputed_in_a_row=streak, incremental_bytes=planned)


def _mean(old: float | None, new: float) -> float:
    return new if old is None else (old + new) / 2
