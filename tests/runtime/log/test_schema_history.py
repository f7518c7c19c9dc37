"""A source's schema is judged at every commit a refresh consumes, not at the two ends only.

Under column mapping a column dropped and added back, renamed away and back, or widened, is
another column under the same name (or the same one under another name for a while): the
change data feed cannot carry values across it, so the refresh recomputes and names the
commit. A change of the table's properties alone, or column mapping turned on (which keeps
every column's physical name), leaves the change readable and the refresh incremental."""

from datetime import datetime

import pytest

import ivm
from ivm.runtime.observation.status import view_status
from ivm.runtime.refresh.gather import predict
from ivm.testing import Scenario, Source, run_scenario
from ivm.testing.data import KEYWORDS_RESERVED, Column
from tests.support.helpers import assert_equals_query

MAPPED = "TBLPROPERTIES (delta.enableChangeDataFeed = true, 'delta.columnMapping.mode' = 'name')"
SUMS = "SELECT k, SUM(w) AS sw, COUNT(w) AS cw FROM t GROUP BY k"
ROWS = "SELECT k, w FROM t"


def refresh(spark, view: str):
    result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    assert_equals_query(spark, view, {"sums": SUMS, "rows": ROWS}[view])
    return result


@pytest.fixture
def mapped(spark, fresh_db):
    spark.sql(f"CREATE TABLE t (k INT, w INT) USING DELTA {MAPPED}")
    spark.sql("INSERT INTO t VALUES (1, 3), (2, 4)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sums AS {SUMS}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW rows AS {ROWS}")
    return fresh_db


def test_a_column_dropped_and_added_back_is_another_column(spark, mapped):
    spark.sql("ALTER TABLE t DROP COLUMN w")  # version 2
    spark.sql("ALTER TABLE t ADD COLUMN w INT")  # version 3
    for view in ("sums", "rows"):
        result = refresh(spark, view)
        assert result.mode == "full", result
        assert "version 2 (DROP COLUMNS)" in result.reason and "w dropped" in result.reason
        assert "version 3 (ADD COLUMNS)" in result.reason and "w added" in result.reason
    spark.sql("INSERT INTO t VALUES (1, 6)")
    assert refresh(spark, "sums").mode == "incremental"


def test_a_column_renamed_away_and_back_is_recomputed(spark, mapped):
    spark.sql("ALTER TABLE t RENAME COLUMN w TO v")
    spark.sql("INSERT INTO t (k, v) VALUES (1, 5)")
    spark.sql("ALTER TABLE t RENAME COLUMN v TO w")
    spark.sql("UPDATE t SET w = w + 1 WHERE k = 2")
    result = refresh(spark, "sums")
    assert result.mode == "full" and "w renamed to v" in result.reason, result


def test_a_widened_column_is_recomputed_with_its_new_type(spark, mapped):
    spark.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    spark.sql("ALTER TABLE t ALTER COLUMN w TYPE BIGINT")
    spark.sql("INSERT INTO t VALUES (1, 5000000000)")
    result = refresh(spark, "rows")
    assert result.mode == "full" and "w changed from int to bigint" in result.reason, result
    assert dict(spark.table("rows").dtypes)["w"] == "bigint"
    spark.sql("INSERT INTO t VALUES (3, 6000000000)")
    assert refresh(spark, "rows").mode == "incremental"


