"""A table version's data files, listed from its log and kept across refreshes.

Delta plans every read of a table version the same way: it reconstructs the version's state
from the log (a Spark job, for a version read for the first time), then filters the files'
statistics by the scan's predicate (a Spark job per filtered scan). A refresh reads the
same tables at consecutive versions, refresh after refresh, and a version differs from the
one before it by the files its commit added and removed. So the list can be kept instead:

    files(v) = files(u) + added(u, v] − removed(u, v]          (u < v, both in the log)

the commits in between read by name from the log (:meth:`DeltaLogReader.actions`), and the
first list of a session taken from Delta once. A read of the version is then a Parquet read
of exactly those files, and a read restricted to keys keeps only the files whose statistics
admit one of the keys (:func:`admitting`), both without a Spark job. Statistics are compared
as Delta's own data skipping compares them: integers, decimals and dates by value, strings
by code point (UTF-8's binary order; a truncated maximum carries Delta's tie-breaker), other
types not at all (every file admitted).

A partitioned table's files hold its other columns, and the log each file's partition values:
a read adds them to each partition's rows (:meth:`Listing.read`). Tables whose files are not
so simply their rows do not qualify; for them :func:`listed` says why (:class:`Unlisted`),
and Delta plans the read: column mapping or deletion vectors (any reader version above 1),
CHAR or collated string columns, a partition column of a type whose text Delta reads its own
way (:data:`PARTITION_TYPES`), a read through Spark Connect (no log at hand). A version past
commits that set metadata or protocol is listed by Delta afresh. On by default;
``spark.ivm.snapshotReads=delta`` (:data:`~ivm.runtime.spark.settings.SNAPSHOT_READS`) has
Delta plan every read.
"""

from __future__ import annotations

import datetime
import json
import threading
from bisect import bisect_left
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cached_property, reduce
from typing import Any, cast
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from ivm.names import quote
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.spark.connect import Session, is_connect
from ivm.runtime.spark.settings import session_settings

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"

MAX_COMMITS_APPLIED = 64
"""A version at most this many commits after a listed one is listed from the commits in
between; a farther one is listed by Delta afresh."""

LISTINGS_KEPT = 4
"""Versions listed per table and session, the newest kept."""

MAX_PARTITIONS_READ = 64
"""A read of files of more partitions than this is planned by Delta: each partition's files
are a Parquet read of their own (:meth:`Listing.read`), and Spark plans each."""


Partition = tuple[tuple[str, str | None], ...]
"""A file's partition values, by partition column, as the log holds them: text in the form
the Delta protocol serializes each type to, None for NULL."""


@dataclass(frozen=True)
class DataFile:
    """One data file of a version: its absolute ``path``, ``size`` in bytes, Delta's
    statistics (JSON, None where it wrote none), its ``partition`` values (none where the
    table is not partitioned), and its path as the log spells it (``logged``: URI-encoded,
    relative to the table where it is inside it), by which a commit removes it."""

    path: str
    size: int
    stats: str | None
    partition: Partition = ()
    logged: str = ""

    @cached_property
    def _ranges(self) -> tuple[dict, dict, dict] | None:
        """The minimum, maximum and NULL count of each column, by its name in lower case
        (Spark's names are case-insensitive)."""
        if self.stats is None:
            return None
        parsed = json.loads(self.stats, parse_float=Decimal)
        low, high, nulls = (
            {name.lower(): value for name, value in parsed.get(part, {}).items()}
            for part in ("minValues", "maxValues", "nullCount")
        )
        return low, high, nulls

    @cached_property
    def _partition_values(self) -> dict[str, str | None]:
        """The file's partition values, by column name in lower case."""
        return {name.lower(): value for name, value in self.partition}

    def may_hold(self, column: str, values: list[Any], has_null: bool) -> bool:
        """Whether the file may hold a row whose ``column`` is one of the sorted ``values``
        (all of one type: see :func:`admitting`), or NULL where ``has_null``: False only
        where its statistics or its partition value exclude them all."""
        column = column.lower()
        if column in self._partition_values:
            return _partition_holds(self._partition_values[column], values, has_null)
        ranges = self._ranges
        if ranges is None:
            return True
        low, high, nulls = (r.get(column) for r in ranges)
        if has_null and (nulls is None or nulls > 0):
            return True
        if not values:
            return False
        low, high = _comparable(low, values[0]), _comparable(high, values[0])
        if low is None or high is None:  # no statistics of it, or none to compare
            return True
        first = bisect_left(values, low)
        return first < len(values) and values[first] <= high


