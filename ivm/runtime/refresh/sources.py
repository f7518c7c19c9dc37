"""Source tables: checks, versions, and their reads bound as relations for a delta query.

Delta's change data feed becomes a Z-set here, and nowhere else: ``insert`` and
``update_postimage`` rows weigh +1, ``delete`` and ``update_preimage`` rows -1. Over a range of
commits the weights of identical rows are summed and zeros dropped; that is the net change,
whatever the order of the commits (a row inserted then deleted cancels out).

A source may be another materialized view. It is read through its store, whose versions
and change feed are the view's own: a store row stands for one view row, or, in a view that
keeps duplicates, for ``_ivm_count`` of them, so its change weighs ``±_ivm_count``. A logged
store (:func:`ivm.codegen.store.folded_query`) is read folded, and its change feed holds
appended accumulator changes, not rows; its change over ``(a, b]`` is the difference of its
folded rows at the keys ``K`` that the commits in between touched (an append, a fold of the
log, an overwrite)::

    Δ = folded(b) ⋉ K  −  folded(a) ⋉ K

exact because a key's folded row depends on that key's store rows only, which no commit
outside ``K`` changed. Both sides come from one read of the store, as of ``b``
(:func:`folded_sides`): a key's folded row is its accumulators summed over its store rows,
then folded, and each commit adds the rows its change feed shows inserted and takes away
those it shows removed, so that, per key and accumulator (sums of integers and decimals,
exact in any order)::

    Σ rows(a) = Σ rows(b) − Σ inserted(a, b] + Σ removed(a, b]
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    FloatType,
    LongType,
    StructField,
    StructType,
)

from ivm import codegen
from ivm.errors import SourceError
from ivm.names import DIALECT, quote
from ivm.runtime.catalog.definition import compile_definition
from ivm.runtime.catalog.properties import is_logged
from ivm.runtime.catalog.tables import column_types, store_name, store_properties
from ivm.runtime.log.change_files import (
    CHANGE_TYPE,
    CHANGE_TYPE_FIELD,
    ChangeFiles,
    change_files,
)
from ivm.runtime.log.delta_log import CDF_PROPERTY, DeltaLogReader
from ivm.runtime.log.file_lists import MAX_PARTITIONS_READ, DataFile, Listing, Unlisted, listed
from ivm.runtime.spark.connect import Session, driver_jvm, is_connect, java_session
from ivm.runtime.spark.settings import (
    ADAPTIVE,
    CHANGE_READS,
    DELTA,
    FILES,
    evaluation_settings,
    reads_change_files,
    reads_files,
    session_settings,
)
from ivm.store import Store
from ivm.zset import COUNT, WEIGHT, Read, relation_name

INSERTED = ("insert", "update_postimage")
BITS = "_ivm_bits"
"""Grouping keys of a change's float columns, by their text (see :func:`changes`)."""
PART = "_ivm_part"
"""Which source's change a row of the changes collected together is (see :func:`kept_together`)."""
STORE_ROWS = "_ivm_store_rows_"
"""The prefix of the temporary view of a logged store's rows while its fold is analysed."""
SIGN, TOUCHED, PRESENT = "_ivm_sign", "_ivm_touched", "_ivm_present"
"""A logged upstream's folded rows before (-1) and after (+1) a change, the keys the change
touched, and how many store rows a side has (see :func:`folded_sides`)."""


@dataclass(frozen=True)
class Upstream:
    """A source that is a materialized view, read through its store: described by
    ``store``, the store ``logged`` or not (and then its column ``types``, which every
    folded read of it keeps)."""

    store: Store
    logged: bool
    types: Mapping[str, str] | None = None

    @property
    def repeats(self) -> bool:
        """A row of the store stands for ``_ivm_count`` identical rows of the view."""
        return self.store.repeat_rows


def upstream(spark: Session, table: str) -> Upstream | None:
    """``table`` as a source that is a materialized view; None if it is no such view."""
    properties = store_properties(spark, table)
    if properties is None:
        return None
    store = compile_definition(spark, table, properties).store
    if not is_logged(properties):
        return Upstream(store, logged=False)
    return Upstream(store, logged=True, types=column_types(spark, store_name(table)))


