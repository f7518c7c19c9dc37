"""A refresh's write of its view's store, as every technique is given it (:class:`Write`), and
what a technique comes to (:data:`Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from pyspark.sql.types import StructType
from sqlglot import exp

from ivm.compiler import CompiledView
from ivm.runtime.catalog.history import RefreshRecord, RefreshResult, Technique
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.decision.cost import CostModel
from ivm.runtime.decision.decide import Revision
from ivm.runtime.decision.terms import Mode
from ivm.runtime.refresh.commit import Commit, LostRace
from ivm.runtime.refresh.phases import PhaseClock

Outcome: TypeAlias = RefreshResult | Revision | LostRace
"""What a write comes to: its result, once committed; or, for an incremental write that
learned it cannot apply the change, why (a :class:`Revision`: the refresh's decision is
revised, once); or that another write of the view committed first (:class:`LostRace`: the
refresh starts again)."""


@dataclass(frozen=True)
class Write:
    """One write of the store of ``view`` by a refresh: the ``record`` it commits says its
    mode (``incremental``, ``full`` or ``partition``) and the source versions it brings the
    store to; it is computed from store version ``store_version`` (``schema``, the store's),
    which reflects the sources at ``previous``, by the query of ``compiled``, and timed by
    ``clock``. An incremental write keeps the cost ``model`` it was planned with, and judges
    its delta query, once planned, against ``recheck_against`` (see
    :class:`~ivm.runtime.decision.decide.RefreshPlan`); a partition write overwrites the
    rows that match ``partition``."""

    view: str
    compiled: CompiledView
    schema: StructType
    store_version: int
    previous: dict[str, int]
    record: RefreshRecord
    clock: PhaseClock
    model: CostModel = field(default_factory=CostModel)
    recheck_against: int | None = None
    partition: exp.Condition | None = None
    logged: bool = False  # the store takes a change as an append (its layout is ``log``)

    @property
    def store(self) -> str:
        return store_name(self.view)

    @property
    def committing(self) -> Commit:
        """The commit of this write's record (:mod:`ivm.runtime.refresh.commit`): Delta's
        idempotent transaction of the store version it was computed from."""
        return Commit(
            self.view,
            self.compiled,
            self.record,
            "refresh",
            self.store_version,
            self.clock,
            self.logged,
        )

    def result(self, technique: Technique, **counts) -> RefreshResult:
        """The result of this write, once committed by ``technique``, with its store rows
        ``counts``."""
        return RefreshResult(
            self.view,
            Mode(self.record.mode),
            self.record.sources,
            self.previous,
            reason=self.record.reason,
            rules=self.record.rules,
            technique=technique,
            **counts,
        )
