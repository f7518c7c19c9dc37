"""What a Spark user does out of habit to a materialized view's names: Spark's own DROP,
ALTER and CREATE OR REPLACE VIEW, writes to its store, DROP DATABASE … CASCADE. Through
``ivm.sql`` they are refused with the statement that does what was meant (or, for DROP
DATABASE, carried out with the views); run behind ivm's back with ``spark.sql``, the next
refresh, ``ivm status`` and ``ivm verify`` find them."""

import pytest

import ivm
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.refresh.upkeep import LOG_FOLD_AT
from ivm.runtime.spark.settings import STORE_LAYOUT, session_settings
from tests.support.helpers import SALES, assert_equals_query, history

TOTALS = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status"
"""A view over the ``shop`` fixture's orders, with a state of its own (its counts)."""


@pytest.fixture
def sales(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    return shop


REFUSED = [
    ("DROP VIEW sales", "DROP MATERIALIZED VIEW {db}.sales"),
    ("DROP VIEW IF EXISTS {db}.sales", "DROP MATERIALIZED VIEW {db}.sales"),
    ("DROP TABLE sales", "DROP MATERIALIZED VIEW {db}.sales"),
    ("ALTER VIEW sales AS SELECT 1 AS x", "CREATE OR REPLACE MATERIALIZED VIEW {db}.sales"),
    ("CREATE OR REPLACE VIEW sales AS SELECT 1 AS x", "CREATE OR REPLACE MATERIALIZED"),
    ("ALTER VIEW sales RENAME TO sales2", "ALTER MATERIALIZED VIEW {db}.sales SET"),
    ("ALTER TABLE {store} SET TBLPROPERTIES ('a' = 'b')", "CREATE OR REPLACE MATERIALIZED"),
    ("INSERT INTO {store} SELECT * FROM {store}", "REFRESH MATERIALIZED VIEW {db}.sales"),
    ("DELETE FROM {store} WHERE true", "REFRESH MATERIALIZED VIEW {db}.sales"),
    ("UPDATE {store} SET n = n + 1", "REFRESH MATERIALIZED VIEW {db}.sales"),
    ("TRUNCATE TABLE {store}", "REFRESH MATERIALIZED VIEW {db}.sales"),
    ("RESTORE TABLE {store} TO VERSION AS OF 0", "REFRESH MATERIALIZED VIEW {db}.sales"),
    ("DROP TABLE {store}", "DROP MATERIALIZED VIEW {db}.sales"),
    ("DROP DATABASE {db}__ivm CASCADE", "DROP DATABASE {db} CASCADE"),
]
"""Spark statements on a view's names, each with the statement its refusal names instead."""


def test_spark_statements_that_would_break_a_view_are_refused(spark, sales):
    store = store_name(f"{sales}.sales")
    for statement, hint in REFUSED:
        with pytest.raises(ivm.OwnedByView) as refused:
            ivm.sql(spark, statement.format(db=sales, store=store))
        assert refused.value.hint is not None, statement
        assert hint.format(db=sales) in refused.value.hint, statement
    assert_equals_query(spark, "sales", SALES)
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.00, 'ok')")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "incremental"
    assert_equals_query(spark, "sales", SALES)
    assert len(history(spark, store)) == 2, "nothing but the CREATE and the REFRESH wrote it"


def test_a_state_table_is_guarded_as_its_view(spark, shop):
    ivm.sql(
        spark,
        "CREATE MATERIALIZED VIEW top AS "
        "SELECT status, MAX(amount) AS most FROM orders GROUP BY status",
    )
    states = [
        t.tableName
        for t in spark.sql(f"SHOW TABLES IN {shop}__ivm").collect()
        if "__ivm_state" in t.tableName and not t.tableName.endswith("__ivm_store")
    ]
    for state in states:
        with pytest.raises(ivm.OwnedByView, match=f"a state table of {shop}.top"):
            ivm.sql(spark, f"DROP VIEW {shop}__ivm.{state}")


def test_other_statements_pass_to_spark(spark, sales):
    """Writes to sources, Spark's own views and tables, and temporary views are Spark's."""
    ivm.sql(spark, "CREATE VIEW plain AS SELECT * FROM orders")
    ivm.sql(spark, "ALTER VIEW plain AS SELECT id FROM orders")
    ivm.sql(spark, "DROP VIEW plain")
    ivm.sql(spark, "CREATE TEMPORARY VIEW habit AS SELECT 1 AS x")
    spark.catalog.dropTempView("habit")  # the session is the other tests' too
    ivm.sql(spark, "DELETE FROM orders WHERE id = 4")
    ivm.sql(spark, "UPDATE orders SET amount = 1 WHERE id = 1")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert_equals_query(spark, "sales", SALES)


