"""Source tables: checks, versions, and their reads bound as relations for a delta query.

Delta's change data feed becomes a Z-set here, and nowhere else: ``insert`` and
``update_postimage`` rows weigh +1, ``delete`` and ``update_preimage`` rows -1. Over a range of
commits the weights of identical rows are summed and zeros dropped; that is the net change,
whatever the order of the commits (a row inserted then deleted cancels out).
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from ivm.errors import SourceError
from ivm.runtime.delta_log import DeltaLogReader
from ivm.zset import WEIGHT, Read, relation_name

INSERTED = ("insert", "update_postimage")
CDF_PROPERTY = "delta.enableChangeDataFeed"


def check_source(spark, table: str) -> None:
    """Raise :class:`SourceError` unless ``table`` is a Delta table with change data feed."""
    try:
        DeltaTable.forName(spark, table)
    except AnalysisException:
        raise SourceError(
            f"source {table} is not a Delta table",
            hint=f"a materialized view reads Delta tables; convert it, e.g. "
                 f"CREATE TABLE {table}_delta USING DELTA AS SELECT * FROM {table}") from None
    if DeltaLogReader(spark, table).properties().get(CDF_PROPERTY, "false").lower() != "true":
        raise SourceError(
            f"source {table} does not have change data feed enabled",
            hint=f"enable it: ALTER TABLE {table} SET TBLPROPERTIES "
                 f"({CDF_PROPERTY} = true)")


def table_version(spark, table: str) -> int:
    """The latest committed version of the Delta table ``table``."""
    return DeltaLogReader(spark, table).version()


def snapshot(spark, table: str, columns, version: int) -> DataFrame:
    """``columns`` of ``table`` as of ``version``."""
    return (spark.read.format("delta").option("versionAsOf", version).table(table)
            .select(*columns))


def changes(spark, table: str, columns, after: int, upto: int) -> DataFrame:
    """The net change of ``columns`` of ``table`` over versions ``(after, upto]``, weighted."""
    if upto <= after:
        schema = snapshot(spark, table, columns, after).schema
        return spark.createDataFrame([], StructType(schema.fields + [
            StructField(WEIGHT, LongType(), False)]))
    feed = (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", after + 1).option("endingVersion", upto).table(table))
    weight = F.when(F.col("_change_type").isin(*INSERTED), F.lit(1)).otherwise(F.lit(-1))
    return (feed.groupBy(*columns).agg(F.sum(weight).cast("bigint").alias(WEIGHT))
            .where(F.col(WEIGHT) != 0))


def bind(spark, sources: dict[str, tuple[str, ...]], before: dict[str, int] | None,
         after: dict[str, int], wrap=lambda frame: frame) -> list[str]:
    """Register each source's reads under the names delta queries use; returns the names.

    Without ``before`` only the ``AFTER`` snapshots are bound (for a full computation).
    The first source's reads pass through ``wrap``.
    """
    names = []
    for i, (table, columns) in enumerate(sources.items()):
        reads = {Read.AFTER: snapshot(spark, table, columns, after[table])}
        if before is not None:
            reads[Read.BEFORE] = snapshot(spark, table, columns, before[table])
            reads[Read.DELTA] = changes(spark, table, columns, before[table], after[table])
        for read, frame in reads.items():
            name = relation_name(table, read)
            (wrap(frame) if i == 0 else frame).createOrReplaceTempView(name)
            names.append(name)
    return names


def unbind(spark, names: list[str]) -> None:
    for name in names:
        spark.catalog.dropTempView(name)
