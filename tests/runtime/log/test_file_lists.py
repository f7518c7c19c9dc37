"""A table version's files as listed from its log, and the statistics that skip them: compared
with the files that hold each value as Delta itself wrote them (integers, decimals, dates, and
strings long enough for Delta to truncate their statistics, beyond the Basic Multilingual
Plane too), every file that holds a key is admitted, and files are skipped (a column named in
any case, as Spark resolves names); a partitioned table reads as Delta reads it; the tables
that cannot be read from their files say why."""

from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from ivm.runtime.log import file_lists
from ivm.runtime.log.delta_log import reading_each_log_once
from ivm.runtime.log.file_lists import Listing, Unlisted, admitting, listed

COLUMNS = ("i", "b", "d", "day", "s")
LONG = "x" * 40  # longer than the 32 characters Delta keeps of a string's statistics


def _rows(part: int) -> str:
    """The rows of one INSERT: its own range of each column, NULLs in every other one."""
    rows = [
        f"({part * 10 + n}, {part * 10**12 + n}, {part}.{n:02d}, "
        f"DATE'2024-0{part + 1}-1{n}', '{LONG if part == 2 else ''}{chr(0x61 + part)}{n}')"
        for n in range(3)
    ]
    if part % 2:
        rows.append("(NULL, NULL, NULL, NULL, NULL)")
    rows.append(f"(NULL, NULL, NULL, NULL, '\U0001f600{part}')")  # beyond the BMP
    return ", ".join(rows)


@pytest.fixture
def typed(spark, fresh_db):
    """``typed``: four INSERTs, each its own range of values (Spark may write an INSERT's rows
    to several files)."""
    spark.sql(
        "CREATE TABLE typed (i INT, b BIGINT, d DECIMAL(10, 2), day DATE, s STRING) USING DELTA"
    )
    for part in range(4):
        spark.sql(f"INSERT INTO typed VALUES {_rows(part)}")
    return f"{fresh_db}.typed"


def _listing(spark, table: str) -> Listing:
    with reading_each_log_once():
        version = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first().version
        found = listed(spark, table, version)
    assert isinstance(found, Listing), found
    return found


def test_every_file_that_holds_a_key_is_admitted_and_others_skipped(spark, typed):
    listing = _listing(spark, typed)
    assert len(listing.files) >= 4
    rows = spark.table(typed).select(*COLUMNS, F.col("_metadata.file_path").alias("path"))
    holding: dict[tuple[str, object], set[str]] = defaultdict(set)
    for row in rows.collect():
        for column in COLUMNS:
            holding[column, row[column]].add(row.path.removeprefix("file:"))
    skipped = set()
    for (column, value), paths in holding.items():
        keys = [] if value is None else [value]
        admitted = {
            f.path.removeprefix("file:")
            for f in admitting(listing.files, column.upper(), keys, value is None)
        }
        assert paths <= admitted, (column, value)
        if len(admitted) < len(listing.files):
            skipped.add(column)
    assert skipped == set(COLUMNS)


def test_keys_of_several_types_admit_every_file(spark, typed):
    listing = _listing(spark, typed)
    assert admitting(listing.files, "i", [1, "1"], False) == listing.files


def test_a_partitioned_table_reads_from_its_files_as_through_delta(spark, fresh_db):
    """Partition values come from the log, cast as Delta casts them, NULL ones included; a
    key of a partition column admits the files of its partitions alone."""
    spark.sql(
        "CREATE TABLE parted (k INT, p STRING, n INT, day DATE) USING DELTA "
        "PARTITIONED BY (p, n, day)"
    )
    spark.sql(
        "INSERT INTO parted VALUES (1, 'a', 1, DATE'2024-01-01'), (2, 'b b/=%', -2, NULL), "
        "(3, NULL, NULL, DATE'2024-12-31'), (4, 'a', 1, DATE'2024-01-01')"
    )
    listing = _listing(spark, f"{fresh_db}.parted")
    assert listing.partitioned_by == ("p", "n", "day")
    from_files = listing.read(spark)
    through_delta = spark.table(f"{fresh_db}.parted")
    assert from_files.schema == through_delta.schema
    assert sorted(from_files.collect()) == sorted(through_delta.collect())
    assert {f.partition for f in admitting(listing.files, "n", [-2], False)} == {
        (("day", None), ("n", "-2"), ("p", "b b/=%"))
    }
    assert len(admitting(listing.files, "p", [], True)) == 1  # the NULL partition's


def test_a_partitioned_version_listed_from_its_commits_reads_as_through_delta(
    spark, fresh_db, monkeypatch
):
    """A version after a listed one is listed from the commits in between (their files'
    partition values read from the JVM's actions), not by Delta again."""
    table = f"{fresh_db}.grown"
    spark.sql(f"CREATE TABLE {table} (k INT, p STRING) USING DELTA PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, NULL)")
    first = _listing(spark, table)
    spark.sql(f"INSERT INTO {table} VALUES (3, 'b'), (4, NULL)")
    spark.sql(f"DELETE FROM {table} WHERE k = 1")
    monkeypatch.setattr(file_lists, "_from_delta", lambda *args: pytest.fail("listed by Delta"))
    later = _listing(spark, table)
    assert later.version == first.version + 2
    assert sorted(later.read(spark).collect()) == sorted(spark.table(table).collect())


def test_a_table_partitioned_by_a_timestamp_is_read_through_delta_and_says_why(spark, fresh_db):
    spark.sql("CREATE TABLE stamped (k INT, at TIMESTAMP) USING DELTA PARTITIONED BY (at)")
    spark.sql("INSERT INTO stamped VALUES (1, TIMESTAMP'2024-01-01 10:00:00')")
    with reading_each_log_once():
        found = listed(spark, f"{fresh_db}.stamped", 1)
    assert found == Unlisted("partitioned by at, of a type read through Delta")