def _create_again(spark, database):
    """``database`` created again, with a source ``orders`` and the view ``totals`` over it,
    equal to its query."""
    spark.sql(f"CREATE DATABASE {database}")
    spark.sql(f"USE {database}")
    spark.sql(
        "CREATE TABLE orders (id INT, status STRING) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql("INSERT INTO orders VALUES (1, 'new')")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    assert_equals_query(spark, "totals", TOTALS)


def test_drop_database_cascade_takes_its_views_and_their_history(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW top AS SELECT MAX(n) AS most FROM totals")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.00, 'ok')")
    ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    ivm.sql(spark, f"DROP DATABASE {shop} CASCADE")
    assert not spark.catalog.databaseExists(f"{shop}__ivm")
    _create_again(spark, shop)
    records = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW totals").collect()
    assert len(records) == 1, records


def test_drop_database_cascade_leaves_views_read_from_elsewhere(spark, sales):
    other = f"{sales}_other"
    spark.sql(f"CREATE DATABASE {other}")
    try:
        ivm.sql(
            spark,
            f"CREATE MATERIALIZED VIEW {other}.big AS SELECT region FROM {sales}.sales WHERE n > 1",
        )
        with pytest.raises(ivm.ViewInUse, match=f"read by {other}.big"):
            ivm.sql(spark, f"DROP DATABASE {sales} CASCADE")
        assert_equals_query(spark, "sales", SALES)
    finally:
        ivm.sql(spark, f"DROP DATABASE {other} CASCADE")
    assert not spark.catalog.databaseExists(f"{other}__ivm")


def test_a_database_dropped_behind_ivms_back_leaves_no_history_to_a_new_view(spark, shop):
    """DROP DATABASE … CASCADE with plain spark.sql leaves the views' stores in the internal
    database; a view created again under the same name starts a history of its own."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.00, 'ok')")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
    spark.sql(f"DROP DATABASE {shop} CASCADE")
    _create_again(spark, shop)
    assert len(history(spark, store_name(f"{shop}.totals"))) == 1
    assert len(ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW totals").collect()) == 1


@pytest.mark.parametrize(
    "tamper, problem",
    [
        # the same columns and types as the view's: only the text tells
        (
            "ALTER VIEW sales AS SELECT 'EU' AS region, 7L AS n, "
            "CAST(1 AS DECIMAL(20, 2)) AS total",
            "changed",
        ),
        ("CREATE OR REPLACE VIEW sales AS SELECT 1 AS x", "changed"),
        ("DROP VIEW sales", "missing"),
    ],
)
def test_a_catalog_view_changed_behind_ivms_back_is_found_and_written_anew(
    spark, sales, tamper, problem
):
    """Plain spark.sql, which ivm does not see: verify says the view differs, status warns,
    and the next refresh writes the catalog view anew and says so."""
    from ivm.runtime.observation.status import view_status

    spark.sql(tamper)
    verdict = ivm.sql(spark, "VERIFY MATERIALIZED VIEW sales")
    assert not verdict.equal and problem in str(verdict), verdict
    warnings = view_status(spark, f"{sales}.sales").warnings
    assert any(problem in w and "the next refresh writes it anew" in w for w in warnings)
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "noop" and problem in str(result), result
    assert_equals_query(spark, "sales", SALES)
    assert ivm.sql(spark, "VERIFY MATERIALIZED VIEW sales").equal
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.00, 'ok')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental" and result.repaired is None
    assert_equals_query(spark, "sales", SALES)
    assert not view_status(spark, f"{sales}.sales").warnings


def test_a_store_dropped_behind_ivms_back_is_named_as_such(spark, sales):
    """Plain spark.sql drops the store: every statement on the view says so (where it said the
    view was a Spark view), DROP MATERIALIZED VIEW drops what is left, and CREATE OR REPLACE
    creates it anew."""
    spark.sql(f"DROP TABLE {store_name(f'{sales}.sales')}")
    for statement in ("REFRESH", "VERIFY", "DESCRIBE"):
        with pytest.raises(ivm.ViewNotFound, match="the store of the materialized view .* is gone"):
            ivm.sql(spark, f"{statement} MATERIALIZED VIEW sales")
    with pytest.raises(ivm.ViewExists, match="whose store is gone"):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW sales AS {SALES}")
    assert_equals_query(spark, "sales", SALES)
    spark.sql(f"DROP TABLE {store_name(f'{sales}.sales')}")
    ivm.sql(spark, "DROP MATERIALIZED VIEW sales")
    assert not spark.catalog.tableExists(f"{sales}.sales")


def test_a_store_written_behind_ivms_back_is_recomputed_and_said_so(spark, sales):
    """Plain spark.sql deletes rows of the store: status predicts a recompute and why, the
    refresh recomputes and says why, and the view equals its query again."""
    from ivm.runtime.observation.status import view_status

    spark.sql(f"DELETE FROM {store_name(f'{sales}.sales')} WHERE region = 'EU'")
    spark.sql("INSERT INTO orders VALUES (5, 2, 1.00, 'ok')")
    predicted = view_status(spark, f"{sales}.sales").next
    assert "its store was written outside ivm: version 1 (DELETE)" in predicted, predicted
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "full" and "written outside ivm: version 1 (DELETE)" in result.reason
    assert_equals_query(spark, "sales", SALES)
    spark.sql("INSERT INTO orders VALUES (6, 1, 1.00, 'ok')")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "incremental"


def test_the_fold_of_a_logged_store_is_ivms_own_write(spark, shop):
    with session_settings(spark, {STORE_LAYOUT: "log", LOG_FOLD_AT: "1"}):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
        for i in range(3):
            spark.sql(f"INSERT INTO orders VALUES ({10 + i}, 1, 1.00, 'ok')")
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals")
            assert result.mode == "incremental", result
    assert [step.action for step in result.upkeep] == ["fold"]
    assert_equals_query(spark, "totals", TOTALS)
