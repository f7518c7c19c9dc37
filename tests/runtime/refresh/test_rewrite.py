"""A small store takes a change rewritten whole with the change folded in
(:mod:`ivm.runtime.refresh.techniques.rewrite`), a larger one by a MERGE: the same rows either
way, the rewrite in fewer Spark jobs."""

import pytest

import ivm
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.spark.settings import REWRITE_MAX_BYTES, SNAPSHOT_READS, session_settings
from ivm.testing.data import MERGES
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query, history

VIEWS = {
    "groups": "SELECT g, COUNT(*) AS n, SUM(x) AS s, SUM(d) AS sd FROM src GROUP BY g",
    "overall": "SELECT SUM(x) AS s, COUNT(*) AS n, SUM(d) AS sd FROM src",
    "kinds": "SELECT DISTINCT g FROM src",
    "copies": "SELECT g, d FROM src WHERE x > 2",  # duplicates kept: rows repeated by count
}
CHANGES = [
    "UPDATE src SET x = x + 1, d = d * 2 WHERE x < 4",
    "DELETE FROM src WHERE g = 2",  # a group gone
    "INSERT INTO src VALUES (NULL, 5, 0.25), (7, 1, NULL)",  # a NULL key, a new group
    "DELETE FROM src",  # every group gone; the global aggregate keeps its row
    "INSERT INTO src VALUES (NULL, 9, 1.50), (NULL, 9, 1.50)",
]


@pytest.fixture
def views(spark, fresh_db):
    spark.sql(f"CREATE TABLE src (g INT, x BIGINT, d DECIMAL(10, 2)) USING DELTA {CDF}")
    spark.sql("INSERT INTO src SELECT id % 3, id, id / 4 FROM range(12)")
    for name, query in VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {query}")
    return fresh_db


@pytest.mark.parametrize("largest_rewritten, technique", [(None, "rewrite"), ("0", "merge")])
def test_a_small_store_is_rewritten_with_the_change_and_a_larger_one_merged_into(
    spark, views, largest_rewritten, technique
):
    """Each change, refreshed into each view: rewritten (stores of a few rows are below the
    default ``spark.ivm.rewriteMaxBytes``) or, with that at 0, MERGEd; the view is its query
    after every refresh, and the history says which technique wrote it."""
    setting = {} if largest_rewritten is None else {REWRITE_MAX_BYTES: largest_rewritten}
    for change in CHANGES:
        spark.sql(change)
        for name, query in VIEWS.items():
            with session_settings(spark, setting):
                result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {name}")
            assert result.mode == "incremental", (change, name, result)
            assert_equals_query(spark, name, query)
            if result.technique != "record only":  # the change left the view as it was
                assert result.technique == technique, (change, name, result)
    described = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW groups").collect()
    written = [h.technique for h in described]
    assert written[:-1] == [technique] * len(CHANGES)  # the last is the CREATE's
    operation = "WRITE" if technique == "rewrite" else "MERGE"
    assert history(spark, store_name(f"{views}.groups"))[-1].operation == operation


def test_a_rewrite_reads_the_stored_rows_from_the_files_the_log_lists(spark, views):
    """The same kind of change rewritten into the same store twice: with the stored rows read
    from the files the store's log lists, the write runs a Spark job fewer than where Delta
    plans their read (its listing of the store's files is a job of its own)."""
    jobs = {}
    for reads in ("delta", "files"):
        spark.sql("UPDATE src SET x = x + 1 WHERE g = 1")
        with session_settings(spark, {SNAPSHOT_READS: reads}):
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW groups")
        assert result.technique == "rewrite"
        jobs[reads] = result.phases["write"].jobs
        assert_equals_query(spark, "groups", VIEWS["groups"])
    assert jobs["files"] < jobs["delta"], jobs


def test_drawn_scenarios_merge_by_the_runtimes_setting():
    """The drawn scenarios' MERGEs (which cannot import the runtime) are set by the name the
    runtime reads."""
    assert MERGES == {REWRITE_MAX_BYTES: "0"}
