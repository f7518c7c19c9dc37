"""The decision of a refresh: what it does (nothing, apply the change, recompute, or fail)
and why, from facts gathered before (:mod:`ivm.runtime.refresh.gather`). Pure: no Spark, no
I/O (an import contract keeps pyspark out), so every case is a table row in a test.

* :mod:`~ivm.runtime.decision.terms`: policies, obstacles, modes;
* :mod:`~ivm.runtime.decision.cost`: the cost model, when a recompute is predicted cheaper;
* :mod:`~ivm.runtime.decision.decide`: the decision, taken once, and revised once.
"""

from ivm.runtime.decision.decide import Revision, decide, state_table_recomputed
from ivm.runtime.decision.terms import Mode, Obstacle, ObstacleKind

__all__ = ["Mode", "Obstacle", "ObstacleKind", "Revision", "decide", "state_table_recomputed"]
