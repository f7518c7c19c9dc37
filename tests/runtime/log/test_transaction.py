"""Commits through Delta's transaction API: each is Delta's idempotent transaction of the
version it was computed from, as the SQL statements it replaces were, so that a second commit
from that version (SQL's or the API's) is skipped or refused; an overwrite replaces exactly the
files it was given, and its change data feed shows the rows deleted and inserted; an append
adds its rows after any other application's commit, in the one Spark job that writes them."""

import json

import pytest

from benchmarks.measure import Meter
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.log.file_lists import Listing, listed
from ivm.runtime.log.transaction import append_committed, overwrite_committed, record_committed
from ivm.runtime.spark.settings import session_settings

APP = "ivm:test"
METADATA = "spark.databricks.delta.commitInfo.userMetadata"


@pytest.fixture
def table(spark, fresh_db):
    """A partitioned table with change data feed on, in three files of two partitions."""
    spark.sql(
        "CREATE TABLE t (k INT, p STRING, v BIGINT) USING DELTA PARTITIONED BY (p) "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    for rows in ["(1, 'a', 10), (2, 'b', 20)", "(3, 'a', 30)"]:
        spark.sql(f"INSERT INTO t VALUES {rows}")
    return f"{fresh_db}.t"


def version(spark, table: str) -> int:
    return DeltaLogReader(spark, table).version()


def rows(spark, query: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_an_overwrite_replaces_the_files_it_was_given(spark, table):
    read = version(spark, table)
    listing = listed(spark, table, read)
    assert isinstance(listing, Listing) and len(listing.files) == 3
    new = spark.createDataFrame([(1, "a", 11), (4, "c", 40)], "k INT, p STRING, v BIGINT")
    with session_settings(spark, {METADATA: json.dumps({"by": "test"})}):
        assert overwrite_committed(spark, table, APP, read, new, listing.files) is True
    assert rows(spark, f"SELECT * FROM {table}") == [(1, "a", 11), (4, "c", 40)]
    latest = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()
    assert latest.operation == "WRITE" and json.loads(latest.userMetadata) == {"by": "test"}
    assert latest.operationMetrics["numOutputRows"] == "2"
    changes = f"SELECT _change_type, k FROM table_changes('{table}', {read + 1}, {read + 1})"
    assert rows(spark, changes) == [
        ("delete", 1),
        ("delete", 2),
        ("delete", 3),
        ("insert", 1),
        ("insert", 4),
    ]


def test_an_overwrite_from_a_version_since_changed_commits_nothing(spark, table):
    read = version(spark, table)
    listing = listed(spark, table, read)
    assert isinstance(listing, Listing)
    spark.sql(f"INSERT INTO {table} VALUES (5, 'a', 50)")  # another commit first
    new = spark.createDataFrame([(1, "a", 11)], "k INT, p STRING, v BIGINT")
    assert overwrite_committed(spark, table, APP, read, new, listing.files) is False
    assert version(spark, table) == read + 1
    assert len(rows(spark, f"SELECT * FROM {table}")) == 4


def test_a_record_is_committed_once_per_version_whichever_way_it_is_written(spark, table):
    read = version(spark, table)
    assert record_committed(spark, table, APP, read) is True
    assert version(spark, table) == read + 1
    assert record_committed(spark, table, APP, read) is False  # found by the lookup
    txn = {
        "spark.databricks.delta.write.txnAppId": APP,
        "spark.databricks.delta.write.txnVersion": str(read),
    }
    with session_settings(spark, txn):  # SQL's idempotent write of that version is skipped
        spark.sql(f"INSERT INTO {table} VALUES (9, 'z', 90)")
    assert version(spark, table) == read + 1
    assert rows(spark, f"SELECT k FROM {table}") == [(1,), (2,), (3,)]


def test_an_append_adds_its_rows_once_per_version_in_one_job(spark, table):
    """The append starts where its refresh read the table, the last commit written by SQL
    (whose snapshot's state Delta has not reconstructed): one Spark job, the write, and no
    lookup of the table's transactions."""
    read = version(spark, table)
    new = spark.createDataFrame([(4, "c", 40), (6, "a", 60)], "k INT, p STRING, v BIGINT")
    with session_settings(spark, {METADATA: json.dumps({"by": "test"})}):
        cost, done = Meter(spark).cost(lambda: append_committed(spark, table, APP, read, new))
    assert done is True and cost.jobs == 1
    assert rows(spark, f"SELECT k FROM {table}") == [(1,), (2,), (3,), (4,), (6,)]
    latest = spark.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()
    assert latest.operation == "WRITE" and latest.operationParameters["mode"] == "Append"
    assert json.loads(latest.userMetadata) == {"by": "test"}
    changes = f"SELECT _change_type, k FROM table_changes('{table}', {read + 1}, {read + 1})"
    assert rows(spark, changes) == [("insert", 4), ("insert", 6)]
    assert append_committed(spark, table, APP, read, new) is False  # found by the lookup
    assert version(spark, table) == read + 1


def test_an_append_commits_after_another_application_s_commit(spark, table):
    """A commit since the version the append was computed from that is not its view's (a
    fold of a logged store's log) does not stop it: the append reads no stored row."""
    read = version(spark, table)
    spark.sql(f"DELETE FROM {table} WHERE k = 2")  # another application's commit first
    new = spark.createDataFrame([(4, "c", 40)], "k INT, p STRING, v BIGINT")
    assert append_committed(spark, table, APP, read, new) is True
    assert version(spark, table) == read + 2
    assert rows(spark, f"SELECT k FROM {table}") == [(1,), (3,), (4,)]
