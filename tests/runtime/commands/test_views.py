"""Materialized views on Spark + Delta: lifecycle, bookkeeping, and the errors users meet.
(The ``shop`` they run in is a fixture of conftest.py.)"""

import json

import pytest

import ivm
from ivm.runtime.catalog.history import USER_METADATA, latest_record
from ivm.runtime.catalog.properties import STATE_OF, VIEW
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.observation.describe import consumed_versions
from ivm.runtime.spark.settings import session_settings
from tests.support.helpers import SALES, assert_equals_query, history


def test_view_shows_exactly_the_query_columns_and_rows(spark, shop):
    result = ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    assert result.mode == "create"
    assert spark.table("sales").columns == ["region", "n", "total"]
    assert_equals_query(spark, "sales", SALES)
    assert result.rows_inserted == spark.sql(SALES).count() > 0


def test_refresh_applies_changes_in_one_commit_with_consumed_versions(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.00, 'ok')")
    spark.sql("UPDATE customers SET region = 'APAC' WHERE id = 3")
    before = len(history(spark, store_name(f"{shop}.sales")))
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental"
    assert_equals_query(spark, "sales", SALES)
    commits = history(spark, store_name(f"{shop}.sales"))
    assert len(commits) == before + 1 and commits[-1].operation == "WRITE"  # rewritten
    recorded = json.loads(commits[-1].userMetadata)["ivm"]["sources"]
    assert recorded == {f"{shop}.orders": 2, f"{shop}.customers": 2}
    assert consumed_versions(spark, f"{shop}.sales") == recorded


