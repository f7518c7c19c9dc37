"""The reads of a table's log that a refresh plans from: what the commits since a version did,
and a commit's record, read by file name for a short range and by Delta's listing for a long
one, which must agree; a commit that log cleanup removed reads as gone."""

import os

import pytest

from ivm.runtime.log import delta_log
from ivm.runtime.log.delta_log import DeltaLogReader

CDF = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"


@pytest.fixture
def table(spark, fresh_db):
    """``t`` at version 13: inserts, an update and a delete (change data files), a property
    set, a commit with a user record; a checkpoint at version 10."""
    spark.sql(f"CREATE TABLE t (k INT, v STRING) USING DELTA {CDF}")
    for i in range(8):
        spark.sql(f"INSERT INTO t VALUES ({i}, 'v{i}')")
    spark.sql("UPDATE t SET v = 'u' WHERE k < 3")
    spark.sql("DELETE FROM t WHERE k = 7")
    spark.sql("ALTER TABLE t SET TBLPROPERTIES ('note' = 'x')")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "the record")
    try:
        spark.sql("INSERT INTO t VALUES (8, 'v8')")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    spark.sql("INSERT INTO t VALUES (9, 'v9')")
    return f"{fresh_db}.t"


def by_listing(monkeypatch):
    monkeypatch.setattr(delta_log, "READ_BY_NAME", 0)


def test_commits_read_by_name_are_those_delta_lists(spark, table, monkeypatch):
    log = DeltaLogReader(spark, table)
    assert log.version() == 13
    by_name = [log.commits(after, after + 3) for after in range(-1, 13, 3)]
    by_name_info = [log.commit_info(v) for v in range(14)]
    by_listing(monkeypatch)
    assert by_name == [log.commits(after, after + 3) for after in range(-1, 13, 3)]
    assert by_name[-1] is None  # (11, 14]: version 14 is not committed
    assert by_name_info == [log.commit_info(v) for v in range(14)]
    history = {r.version: r for r in spark.sql(f"DESCRIBE HISTORY {table}").collect()}
    commits = log.commits(-1, 13)
    assert commits is not None
    assert [(c.version, c.operation) for c in commits] == [
        (v, history[v].operation) for v in range(14)
    ]
    assert [c.metadata_changed for c in commits] == [v in (0, 11) for v in range(14)]
    assert all(c.change_bytes for c in commits[1:11]) and not commits[11].change_bytes
    assert by_name_info[12][0] == "the record" and by_name_info[13][0] is None
    # the commit's own time; DESCRIBE HISTORY gives its file's, a few ms later
    assert abs(by_name_info[12][1] - history[12].timestamp.timestamp() * 1000) < 1000


def test_commits_that_log_cleanup_removed_read_as_gone(spark, table, monkeypatch):
    log_dir = os.path.join(
        DeltaLogReader(spark, table).location().removeprefix("file:"), "_delta_log"
    )
    for version in range(5):  # what cleanup does: commits before the checkpoint at 10
        os.remove(os.path.join(log_dir, f"{version:020d}.json"))
    for read in (lambda: None, lambda: by_listing(monkeypatch)):
        read()
        log = DeltaLogReader(spark, table)
        assert log.commits(2, 6) is None
        assert log.commit_info(3) == (None, None)
        assert log.commit_info(12)[0] == "the record"
        commits = log.commits(5, 13)
        assert commits is not None and [c.version for c in commits] == list(range(6, 14))