def _partition_holds(value: str | None, values: list[Any], has_null: bool) -> bool:
    """Whether a file of the partition ``value`` (as the log holds it) may hold one of the
    sorted ``values``, or NULL where ``has_null``: False only where the value is none of
    them."""
    if value is None:
        return has_null
    if not values:
        return False
    key = values[0]
    parsed: Any = None
    try:
        if isinstance(key, bool):
            parsed = None
        elif isinstance(key, int):
            parsed = int(value)
        elif isinstance(key, Decimal):
            parsed = Decimal(value)
        elif isinstance(key, datetime.date) and not isinstance(key, datetime.datetime):
            parsed = datetime.date.fromisoformat(value)
        elif isinstance(key, str):
            parsed = value
    except (ValueError, ArithmeticError):  # not in the protocol's form: no judgement
        parsed = None
    if parsed is None:
        return True
    at = bisect_left(values, parsed)
    return at < len(values) and values[at] == parsed


def _comparable(statistic: Any, key: Any) -> Any:
    """A file's minimum or maximum ``statistic`` of a column (as parsed from Delta's JSON,
    decimals as :class:`~decimal.Decimal`) as a value of the type of ``key``; None where it
    has none or cannot be compared with it."""
    if statistic is None or isinstance(key, bool) or isinstance(statistic, bool):
        return None
    if isinstance(key, int):
        return statistic if isinstance(statistic, int) else None
    if isinstance(key, Decimal):
        return Decimal(statistic) if isinstance(statistic, (int, Decimal)) else None
    if isinstance(key, datetime.datetime):  # Delta truncates a timestamp's to milliseconds
        return None
    if isinstance(key, datetime.date):
        try:
            return datetime.date.fromisoformat(statistic) if isinstance(statistic, str) else None
        except ValueError:
            return None
    if isinstance(key, str):
        return statistic if isinstance(statistic, str) else None
    return None


@dataclass(frozen=True)
class Listing:
    """The data files of a table (at ``location``) at ``version``, the version's ``schema``
    and the columns it is partitioned by."""

    location: str
    version: int
    schema: StructType
    files: tuple[DataFile, ...]
    partitioned_by: tuple[str, ...] = ()

    def partitions(self, files: tuple[DataFile, ...]) -> int:
        """How many partitions ``files`` are of."""
        return len({f.partition for f in files})

    def read(self, spark: Session, files: tuple[DataFile, ...] | None = None) -> DataFrame:
        """The rows of ``files`` (default: all of the version's; at least one), read as
        Parquet with the version's schema: no schema inferred, no listing job. The files of
        a partitioned table hold the other columns: each partition's are read apart, its
        values added as literals (cast from the log's text, as Delta does), and the reads
        joined by a union."""
        chosen = self.files if files is None else files
        assert chosen, "a Parquet read of no file (a relation of no rows is the caller's)"
        parts: dict[Partition, list[DataFile]] = {}
        for file in chosen:
            parts.setdefault(file.partition, []).append(file)
        reads = [
            partition_rows(spark, self.schema, self.partitioned_by, partition, tuple(files))
            for partition, files in parts.items()
        ]
        return reduce(DataFrame.union, reads)


def partition_rows(
    spark: Session,
    schema: StructType,
    partitioned_by: tuple[str, ...],
    partition: Partition,
    files: tuple[DataFile, ...],
    held: tuple[StructField, ...] = (),
) -> DataFrame:
    """The rows of ``files``, all of ``partition``, of a table of ``schema`` partitioned by
    ``partitioned_by``, read as Parquet: the files hold the columns other than the partition
    columns (and the fields ``held``, which come last), the partition's values are added as
    literals, cast from the log's text as Delta does."""
    stored = StructType([f for f in schema.fields if f.name not in partitioned_by] + list(held))
    rows = _parquet(spark, stored, files)
    if not partitioned_by:
        return rows
    values = dict(partition)
    return rows.select(
        *(
            F.lit(values[f.name]).cast(f.dataType).alias(f.name)
            if f.name in values
            else F.col(quote(f.name))
            for f in schema.fields
        ),
        *(F.col(quote(f.name)) for f in held),
    )


