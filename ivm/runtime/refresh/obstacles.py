"""What stands in the way of applying the change, found in the sources' logs before any of
it is read (:class:`~ivm.runtime.refresh.policy.Obstacle`; the view's refresh policy decides what a
refresh does about it, see :mod:`ivm.runtime.refresh.policy`).

An incremental refresh needs every source's change since the version the view consumed, in a
form the delta query understands. It cannot apply the change when

* (``unavailable``) a source's log no longer holds some of those commits (log retention,
  VACUUM), or its change data feed was turned off in between (so some commits recorded no
  change data);
* (``reinitialize``) a source is not the table the view read: its Delta table id changed,
  because it was replaced or dropped and created again under its name (checked first, as the
  versions of two tables are not comparable); a commit since changed a column (even one
  changed back later: see :mod:`ivm.runtime.log.schema_history`), or the source was replaced or
  restored to an older version;
* (``cost``) the change is so large that reading it costs about as much as reading the
  sources: more than ``spark.ivm.refresh.fullRecomputeRatio`` (default 0.3) of the sources'
  bytes, once the sources hold at least ``spark.ivm.refresh.fullRecomputeMinBytes`` (default
  64 MiB; below that a refresh costs its fixed overhead either way, and the cost model of
  :mod:`ivm.runtime.refresh.policy` does not predict either).

A change data file removed by VACUUM is only found when the refresh reads it; the refresh then
meets an ``unavailable`` obstacle too (see :mod:`ivm.runtime.refresh.execute`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.policy import Obstacle, ObstacleKind
from ivm.runtime.refresh.sources import appends_rows, delta_table
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import number_setting

RATIO = "spark.ivm.refresh.fullRecomputeRatio"
MIN_BYTES = "spark.ivm.refresh.fullRecomputeMinBytes"
DEFAULT_RATIO = 0.3
DEFAULT_MIN_BYTES = 64 * 1024 * 1024
CHANGE_DATA_UNAVAILABLE = "the change data of a source is no longer available"


def replaced_source(consumed: dict[str, str] | None, current: dict[str, str]) -> str | None:
    """Why a refresh must recompute because a source is another table than the one the
    view read, if one is: ``consumed`` and ``current`` map sources to Delta table ids, then
    and now. A source without a consumed id (the view's records predate them) is taken to be
    the same table.

    >>> replaced_source({"d.s": "a1"}, {"d.s": "a1"}) is None
    True
    >>> replaced_source(None, {"d.s": "b2"}) is None
    True
    >>> replaced_source({"d.s": "a1"}, {"d.s": "b2"})
    'd.s was replaced or dropped and re-created since the view read it (Delta table id a1, now b2)'
    """
    for table, table_id in current.items():
        before = (consumed or {}).get(table)
        if before is not None and before != table_id:
            return (
                f"{table} was replaced or dropped and re-created since the view read it "
                f"(Delta table id {before}, now {table_id})"
            )
    return None


@dataclass(frozen=True)
class Estimate:
    """What a refresh would read: the sources' change, and their size when it was needed, in
    bytes (None where the log does not say), and what stands in the way of applying the
    change, if anything does."""

    change_bytes: int | None
    source_bytes: int | None
    obstacle: Obstacle | None = None
    inserts_only: bool = False  # every source's change inserts rows and removes none (as
    # far as its log says: a logged view's appends say nothing of its rows)


def estimate(spark: Session, previous: dict[str, int], current: dict[str, int]) -> Estimate:
    """The change from source versions ``previous`` to ``current``, and what stands in the
    way of applying it (see the module's docstring).

    The sources' sizes cost a scan of their logs' state; they are only read when the change
    could exceed its share: ``change > ratio · source`` with ``source ≥ min_bytes`` needs
    ``change > ratio · min_bytes``."""
    change_bytes, logs, sized, inserts_only = 0, [], True, True
    for table, upto in current.items():
        after = previous[table]
        if upto < after:
            return Estimate(
                None,
                None,
                Obstacle(
                    ObstacleKind.REINITIALIZE,
                    (
                        f"{table} is at version {upto}, before version {after} that the view "
                        f"consumed"
                    ),
                ),
            )
        log = DeltaLogReader.of(spark, delta_table(spark, table))
        commits = log.commits(after, upto)
        if commits is None:
            return Estimate(
                None,
                None,
                Obstacle(
                    ObstacleKind.UNAVAILABLE,
                    (
                        f"the log of {table} no longer holds every commit after version {after} "
                        f"(log retention or VACUUM)"
                    ),
                ),
            )
        for commit in commits:
            if commit.replaces_table:
                return Estimate(
                    None,
                    None,
                    Obstacle(
                        ObstacleKind.REINITIALIZE,
                        (f"{table} was replaced at version {commit.version} ({commit.operation})"),
                    ),
                )
        if off := next((c for c in commits if c.change_data_feed is False), None):
            return Estimate(
                None,
                None,
                Obstacle(
                    ObstacleKind.UNAVAILABLE,
                    (f"the change data feed of {table} was turned off at version {off.version}"),
                ),
            )
        if changed := log.schema_changes(after, commits):
            return Estimate(
                None,
                None,
                Obstacle(
                    ObstacleKind.REINITIALIZE,
                    (
                        f"the schema of {table} changed after version {after}, which the view "
                        f"consumed: {'; '.join(changed)}"
                    ),
                ),
            )
        inserts_only = (
            inserts_only and appends_rows(spark, table) and all(c.inserts_only for c in commits)
        )
        sizes = [c.change_bytes for c in commits if c.change_bytes is not None]
        if len(sizes) < len(commits):
            sized = False
        else:
            change_bytes += sum(sizes)
            logs.append(log)
    if not sized:
        return Estimate(None, None, inserts_only=inserts_only)
    ratio = number_setting(spark, RATIO, DEFAULT_RATIO)
    min_bytes = number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES)
    if change_bytes <= ratio * min_bytes:
        return Estimate(change_bytes, None, inserts_only=inserts_only)
    sizes = [log.size_in_bytes() for log in logs]
    if None in sizes:
        return Estimate(change_bytes, None, inserts_only=inserts_only)
    source_bytes = sum(sizes)
    if source_bytes >= min_bytes and change_bytes > ratio * source_bytes:
        return Estimate(
            change_bytes,
            source_bytes,
            Obstacle(
                ObstacleKind.COST,
                (
                    f"the change ({change_bytes} bytes) is over {ratio:g} of the sources' "
                    f"{source_bytes} bytes ({RATIO})"
                ),
            ),
            inserts_only,
        )
    return Estimate(change_bytes, source_bytes, inserts_only=inserts_only)