def test_refresh_without_source_change_commits_nothing(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    before = len(history(spark, store_name(f"{shop}.sales")))
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "noop"
    assert len(history(spark, store_name(f"{shop}.sales"))) == before


def test_full_refresh_recomputes(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("DELETE FROM orders WHERE id = 1")  # group EU loses its only order
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales FULL")
    assert result.mode == "full"
    assert_equals_query(spark, "sales", SALES)
    assert result.rows_inserted == spark.sql(SALES).count() > 0


def test_qualify_reads_a_table_column_named_like_an_output(spark, shop):
    """In ``QUALIFY``, ``orders.amount`` is the source column even where an output is named
    ``amount``: the view is created (not refused as an aggregate inside an aggregate) and
    keeps the top region by its summed amount."""
    top = (
        "SELECT c.region, SUM(orders.amount) AS amount FROM orders "
        "JOIN customers AS c ON orders.cust_id = c.id GROUP BY c.region "
        "QUALIFY RANK() OVER (ORDER BY SUM(orders.amount) DESC) = 1"
    )
    oracle = (
        "SELECT region, amount FROM (SELECT c.region, SUM(orders.amount) AS amount, "
        "RANK() OVER (ORDER BY SUM(orders.amount) DESC) AS r FROM orders "
        "JOIN customers AS c ON orders.cust_id = c.id GROUP BY c.region) WHERE r = 1"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top_region AS {top}")
    assert_equals_query(spark, "top_region", oracle)
    spark.sql("INSERT INTO orders VALUES (5, 2, 20.00, 'ok')")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW top_region").mode == "incremental"
    assert_equals_query(spark, "top_region", oracle)


def test_materialized_table_is_a_synonym_and_drop_removes_everything(spark, shop):
    ivm.sql(spark, "CREATE MATERIALIZED TABLE regions AS SELECT DISTINCT region FROM customers")
    ivm.sql(spark, "REFRESH MATERIALIZED TABLE regions")
    ivm.sql(spark, "DROP MATERIALIZED TABLE regions")
    assert not spark.catalog.tableExists(f"{shop}.regions")
    assert not spark.catalog.tableExists(store_name(f"{shop}.regions"))


def test_other_statements_go_to_spark(spark, shop):
    assert ivm.sql(spark, "SELECT COUNT(*) AS n FROM orders").first().n == 4


def test_duplicates_and_nulls_survive_in_a_view_without_keys(spark, shop):
    query = "SELECT o.status, o.amount FROM orders o"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW statuses AS {query}")
    spark.sql("INSERT INTO orders VALUES (7, 1, NULL, 'ok'), (8, 1, NULL, 'ok')")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW statuses")
    assert spark.table("statuses").where("amount IS NULL").count() == 3
    assert_equals_query(spark, "statuses", query)


def test_create_or_replace_redefines(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    query = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
    ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW sales AS {query}")
    assert_equals_query(spark, "sales", query)
    assert ivm.sql(spark, f"CREATE MATERIALIZED VIEW IF NOT EXISTS sales AS {SALES}").mode == "noop"
    assert_equals_query(spark, "sales", query)


def test_existing_name_is_refused(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    with pytest.raises(ivm.ViewExists, match="already exists") as caught:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    assert "CREATE OR REPLACE" in caught.value.hint
    with pytest.raises(ivm.ViewExists):
        ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW orders AS {SALES}")
    assert spark.table("orders").count() == 4, "a user's table is never replaced"


def test_refresh_or_drop_of_a_missing_view(spark, shop):
    with pytest.raises(ivm.ViewNotFound, match="does not exist"):
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW nope")
    with pytest.raises(ivm.ViewNotFound):
        ivm.sql(spark, "DROP MATERIALIZED VIEW nope")
    ivm.sql(spark, "DROP MATERIALIZED VIEW IF EXISTS nope")
    with pytest.raises(ivm.ViewNotFound):
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW orders")


def test_a_table_a_spark_view_or_a_store_named_as_a_view_is_said_to_be_what_it_is(spark, shop):
    spark.sql("CREATE VIEW open_orders AS SELECT * FROM orders WHERE status = 'ok'")
    for statement, hint in [
        ("DROP", f"DROP TABLE {shop}.orders drops it"),
        ("DESCRIBE", f"DESCRIBE TABLE {shop}.orders describes it"),
        ("ALTER", f"ALTER TABLE {shop}.orders changes it"),
        ("REFRESH", f"FROM {shop}.orders"),
    ]:
        suffix = " SUSPEND" if statement == "ALTER" else ""
        with pytest.raises(ivm.ViewNotFound) as caught:
            ivm.sql(spark, f"{statement} MATERIALIZED VIEW orders{suffix}")
        assert caught.value.message == f"{shop}.orders is a table, not a materialized view"
        assert hint in (caught.value.hint or ""), caught.value.hint
    with pytest.raises(
        ivm.ViewNotFound, match="is a Spark view, not a materialized view"
    ) as caught:
        ivm.sql(spark, "DROP MATERIALIZED VIEW open_orders")
    assert caught.value.hint == f"DROP VIEW {shop}.open_orders drops it"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    with pytest.raises(ivm.ViewNotFound) as caught:
        ivm.sql(spark, f"DROP MATERIALIZED VIEW {shop}__ivm.sales__ivm_store")
    assert caught.value.message == (
        f"{shop}__ivm.sales__ivm_store is the store of the "
        f"materialized view {shop}.sales, not a materialized view"
    )
    assert caught.value.hint == f"DROP MATERIALIZED VIEW {shop}.sales"
    assert spark.catalog.tableExists("orders") and spark.catalog.tableExists("sales")


def test_drop_if_exists_of_a_table_a_spark_view_or_a_store_says_what_it_is(spark, shop):
    """IF EXISTS passes over a name nothing has, as Spark's DROP VIEW IF EXISTS does; a name
    something else has is that thing's, and a DROP that drops nothing must not look done."""
    spark.sql("CREATE VIEW open_orders AS SELECT * FROM orders WHERE status = 'ok'")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    for name, said in [
        ("orders", "is a table"),
        ("open_orders", "is a Spark view"),
        (f"{shop}__ivm.sales__ivm_store", "is the store of the materialized view"),
    ]:
        with pytest.raises(ivm.ViewNotFound, match=said):
            ivm.sql(spark, f"DROP MATERIALIZED VIEW IF EXISTS {name}")
    assert all(spark.catalog.tableExists(name) for name in ("orders", "open_orders", "sales"))


class StoreWithoutRecords:
    """The log of a store none of whose latest commits carries a refresh record."""

    def __init__(self, table: str, properties: dict[str, str]):
        self.table, self._properties = table, properties

    def version(self) -> int:
        return 3

    def commit_info(self, version: int):
        return None, None

    def properties(self) -> dict[str, str]:
        return self._properties


@pytest.mark.fast
@pytest.mark.parametrize(
    "store, properties, view, refreshed",
    [
        ("d__ivm.v__ivm_store", {VIEW: "d.v"}, "d.v", "d.v"),
        (
            "d__ivm.top__ivm_state1__ivm_store",
            {VIEW: "d__ivm.top__ivm_state1", STATE_OF: "d.top"},
            "d__ivm.top__ivm_state1",
            "d.top",
        ),
    ],
)
def test_a_store_without_records_is_named_by_its_view(store, properties, view, refreshed):
    with pytest.raises(ivm.StateError) as caught:
        latest_record(StoreWithoutRecords(store, properties))
    assert caught.value.message == f"the store of {view} records no consumed source versions"
    assert caught.value.hint == f"recompute it: REFRESH MATERIALIZED VIEW {refreshed} FULL"


@pytest.mark.parametrize(
    "table, refused, hint",
    [
        ("USING DELTA", "does not have change data feed enabled", "delta.enableChangeDataFeed"),
        ("USING PARQUET", "is not a Delta table", "CREATE TABLE"),
    ],
)
def test_a_source_that_cannot_be_read_for_changes_is_refused_by_each_statement(
    spark, shop, table, refused, hint
):
    """A source without change data (Delta without change data feed, or not Delta at all):
    CREATE refuses it, saying how to fix it, and creates nothing; EXPLAIN CREATE says the
    CREATE fails, and why, in a line of its plan (not a Java error)."""
    spark.sql(f"CREATE TABLE plain (id INT) {table}")
    with pytest.raises(ivm.SourceError, match=refused) as caught:
        ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT id FROM plain")
    assert hint in (caught.value.hint or "")
    assert not spark.catalog.tableExists(f"{shop}.v")
    explained = ivm.sql(spark, "EXPLAIN CREATE MATERIALIZED VIEW v AS SELECT id FROM plain")
    lines = [row.plan for row in explained.collect()]
    line = f"source {shop}.plain: CREATE fails: source {shop}.plain {refused}; "
    assert [x for x in lines if x.startswith(line) and hint in x], lines


def test_unknown_table_in_a_statement_points_into_it(spark, shop):
    with pytest.raises(ivm.CatalogError) as caught:
        ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS\nSELECT id FROM missing")
    assert caught.value.position == ivm.errors.Position(2, 16)


def test_a_store_that_disagrees_with_its_sources_is_caught(spark, shop):
    """A store corrupted where its log cannot show it (here a DELETE that carries the latest
    refresh's record, so that it looks like ivm's own write; a plain one is recomputed, see
    test_spark_habits.py) is caught when the change would take a count below zero."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    store = store_name(f"{shop}.sales")
    with session_settings(spark, {USER_METADATA: history(spark, store)[-1].userMetadata}):
        spark.sql(f"DELETE FROM {store} WHERE region = 'EU'")  # corrupt it
    spark.sql("DELETE FROM orders WHERE id = 1")
    with pytest.raises(ivm.StateError, match="disagrees") as caught:
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert "FULL" in caught.value.hint
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales FULL")
    assert_equals_query(spark, "sales", SALES)
