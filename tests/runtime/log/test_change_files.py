"""A change read from the files its commits name is Delta's change data feed, row for row:
over each commit and each range of commits of a partitioned table written by every kind of
statement; and a range the files cannot give (a table with column mapping, a schema change in
the range) is read by Delta's reader, with the reason, which a refresh records."""

from collections import Counter
from datetime import date
from decimal import Decimal

import pytest

import ivm
from ivm.runtime.catalog.history import latest_record
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.log.change_files import CHANGE_TYPE, ChangeFiles, change_files
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once
from ivm.runtime.log.file_lists import Unlisted
from ivm.runtime.refresh.sources import change_feed
from ivm.runtime.spark.settings import CHANGE_READS, session_settings

COLUMNS = "k INT, amount DECIMAL(12, 2), day DATE, tag STRING"

STATEMENTS = [
    "INSERT INTO t VALUES (1, 1.50, DATE'2024-01-01', 'a b/c'), (2, 2.00, DATE'2024-01-01', 'x'),"
    " (3, NULL, DATE'2024-01-02', NULL), (4, 4.25, DATE'2024-01-02', 'x')",
    "UPDATE t SET amount = amount + 1 WHERE k = 1",
    "DELETE FROM t WHERE k = 2",
    "DELETE FROM t WHERE day = DATE'2024-01-02'",  # whole files removed, no change data file
    "MERGE INTO t USING (SELECT 1 AS k, 9.99 AS amount, DATE'2024-01-01' AS day, 'm' AS tag"
    " UNION ALL SELECT 5, 5.00, DATE'2024-01-03', 'n') s ON t.k = s.k"
    " WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "INSERT INTO t VALUES (6, 6.00, DATE'2024-01-01', 'a b/c'),"
    " (6, 6.00, DATE'2024-01-01', 'a b/c')",
    "OPTIMIZE t",  # files compacted: no data change
    "INSERT OVERWRITE t VALUES (7, 7.00, DATE'2024-01-04', 'o')",
]


@pytest.fixture
def table(spark, fresh_db):
    """A table partitioned by a date, with change data feed on, written by ``STATEMENTS``."""
    spark.sql(
        f"CREATE TABLE t ({COLUMNS}) USING DELTA PARTITIONED BY (day) "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    for statement in STATEMENTS:
        spark.sql(statement)
    return f"{fresh_db}.t"


def feed_rows(frame) -> Counter:
    """The rows of a change feed (its table's columns and change type), counted."""
    return Counter(
        tuple(r) for r in frame.select("k", "amount", "day", "tag", CHANGE_TYPE).collect()
    )


def delta_feed(spark, table: str, after: int, upto: int) -> Counter:
    return feed_rows(spark.sql(f"SELECT * FROM table_changes('{table}', {after + 1}, {upto})"))


def test_each_commit_and_range_reads_as_delta_s_change_data_feed(spark, table):
    latest = DeltaLogReader(spark, table).version()
    ranges = [(v - 1, v) for v in range(1, latest + 1)] + [(0, latest), (1, 4), (3, latest)]
    for after, upto in ranges:
        with reading_each_log_once():
            feed, how = change_feed(spark, table, after, upto)
        assert how.startswith("files: "), (after, upto, how)
        assert feed_rows(feed) == delta_feed(spark, table, after, upto), (after, upto)
    # the statements' changes, as written: the reads above compare something
    assert delta_feed(spark, table, 1, 2) == Counter(
        {
            (1, Decimal("1.50"), date(2024, 1, 1), "a b/c", "update_preimage"): 1,
            (1, Decimal("2.50"), date(2024, 1, 1), "a b/c", "update_postimage"): 1,
        }
    )
    optimized = spark.sql(f"DESCRIBE HISTORY {table}").where("operation = 'OPTIMIZE'").first()
    assert (
        optimized is not None
        and delta_feed(spark, table, optimized.version - 1, optimized.version) == Counter()
    )


def test_a_range_the_files_cannot_give_is_read_by_delta_with_the_reason(spark, fresh_db):
    spark.sql(
        f"CREATE TABLE mapped ({COLUMNS}) USING DELTA TBLPROPERTIES "
        "(delta.enableChangeDataFeed = true, delta.columnMapping.mode = 'name')"
    )
    spark.sql(
        "CREATE TABLE plain (k INT) USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql("INSERT INTO mapped VALUES (1, 1.00, DATE'2024-01-01', 'a')")
    spark.sql("INSERT INTO plain VALUES (1)")
    spark.sql("ALTER TABLE plain ADD COLUMNS (v INT)")
    spark.sql("INSERT INTO plain VALUES (2, 2)")
    with reading_each_log_once():
        mapped = change_files(spark, f"{fresh_db}.mapped", 0, 1)
        altered = change_files(spark, f"{fresh_db}.plain", 1, 3)
        after_it = change_files(spark, f"{fresh_db}.plain", 2, 3)
    assert isinstance(mapped, Unlisted) and "reader version 2" in mapped.reason
    assert altered == Unlisted("version 2: it set the table's metadata or protocol")
    assert isinstance(after_it, ChangeFiles) and len(after_it.files) == 1
    with reading_each_log_once():
        feed, how = change_feed(spark, f"{fresh_db}.mapped", 0, 1)
    assert how.startswith("delta: reader version 2")
    assert feed_rows(feed) == Counter({(1, Decimal("1.00"), date(2024, 1, 1), "a", "insert"): 1})
    with session_settings(spark, {CHANGE_READS: "delta"}), reading_each_log_once():
        assert change_feed(spark, f"{fresh_db}.plain", 2, 3)[1] == f"delta: {CHANGE_READS} is delta"


def test_a_refresh_records_how_it_read_each_change(spark, fresh_db):
    for name, mapping in [("plain", "none"), ("mapped", "name")]:
        spark.sql(
            f"CREATE TABLE {name} (k INT, v BIGINT) USING DELTA TBLPROPERTIES "
            f"(delta.enableChangeDataFeed = true, delta.columnMapping.mode = '{mapping}')"
        )
        spark.sql(f"INSERT INTO {name} VALUES (1, 10), (2, 20)")
    query = "SELECT p.k, SUM(p.v + m.v) AS s FROM plain p JOIN mapped m ON p.k = m.k GROUP BY p.k"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {query}")
    spark.sql("UPDATE plain SET v = v + 1 WHERE k = 1")
    spark.sql("INSERT INTO mapped VALUES (2, 5)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    record = latest_record(DeltaLogReader(spark, store_name(f"{fresh_db}.totals")))[1]
    assert record.change_reads == {
        f"{fresh_db}.plain": "files: 1",
        f"{fresh_db}.mapped": "delta: reader version 2 (column mapping, deletion vectors "
        "or another reader feature)",
    }
    assert sorted(spark.table("totals").collect()) == sorted(spark.sql(query).collect())
