"""Where a refresh's time goes: the seconds and Spark jobs of each of its phases.

A refresh runs its phases one after the other (:data:`PHASES`): ``plan`` (the definition
compiled), ``versions`` (the store's and the sources' logs read), ``change`` (the sources'
change read and kept), ``prune`` (the change's key sets read), ``delta`` (the delta query
computed: the change to the store), ``write`` (the MERGE or overwrite, up to its commit)
and ``check`` (the commit's record read back). A :class:`PhaseClock` times them and counts
the Spark jobs each started: the refresh tags its jobs (Spark's job tags are per thread, so
the jobs of other threads are not counted), and each job belongs to the phase in which it
was submitted. Spark learns of a job from its listener bus, which runs behind the jobs
themselves, so the count first waits for the bus to catch up (:data:`LISTENER_WAIT_MS`).

>>> clock = PhaseClock(None)
>>> with clock.phase("plan"):
...     pass
>>> list(clock.summary())
['plan']
"""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from py4j.protocol import Py4JJavaError  # pyright: ignore[reportMissingTypeStubs]

from ivm.runtime.spark.connect import Session, is_connect

PHASES = ("plan", "versions", "change", "prune", "delta", "write", "check")

LISTENER_WAIT_MS = 10_000
"""How long a count waits for Spark's listener bus to deliver the jobs' events; a bus that
stays busy longer leaves the count short by the jobs it has not delivered."""


@dataclass
class Phase:
    seconds: float
    jobs: int | None  # None: not counted (no Spark context to ask)
    started_ms: int = 0


class PhaseClock:
    """Times the phases of one refresh run by this thread in ``spark`` (None, or a Spark
    Connect session, which cannot see Spark's jobs: times only)."""

    def __init__(self, spark: Session | None):
        self._context = None if spark is None or is_connect(spark) else spark.sparkContext
        self.tag = f"ivm-refresh-{uuid.uuid4().hex}"
        self.started_ms = int(time.time() * 1000)
        self.phases: dict[str, Phase] = {}

    @contextmanager
    def running(self):
        """Tag the jobs this thread starts in the block as the refresh's."""
        if self._context is None:
            yield
            return
        self._context.addJobTag(self.tag)
        try:
            yield
        finally:
            self._context.removeJobTag(self.tag)

    @contextmanager
    def phase(self, name: str):
        """Time the block as phase ``name`` (time spent in a phase twice adds up)."""
        assert name in PHASES, name
        start, started_ms = time.perf_counter(), int(time.time() * 1000)
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            if name in self.phases:
                self.phases[name].seconds += seconds
            else:
                self.phases[name] = Phase(seconds, None, started_ms)

    def count_jobs(self) -> None:
        """Each phase's jobs: those of the refresh's tag submitted from its start until the
        next phase's start."""
        if self._context is None:
            return
        context = cast(Any, self._context)._jsc.sc()  # py4j: the JVM SparkContext
        try:
            context.listenerBus().waitUntilEmpty(LISTENER_WAIT_MS)
        except Py4JJavaError:  # a TimeoutException: count what Spark has seen
            pass
        tracker, store = context.statusTracker(), context.statusStore()
        submitted: list[int] = []
        for job in tracker.getJobIdsForTag(self.tag):
            time_ = store.job(job).submissionTime()
            submitted.append(time_.get().getTime() if time_.isDefined() else 0)
        ordered = sorted(self.phases.values(), key=lambda p: p.started_ms)
        for i, phase in enumerate(ordered):
            end = ordered[i + 1].started_ms if i + 1 < len(ordered) else float("inf")
            phase.jobs = sum(phase.started_ms <= s < end for s in submitted)

    def summary(self) -> dict[str, dict[str, float | None]]:
        """``{phase: {seconds, jobs}}`` of the phases run so far, as a refresh record keeps
        them."""
        self.count_jobs()
        return {
            name: {"seconds": round(p.seconds, 3), "jobs": p.jobs}
            for name, p in self.phases.items()
        }
