"""A table version's data files, listed from its log and kept across refreshes (a prototype).

Delta plans every read of a table version the same way: it reconstructs the version's state
from the log (a Spark job, for a version read for the first time), then filters the files'
statistics by the scan's predicate (a Spark job per filtered scan). A refresh reads the
same tables at consecutive versions, refresh after refresh, and a version differs from the
one before it by the files its commit added and removed. So the list can be kept instead:

    files(v) = files(u) + added(u, v] − removed(u, v]          (u < v, both in the log)

the commits in between read by name from the log (:meth:`DeltaLogReader.actions`), and the
first list of a session taken from Delta once. A read of the version is then a Parquet read
of exactly those files, and a read restricted to keys keeps only the files whose statistics
admit one of the keys (:func:`admitting`), both without a Spark job.

Only tables whose files *are* their rows qualify (:func:`listed` says None otherwise): no
partition columns (their values are not in the files), no column mapping and no deletion
vectors (reader version 1), and commits in between that set no metadata or protocol.
Turned on by ``spark.ivm.snapshotReads=files`` (:data:`~ivm.runtime.spark.settings.SNAPSHOT_READS`).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.spark.connect import Session, is_connect
from ivm.runtime.spark.settings import session_settings

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"

MAX_COMMITS_APPLIED = 64
"""A version at most this many commits after a listed one is listed from the commits in
between; a farther one is listed by Delta afresh."""

LISTINGS_KEPT = 4
"""Versions listed per table and session, the newest kept."""


@dataclass(frozen=True)
class DataFile:
    """One data file of a version: its absolute ``path``, ``size`` in bytes, and Delta's
    statistics (JSON, None where it wrote none)."""

    path: str
    size: int
    stats: str | None

    @cached_property
    def _ranges(self) -> tuple[dict, dict, dict] | None:
        if self.stats is None:
            return None
        parsed = json.loads(self.stats)
        return (
            parsed.get("minValues", {}),
            parsed.get("maxValues", {}),
            parsed.get("nullCount", {}),
        )

    def may_hold(self, column: str, values: list[int], has_null: bool) -> bool:
        """Whether the file may hold a row whose ``column`` is one of the sorted integer
        ``values`` (or NULL, where ``has_null``): False only where its statistics exclude
        them all."""
        ranges = self._ranges
        if ranges is None:
            return True
        low, high, nulls = (r.get(column) for r in ranges)
        if has_null and (nulls is None or nulls > 0):
            return True
        if not isinstance(low, int) or not isinstance(high, int):  # no statistics of it
            return True
        first = bisect_left(values, low)
        return first < len(values) and values[first] <= high


@dataclass(frozen=True)
class Listing:
    """The data files of a table (at ``location``) at ``version``, and the version's
    ``schema``."""

    location: str
    version: int
    schema: StructType
    files: tuple[DataFile, ...]

    def read(self, spark: Session, files: tuple[DataFile, ...] | None = None) -> DataFrame:
        """The rows of ``files`` (default: all of the version's), read as Parquet with the
        version's schema: no schema inferred, no listing job."""
        chosen = self.files if files is None else files
        if not chosen:
            return spark.createDataFrame([], self.schema)
        # listing more paths than this threshold is a Spark job; these are files, not folders
        with session_settings(spark, {LISTING_THRESHOLD: "1000000"}):
            return spark.read.schema(self.schema).parquet(*(f.path for f in chosen))


def admitting(
    files: tuple[DataFile, ...], column: str, values: list[Any], has_null: bool
) -> tuple[DataFile, ...]:
    """The ``files`` that may hold a row whose ``column`` is among ``values`` (sorted) or
    NULL; all of them where a value is not an integer (statistics of other types are
    compared as Delta writes them, which this prototype does not)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return tuple(files)
    return tuple(f for f in files if f.may_hold(column, values, has_null))


_listings: dict[tuple[str, str, str], dict[int, Listing]] = {}


def listed(spark: Session, table: str, version: int) -> Listing | None:
    """The files of ``table`` (a Delta table's name) at ``version``; None where the table
    does not qualify (see the module's docstring) or its log cannot be read directly."""
    if is_connect(spark):
        return None
    reader = DeltaLogReader.of(spark, table)
    location = reader.location()  # None where the log is read through SQL
    if location is None:
        return None
    key = (spark.sparkContext.applicationId, location, reader.table_id())
    kept = _listings.setdefault(key, {})
    if version in kept:
        return kept[version]
    earlier = [v for v in kept if version - MAX_COMMITS_APPLIED <= v < version]
    found = _advanced(reader, kept[max(earlier)], version) if earlier else None
    if found is None:
        found = _from_delta(spark, reader, location, version)
    if found is not None:
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
                stats = action.stats()
                added = DataFile(_absolute(location, action.path()), int(action.size()), stats)
                files[added.path] = added
            elif kind == "RemoveFile":
                files.pop(_absolute(location, action.path()), None)
    return Listing(location, version, listing.schema, tuple(files.values()))


def _from_delta(
    spark: Session, reader: DeltaLogReader, location: str, version: int
) -> Listing | None:
    """The files of ``version`` as Delta lists them (its state reconstruction: one Spark job);
    None where the table does not qualify."""
    snapshot = reader.snapshot_at(version)
    if snapshot is None:
        return None
    protocol, metadata = snapshot.protocol(), snapshot.metadata()
    if protocol.minReaderVersion() != 1 or not metadata.partitionColumns().isEmpty():
        return None
    schema = StructType.fromJson(json.loads(metadata.schemaString()))
    rows = DataFrame(snapshot.allFiles().toDF(), cast(Any, spark)).select(
        "path", "size", "stats", "deletionVector"
    )
    files = []
    for row in rows.collect():
        if row.deletionVector is not None:
            return None
        files.append(DataFile(_absolute(location, row.path), int(row.size), row.stats))
    return Listing(location, version, schema, tuple(files))


def _absolute(location: str, path: str) -> str:
    """A data file's path as Spark reads it, from its (URI-encoded) path in the log."""
    if "://" in path or path.startswith("file:") or path.startswith("/"):
        return unquote(path)
    return f"{location.rstrip('/')}/{unquote(path)}"
