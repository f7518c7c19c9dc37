"""Spark settings chosen by what a view's statements work on: how wide, how much data.

Spark's defaults are made for large inputs. Three kinds of work do better with others, and
one setting a user may choose fails ivm's statements:

* **Reserved keywords.** Under ``spark.sql.ansi.enforceReservedKeywords`` Spark cannot read
  back the column of an ``UPDATE SET `select` = …`` (a MERGE's or an UPDATE's), although it
  is quoted, so a view column named by a reserved keyword failed every refresh that updated
  a row. ivm's statements quote every keyword (:mod:`ivm.names`) and mean the same with the
  setting off: they run with it off (:func:`plan_settings`).

* **Very wide views.** Spark 4 derives the output partitionings of a plan node whose output
  has aliases one grouping key at a time, in nested lazy lists
  (``PartitioningPreservingUnaryExecNode``), and overflows the driver's stack past about a
  thousand keys: ``SELECT c0, …, c1499, COUNT(*) … GROUP BY c0, …, c1499`` fails in plain
  Spark, and the store of ``SELECT DISTINCT *`` over 1,500 columns is computed by just such a
  query. With no candidate partitionings derived (limit 0) Spark plans it; the price is at
  most a shuffle that the derivation would have saved, so only wide views pay it
  (:func:`plan_settings`).
* **Little data.** Spark compiles Java code for every plan it runs: for each whole stage and
  for each projection, predicate and ordering. Compiling takes tens of milliseconds per
  class, most of it Janino looking names up in every jar on the class path, and a refresh's
  statements are new to Spark's cache of compiled classes each time they change. Over a few
  thousand rows that is most of a statement's time: the refreshes of the property tests'
  views took a third less time without it. A statement that reads at most
  ``spark.ivm.interpretedMaxBytes`` (:data:`INTERPRETED_MAX_BYTES`) evaluates its
  expressions without compiled code (:func:`evaluation_settings`). Each statement of a
  refresh is judged by what it reads itself: a source's change by the change's size, the
  key sets and the delta query by their plans, where Delta has already skipped the files
  the change's keys exclude (:func:`planned_read_bytes`); so a one-row change of a large
  table is little data, and so is the delta query that joins it with a few files of the
  other sources. Spark's setting for evaluation without compiled code,
  ``spark.sql.codegen.factoryMode``, is one Spark keeps for its own tests, and what it does is
  pinned with the Spark version ivm requires (see ``tests/runtime/refresh/test_refresh_cost.py``).
  The same holds for the planning of a statement over sources of few files
  (:func:`planning_settings`): while Spark optimizes a statement, Delta skips files by
  running, for each filtered scan, a Spark job that evaluates the filter over the statistics
  of every file of the snapshot ("Filtering files for query"). A delta query's filters carry
  the change's keys as literals, new at every refresh, so that job's code was compiled anew
  each time. Q4's delta query, over a 600-row change of TPC-H at scale 1, runs 8 such jobs:
  its planning and run took 2.2 s with their compiling, 1.6 s without.
  Such a statement also runs as one Spark job where it can: adaptive execution would run each
  shuffle as a job of its own, and each broadcast is one, where one task per stage and joins
  by sorting do as well on so few rows. The refreshes of 20 of the property tests' views ran
  612 jobs that way instead of 1,438, and took a tenth less time.
* **A MERGE into a small store.** Delta rewrites at most the whole (small) store; adaptive
  execution would run each shuffle of the MERGE's joins as a Spark job of its own (11 jobs
  against 5 for a one-row change, a third of the MERGE's time). A store up to
  :data:`SMALL_STORE_BYTES` is merged into with one task per stage (:func:`merge_settings`).

>>> sorted(merge_settings(4096)), merge_settings(2**30)
(['spark.sql.adaptive.enabled', 'spark.sql.codegen.wholeStage', 'spark.sql.shuffle.partitions'], {})
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from pyspark.sql import DataFrame

from ivm.runtime.spark.connect import Session, is_connect

if TYPE_CHECKING:
    from ivm.compiler import CompiledView

RESERVED_KEYWORDS = "spark.sql.ansi.enforceReservedKeywords"
PROJECTION_CANDIDATES = "spark.sql.optimizer.expressionProjectionCandidateLimit"
WIDE = 500
"""Store columns from which a view counts as wide (Spark overflows between 1,000 and 1,500)."""

WHOLE_STAGE_CODEGEN = "spark.sql.codegen.wholeStage"
FACTORY_MODE = "spark.sql.codegen.factoryMode"
ADAPTIVE, SHUFFLE_PARTITIONS = "spark.sql.adaptive.enabled", "spark.sql.shuffle.partitions"
BROADCAST_MAX_BYTES = "spark.sql.autoBroadcastJoinThreshold"

STORE_LAYOUT = "spark.ivm.storeLayout"
"""The layout a CREATE without ``STORE LAYOUT`` gives the view's store: ``merge`` (the
default) or ``log`` (:data:`~ivm.runtime.catalog.properties.LAYOUT`); a prototype, measured
in ``benchmarks/``."""

STATE_LAYOUT = "spark.ivm.stateLayout"
"""The layout a CREATE gives the view's state tables: ``log`` (the default) or ``merge``; a
refresh that reads a logged state table reads it folded, as a view over a logged view
does."""

SNAPSHOT_READS, FILES, DELTA = "spark.ivm.snapshotReads", "files", "delta"
"""How a refresh reads the table versions its delta query joins: ``files`` (the default: the
version's files listed from the log and kept across refreshes, a read restricted to keys
reading the files whose statistics admit them, :mod:`ivm.runtime.log.file_lists`; Delta plans
the reads of tables that do not qualify) or ``delta`` (Delta plans each read)."""

CHANGE_READS = "spark.ivm.changeReads"
"""How a refresh reads a source's change: ``files`` (the default: the files its commits name,
read as Parquet, :mod:`ivm.runtime.log.change_files`; Delta's change data feed reads the
tables and ranges that do not qualify) or ``delta`` (Delta's change data feed reads each)."""

REWRITE_MAX_BYTES = "spark.ivm.rewriteMaxBytes"
DEFAULT_REWRITE_MAX_BYTES = 1024 * 1024
"""A merged store of up to this many bytes takes a change by being rewritten whole with the
change folded in (:mod:`ivm.runtime.refresh.techniques.rewrite`) rather than by a MERGE; 0
turns that off."""

INTERPRETED_MAX_BYTES = "spark.ivm.interpretedMaxBytes"
DEFAULT_INTERPRETED_MAX_BYTES = 2 * 1024 * 1024
"""Statements reading up to this many bytes (of Delta data files) run without compiled
code; 0 turns that off."""

LITTLE_DATA = {
    WHOLE_STAGE_CODEGEN: "false",
    FACTORY_MODE: "NO_CODEGEN",
    ADAPTIVE: "false",
    SHUFFLE_PARTITIONS: "1",
    BROADCAST_MAX_BYTES: "-1",
}
"""The settings of a statement over little data: no compiled code, as few Spark jobs as the
plan allows."""

PLANNING_MAX_FILES = 10_000
"""Statements over sources of up to this many data files in all are planned without
compiled code (:func:`planning_settings`)."""

SMALL_STORE_BYTES = 64 * 1024 * 1024
"""A store up to this size is merged into by one task per stage (:func:`merge_settings`)."""

MAX_RECORDS_PER_FILE = "spark.sql.files.maxRecordsPerFile"
STORE_FILE_ROWS = 100_000
"""The most rows in a file of a store written in key order, at its CREATE and full refreshes
(:func:`store_write_settings`)."""


def plan_settings(compiled: CompiledView) -> dict[str, str]:
    """The Spark settings the statements of ``compiled`` (a CompiledView) need.

    >>> from ivm import compile
    >>> plan_settings(compile("SELECT DISTINCT k FROM t", {"t": {"k": "INT"}}))
    {'spark.sql.ansi.enforceReservedKeywords': 'false'}
    >>> columns = {f"c{i}": "INT" for i in range(WIDE)}
    >>> wide = plan_settings(compile("SELECT DISTINCT * FROM t", {"t": columns}))
    >>> sorted(wide) == [RESERVED_KEYWORDS, PROJECTION_CANDIDATES]
    True
    """
    wide = {PROJECTION_CANDIDATES: "0"} if len(compiled.store.columns) > WIDE else {}
    return {RESERVED_KEYWORDS: "false"} | wide


def number_setting(spark: Session, key: str, default: float) -> float:
    """The session's setting ``key`` as a number, ``default`` where it is not set."""
    value = spark.conf.get(key, None)
    try:
        return float(value) if value is not None else default
    except ValueError:
        raise ValueError(f"{key} must be a number, not {value!r}") from None


def evaluation_settings(spark: Session, read_bytes: int | None) -> dict[str, str]:
    """Settings for statements that read at most ``read_bytes`` (None: unknown): without
    compiled code, and in as few Spark jobs as the plan allows, when that is at most the
    session's :data:`INTERPRETED_MAX_BYTES`."""
    if read_bytes is None or read_bytes > number_setting(
        spark, INTERPRETED_MAX_BYTES, DEFAULT_INTERPRETED_MAX_BYTES
    ):
        return {}
    return dict(LITTLE_DATA)


def planning_settings(spark: Session, file_count: int | None) -> dict[str, str]:
    """Settings for planning a statement over sources of ``file_count`` data files in all
    (None: unknown): Delta evaluates each filtered scan's filter over the statistics of every
    file while Spark optimizes the statement, without compiled code up to
    :data:`PLANNING_MAX_FILES` files. Off where :data:`INTERPRETED_MAX_BYTES` is 0.

    >>> class Session:
    ...     conf = {}
    >>> planning_settings(Session(), 40) == {WHOLE_STAGE_CODEGEN: "false",
    ...                                      FACTORY_MODE: "NO_CODEGEN"}
    True
    >>> planning_settings(Session(), 50_000), planning_settings(Session(), None)
    ({}, {})
    """
    if (
        file_count is None
        or file_count > PLANNING_MAX_FILES
        or number_setting(spark, INTERPRETED_MAX_BYTES, DEFAULT_INTERPRETED_MAX_BYTES) <= 0
    ):
        return {}
    return {WHOLE_STAGE_CODEGEN: "false", FACTORY_MODE: "NO_CODEGEN"}


def planned_read_bytes(frame: DataFrame, kept_bytes: int | None) -> int | None:
    """At most what computing the DataFrame ``frame`` reads, from its optimized plan: the
    bytes of each Delta scan's files (Delta prunes them by the scan's filters and the files'
    min/max statistics while Spark optimizes, so the pruned snapshot reads of a delta query
    count only the files around the change), and ``kept_bytes`` if it reads rows kept in
    memory (:func:`~ivm.runtime.refresh.sources.kept`: what they were computed from, at most), and
    the size of the rows held in the plan itself. None if a size is unknown or a leaf is of
    another kind. The plan is the one Spark runs next, so this costs no extra Spark job.
    None in a Spark Connect session, whose plans are the server's."""
    if is_connect(frame):
        return None
    # py4j: a Seq (the JVM DataFrame of a classic session, which pyspark's types do not show)
    leaves: Any = cast(Any, frame)._jdf.queryExecution().optimizedPlan().collectLeaves()
    total, reads_kept = 0, False
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        kind = leaf.getClass().getSimpleName()
        if kind in ("LogicalRelation", "LocalRelation"):  # a file scan, rows in the plan
            total += int(str(leaf.stats().sizeInBytes()))
        elif kind == "LogicalRDD":  # a local checkpoint
            reads_kept = True
        else:
            return None
    if reads_kept:
        return None if kept_bytes is None else total + kept_bytes
    return total


def store_write_settings(in_key_order: bool) -> dict[str, str]:
    """Settings for writing a whole store, ``in_key_order`` or not: a store in key order is
    cut into files of at most :data:`STORE_FILE_ROWS` rows, each a narrow range of keys, so
    that a MERGE at a change's keys rewrites a few small files. Otherwise a file is as large as
    the task that wrote it (adaptive execution coalesces a query's output towards 64 MiB per
    task), and a MERGE rewrites every file holding a changed key whole.

    >>> store_write_settings(True), store_write_settings(False)
    ({'spark.sql.files.maxRecordsPerFile': '100000'}, {})
    """
    return {MAX_RECORDS_PER_FILE: str(STORE_FILE_ROWS)} if in_key_order else {}


def merge_settings(store_bytes: int | None) -> dict[str, str]:
    """Settings for a MERGE into a store of ``store_bytes`` (None: unknown)."""
    if store_bytes is None or store_bytes > SMALL_STORE_BYTES:
        return {}
    return {ADAPTIVE: "false", SHUFFLE_PARTITIONS: "1", WHOLE_STAGE_CODEGEN: "false"}


def reads_files(spark: Session) -> bool:
    """Whether ``spark`` reads table versions from their listed files (:data:`SNAPSHOT_READS`)."""
    return spark.conf.get(SNAPSHOT_READS, FILES) == FILES


def reads_change_files(spark: Session) -> bool:
    """Whether ``spark`` reads sources' changes from their commits' files (:data:`CHANGE_READS`)."""
    return spark.conf.get(CHANGE_READS, FILES) == FILES


def apply_settings(spark: Session, settings: dict[str, str]) -> None:
    """Set ``settings`` on ``spark``, a session of one view's statements alone."""
    for key, value in settings.items():
        spark.conf.set(key, value)


@contextmanager
def session_settings(spark: Session, settings: dict[str, str]):
    """``settings`` on ``spark`` for the block; the values from before it put back after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
