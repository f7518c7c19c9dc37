"""A table's change over a range of versions, read from the files its commits name.

The Delta protocol defines a commit's change data: its change data files (``cdc`` actions),
whose rows carry their ``_change_type``, where it wrote some; else its data files added
(``insert``) and removed (``delete``) with ``dataChange`` set. A compaction's files carry no
data change and are not read. So the change of versions ``(a, b]`` is::

    Δ(a, b] = ⊎ over commits c in (a, b] of  cdc(c)  if c has cdc files
                                        else  added(c) ⊎ removed(c)

Delta's change data feed reader plans exactly that, at a cost: it lists the log's directory,
reconstructs a snapshot for the schema and plans a file index per commit (0.15-0.3 s for a
one-commit range). The commits are read here by name instead, as a refresh already read them
to size its change (:meth:`DeltaLogReader.commits`), and their files are read as Parquet with
the table's schema: no listing, no job to plan the read.

A range qualifies where the table's files are simply its rows, as for a snapshot read from
its files (:func:`~ivm.runtime.log.file_lists.qualified_version`: reader version 1, so no column
mapping or deletion vectors; no CHAR or collated strings; partition columns of the types
whose text is read as Delta reads it), and no commit in the range set metadata or protocol
(a schema change, the change data feed turned on or off): Delta's reader, with its checks
and errors, reads the others. :func:`change_files` says why a range does not qualify
(:class:`~ivm.runtime.log.file_lists.Unlisted`), and the refresh records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from ivm.runtime.log.delta_log import CDF_PROPERTY, DeltaLogReader
from ivm.runtime.log.file_lists import (
    CONNECT,
    EMPTY_PARTITION_VALUE,
    MAX_PARTITIONS_READ,
    DataFile,
    Unlisted,
    absolute_path,
    partition_of,
    partition_rows,
    qualified_version,
)
from ivm.runtime.spark.connect import Session, is_connect

CHANGE_TYPE = "_change_type"
"""The column of a change data file (and of Delta's change data feed) saying what a row is:
``insert``, ``delete``, ``update_preimage`` or ``update_postimage``."""
CHANGE_TYPE_FIELD = StructField(CHANGE_TYPE, StringType())
CHANGE_FILE = None
"""The kind of a file whose rows carry their own :data:`CHANGE_TYPE` (a ``cdc`` file)."""

Kind = str | None
"""What a change file's rows are: ``insert`` (a data file added), ``delete`` (one removed),
or :data:`CHANGE_FILE` (each row says)."""


@dataclass(frozen=True)
class ChangeFiles:
    """The files holding a table's change over a range of versions, each with its kind, and
    the table's ``schema`` and partition columns over the range."""

    schema: StructType
    partitioned_by: tuple[str, ...]
    files: tuple[tuple[Kind, DataFile], ...]

    def read(self, spark: Session) -> DataFrame | None:
        """The change's rows: the table's columns and :data:`CHANGE_TYPE`, read as Parquet,
        one read per kind and partition joined by a union; None where no file holds any."""
        groups: dict[tuple[Kind, tuple], list[DataFile]] = {}
        for kind, file in self.files:
            groups.setdefault((kind, file.partition), []).append(file)
        reads = []
        for (kind, partition), files in groups.items():
            held = (CHANGE_TYPE_FIELD,) if kind is CHANGE_FILE else ()
            rows = partition_rows(
                spark, self.schema, self.partitioned_by, partition, tuple(files), held
            )
            reads.append(rows if kind is CHANGE_FILE else rows.withColumn(CHANGE_TYPE, F.lit(kind)))
        return reduce(DataFrame.union, reads) if reads else None


def change_files(spark: Session, table: str, after: int, upto: int) -> ChangeFiles | Unlisted:
    """The files of the change of ``table`` (a Delta table's name) over versions ``(after,
    upto]``; or why it is read by Delta's change data feed (see the module's docstring)."""
    if is_connect(spark):
        return CONNECT
    reader = DeltaLogReader.of(spark, table)
    location = reader.location()
    if location is None:
        return CONNECT
    commits = reader.actions(after + 1, upto)
    if [v for v, _ in commits] != list(range(after + 1, upto + 1)):
        return Unlisted(f"a commit after version {after} is no longer in the log")
    found = qualified_version(reader, upto)
    if isinstance(found, Unlisted):
        return found
    snapshot, schema, partitioned_by = found
    feed = snapshot.metadata().configuration().get(CDF_PROPERTY)
    if not (feed.isDefined() and feed.get().lower() == "true"):
        return Unlisted("the change data feed is off")
    files: list[tuple[Kind, DataFile]] = []
    for version, actions in commits:
        found = _commit_files(location, partitioned_by, actions)
        if isinstance(found, Unlisted):
            return Unlisted(f"version {version}: {found.reason}")
        files += found
    if (parts := len({(kind, f.partition) for kind, f in files})) > MAX_PARTITIONS_READ:
        return Unlisted(f"{parts} partitions read, more than {MAX_PARTITIONS_READ}")
    return ChangeFiles(schema, partitioned_by, tuple(files))


def _commit_files(
    location: str, partitioned_by: tuple[str, ...], actions: list
) -> list[tuple[Kind, DataFile]] | Unlisted:
    """The change files of one commit of ``actions`` (the JVM's) of the table at ``location``
    partitioned by ``partitioned_by``: its ``cdc`` files where it has some, else its data
    files added and removed with a data change; or why they are not simply its change."""
    written: list[tuple[Kind, DataFile]] = []
    changed: list[tuple[Kind, DataFile]] = []
    for action in actions:
        kind = action.getClass().getSimpleName()
        if kind in ("Metadata", "Protocol"):
            return Unlisted("it set the table's metadata or protocol")
        if kind not in ("AddCDCFile", "AddFile", "RemoveFile"):
            continue
        if kind != "AddCDCFile" and not action.dataChange():
            continue
        if kind != "AddCDCFile" and action.deletionVector() is not None:
            return Unlisted("a file with a deletion vector")
        values = action.partitionValues()  # a removal may not say (an old writer's)
        if values is None and partitioned_by:
            return Unlisted("a removed file without its partition values")
        partition = () if values is None else partition_of(values)
        if partition is None:
            return Unlisted(EMPTY_PARTITION_VALUE)
        size = action.size()
        size = size if isinstance(size, int) else int(size.get()) if size.isDefined() else 0
        file = DataFile(absolute_path(location, action.path()), size, None, partition)
        if kind == "AddCDCFile":
            written.append((CHANGE_FILE, file))
        else:
            changed.append(("insert" if kind == "AddFile" else "delete", file))
    return written or changed
