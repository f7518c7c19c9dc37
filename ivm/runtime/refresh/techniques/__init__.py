"""How a refresh writes its view's store: one module per technique, each with one function
of one shape,

    ``write(spark, write: Write, change: Change | None) -> Outcome``

which writes the store in one committed write (:mod:`ivm.runtime.refresh.commit`) and comes
to its result, a :class:`~ivm.runtime.decision.decide.Revision` (an incremental write that
learned it cannot apply the change) or a :class:`~ivm.runtime.refresh.commit.LostRace`
(:data:`~ivm.runtime.refresh.techniques.writing.Outcome`); and with the name it records,
its ``TECHNIQUE`` (:class:`~ivm.runtime.catalog.history.Technique`).

===================  ====================  ==================================================
module               technique             writes
===================  ====================  ==================================================
``record_only``      record only           the record alone: no stored row changes
``append``           append                the change's rows, to a logged store's log
``merge``            merge                 the change, MERGEd into the stored rows
``rewrite``          rewrite               a small store's rows with the change folded in
``replace``          recompute             the query's rows over the store's (a new store,
                                           where its columns changed)
``partition``        partition overwrite   the query's rows of one partition
===================  ====================  ==================================================

:func:`carry_out` binds the sources' reads, computes the change to the store once where the
write applies one (:mod:`~ivm.runtime.refresh.techniques.change`), and hands it to the
technique :func:`chosen` names. A new technique is a module of that shape, a line in
:data:`TECHNIQUES` and a case in :func:`chosen`.

The writes a refresh makes are built here too, each with its record
(:mod:`~ivm.runtime.refresh.techniques.writing`: :func:`incremental`, :func:`recompute`;
:func:`partition_write`), from what the refresh's phase ``plan`` read (:func:`prepared`).
"""

from __future__ import annotations

from collections.abc import Callable

from ivm.runtime.catalog.history import Technique
from ivm.runtime.decision.decide import Revision
from ivm.runtime.decision.terms import Mode
from ivm.runtime.refresh.commit import bound_reads
from ivm.runtime.refresh.techniques import (
    append,
    merge,
    partition,
    record_only,
    replace,
    rewrite,
)
from ivm.runtime.refresh.techniques.change import UNREADABLE, Change, computed, revision
from ivm.runtime.refresh.techniques.partition import partition_write
from ivm.runtime.refresh.techniques.rewrite import rewrites
from ivm.runtime.refresh.techniques.writing import (
    Attempt,
    Outcome,
    Write,
    incremental,
    prepared,
    recompute,
)
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.failures import Failure
from ivm.runtime.spark.settings import session_settings

__all__ = [
    "TECHNIQUES",
    "Attempt",
    "Outcome",
    "Write",
    "carry_out",
    "chosen",
    "incremental",
    "partition_write",
    "prepared",
    "recompute",
]

TECHNIQUES: dict[Technique, Callable[[Session, Write, Change | None], Outcome]] = {
    record_only.TECHNIQUE: record_only.write,
    append.TECHNIQUE: append.write,
    merge.TECHNIQUE: merge.write,
    rewrite.TECHNIQUE: rewrite.write,
    replace.TECHNIQUE: replace.write,
    partition.TECHNIQUE: partition.write,
}
"""Every technique, by the name it records."""


def chosen(write: Write, change: Change | None, small: Callable[[], bool]) -> Technique:
    """The technique that writes ``write``, given the ``change`` to the store (None: no
    change was read), and the one place it is chosen: a recompute replaces the store, a
    partition refresh overwrites its partition; a change with no rows (or of 0 bytes, not
    read) commits the record alone, any other is appended to a logged store, rewrites a
    merged store that is ``small()`` (asked only here) with the change folded in, or is
    MERGEd."""
    match write.record.mode:
        case Mode.FULL:
            return Technique.RECOMPUTE
        case Mode.PARTITION:
            return Technique.PARTITION_OVERWRITE
        case Mode.INCREMENTAL if change is None or not change.rows:
            return Technique.RECORD_ONLY
        case Mode.INCREMENTAL if write.logged:
            return Technique.APPEND
        case Mode.INCREMENTAL:
            return Technique.REWRITE if small() else Technique.MERGE
        case mode:
            raise AssertionError(f"a refresh does not write in mode {mode}")


def carry_out(spark: Session, write: Write) -> Outcome:
    """Carry out ``write`` in one commit, under its settings: its sources' reads bound (and
    at ``write.previous`` for a change it reads), the change to the store computed once
    where it applies one, and written by the technique :func:`chosen` for it."""
    applies_change = write.record.mode == Mode.INCREMENTAL
    before = write.previous if applies_change and write.record.read_bytes != 0 else None
    revisable = UNREADABLE if applies_change else ()
    with (
        session_settings(spark, write.settings),
        bound_reads(spark, write.committing, before, revisable) as bound,
    ):
        if isinstance(bound, Failure):  # a change data file gone
            return revision(spark, write, bound)
        change = computed(spark, write, bound.change_reads) if before is not None else None
        if isinstance(change, Revision):
            return change
        try:
            technique = chosen(write, change, lambda: rewrites(spark, write.store))
            return TECHNIQUES[technique](spark, write, change)
        finally:
            if change is not None:
                change.release(spark)