def test_column_mapping_turned_on_keeps_the_change_readable(spark, fresh_db):
    spark.sql(
        "CREATE TABLE t (k INT, w INT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql("INSERT INTO t VALUES (1, 3)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sums AS {SUMS}")
    spark.sql("INSERT INTO t VALUES (1, 4)")
    spark.sql(
        "ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    spark.sql("INSERT INTO t VALUES (2, 5)")
    assert refresh(spark, "sums").mode == "incremental"
    spark.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    spark.sql("INSERT INTO t VALUES (2, 6)")  # every physical name was the column's name
    assert refresh(spark, "sums").mode == "incremental"


def test_column_mapping_turned_off_stores_the_columns_anew(spark, mapped):
    spark.sql("ALTER TABLE t SET TBLPROPERTIES ('delta.columnMapping.mode' = 'none')")
    spark.sql("INSERT INTO t VALUES (2, 6)")
    result = refresh(spark, "sums")
    assert result.mode == "full" and "column mapping turned off" in result.reason, result


def test_without_the_log_at_hand_a_commit_is_judged_by_its_operation(spark, mapped):
    """Where the log is read through SQL (a Spark Connect session), the history names no
    physical column: a commit that changes columns counts as a change, whatever the ends."""
    from ivm.runtime.log.delta_log import DeltaLogReader

    spark.sql("ALTER TABLE t DROP COLUMN w")
    spark.sql("ALTER TABLE t ADD COLUMN w INT")
    spark.sql("ALTER TABLE t SET TBLPROPERTIES ('note' = 'x')")
    log = DeltaLogReader(spark, f"{mapped}.t")
    log._log = log._snapshot = None  # as in a session without a JVM
    commits = log.commits(1, log.version())
    assert commits is not None
    assert log.schema_changes(1, commits) == ["version 2 (DROP COLUMNS)", "version 3 (ADD COLUMNS)"]
    assert log.schema_changes(3, commits[2:]) == []  # a property alone


def test_a_keyword_column_under_column_mapping_is_checked_where_spark_reserves_keywords(spark):
    """Delta fails a filtered read of a column-mapped table with a column named by a
    reserved keyword while Spark enforces them (a syntax error at the column's name).
    ivm's refreshes run with the setting off, and so does the check's reading of the
    query: its text is still parsed under the view's settings."""
    events = Source("events", (Column("k", "INT", ()), Column("order", "TIMESTAMP", ())))
    scenario = Scenario(
        tables={"events": [(1, datetime(2024, 1, 1)), (2, None)]},
        batches=[
            [
                "ALTER TABLE events SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
                "INSERT INTO events VALUES (3, TIMESTAMP '2024-01-02 00:00:00')",
            ]
        ],
        settings=KEYWORDS_RESERVED,
    )
    view = "SELECT k FROM events WHERE `order` IS NOT NULL"
    run_scenario(spark, scenario, [events], {"dated": view})


@pytest.fixture
def star(spark, fresh_db):
    """``star``, a view of every column of ``t``."""
    spark.sql(f"CREATE TABLE t (k INT, w INT) USING DELTA {MAPPED}")
    spark.sql("INSERT INTO t VALUES (1, 3), (2, 4)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW star AS SELECT * FROM t")
    return f"{fresh_db}.star"


WIDEN = (
    "ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
    "ALTER TABLE t ALTER COLUMN w TYPE BIGINT",
)


@pytest.mark.parametrize(
    "change, columns",
    [
        (["ALTER TABLE t ADD COLUMNS (x INT)"], [("k", "int"), ("w", "int"), ("x", "int")]),
        (["ALTER TABLE t DROP COLUMN w"], [("k", "int")]),
        (["ALTER TABLE t RENAME COLUMN w TO v"], [("k", "int"), ("v", "int")]),
        (WIDEN, [("k", "int"), ("w", "bigint")]),
    ],
    ids=["added", "dropped", "renamed", "widened"],
)
def test_a_star_is_recomputed_with_the_sources_columns_as_predicted(spark, star, change, columns):
    """A ``*`` means the source's columns as they are: the refresh the prediction names
    recomputes the view with them, and the next refresh is incremental again."""
    for statement in change:
        spark.sql(statement)
    spark.sql("INSERT INTO t (k) VALUES (3)")
    plan = predict(spark, star)
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW star").collect())
    assert described["next refresh"] == str(plan)
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW star")
    assert plan.mode == result.mode == "full", (str(plan), str(result))
    assert plan.obstacle is not None and result.reason == plan.obstacle.reason
    assert spark.table("star").dtypes == columns
    assert_equals_query(spark, "star", "SELECT * FROM t")
    spark.sql("INSERT INTO t (k) VALUES (4)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW star").mode == "incremental"
    assert_equals_query(spark, "star", "SELECT * FROM t")


def test_views_over_a_star_take_its_new_column_as_they_name_it(spark, star):
    """After ``t`` gains a column, REFRESH ALL recomputes ``star`` with it; a view naming
    its columns keeps them, a view of all of them gains it."""
    ivm.sql(spark, "CREATE MATERIALIZED VIEW picked AS SELECT k, w FROM star")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW everything AS SELECT * FROM star")
    spark.sql("ALTER TABLE t ADD COLUMNS (x INT)")
    spark.sql("INSERT INTO t VALUES (3, 5, 7)")
    results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    assert [(r.view.split(".")[1], r.mode) for r in results] == [
        ("star", "full"),
        ("everything", "full"),
        ("picked", "full"),
    ]
    assert spark.table("picked").columns == ["k", "w"]
    assert spark.table("everything").columns == ["k", "w", "x"]
    for view, query in [("star", "SELECT * FROM t"), ("picked", "SELECT k, w FROM t")]:
        assert_equals_query(spark, view, query)
    assert_equals_query(spark, "everything", "SELECT * FROM t")
    spark.sql("UPDATE t SET x = 8 WHERE k = 1")
    results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    assert {r.mode for r in results} == {"incremental"}, results
    assert_equals_query(spark, "everything", "SELECT * FROM t")
    assert_equals_query(spark, "picked", "SELECT k, w FROM t")


def test_until_its_recompute_a_star_is_not_verified_nor_said_changed_outside_ivm(spark, star):
    """Until the refresh recomputes it, the view's catalog view reads its store as ivm wrote
    it, which status does not take for a change made outside ivm; verify, which runs the
    definition on the sources as the store reflects them, says why it cannot."""
    spark.sql("ALTER TABLE t ADD COLUMNS (x INT)")
    status = view_status(spark, star)
    assert status.next.startswith("a full recompute: the schema of "), status
    assert status.warnings == ()
    with pytest.raises(ivm.StateError) as caught:
        ivm.verify(spark, "star")
    assert caught.value.message == (
        f"{star} cannot be verified against its query: its definition now has other columns "
        "than its store: x added"
    )
    assert caught.value.hint == (
        f"REFRESH MATERIALIZED VIEW {star} recomputes it with its definition's columns; "
        "then verify it"
    )