def appends_rows(spark: Session, table: str) -> bool:
    """Whether a commit of the source ``table`` that adds files and removes none inserts rows
    and removes none: not so of a logged view, whose appends are accumulator changes."""
    return not is_logged(store_properties(spark, table) or {})


def folded_rows(
    spark: Session, store: Store, table: str, version: int, types: Mapping[str, str] | None
) -> DataFrame:
    """The store columns of the logged store ``table`` (described by ``store``, its columns
    of ``types``) as of ``version``, its log folded in
    (:func:`ivm.codegen.store.folded_query`), its rows read once (:func:`store_rows`)."""
    name = f"{STORE_ROWS}{uuid.uuid4().hex}"
    store_rows(spark, table, version).createOrReplaceTempView(name)
    try:  # the analysed query holds the rows' plan, not the temporary view's name
        query = codegen.folded_query(store, name, types)
        return spark.sql(query.sql(DIALECT))  # pyright: ignore[reportUnknownMemberType]
    finally:
        spark.catalog.dropTempView(name)


def store_rows(spark: Session, table: str, version: int) -> DataFrame:
    """The rows of the store ``table`` as of ``version``, stored and logged alike: read from
    the files its log lists where the session reads snapshots so and the store qualifies
    (:func:`ivm.runtime.log.file_lists.listed`; a store is ivm's own table, so it does
    outside Spark Connect, up to :data:`MAX_PARTITIONS_READ` partitions), else by Delta,
    which plans the read of each part of a fold apart (a Spark job each)."""
    if reads_files(spark):
        listing = listed(spark, table, version)
        if isinstance(listing, Listing):
            rows = _files_read(spark, listing, listing.files)
            if not isinstance(rows, Unlisted):
                return rows
    return _delta_read(spark, table, versionAsOf=version)


def _files_read(
    spark: Session, listing: Listing, files: tuple[DataFile, ...]
) -> DataFrame | Unlisted:
    """The rows of ``files`` of ``listing``, read as Parquet; or why they are not (files of
    more than :data:`MAX_PARTITIONS_READ` partitions). No file: a relation the optimizer
    knows empty, which removes what only joins with it."""
    if (parts := listing.partitions(files)) > MAX_PARTITIONS_READ:
        return Unlisted(f"{parts} partitions read, more than {MAX_PARTITIONS_READ}")
    return listing.read(spark, files) if files else empty(spark, listing.schema)


def delta_table(spark: Session, table: str) -> str:
    """The Delta table holding the rows and the change feed of the source ``table``."""
    return store_name(table) if store_properties(spark, table) is not None else table


def check_source(spark: Session, table: str) -> None:
    """Raise :class:`SourceError` unless ``table`` is a Delta table with change data feed,
    or a materialized view."""
    if store_properties(spark, table) is not None:
        return
    log = DeltaLogReader.of(spark, table)
    if not log.is_delta_table():
        raise SourceError(
            f"source {table} is not a Delta table",
            hint=f"a materialized view reads Delta tables; convert it, e.g. "
            f"CREATE TABLE {table}_delta USING DELTA AS SELECT * FROM {table}",
        )
    if log.properties().get(CDF_PROPERTY, "false").lower() != "true":
        raise SourceError(
            f"source {table} does not have change data feed enabled",
            hint=f"enable it: ALTER TABLE {table} SET TBLPROPERTIES ({CDF_PROPERTY} = true)",
        )


def table_version(spark: Session, table: str) -> int:
    """The latest committed version of the source ``table``."""
    return DeltaLogReader(spark, delta_table(spark, table)).version()


def latest_sources(spark: Session, tables: Iterable[str]) -> tuple[dict[str, int], dict[str, str]]:
    """The latest version and the Delta table id of each of the source ``tables``."""
    logs = {table: DeltaLogReader.of(spark, delta_table(spark, table)) for table in tables}
    return (
        {table: log.version() for table, log in logs.items()},
        {table: log.table_id() for table, log in logs.items()},
    )


