"""How long a view's sources keep the change its next refresh reads, and the warning due
before they may remove it.

A view's next refresh reads each source's change data feed from the version after the one
its store's latest record consumed. Delta removes what that feed is read from:

* ``VACUUM`` deletes the change data files (``_change_data/``) a commit wrote once they are
  older than the table's ``delta.deletedFileRetentionDuration`` (default
  ``interval 1 week``), and the data files a commit added or removed, which the feed reads
  for a commit that wrote no change data files, once they have been out of the table that
  long;
* a checkpoint deletes the commit files (``_delta_log/<version>.json``) older than
  ``delta.logRetentionDuration`` (default ``interval 30 days``); without them the change
  cannot be read at all.

No file of a commit's change goes before the commit's time plus the retention that governs
it: its change data files are as old as the commit (written in the moments before it), a
file it added leaves the table no earlier than the commit, a file it removed leaves at it.
So a view's pending change of a source is kept at least until its *deadline*: the time of
the oldest commit the view has not consumed plus the smaller of the two retentions. The
bound is conservative: from then on the change *may* be removed (by a VACUUM, at a
checkpoint), not that it is. A ``VACUUM … RETAIN`` shorter than the table's retention, which
Delta refuses unless ``spark.databricks.delta.retentionDurationCheck.enabled`` is off,
removes it sooner, unforeseen: so :func:`unconsumed` also asks the file system whether the
files of the commits not consumed are still there (see
:meth:`~ivm.runtime.log.delta_log.DeltaLogReader.first_missing_change`). Raising a retention
keeps what is not removed yet: VACUUM and checkpoints read the table's properties when they
run. A source that is a materialized view (or a state table) keeps its change in its store,
whose retentions the view's ``RETENTION`` sets and which ``ivm run`` vacuums
(:mod:`ivm.runtime.refresh.upkeep`): the warning then says to raise that.

A source whose change is pending is

* ``expired`` when its deadline has passed (or its log no longer holds the commits): the
  next refresh may have to recompute the view in full (:mod:`ivm.runtime.decision.decide`);
* gone, whatever its deadline, when files of its commits are no longer there: the next
  refresh recomputes the view in full;
* ``at risk`` when less time is left than the view's FRESHNESS (``ivm run`` refreshes a view
  once its lag reaches half of it), or than a quarter of the retention;

and, pending change or not, a view whose FRESHNESS is longer than a source's retention lets
a change be removed before it is due to take it.

A retention whose value is not an interval (Delta checks them when they are set, so this is
not expected) counts as unknown: the deadline is bounded by the other retention alone, and
the facts say which value was not understood. :func:`assess` decides from times given to it;
:func:`unconsumed` reads them from the logs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from ivm.runtime.catalog.history import RefreshRecord, latest_consumed
from ivm.runtime.catalog.properties import DELETED_FILE_RETENTION, LOG_RETENTION, STATE_OF
from ivm.runtime.catalog.tables import store_properties
from ivm.runtime.decision.decide import replaced_source
from ivm.runtime.log.delta_log import DeltaLogReader, once
from ivm.runtime.refresh.sources import delta_table
from ivm.runtime.refresh.upkeep import MIN_RETENTION_SECONDS
from ivm.runtime.spark.connect import Session

DEFAULTS = {DELETED_FILE_RETENTION: "interval 1 week", LOG_RETENTION: "interval 30 days"}
"""Delta's value of each retention property, where a table does not set it."""

EXPIRED, AT_RISK = "expired", "at risk"

_UNIT_SECONDS = {
    "week": 7 * 86400,
    "day": 86400,
    "hour": 3600,
    "minute": 60,
    "second": 1,
    "millisecond": 1e-3,
    "microsecond": 1e-6,
}
_SHOWN_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def interval_seconds(value: str) -> float | None:
    """The length in seconds of an interval as Delta's retention properties hold it:
    ``interval`` (optional) and amounts of weeks, days, hours, minutes, seconds,
    milliseconds or microseconds, in any case, singular or plural, summed; None where
    ``value`` is not one (Delta refuses months and years there, as their length varies).

    >>> interval_seconds("interval 1 week"), interval_seconds("30 Days")
    (604800.0, 2592000.0)
    >>> interval_seconds("INTERVAL 2 hours"), interval_seconds("interval 1 day 12 hours")
    (7200.0, 129600.0)
    >>> [interval_seconds(v) for v in ("1 month", "soon", "interval", "-1 day")]
    [None, None, None, None]
    """
    words = value.strip().lower().split()
    if words[:1] == ["interval"]:
        words = words[1:]
    if not words or len(words) % 2:
        return None
    total = 0.0
    for amount, unit in zip(words[::2], words[1::2], strict=True):
        seconds = _UNIT_SECONDS.get(unit.removesuffix("s"))
        try:
            number = float(amount)
        except ValueError:
            return None
        if seconds is None or not math.isfinite(number):
            return None
        total += number * seconds
    return total if total >= 0 else None


