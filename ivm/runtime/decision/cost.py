"""The cost model of a refresh: when recomputing a view is predicted cheaper than applying
its change (an obstacle of kind ``cost``, which only ``REFRESH POLICY AUTO`` heeds; see
:mod:`ivm.runtime.decision.decide`).

**The cost model** predicts a recompute cheaper only on evidence, and errs towards
applying the change. Recomputing reads the sources whole (``full`` bytes); a full refresh of
the view, or its CREATE, that read b bytes in T seconds teaches the rate r ← mean(r, b / T)
(mean(x, y) is (x + y) / 2, or y while x is unknown: one slow refresh moves r half-way), so
a recompute is predicted to take ``full / r``. Each refresh records the rate, the seconds and
change sizes of the latest :data:`KEPT` incremental refreshes, and the change size and reads
of the latest delta query planned, and the next refresh starts from that record alone. A
refresh recomputes

1. before reading the change, if the latest delta query planned, for a change no larger than
   this one, read at least the sources' bytes (a top-N reads its input before and after the
   change: twice the sources), or if the latest incremental refresh of a change no larger
   than this one, grown to this one's size, is predicted to take longer than a recompute;
   "no larger" is up to :data:`SIMILAR` times as large. An incremental refresh's cost grows
   with its change c as t(c) = t₀ · (c / c₀)^α from a refresh of a change c₀ that took t₀,
   the growth α fitted to the kept refreshes (least squares of log t on log c, within
   [0, 1]) once their changes span a factor :data:`SIMILAR`, and :data:`GROWTH_PRIOR` until
   then; a change no larger than c₀ is predicted t₀ (the fixed part of the cost stays);
2. once the change is read and the delta query is planned, if that plan reads at least the
   sources' bytes (it is the optimized plan, in which Delta has skipped the files the
   change's keys exclude); the change read is then spent.

After :data:`REMEASURE_AFTER` recomputes in a row chosen so, one refresh is incremental
again, so that the evidence follows the engine and the data; a change k times larger than the
largest one measured (in an incremental refresh or a delta query planned) waits
``⌈k / SIMILAR⌉`` times as long, up to :data:`REMEASURE_AFTER` times: measuring with a change
much larger than the evidence costs a multiple of a recompute and tells less (the cost of an
incremental refresh grows with its change, and a smaller one already cost more than a
recompute). Views whose sources hold less
than ``spark.ivm.refresh.fullRecomputeMinBytes`` (64 MiB) are not predicted: a refresh of
them costs its fixed overhead either way, and stays incremental.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from math import ceil, log
from typing import Any

from ivm.runtime.decision.terms import Obstacle, ObstacleKind
from ivm.runtime.messages import size

REMEASURE_AFTER = 8
"""Recomputes in a row, chosen by cost, after which one refresh is incremental again."""
KEPT = 8
"""How many of the latest incremental refreshes the cost model keeps."""
SIMILAR = 2
"""A change at most this many times another's counts as no larger: batches of a workload
vary in size, and an incremental refresh's cost grows more slowly than its change."""
GROWTH_PRIOR = 0.2
"""The growth α of an incremental refresh's cost with its change (t ∝ c^α) until a view's
own refreshes measure it: about the median (0.18) of the planner benchmark's
(``benchmarks/results/planner_rerun``: SF 1, TPC-H, batches of 0.01, 0.1, 1 and 10 %), where
each tenfold change cost the eight views' incremental refreshes 1.07–2.4 times as long (α
from 0.03 to 0.38)."""


