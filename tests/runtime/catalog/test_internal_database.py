"""Where ivm keeps a view's own tables: the stores and state tables of the views of a
database ``db`` are in its internal database ``db__ivm``, so that ``SHOW TABLES IN db``
lists the user's tables and views alone. A view created before ivm kept them there (the
legacy layout: its tables beside it, in ``db``) keeps them where they are, and refreshes,
describes, verifies and drops as before. (The ``shop`` they run in is a fixture of
conftest.py.)"""

import uuid
from contextlib import contextmanager

import pytest

import ivm
from ivm import names
from ivm.runtime.catalog import definition
from ivm.runtime.catalog import tables as catalog_tables
from ivm.runtime.catalog.graph import materialized_views
from ivm.runtime.commands import views
from ivm.runtime.observation.changelog import view_changes
from ivm.runtime.observation.status import view_status
from tests.support.helpers import SALES, assert_equals_query

TOP = (
    "SELECT c.region, COUNT(*) AS n FROM orders o JOIN customers c ON o.cust_id = c.id "
    "GROUP BY c.region ORDER BY n DESC, c.region LIMIT 2"
)
"""A global top-N over a join's groups: the groups are a state table."""

BIG = "SELECT region, total FROM sales WHERE total > 5"
"""A view of the view ``sales``."""


def tables(spark, database: str) -> set[str]:
    """The names ``SHOW TABLES IN database`` lists (tables and views)."""
    return {
        row.tableName
        for row in spark.sql(f"SHOW TABLES IN {database}").collect()
        if not row.isTemporary
    }