@dataclass(frozen=True)
class Retention:
    """How long a table keeps one part of its change: the ``property`` that says so, its
    ``value`` (the table's, or Delta's ``default``), and that in ``seconds`` (None where the
    value is not understood)."""

    property: str
    value: str
    default: bool
    seconds: float | None

    def __str__(self) -> str:
        shown = self.value if self.seconds is not None else f"'{self.value}', not understood"
        return f"{self.property} {shown}" + (", Delta's default" if self.default else "")


def retentions(properties: Mapping[str, str]) -> tuple[Retention, ...]:
    """The retentions of a table with the table ``properties``.

    >>> [str(r) for r in retentions({LOG_RETENTION: "interval 2 days"})]
    ["delta.deletedFileRetentionDuration interval 1 week, Delta's default", \
'delta.logRetentionDuration interval 2 days']
    """
    return tuple(
        Retention(
            key,
            properties.get(key, default),
            key not in properties,
            interval_seconds(properties.get(key, default)),
        )
        for key, default in DEFAULTS.items()
    )


def governing(kept: Sequence[Retention]) -> Retention | None:
    """The shortest of the retentions ``kept`` that are understood; None if none is."""
    known = [r for r in kept if r.seconds is not None]
    return min(known, key=lambda r: r.seconds or 0.0) if known else None


def classify(
    deadline_ms: int, retention_seconds: float, freshness_seconds: float | None, now_ms: int
) -> str | None:
    """Whether a pending change kept until ``deadline_ms`` by a retention of
    ``retention_seconds`` is :data:`EXPIRED` or :data:`AT_RISK` at ``now_ms``, for a view of
    ``freshness_seconds`` (None: none); None while it is safe.

    >>> day, week = 86_400_000, 7 * 86400
    >>> classify(10 * day, week, None, now_ms=11 * day)
    'expired'
    >>> classify(10 * day, week, None, now_ms=9 * day)        # 1 day left of 7
    'at risk'
    >>> classify(10 * day, week, None, now_ms=5 * day) is None
    True
    >>> classify(10 * day, week, 6 * 86400, now_ms=5 * day)   # ivm run may wait 3 days
    'at risk'
    """
    left = (deadline_ms - now_ms) / 1000
    if left <= 0:
        return EXPIRED
    if left < max(freshness_seconds or 0.0, retention_seconds / 4):
        return AT_RISK
    return None


@dataclass(frozen=True)
class Unconsumed:
    """What a view has not consumed of one of its sources."""

    source: str  # the source as the view names it
    table: str  # the Delta table holding its change (a view's: its store)
    consumed: int  # the version the view reflects
    latest: int  # the source's latest version
    replaced: bool  # another table now has its name: the view reflects none of it
    oldest_ms: int | None  # the time of the oldest commit not consumed (None: none, or
    # not known)
    lost: bool  # the log no longer holds some commit not consumed
    kept: tuple[Retention, ...]  # how long its table keeps its change (see retentions)
    retention_of: str | None = None  # the materialized view whose RETENTION sets them,
    # where the source is a view or a state table
    gone_from: int | None = None  # the first commit not consumed whose change files
    # are gone from the file system (None: none found)

    @property
    def after(self) -> int:
        """The version after which the view has not consumed the source's commits."""
        return -1 if self.replaced else self.consumed

    @property
    def pending(self) -> bool:
        return self.latest > self.after


@dataclass(frozen=True)
class Assessment:
    """Until when a source keeps a view's pending change (None: nothing is pending), and the
    warnings due, each saying what may happen, when, and what to do."""

    kept_until: str | None
    warnings: tuple[str, ...]


def unreadable_change(change: Unconsumed) -> str | None:
    """Why the change of ``change.source`` cannot be read, where files it needs are gone."""
    if change.gone_from is None:
        return None
    return (
        f"the change of {change.source} after version {change.consumed} can no longer be "
        f"read: files of version {change.gone_from} that its change data feed reads are "
        f"gone"
    )


