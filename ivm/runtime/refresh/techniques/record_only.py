"""Record only: a commit that carries the record and changes no stored row, where the
change to the store has no rows, or the sources' commits since changed no row at all (a
change of 0 bytes, not read; a state table's that recorded a refresh alone). It writes no
file."""

from __future__ import annotations

from ivm.runtime.catalog.history import Technique
from ivm.runtime.refresh.techniques.change import Change, committed
from ivm.runtime.refresh.techniques.writing import Outcome, Write
from ivm.runtime.spark.connect import Session

TECHNIQUE = Technique.RECORD_ONLY


def write(spark: Session, write: Write, change: Change | None) -> Outcome:
    """Commit ``write``'s record alone: ``change`` (None: not read) has no rows."""
    assert change is None or not change.rows
    done = committed(spark, write, change, None, TECHNIQUE)
    if not isinstance(done, list):
        return done
    return write.result(TECHNIQUE)