def source_bytes(spark: Session, tables: Iterable[str]) -> dict[str, int | None]:
    """The size of each of the source ``tables`` (None where its log does not say)."""
    return {
        table: DeltaLogReader.of(spark, delta_table(spark, table)).size_in_bytes()
        for table in tables
    }


def total_source_bytes(spark: Session, tables: Iterable[str]) -> int | None:
    """The size of all of the source ``tables``: what a full recompute reads at most; None
    if a log does not say."""
    return _total(source_bytes(spark, tables).values())


def total_source_files(spark: Session, tables: Iterable[str]) -> int | None:
    """How many data files the source ``tables`` have in all; None if a log does not say."""
    return _total(
        DeltaLogReader.of(spark, delta_table(spark, table)).file_count() for table in tables
    )


def _total(values: Iterable[int | None]) -> int | None:
    """The sum of ``values``; None if one of them is unknown (None)."""
    known = list(values)
    return None if None in known else sum(v for v in known if v is not None)


def _delta_read(spark: Session, name: str, **options: str | int) -> DataFrame:
    """The Delta table ``name`` read with ``options``: from its location, as its log (read
    once per refresh) says, where a read by name would look the table up in the catalog
    again (which costs more than planning the read); by name if the log is not at hand."""
    reader = spark.read.format("delta").options(**options)
    location = DeltaLogReader.of(spark, name).location()
    return reader.load(location) if location is not None else reader.table(name)


def snapshot(
    spark: Session, table: str, columns: Sequence[str], version: int, view: Upstream | None = None
) -> DataFrame:
    """``columns`` of ``table`` as of ``version``; ``view``: ``table`` is that materialized
    view (:func:`upstream`)."""
    if view is None:
        rows = _delta_read(spark, table, versionAsOf=version)
    elif view.logged:
        rows = folded_rows(spark, view.store, store_name(table), version, view.types)
    else:
        rows = _delta_read(spark, store_name(table), versionAsOf=version)
    return _shaped(rows, columns, view)


def _shaped(rows: DataFrame, columns: Sequence[str], view: Upstream | None) -> DataFrame:
    """A snapshot's ``columns`` from the rows of its table (of its store, for a ``view``)."""
    if view is not None and view.repeats:
        rows = rows.withColumn("_copy", F.explode(F.sequence(F.lit(1), F.col(COUNT))))
    return rows.select(*columns)


@dataclass(frozen=True)
class SnapshotRead:
    """A snapshot bound for a delta query: ``columns`` of ``table`` at ``version`` (through
    its store, for a ``view``), the first bound passed through ``wrap``. Where snapshots are
    read from their files (``spark.ivm.snapshotReads`` ``files``, the default), the refresh
    binds it again, once it knows which files the delta query needs
    (:func:`ivm.runtime.refresh.pruning.prune`)."""

    table: str
    columns: tuple[str, ...]
    version: int
    view: Upstream | None
    wrap: Callable[[DataFrame], DataFrame]

    def from_files(
        self, spark: Session, keep: Callable[[tuple[DataFile, ...]], tuple[DataFile, ...]]
    ) -> tuple[DataFrame, int, int] | Unlisted:
        """The snapshot as a Parquet read of the files ``keep`` keeps of its version's, with
        how many it keeps of how many; or why its table does not qualify
        (:func:`ivm.runtime.log.file_lists.listed`)."""
        name = self.table if self.view is None else store_name(self.table)
        listing = listed(spark, name, self.version)
        if isinstance(listing, Unlisted):
            return listing
        chosen = keep(listing.files)
        rows = _files_read(spark, listing, chosen)
        if isinstance(rows, Unlisted):
            return rows
        frame = self.wrap(_shaped(rows, self.columns, self.view))
        return frame, len(chosen), len(listing.files)


SNAPSHOTS: dict[tuple[int, str], SnapshotRead] = {}
"""The snapshots bound now that may be read from their files, by the session that bound them
(``id``: refreshes in threads bind in sessions of their own) and relation name."""