def _parquet(spark: Session, schema: StructType, files: tuple[DataFile, ...]) -> DataFrame:
    """The rows of ``files``, read as Parquet with ``schema``."""
    # listing more paths than this threshold is a Spark job; these are files, not folders
    with session_settings(spark, {LISTING_THRESHOLD: "1000000"}):
        return spark.read.schema(schema).parquet(*(f.path for f in files))


def admitting(
    files: tuple[DataFile, ...], column: str, values: list[Any], has_null: bool
) -> tuple[DataFile, ...]:
    """The ``files`` that may hold a row whose ``column`` is among ``values`` (non-NULL,
    sorted in the column's order, all of one type) or NULL; all of them where the values are
    of a type whose statistics are not compared (see the module's docstring).

    >>> stats = '{"minValues": {"d": "2024-01-01"}, "maxValues": {"d": "2024-01-31"}}'
    >>> jan = DataFile("jan.parquet", 1, stats)
    >>> def days(*keys):
    ...     return [f.path for f in admitting((jan,), "d", list(keys), False)]
    >>> days(datetime.date(2024, 1, 2)), days(datetime.date(2024, 2, 2))
    (['jan.parquet'], [])
    """
    if len({type(v) for v in values}) > 1:
        return tuple(files)
    return tuple(f for f in files if f.may_hold(column, values, has_null))


@dataclass(frozen=True)
class Unlisted:
    """Why a table version's reads are planned by Delta, not read from its listed files."""

    reason: str


CONNECT = Unlisted("a Spark Connect session has no log at hand")
CHAR_TYPES = "__CHAR_VARCHAR_TYPE_STRING"
"""The metadata key by which a Delta schema marks a CHAR or VARCHAR column: Spark pads a
CHAR's values as it reads the table, not as it writes them."""
COLLATIONS = "__COLLATIONS"
"""The metadata key by which a schema gives a string column a collation other than binary."""

_listings: dict[tuple[str, str, str], dict[int, Listing]] = {}
_listings_lock = threading.Lock()


def listed(spark: Session, table: str, version: int) -> Listing | Unlisted:
    """The files of ``table`` (a Delta table's name) at ``version``; or why it is read
    through Delta (see the module's docstring)."""
    if is_connect(spark):
        return CONNECT
    reader = DeltaLogReader.of(spark, table)
    location = reader.location()  # None where the log is read through SQL
    if location is None:
        return CONNECT
    key = (spark.sparkContext.applicationId, location, reader.table_id())
    with _listings_lock:  # refreshes in threads list the same tables
        kept = _listings.setdefault(key, {})
        if version in kept:
            return kept[version]
        earlier = [v for v in kept if version - MAX_COMMITS_APPLIED <= v < version]
        base = kept[max(earlier)] if earlier else None
    found = _advanced(reader, base, version) if base is not None else None
    if found is None:
        found = _from_delta(spark, reader, location, version)
    if isinstance(found, Listing):
        with _listings_lock:
            kept[version] = found
            for old in sorted(kept)[:-LISTINGS_KEPT]:
                del kept[old]
    return found


def _advanced(reader: DeltaLogReader, listing: Listing, version: int) -> Listing | None:
    """``listing`` advanced to ``version`` by the commits in between; None where one of them
    set metadata or protocol, added a file with a deletion vector, or is not in the log."""
    commits = reader.actions(listing.version + 1, version)
    if [v for v, _ in commits] != list(range(listing.version + 1, version + 1)):
        return None
    location = listing.location
    files = {f.path: f for f in listing.files}
    for _, actions in commits:
        for action in actions:
            kind = action.getClass().getSimpleName()
            if kind in ("Metadata", "Protocol"):
                return None
            if kind == "AddFile":
                if action.deletionVector() is not None:
                    return None
                partition = partition_of(action.partitionValues())
                if partition is None:
                    return None
                path, size = absolute_path(location, action.path()), int(action.size())
                files[path] = DataFile(path, size, action.stats(), partition, action.path())
            elif kind == "RemoveFile":
                files.pop(absolute_path(location, action.path()), None)
    return replace(listing, version=version, files=tuple(files.values()))