def describe(spark, view: str) -> dict[str, str]:
    return dict(tuple(r) for r in ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {view}").collect())


def change_sources(spark) -> None:
    spark.sql("INSERT INTO orders VALUES (5, 1, 7.00, 'ok'), (6, 2, 1.00, 'ok')")
    spark.sql("UPDATE customers SET region = 'APAC' WHERE id = 3")


@contextmanager
def legacy_layout(monkeypatch):
    """CREATE, in the block, lays a view out as ivm did before it kept its tables in an
    internal database: each database is its own internal database meanwhile, so the view's
    store and state tables are made beside it, under the names and with the properties
    those versions gave them. Plans compiled meanwhile are forgotten afterwards."""
    with monkeypatch.context() as patch:
        for module in (names, views):
            patch.setattr(module, "internal_database", lambda database: database)
        yield
    definition._plans.clear()


def test_a_views_tables_and_its_state_tables_are_in_the_internal_database(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    assert tables(spark, shop) == {"orders", "customers", "sales", "top"}
    assert tables(spark, f"{shop}__ivm") == {
        "sales__ivm_store",
        "top__ivm_store",
        "top__ivm_state1",
        "top__ivm_state1__ivm_store",
    }
    about = {
        r.info_name: r.info_value for r in spark.sql(f"DESCRIBE DATABASE {shop}__ivm").collect()
    }
    assert about["Comment"] == (
        f"ivm: the stores and state tables of the materialized views in {shop}"
    )
    facts = describe(spark, "top")
    assert facts["store"] == f"{shop}__ivm.top__ivm_store"
    assert f"state table {shop}__ivm.top__ivm_state1" in facts
    change_sources(spark)
    results = {r.view: r for r in ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")}
    assert results[f"{shop}.sales"].mode == results[f"{shop}.top"].mode == "incremental"
    assert_equals_query(spark, "sales", SALES)
    assert_equals_query(spark, "top", TOP)
    ivm.sql(spark, "DROP MATERIALIZED VIEW top")
    ivm.sql(spark, "DROP MATERIALIZED VIEW sales")
    assert tables(spark, shop) == {"orders", "customers"}
    assert tables(spark, f"{shop}__ivm") == set(), "DROP leaves none of the view's tables"


def test_a_view_created_beside_its_tables_keeps_them_and_works_as_before(spark, shop, monkeypatch):
    with legacy_layout(monkeypatch):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    beside = {"sales__ivm_store", "top__ivm_store", "top__ivm_state1", "top__ivm_state1__ivm_store"}
    assert tables(spark, shop) == {"orders", "customers", "sales", "top"} | beside
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW big AS {BIG}")  # reads a view laid out so
    assert tables(spark, f"{shop}__ivm") == {"big__ivm_store"}
    assert {f"{shop}.{v}" for v in ("sales", "top", "big")} <= set(materialized_views(spark))
    change_sources(spark)
    results = {r.view: r for r in ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")}
    assert [results[f"{shop}.{v}"].mode for v in ("sales", "top", "big")] == ["incremental"] * 3
    assert [s.mode for s in results[f"{shop}.top"].states] == ["incremental"]
    for view, query in [("sales", SALES), ("top", TOP), ("big", BIG)]:
        assert_equals_query(spark, view, query)
    assert ivm.verify(spark, "top").equal and ivm.verify(spark, "big").equal
    status = view_status(spark, f"{shop}.big")  # its lag is read through sales' store
    assert status.lag == 0 and not status.next.startswith("fails"), status
    facts = describe(spark, "top")
    assert facts["store"] == f"{shop}.top__ivm_store"
    assert facts[f"state table {shop}.top__ivm_state1"].startswith("keyed by")
    ivm.sql(spark, "ALTER MATERIALIZED VIEW top SET RETENTION = INTERVAL '2' DAYS")
    for table in ("top", f"{shop}.top__ivm_state1"):
        assert describe(spark, table)["store retention"].count("interval 172800 seconds") == 2
    assert {r._op for r in view_changes(spark, "sales", 1).collect()} >= {"-U", "+U"}
    ivm.sql(spark, "DROP MATERIALIZED VIEW big")
    ivm.sql(spark, "DROP MATERIALIZED VIEW top")
    ivm.sql(spark, "DROP MATERIALIZED VIEW sales")
    assert tables(spark, shop) == {"orders", "customers"}
    assert tables(spark, f"{shop}__ivm") == set()


def test_a_view_another_process_created_anew_is_found_where_it_now_is(spark, shop, monkeypatch):
    """This process found ``top`` beside its tables; another one dropped it and created it
    anew, in the internal database. The next command here finds it there."""
    with legacy_layout(monkeypatch):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    found_beside = {f"{shop}.top", f"{shop}.top__ivm_state1"}
    assert found_beside <= catalog_tables._legacy_layout
    ivm.sql(spark, "DROP MATERIALIZED VIEW top")  # as the other process does
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")
    monkeypatch.setattr(catalog_tables, "_legacy_layout", set(found_beside))  # what this one knew
    change_sources(spark)
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW top")
    assert result.mode == "incremental"
    assert [s.view for s in result.states] == [f"{shop}__ivm.top__ivm_state1"]
    assert_equals_query(spark, "top", TOP)
    assert describe(spark, "top")["store"] == f"{shop}__ivm.top__ivm_store"
    assert tables(spark, shop) == {"orders", "customers", "top"}


def test_no_view_is_created_in_a_database_of_ivms_own_tables(spark, shop):
    spark.sql(f"CREATE DATABASE {shop}__ivm")
    with pytest.raises(ivm.CatalogError) as caught:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {shop}__ivm.v AS SELECT id FROM orders")
    assert caught.value.message.startswith(
        f"{shop}__ivm.v cannot be created: {shop}__ivm is named as a database of ivm's own tables"
    )
    assert "__ivm" in (caught.value.hint or "")
    assert tables(spark, f"{shop}__ivm") == set()


def test_a_database_dropped_with_cascade_leaves_its_views_tables_but_no_view(spark, shop):
    other = f"o_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {other}")
    try:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {other}.v AS SELECT id FROM {shop}.orders")
        spark.sql(f"DROP DATABASE {other} CASCADE")
        assert tables(spark, f"{other}__ivm") == {"v__ivm_store"}, "Spark drops one database"
        assert f"{other}.v" not in materialized_views(spark)  # so REFRESH ALL skips it
        spark.sql(f"CREATE DATABASE {other}")
        ivm.sql(
            spark, f"CREATE MATERIALIZED VIEW {other}.v AS SELECT id, status FROM {shop}.orders"
        )
        assert_equals_query(spark, f"{other}.v", f"SELECT id, status FROM {shop}.orders")
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {other} CASCADE")
        spark.sql(f"DROP DATABASE IF EXISTS {other}__ivm CASCADE")