def assess(
    view: str, change: Unconsumed, freshness_seconds: float | None, now_ms: int
) -> Assessment:
    """What ``view`` (with a FRESHNESS of ``freshness_seconds``, None if it has none) should
    be told at ``now_ms`` about the change of one of its sources (see the module's
    docstring).

    >>> kept = retentions({DELETED_FILE_RETENTION: "interval 2 days"})
    >>> hour = 3600 * 1000
    >>> change = Unconsumed("d.t", "d.t", 4, 5, False, hour, False, kept)
    >>> assessed = assess("d.v", change, None, now_ms=41 * hour)
    >>> assessed.kept_until
    'until 1970-01-03 01:00:00 UTC (delta.deletedFileRetentionDuration interval 2 days)'
    >>> print(assessed.warnings[0])   # doctest: +NORMALIZE_WHITESPACE
    the change of d.t after version 4 may be removed from 1970-01-03 01:00:00 UTC on, in 8
    hours (delta.deletedFileRetentionDuration interval 2 days): refresh the view before then
    (REFRESH MATERIALIZED VIEW d.v), or its next refresh may have to recompute it in full; or
    keep d.t's change longer: ALTER TABLE d.t SET TBLPROPERTIES
    ('delta.deletedFileRetentionDuration' = 'interval 4 days')
    """
    rule = governing(change.kept)
    warnings = _freshness_warnings(change, rule, freshness_seconds)
    if not change.pending or change.replaced:  # a replaced source is recomputed anyway
        return Assessment(None, tuple(warnings))
    refresh = f"REFRESH MATERIALIZED VIEW {view}"
    if (gone := _gone(change, refresh, freshness_seconds)) is not None:
        kept_until, warning = gone
        return Assessment(kept_until, (*warnings, warning))
    unknown = [str(r) for r in change.kept if r.seconds is None]
    if change.oldest_ms is None or rule is None or rule.seconds is None:
        why = "its commits record no time" if change.oldest_ms is None else "; ".join(unknown)
        return Assessment(f"unknown ({why})", tuple(warnings))
    deadline = change.oldest_ms + int(rule.seconds * 1000)
    kept_until = f"until {_when(deadline)} ({'; '.join([str(rule), *unknown])})"
    state = classify(deadline, rule.seconds, freshness_seconds, now_ms)
    if state == EXPIRED:
        warnings.append(
            f"the change of {change.source} after version {change.consumed} may already be "
            f"removed: it was kept until {_when(deadline)} ({rule}), and the view has not "
            f"consumed it; its next refresh may have to recompute it in full. Refresh it now "
            f"({refresh}), and keep {change.source}'s change longer: "
            f"{_raise(change, freshness_seconds)}"
        )
    elif state == AT_RISK:
        warnings.append(
            f"the change of {change.source} after version {change.consumed} may be removed "
            f"from {_when(deadline)} on, in {_duration((deadline - now_ms) / 1000)} ({rule}): "
            f"refresh the view before then ({refresh}), or its next refresh may have to "
            f"recompute it in full; or keep {change.source}'s change longer: "
            f"{_raise(change, freshness_seconds)}"
        )
    return Assessment(kept_until, tuple(warnings))


def _freshness_warnings(
    change: Unconsumed, rule: Retention | None, freshness_seconds: float | None
) -> list[str]:
    """The warning of a view whose FRESHNESS (``freshness_seconds``) is longer than the
    source of ``change`` keeps its change (``rule``), if it is."""
    if (
        freshness_seconds is None
        or rule is None
        or rule.seconds is None
        or freshness_seconds <= rule.seconds
    ):
        return []
    return [
        f"the view's FRESHNESS ({_duration(freshness_seconds)}) is longer than "
        f"{change.source} keeps its change ({rule}): a change may be removed before the "
        f"view is due to take it, and its refresh then recomputes it in full. Keep "
        f"{change.source}'s change longer: {_raise(change, freshness_seconds)}, or give "
        f"the view a FRESHNESS under {_duration(rule.seconds)}"
    ]


def _gone(
    change: Unconsumed, refresh: str, freshness_seconds: float | None
) -> tuple[str, str] | None:
    """Until when the pending ``change`` is kept, and the warning, where some of it is gone
    already: commits gone from its source's log, or files its change data feed reads
    (``refresh``: the statement that refreshes the view)."""
    if change.lost:
        return (
            f"no longer (the log of {change.source} lacks commits after version {change.consumed})",
            f"the log of {change.source} no longer holds every commit after version "
            f"{change.consumed}, which the view has not consumed: its next refresh recomputes "
            f"it in full. Refresh it ({refresh}), and keep {change.source}'s change longer: "
            f"{_raise(change, freshness_seconds)}",
        )
    if (unreadable := unreadable_change(change)) is not None:
        return (
            f"no longer (files of version {change.gone_from} of {change.source} are gone)",
            f"{unreadable} (a VACUUM that kept less than the table's retention deletes them "
            f"early), and the view has not consumed it. Its next refresh recomputes it in "
            f"full: run {refresh} (or {refresh} FULL where its REFRESH POLICY is INCREMENTAL "
            f"STRICT, under which a refresh fails instead)",
        )
    return None