def changes(
    spark: Session,
    table: str,
    columns: Sequence[str],
    after: int,
    upto: int,
    view: Upstream | None = None,
) -> tuple[DataFrame, str]:
    """The net change of ``columns`` of ``table`` over versions ``(after, upto]``, weighted;
    ``upto`` > ``after``; ``view``: ``table`` is that materialized view (:func:`upstream`).
    And how it was read (an entry of :data:`ChangeReads`)."""
    feed, how = change_feed(spark, table if view is None else store_name(table), after, upto)
    if view is not None and view.logged:
        feed = folded_sides(spark, view.store, store_name(table), feed, upto, view.types)
        sign = F.col(SIGN)
    else:
        sign = F.when(F.col(CHANGE_TYPE).isin(*INSERTED), F.lit(1)).otherwise(F.lit(-1))
    weight = sign * F.col(COUNT) if view is not None and view.repeats else sign
    # Spark groups floats by value, -0.0 with 0.0: group them by their text, which keeps the
    # sign, and carry the value itself through.
    # ``columns`` are the compiler's lowercase names; Spark resolves them in any case.
    float_types = {
        f.name.lower()
        for f in feed.schema.fields
        if isinstance(f.dataType, (FloatType, DoubleType))
    }
    floats = [c for c in columns if c.lower() in float_types]
    keys = [
        F.col(c).cast("string").alias(f"{BITS}{i}") if c in floats else F.col(c)
        for i, c in enumerate(columns)
    ]
    net = (
        feed.groupBy(*keys)
        .agg(F.sum(weight).cast("bigint").alias(WEIGHT), *(F.first(c).alias(c) for c in floats))
        .where(F.col(WEIGHT) != 0)
        .select(*columns, WEIGHT)
    )
    return net, how


ChangeReads = dict[str, str]
"""How a refresh read each source's change: ``files: N`` (the N files its commits name, read
as Parquet: :mod:`ivm.runtime.log.change_files`) or ``delta: <why>`` where Delta's change data
feed read it."""


def change_feed(spark: Session, table: str, after: int, upto: int) -> tuple[DataFrame, str]:
    """The change data feed of the Delta table ``table`` over versions ``(after, upto]``: its
    columns and ``_change_type``, from the files its commits name where they qualify and the
    session reads them (:data:`~ivm.runtime.spark.settings.CHANGE_READS`), else by Delta's
    reader; and how it was read (an entry of :data:`ChangeReads`)."""
    if reads_change_files(spark):
        found = change_files(spark, table, after, upto)
        if isinstance(found, ChangeFiles):
            rows = found.read(spark)
            if rows is None:  # no commit changed a row (a compaction)
                rows = empty(spark, StructType([*found.schema.fields, CHANGE_TYPE_FIELD]))
            return rows, f"{FILES}: {len(found.files)}"
        why = found.reason
    else:
        why = f"{CHANGE_READS} is {DELTA}"
    feed = _delta_read(
        spark, table, readChangeFeed="true", startingVersion=after + 1, endingVersion=upto
    )
    return feed, f"{DELTA}: {why}"


def folded_sides(
    spark: Session,
    store: Store,
    table: str,
    feed: DataFrame,
    version: int,
    types: Mapping[str, str] | None,
) -> DataFrame:
    """The folded rows of the logged store ``table`` (described by ``store``, its columns of
    ``types``) as of ``version`` (``SIGN`` 1) and before the commits of ``feed``, its change
    feed up to ``version`` (``SIGN`` -1), at the keys ``feed`` touched, from one read of
    the store (see the module's docstring). A global aggregate's one group is read whole,
    and a side has it where that side has store rows."""
    keys = [F.col(quote(k)) for k in store.keys]
    accumulators = [acc.name for acc in store.accumulators]
    rows = at_keys(store, store_rows(spark, table, version), touched_keys(store, feed))
    inserted = F.col(CHANGE_TYPE).isin(*INSERTED)
    # each store row counts on both sides; the feed's rows, undone, on the side before
    inputs = rows.select(
        *keys,
        *(F.col(quote(a)) for a in accumulators),
        F.lit(1).alias(PRESENT),
        F.explode(F.array(F.lit(1), F.lit(-1))).alias(SIGN),
    ).unionByName(
        feed.select(
            *keys,
            *(
                F.when(inserted, -F.col(quote(a))).otherwise(F.col(quote(a))).alias(a)
                for a in accumulators
            ),
            F.when(inserted, F.lit(-1)).otherwise(F.lit(1)).alias(PRESENT),
            F.lit(-1).alias(SIGN),
        )
    )
    values = codegen.folded_columns(store, types)
    folded = inputs.groupBy(*keys, SIGN).agg(
        *(F.expr(values[c].sql(DIALECT)).alias(c) for c in store.columns if not store.is_key(c)),
        F.sum(PRESENT).alias(PRESENT),
    )
    if not keys:  # a global aggregate over no store rows has no group
        folded = folded.where(F.col(PRESENT) > 0)
    if not store.single_row:
        folded = folded.where(F.col(COUNT) > 0)
    return folded.select(*(F.col(quote(c)) for c in store.columns), SIGN)