def _from_delta(
    spark: Session, reader: DeltaLogReader, location: str, version: int
) -> Listing | Unlisted:
    """The files of ``version`` as Delta lists them (its state reconstruction: one Spark job);
    or why the table does not qualify."""
    found = qualified_version(reader, version)
    if isinstance(found, Unlisted):
        return found
    snapshot, schema, partitioned_by = found
    rows = DataFrame(snapshot.allFiles().toDF(), cast(Any, spark)).select(
        "path", "size", "stats", "deletionVector", "partitionValues"
    )
    files = []
    for row in rows.collect():
        if row.deletionVector is not None:
            return Unlisted("deletion vectors")
        partition = partition_of(row.partitionValues or {})
        if partition is None:
            return Unlisted(EMPTY_PARTITION_VALUE)
        path = absolute_path(location, row.path)
        files.append(DataFile(path, int(row.size), row.stats, partition, row.path))
    return Listing(location, version, schema, tuple(files), partitioned_by)


def qualified_version(
    reader: DeltaLogReader, version: int
) -> tuple[Any, StructType, tuple[str, ...]] | Unlisted:
    """The JVM's snapshot of ``version`` of the table of ``reader``, its schema and the
    columns it is partitioned by, where its files are simply its rows (see the module's
    docstring); or why they are not."""
    snapshot = reader.snapshot_at(version)
    if snapshot is None:
        return Unlisted(f"version {version} is no longer in the log")
    metadata = snapshot.metadata()
    schema = StructType.fromJson(json.loads(metadata.schemaString()))
    columns = metadata.partitionColumns()
    partitioned_by = tuple(columns.apply(i) for i in range(columns.size()))
    if (why := _unqualified(snapshot.protocol(), metadata, schema, partitioned_by)) is not None:
        return why
    return snapshot, schema, partitioned_by


PARTITION_TYPES = (
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    StringType,
    BooleanType,
)
"""The types of partition columns whose values a read from the files casts from the log's
text as Delta does; a table partitioned by a column of another type (a timestamp, whose
text depends on the writer's time zone; a float) is read through Delta."""
EMPTY_PARTITION_VALUE = "an empty partition value"


def partition_of(values: Any) -> Partition | None:
    """A file's partition values (the JVM's map, or a dict), sorted by column; None where one
    is an empty text (which Delta reads as NULL or as the empty string, by the type)."""
    if not isinstance(values, dict):
        keys = values.keys().iterator()
        pairs = {}
        while keys.hasNext():
            key = keys.next()
            pairs[key] = values.apply(key)
        values = pairs
    if any(value == "" for value in values.values()):
        return None
    return tuple(sorted(values.items()))


def _unqualified(
    protocol: Any, metadata: Any, schema: StructType, partitioned_by: tuple[str, ...]
) -> Unlisted | None:
    """Why a table version of ``protocol`` and ``metadata`` (the JVM's), ``schema``,
    partitioned by ``partitioned_by``, is not read from its files; None where it may be."""
    if protocol.minReaderVersion() != 1:
        return Unlisted(
            f"reader version {protocol.minReaderVersion()} (column mapping, deletion vectors "
            f"or another reader feature)"
        )
    text = str(metadata.schemaString())
    if CHAR_TYPES in text or COLLATIONS in text:
        return Unlisted("CHAR, VARCHAR or collated string columns")
    types = {f.name: f.dataType for f in schema.fields}
    other = [c for c in partitioned_by if not isinstance(types.get(c), PARTITION_TYPES)]
    if other:
        return Unlisted(f"partitioned by {', '.join(other)}, of a type read through Delta")
    return None


def absolute_path(location: str, path: str) -> str:
    """A data file's path as Spark reads it, from its (URI-encoded) path in the log."""
    if "://" in path or path.startswith("file:") or path.startswith("/"):
        return unquote(path)
    return f"{location.rstrip('/')}/{unquote(path)}"