def _raise(change: Unconsumed, freshness_seconds: float | None) -> str:
    """The statement that keeps ``change.source``'s change twice as long as its shortest
    retention, and at least twice the view's freshness: every retention shorter (or not
    understood) is set to that; a view's store by the view's RETENTION (at least
    :data:`~ivm.runtime.refresh.upkeep.MIN_RETENTION_SECONDS`), which sets both."""
    rule = governing(change.kept)
    target = 2 * max(
        rule.seconds if rule is not None and rule.seconds is not None else 0.0,
        freshness_seconds or 0.0,
    )
    if change.retention_of is not None:
        amount, unit = _whole(max(target, MIN_RETENTION_SECONDS))
        return (
            f"ALTER MATERIALIZED VIEW {change.retention_of} SET RETENTION = "
            f"INTERVAL '{amount}' {unit.upper()}{'S' if amount != 1 else ''}"
        )
    amount, unit = _whole(target)
    value = f"interval {amount} {unit}{'s' if amount != 1 else ''}"
    settings = ", ".join(
        f"'{r.property}' = '{value}'"
        for r in change.kept
        if r.seconds is None or r.seconds < target
    )
    return f"ALTER TABLE {change.source} SET TBLPROPERTIES ({settings})"


def _whole(seconds: float) -> tuple[int, str]:
    """``seconds`` rounded up to whole days, hours or minutes.

    >>> _whole(14 * 86400), _whole(86400 + 1), _whole(5400), _whole(1)
    ((14, 'day'), (2, 'day'), (2, 'hour'), (1, 'minute'))
    """
    name, unit = next(((n, u) for n, u in _SHOWN_UNITS[:2] if seconds >= u), ("minute", 60))
    return max(1, math.ceil(seconds / unit)), name


def _duration(seconds: float) -> str:
    """``seconds`` for a reader, in its largest unit.

    >>> _duration(90), _duration(7200), _duration(86400), _duration(0.5)
    ('1.5 minutes', '2 hours', '1 day', '0.5 seconds')
    """
    name, unit = next(((n, u) for n, u in _SHOWN_UNITS if seconds >= u), ("second", 1))
    amount = round(seconds / unit, 1)
    return f"{amount:g} {name}{'' if amount == 1 else 's'}"


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ms / 1000))


def unconsumed(spark: Session, record: RefreshRecord) -> list[Unconsumed]:
    """What the store whose latest record is ``record`` has not consumed of each of its
    sources, from their logs: in a block of
    :func:`~ivm.runtime.log.delta_log.reading_each_log_once`, each log and each range of its
    commits is read once, however often this is asked."""
    found: list[Unconsumed] = []
    for source, consumed in record.sources.items():
        table = delta_table(spark, source)
        log = DeltaLogReader.of(spark, table)
        latest = log.version()
        replaced = replaced_source(record.table_ids, {source: log.table_id()}) is not None
        after = -1 if replaced else consumed
        commits = (
            once(("commits", table, after, latest), partial(log.commits, after, latest))
            if latest > after
            else []
        )
        oldest = commits[0].timestamp_ms if commits else None
        gone_from = (
            once(
                ("change files gone", table, after, latest),
                partial(log.first_missing_change, after, latest),
            )
            if commits
            else None
        )
        view = store_properties(spark, source)
        found.append(
            Unconsumed(
                source,
                table,
                consumed,
                latest,
                replaced,
                oldest or None,
                commits is None,
                retentions(log.properties()),
                None if view is None else view.get(STATE_OF, source),
                gone_from,
            )
        )
    return found


def unreadable(spark: Session, view: str) -> str | None:
    """Why the change ``view`` (a view, or a state table) has not consumed cannot be read,
    where files that a source's change data feed reads for it are gone (the first such
    source's :func:`unreadable_change`); None where none is found."""
    changes = unconsumed(spark, latest_consumed(spark, view))
    return next((why for change in changes if (why := unreadable_change(change))), None)