def touched_keys(store: Store, feed: DataFrame) -> DataFrame:
    """The distinct store keys of the rows of ``feed`` (a store's change feed)."""
    return feed.select(
        *(F.col(quote(k)).alias(f"{TOUCHED}{i}") for i, k in enumerate(store.keys))
    ).distinct()


def at_keys(store: Store, rows: DataFrame, touched: DataFrame) -> DataFrame:
    """The store ``rows`` whose key is one of ``touched`` (:func:`touched_keys`), NULL a key
    like any other; all of them where the store has no key (a global aggregate). The keys
    are broadcast: a change touches few keys of a store, which a shuffle would move whole."""
    if not store.keys:
        return rows
    on = [rows[quote(k)].eqNullSafe(touched[f"{TOUCHED}{i}"]) for i, k in enumerate(store.keys)]
    return rows.join(F.broadcast(touched), on=on, how="left_semi")


@dataclass
class Kept:
    """Rows computed once (:func:`kept`): ``frame`` reads them; ``checkpoint``, if not None,
    holds them, to :func:`release` after the last read."""

    frame: DataFrame
    rows: int
    checkpoint: DataFrame | None = None


def collects(spark: Session, settings: dict[str, str]) -> bool:
    """Whether a change is collected into the driver (:func:`kept` with ``collect``) under
    the evaluation ``settings`` of its read: where it is little data, outside Spark Connect,
    whose rows stay on its server."""
    return bool(settings) and not is_connect(spark)


def kept(
    spark: Session, frame: DataFrame, read_bytes: int | None, *, collect: bool = False
) -> Kept:
    """``frame`` computed once, so that later reads do not compute it again, with the
    settings for a statement reading ``read_bytes`` (None: unknown; see
    :func:`~ivm.runtime.spark.settings.evaluation_settings`). With ``collect``, when it has no
    more rows than it reads (a source's net change), little data is collected into the
    driver and held in the plan as a local relation, whose size Spark's optimizer knows
    exactly (it broadcasts what joins it; a checkpoint carries only an estimate) and whose
    emptiness it sees (it removes what only joins with it). Otherwise, and in a Spark Connect
    session, it is kept as a local checkpoint (its rows kept by the executors, its plan
    cut): a join's result may have far more rows than it reads.

    (A checkpoint, not ``persist``: a persisted plan keeps its executed form, broadcast
    relations included, for as long as the JVM holds the plan, and Spark holds on to them.)"""
    settings = evaluation_settings(spark, read_bytes)
    with session_settings(spark, settings):
        if collect and collects(spark, settings):
            java = _dataset(frame)
            rows = java.collectAsList()
            return Kept(_local(spark, rows, java.schema()), rows.size())
        checkpoint = frame.localCheckpoint(eager=False)  # plans (and, adaptive, runs) it
        count = _counted(spark, checkpoint)  # the one job that computes and keeps the rows
    if count > 0:
        return Kept(checkpoint, count, checkpoint)
    release(checkpoint)
    return Kept(empty(spark, frame.schema), 0)


