"""PARTITIONED BY, and REFRESH ... PARTITION recomputing one partition alone."""

import pytest

import ivm
from ivm.codegen.store import LOGGED
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.spark.settings import session_settings
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query, history

TOTALS = "SELECT k, COUNT(*) AS n, SUM(a) AS total FROM r GROUP BY k"


@pytest.fixture
def partitioned(spark, fresh_db):
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5), (3, 1)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals PARTITIONED BY (k) AS {TOTALS}")
    return fresh_db


def test_a_partition_refresh_repairs_one_partition_and_leaves_the_rest(spark, partitioned):
    store = store_name(f"{partitioned}.totals")
    assert spark.sql(f"DESCRIBE DETAIL {store}").first().partitionColumns == ["k"]
    spark.sql(f"UPDATE {store} SET total = 999 WHERE k IN (2, 3)")  # damage two partitions
    spark.sql("INSERT INTO r VALUES (1, 1)")  # not yet consumed
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals PARTITION (k = 2)")
    assert result.mode == "partition" and result.consumed == result.previous
    assert result.technique == "partition overwrite"
    assert result.rows_inserted == 1, "the rows of partition k = 2 alone"
    rows = {r.k: r.total for r in spark.table("totals").collect()}
    assert rows == {1: 10, 2: 25, 3: 999}, "only partition k = 2 is recomputed, as consumed"
    assert history(spark, store)[-1].operationParameters["predicate"] == "(k = 2)"
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals PARTITION (k = 3)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").mode == "incremental"
    assert_equals_query(spark, "totals", TOTALS)


def test_partition_errors_name_the_column(spark, partitioned):
    with pytest.raises(ivm.CatalogError, match="n is not a partition column") as caught:
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals PARTITION (n = 1)")
    assert "partitioned by k" in caught.value.hint
    with pytest.raises(ivm.CatalogError, match="has no column x"):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW other PARTITIONED BY (x) AS {TOTALS}")
    with pytest.raises(ivm.SqlSyntaxError, match="literal as the partition value"):
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals PARTITION (k = k)")


def test_a_partition_refresh_leaves_a_new_column_to_a_refresh(spark, fresh_db):
    """A source's new column changes the columns of a view of ``SELECT *``: a partition
    refresh, which reads the sources as the store reflects them, cannot give the view that
    column, and says that a refresh does; the refresh recomputes the view, partitioned as it
    was. A partition refresh times its phases as a refresh does."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW copied PARTITIONED BY (k) AS SELECT * FROM r")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW copied PARTITION (k = 1)")
    assert {"plan", "versions", "write"} <= set(result.phases)
    spark.sql("ALTER TABLE r ADD COLUMNS (b INT)")
    with pytest.raises(ivm.StateError) as caught:
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW copied PARTITION (k = 1)")
    view = f"{fresh_db}.copied"
    assert caught.value.message == (
        f"{view} cannot recompute a partition: its definition now has other columns than its "
        "store: b added"
    )
    assert caught.value.hint == (
        f"REFRESH MATERIALIZED VIEW {view} recomputes it with its definition's columns"
    )
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW copied").mode == "full"
    assert spark.sql(f"DESCRIBE DETAIL {store_name(view)}").first().partitionColumns == ["k"]
    assert_equals_query(spark, "copied", "SELECT * FROM r")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW copied PARTITION (k = 1)").mode == "partition"


def test_a_full_refresh_replaces_every_partition_where_the_session_overwrites_dynamically(
    spark, partitioned
):
    """Under ``spark.sql.sources.partitionOverwriteMode = dynamic`` (a common session
    setting) an ``INSERT OVERWRITE`` replaces only the partitions its rows fall in: a full
    refresh must still replace the whole store, or a partition whose rows are all gone stays."""
    spark.sql("DELETE FROM r WHERE k = 3")
    with session_settings(spark, {"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals FULL").mode == "full"
    assert_equals_query(spark, "totals", TOTALS)


def test_a_logged_store_is_partitioned_by_keys_and_a_partition_refresh_folds_one(spark, fresh_db):
    """A logged store (``STORE LAYOUT LOG``) partitioned by a key of the view: refreshes
    append their changes into their keys' partitions, and a partition refresh recomputes one
    partition, its logged rows with it (left, they would count twice), while the others'
    logged rows wait for upkeep's fold. A column that is not a key is refused by name: a
    logged change row carries the view's keys alone."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20), (2, 5), (3, 1)")
    ivm.sql(
        spark, f"CREATE MATERIALIZED VIEW totals PARTITIONED BY (k) STORE LAYOUT LOG AS {TOTALS}"
    )
    store = store_name(f"{fresh_db}.totals")
    assert spark.sql(f"DESCRIBE DETAIL {store}").first().partitionColumns == ["k", LOGGED]
    spark.sql("INSERT INTO r VALUES (2, 1), (3, 2), (NULL, 4)")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").technique == "append"
    assert_equals_query(spark, "totals", TOTALS)
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals PARTITION (k = 3)")
    assert result.technique == "partition overwrite"
    waiting = {row.k for row in spark.table(store).where(LOGGED).collect()}
    assert waiting == {2, None}, "partition k = 3 is recomputed, the others' changes wait"
    assert_equals_query(spark, "totals", TOTALS)
    spark.sql("DELETE FROM r WHERE k = 2")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").mode == "incremental"
    assert_equals_query(spark, "totals", TOTALS)
    with pytest.raises(ivm.CatalogError, match="n is not one of them") as caught:
        ivm.sql(
            spark,
            f"CREATE MATERIALIZED VIEW other PARTITIONED BY (n) STORE LAYOUT LOG AS {TOTALS}",
        )
    assert "partition by keys of the view (k)" in caught.value.hint


def test_explain_create_says_how_the_store_is_partitioned_or_why_a_create_refuses_it(
    spark, fresh_db
):
    """``EXPLAIN CREATE`` reads ``PARTITIONED BY`` as the CREATE does: the store's partition
    columns where the CREATE would take them, the CREATE's refusal where it would not."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")

    def partitioning(clauses: str) -> list[str]:
        plan = ivm.sql(spark, f"EXPLAIN CREATE MATERIALIZED VIEW totals {clauses} AS {TOTALS}")
        return [r.plan for r in plan.collect() if r.plan.startswith("partitioned by")]

    assert partitioning("PARTITIONED BY (n)") == ["partitioned by: n"]
    assert partitioning("PARTITIONED BY (k) STORE LAYOUT LOG") == [f"partitioned by: k, {LOGGED}"]
    (refused,) = partitioning("PARTITIONED BY (n) STORE LAYOUT LOG")
    assert refused.startswith("partitioned by: CREATE fails: PARTITIONED BY n: ")
    assert refused.endswith("n is not one of them")
    (missing,) = partitioning("PARTITIONED BY (nope)")
    assert missing.endswith("has no column nope")
    assert partitioning("") == []
    with pytest.raises(ivm.CatalogError, match="n is not one of them"):
        ivm.sql(
            spark,
            f"CREATE MATERIALIZED VIEW totals PARTITIONED BY (n) STORE LAYOUT LOG AS {TOTALS}",
        )
