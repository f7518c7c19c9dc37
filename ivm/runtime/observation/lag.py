"""How far materialized views lag behind their sources, read cheaply for many views at once.

A view's lag is the age of the oldest source commit it does not reflect, through the
materialized views it reads (0 when it is up to date). Finding it reads the latest record of
the view's store, and the log of each table it reads. In a block of
:func:`~ivm.runtime.log.delta_log.reading_each_log_once`, each of those logs is read once, each
view's oldest unconsumed commit found once and each commit's time read once: the lags of N
views over S sources cost N + S log reads, however many sources and upstream views they
share. A store's latest record is kept between blocks, and read again only once the store
has a new version (:func:`~ivm.runtime.catalog.history.latest_consumed`). Which tables are
materialized views is asked of the catalog (once per database in a block), unless the caller
says (``known``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ivm.runtime.catalog.history import latest_consumed
from ivm.runtime.catalog.tables import store_name, store_properties
from ivm.runtime.decision.decide import replaced_source
from ivm.runtime.log.delta_log import DeltaLogReader, once
from ivm.runtime.spark.connect import Session


def lag_seconds(
    spark: Session, view: str, now: float | None = None, known: Mapping[str, bool] | None = None
) -> float:
    """How long the oldest source commit that ``view`` does not reflect has been waiting at
    ``now`` (seconds since the epoch; default: the present), through the materialized
    views it reads; 0 when the view is up to date. ``known``: whether each of some tables
    is a materialized view, if the caller knows."""
    oldest = oldest_unconsumed_ms(spark, view, known)
    now = time.time() if now is None else now
    return 0.0 if oldest is None else max(0.0, now - oldest / 1000)


def oldest_unconsumed_ms(
    spark: Session, view: str, known: Mapping[str, bool] | None = None
) -> int | None:
    """The commit time of the oldest source commit ``view`` does not reflect, through the
    materialized views it reads (0 where the log no longer holds it); None if there is
    none."""
    return once(
        ("oldest unconsumed", view), lambda: _oldest_unconsumed_ms(spark, view, known or {})
    )


def _oldest_unconsumed_ms(spark: Session, view: str, known: Mapping[str, bool]) -> int | None:
    last = latest_consumed(spark, view)
    times = []
    for table, consumed in last.sources.items():
        upstream = known[table] if table in known else store_properties(spark, table) is not None
        log = DeltaLogReader.of(spark, store_name(table) if upstream else table)
        if replaced_source(last.table_ids, {table: log.table_id()}):
            consumed = -1  # another table of that name: none of its commits is reflected
        if log.version() > consumed:
            times.append(_commit_ms(log, consumed + 1))
        if upstream:
            times.append(oldest_unconsumed_ms(spark, table, known))
    return min((t for t in times if t is not None), default=None)


def _commit_ms(log: DeltaLogReader, version: int) -> int:
    """When ``version`` of ``log``'s table was committed; 0 where the log no longer holds
    it (as if it had waited since ever)."""
    return once(("commit time", log.table, version), lambda: log.commit_info(version)[1] or 0)