def _counted(spark: Session, checkpoint: DataFrame) -> int:
    """How many rows the local ``checkpoint`` holds, its rows computed and kept by one Spark
    job: the count's aggregation is planned without adaptive execution, which would run its
    shuffle's map stage as a job of its own and gains nothing on a plan this simple."""
    with session_settings(spark, {ADAPTIVE: "false"}):
        return checkpoint.count()


def kept_together(
    spark: Session, frames: Mapping[str, DataFrame], read_bytes: int | None
) -> dict[str, Kept] | None:
    """Each of ``frames`` (the net changes of sources, by name) collected as by :func:`kept`,
    all of them by one Spark job: each frame's rows become a struct column of their own,
    tagged by the frame (``PART``), and the tagged rows of all frames one union, collected
    into one local relation; a frame's rows are then its tag's, read from that relation
    without a job (Spark evaluates a filter and a projection of a local relation while it
    optimizes them). None where :func:`kept` would not collect them, or there are fewer
    than two: each is then kept by itself."""
    if len(frames) < 2 or not collects(spark, evaluation_settings(spark, read_bytes)):
        return None
    parts = list(frames.values())
    tagged = [
        frame.select(
            F.lit(i).alias(PART),
            *(
                (
                    F.struct(*(F.col(quote(c)) for c in frame.columns))
                    if j == i
                    else F.lit(None).cast(other.schema)
                ).alias(f"{PART}{j}")
                for j, other in enumerate(parts)
            ),
        )
        for i, frame in enumerate(parts)
    ]
    together = kept(spark, reduce(DataFrame.union, tagged), read_bytes, collect=True).frame
    split: dict[str, Kept] = {}
    for i, (name, frame) in enumerate(frames.items()):
        part = _dataset(together.where(F.col(PART) == i).select(f"{PART}{i}.*"))
        rows, schema = part.collectAsList(), _dataset(frame).schema()
        split[name] = Kept(_local(spark, rows, schema), rows.size())
    return split


def release(checkpoint: DataFrame) -> None:
    """Drop the rows of a :func:`kept` checkpoint now, not when the JVM collects it (a
    Spark Connect client drops them with its last reference to the checkpoint)."""
    if is_connect(checkpoint):
        return
    frame = _dataset(checkpoint)  # its plan is a LogicalRDD
    frame.queryExecution().analyzed().rdd().unpersist(False)


def _dataset(frame: DataFrame) -> Any:
    """The JVM Dataset behind a classic DataFrame (py4j, untyped)."""
    return cast(Any, frame)._jdf


def empty(spark: Session, schema: StructType) -> DataFrame:
    """A relation of no rows that Spark's optimizer knows to be empty (a local relation), so
    that it removes what only joins with it; PySpark's ``createDataFrame([])`` gives an RDD,
    which Spark must run a job to find empty (a Spark Connect client sends it as a local
    relation)."""
    if is_connect(spark):
        return spark.createDataFrame([], schema)  # pyright: ignore[reportUnknownMemberType] (an overload takes pyarrow's Table, untyped)
    jvm = driver_jvm(spark)
    return _local(
        spark,
        jvm.java.util.ArrayList(),
        jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()),
    )


def _local(spark: Session, rows: object, schema: object) -> DataFrame:
    """A local relation of the JVM ``rows`` (a java.util.List of Rows) of the JVM ``schema``:
    the rows never pass through Python."""
    return DataFrame(java_session(spark).createDataFrame(rows, schema), cast(SparkSession, spark))


@dataclass
class Bound:
    """The relations a delta query reads, registered as temporary views, and how the
    sources' changes among them were read."""

    names: list[str] = field(default_factory=list[str])
    checkpoints: list[DataFrame] = field(default_factory=list[DataFrame])
    change_reads: ChangeReads = field(default_factory=dict[str, str])


