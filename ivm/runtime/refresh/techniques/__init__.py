"""How a refresh writes its view's store: one module per technique.

* :mod:`~ivm.runtime.refresh.techniques.merge`: the change MERGEd into the store;
* :mod:`~ivm.runtime.refresh.techniques.replace`: the store overwritten with the query's
  result (replaced, where its columns changed);
* :mod:`~ivm.runtime.refresh.techniques.partition`: one partition of the store overwritten.
"""

from __future__ import annotations

from ivm.runtime.catalog.history import RefreshResult
from ivm.runtime.decision.decide import Revision
from ivm.runtime.decision.terms import Mode
from ivm.runtime.refresh.commit import LostRace
from ivm.runtime.refresh.techniques import merge, partition, replace
from ivm.runtime.refresh.techniques.writing import Write
from ivm.runtime.spark.connect import Session


def carry_out(spark: Session, write: Write) -> RefreshResult | Revision | LostRace:
    """Carry out ``write`` in one commit, as its mode says: its result; or, for an
    incremental write that learned it cannot apply the change, why; or that another write of
    the view committed first."""
    match write.record.mode:
        case Mode.FULL:
            return replace.write(spark, write)
        case Mode.PARTITION:
            return partition.write(spark, write)
        case Mode.INCREMENTAL:
            return merge.write(spark, write)
        case mode:
            raise AssertionError(f"a refresh does not write in mode {mode}")