@dataclass(frozen=True)
class CostModel:
    """What refreshes of one view have cost (see the module's docstring):
    ``bytes_per_second`` r of its full refreshes; ``incremental``, (change bytes, seconds)
    of its latest incremental refreshes, newest first; ``planned``, (change bytes, bytes
    read) of the latest delta query planned; and how many refreshes in a row recomputed by
    cost."""

    bytes_per_second: float | None = None
    incremental: tuple[tuple[int, float], ...] = ()
    planned: tuple[int, int] | None = None
    recomputed_in_a_row: int = 0

    @classmethod
    def from_record(cls, stored: dict[str, Any] | None) -> CostModel:
        """The model a refresh's record keeps (its JSON, :meth:`to_record`)."""
        stored = stored or {}
        planned = stored.get("planned")
        return cls(
            stored.get("bytes_per_second"),
            tuple((int(c), float(t)) for c, t in stored.get("incremental") or ()),
            None if planned is None else (int(planned[0]), int(planned[1])),
            int(stored.get("recomputed_in_a_row") or 0),
        )

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    def observed(
        self, mode: str, planned_bytes: int | None, change_bytes: int | None, seconds: float | None
    ) -> CostModel:
        """The model after a refresh of ``mode`` that took ``seconds``: a full one (or a
        CREATE) that read ``planned_bytes``, an incremental one of ``change_bytes``.

        >>> CostModel().observed("create", 1000, None, 2.0).bytes_per_second
        500.0
        >>> CostModel().observed("incremental", 10, 5, 3.0).incremental
        ((5, 3.0),)
        """
        if not seconds or seconds <= 0:
            return self
        if mode in ("create", "full") and planned_bytes is not None:
            return replace(
                self, bytes_per_second=_mean(self.bytes_per_second, planned_bytes / seconds)
            )
        if mode == "incremental" and change_bytes is not None:
            return replace(self, incremental=((change_bytes, seconds), *self.incremental)[:KEPT])
        return self

    def before_reading(
        self, change_bytes: int | None, full_bytes: int | None, min_bytes: float = 0
    ) -> tuple[Obstacle | None, str]:
        """An obstacle of kind ``cost`` if, before a change of ``change_bytes`` is read, the
        view's record shows recomputing sources of ``full_bytes`` cheaper (rule 1 of the
        module's docstring); and the prediction in words.

        >>> CostModel(1e6, ((100, 3.0),)).before_reading(200, 2_000_000)[1]
        'an incremental refresh of a change of 100 B took 3.00 s, one of 200 B is predicted
        3.45 s (cost ∝ change^0.20, assumed), a full recompute is predicted 2.00 s (1.9 MiB
        at 976.6 KiB/s)'
        >>> CostModel(1e6, ((100, 1.5),)).before_reading(1000, 2_000_000)[0].kind.value
        'cost'
        >>> CostModel(1e6, ((100, 1.5), (10, 1.5))).before_reading(1000, 2_000_000)[0] is None
        True
        >>> CostModel(1e6, ((100, 3.0),)).before_reading(49, 2_000_000)[0] is None
        True
        """
        if (
            reason := self._unpredicted(full_bytes, min_bytes, change_bytes)
        ) or change_bytes is None:
            return None, reason or "the change's size is not known: incremental"
        assert full_bytes is not None
        like = SIMILAR * change_bytes  # changes no larger than this, give or take
        if self.planned and self.planned[0] <= like and self.planned[1] >= full_bytes:
            return _cheaper(
                f"the latest delta query, for a change of {size(self.planned[0])}, "
                f"read {size(self.planned[1])}, a full recompute reads "
                f"{size(full_bytes)}"
            )
        full = self.full_seconds(full_bytes)
        latest = next(((c, t) for c, t in self.incremental if c <= like), None)
        if full is not None and latest is not None:
            c, t = latest
            growth, fitted = self.growth()
            predicted = t * max(change_bytes / c, 1) ** growth if c > 0 else t
            if predicted > full:
                grown = (
                    ""
                    if predicted == t
                    else f", one of {size(change_bytes)} is predicted {predicted:.2f} s "
                    f"(cost ∝ change^{growth:.2f}, {'measured' if fitted else 'assumed'})"
                )
                return _cheaper(
                    f"an incremental refresh of a change of {size(c)} took {t:.2f} s{grown}, "
                    f"a full recompute is predicted {full:.2f} s ({size(full_bytes)} "
                    f"at {size(int(self.bytes_per_second or 0))}/s)"
                )
        return None, (
            f"no incremental refresh of a change up to {size(change_bytes)}, grown to its "
            f"size, is predicted to take longer than a full recompute"
            + ("" if full is None else f" ({full:.2f} s)")
        )

    def after_planning(
        self,
        planned_bytes: int | None,
        full_bytes: int | None,
        min_bytes: float = 0,
        change_bytes: int | None = None,
    ) -> tuple[Obstacle | None, str]:
        """An obstacle of kind ``cost`` if the delta query, planned for a change of
        ``change_bytes``, reads ``planned_bytes``, at least the ``full_bytes`` of recomputing
        (rule 2); and the prediction in words.

        >>> CostModel().after_planning(3_000_000, 2_000_000)[0].reason
        'a full recompute is predicted cheaper: the delta query reads 2.9 MiB, a full
        recompute 1.9 MiB'
        """
        if reason := self._unpredicted(full_bytes, min_bytes, change_bytes):
            return None, reason
        if planned_bytes is None:
            return None, "the delta query's reads are not known: incremental"
        assert full_bytes is not None
        words = f"the delta query reads {size(planned_bytes)}, a full recompute {size(full_bytes)}"
        return _cheaper(words) if planned_bytes >= full_bytes else (None, words)

    def growth(self) -> tuple[float, bool]:
        """The growth α of the incremental refreshes' cost with their change, t ∝ c^α, and
        whether it is fitted to the kept refreshes (else :data:`GROWTH_PRIOR`): the least
        squares slope of log t on log c, within [0, 1], once the changes span a factor
        :data:`SIMILAR`.

        >>> round(CostModel(incremental=((1000, 2.0), (100, 1.0))).growth()[0], 3)
        0.301
        >>> CostModel(incremental=((1000, 0.5), (100, 1.0))).growth()  # noise: no shrinking
        (0.0, True)
        >>> CostModel(incremental=((150, 2.0), (100, 1.0))).growth()
        (0.2, False)
        """
        points = [(log(c), log(t)) for c, t in self.incremental if c > 0 and t > 0]
        xs = [x for x, _ in points]
        if not points or max(xs) - min(xs) < log(SIMILAR):
            return GROWTH_PRIOR, False
        mx, my = sum(xs) / len(xs), sum(y for _, y in points) / len(points)
        slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
        return min(max(slope, 0.0), 1.0), True

    def full_seconds(self, full_bytes: int) -> float | None:
        """How long recomputing sources of ``full_bytes`` is predicted to take."""
        return None if not self.bytes_per_second else full_bytes / self.bytes_per_second

    def remeasure_after(self, change_bytes: int | None) -> int:
        """How many recomputes by cost in a row are made before a refresh of a change of
        ``change_bytes`` measures the incremental cost again (see the module's docstring).

        >>> model = CostModel(1e6, ((100, 3.0),))
        >>> model.remeasure_after(150), model.remeasure_after(1_000), model.remeasure_after(10**9)
        (8, 40, 64)
        """
        measured = [c for c, _ in self.incremental] + ([self.planned[0]] if self.planned else [])
        largest = max(measured, default=0)
        if change_bytes is None or largest <= 0:
            return REMEASURE_AFTER
        larger = ceil(change_bytes / (SIMILAR * largest))
        return REMEASURE_AFTER * min(max(larger, 1), REMEASURE_AFTER)

    def _unpredicted(
        self, full_bytes: int | None, min_bytes: float, change_bytes: int | None
    ) -> str | None:
        """Why no prediction is made for a change of ``change_bytes``, if none is."""
        if full_bytes is None:
            return "the sources' size is not known: incremental"
        if full_bytes < min_bytes:
            return f"the sources ({size(full_bytes)}) are under {size(int(min_bytes))}: incremental"
        if self.recomputed_in_a_row >= self.remeasure_after(change_bytes):
            return (
                f"incremental, to measure its cost again after {self.recomputed_in_a_row} "
                f"recomputes in a row"
            )
        return None

    def after(self, mode: str, by_cost: bool, planned: tuple[int, int] | None = None) -> CostModel:
        """The model carried into the record of a refresh of ``mode`` (``by_cost``: chosen
        by the cost model) that planned a delta query for (change bytes, bytes read)
        ``planned``."""
        streak = self.recomputed_in_a_row + 1 if mode == "full" and by_cost else 0
        return replace(self, recomputed_in_a_row=streak, planned=planned or self.planned)


def _cheaper(words: str) -> tuple[Obstacle, str]:
    return Obstacle(ObstacleKind.COST, f"a full recompute is predicted cheaper: {words}"), words


def _mean(old: float | None, new: float) -> float:
    return new if old is None else (old + new) / 2