def bind(
    spark: Session,
    sources: dict[str, tuple[str, ...]],
    before: dict[str, int] | None,
    after: dict[str, int],
    reads: Mapping[str, Collection[Read]],
    wrap: Callable[[DataFrame], DataFrame] = lambda frame: frame,
    change_bytes: int | None = None,
    store: tuple[str, Callable[[], DataFrame]] | None = None,
) -> Bound:
    """Register each source's reads under the names delta queries use.

    Without ``before`` only the ``AFTER`` snapshots are bound (for a full computation).
    With it, the reads of each table that ``reads`` names (what the delta query reads), its
    change read here, once (:func:`kept`; the changes of all tables by one Spark job where
    they are collected, :func:`kept_together`), for the key sets and the delta query to share;
    ``change_bytes``: the size of all sources' change data (None: unknown); ``store``: the
    view and its store's rows as the refresh read them, bound as the view's ``STORE`` read
    where ``reads`` has one. The first read bound passes through ``wrap``.
    """
    bound = Bound()
    try:
        _bind_each(spark, sources, before, after, wrap, reads, bound, change_bytes)
        if store is not None and before is not None and Read.STORE in reads.get(store[0], ()):
            view, stored_rows = store
            name = relation_name(view, Read.STORE)
            stored_rows().createOrReplaceTempView(quote(name))
            bound.names.append(name)
    except BaseException:
        unbind(spark, bound)
        raise
    return bound


def _snapshots(
    spark: Session, table: str, columns: Sequence[str], view: Upstream | None
) -> Callable[[int], DataFrame]:
    """``table``'s snapshot at a version, a version read twice resolved once."""
    resolved: dict[int, DataFrame] = {}

    def at(version: int) -> DataFrame:
        if version not in resolved:
            resolved[version] = snapshot(spark, table, columns, version, view)
        return resolved[version]

    return at


def _bind_each(
    spark: Session,
    sources: Mapping[str, tuple[str, ...]],
    before: Mapping[str, int] | None,
    after: Mapping[str, int],
    wrap: Callable[[DataFrame], DataFrame],
    reads: Mapping[str, Collection[Read]],
    bound: Bound,
    change_bytes: int | None,
) -> None:
    views = {table: upstream(spark, table) for table in sources}
    moved: dict[str, DataFrame] = {}
    for table, columns in sources.items():
        if before is None or Read.DELTA not in reads.get(table, ()):
            continue
        if after[table] > before[table]:
            moved[table], bound.change_reads[table] = changes(
                spark, table, columns, before[table], after[table], views[table]
            )
    together = kept_together(spark, moved, change_bytes)
    # a delta query's snapshots may be bound again from their files (see SnapshotRead)
    by_files = before is not None and reads_files(spark)
    for table, columns in sources.items():
        wanted = reads.get(table, ())
        at = _snapshots(spark, table, columns, views[table])
        frames: dict[Read, DataFrame] = {}
        if before is None or Read.AFTER in wanted:
            frames[Read.AFTER] = at(after[table])
        if before is not None and Read.BEFORE in wanted:
            frames[Read.BEFORE] = at(before[table])
        if table in moved:
            change = (
                together[table]
                if together is not None
                else kept(spark, moved[table], change_bytes, collect=True)
            )
            bound.checkpoints += [change.checkpoint] if change.checkpoint else []
            frames[Read.DELTA] = change.frame
        elif before is not None and Read.DELTA in wanted:
            fields = at(after[table]).schema.fields
            frames[Read.DELTA] = empty(
                spark, StructType([*fields, StructField(WEIGHT, LongType(), False)])
            )
        for read, frame in frames.items():
            name = relation_name(table, read)
            wrapping: Callable[[DataFrame], DataFrame] = (
                wrap if not bound.names else (lambda rows: rows)
            )
            wrapping(frame).createOrReplaceTempView(quote(name))
            bound.names.append(name)
            view = views[table]
            if by_files and read is not Read.DELTA and not (view is not None and view.logged):
                version = (
                    after[table] if read is Read.AFTER else cast(Mapping[str, int], before)[table]
                )
                SNAPSHOTS[id(spark), name] = SnapshotRead(
                    table, tuple(columns), version, view, wrapping
                )


def unbind(spark: Session, bound: Bound) -> None:
    for name in bound.names:
        spark.catalog.dropTempView(name)
        SNAPSHOTS.pop((id(spark), name), None)
    for checkpoint in bound.checkpoints:
        release(checkpoint)
