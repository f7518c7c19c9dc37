"""Store upkeep: compaction after refreshes, VACUUM, and the RETENTION a view keeps.
(The ``shop`` these run in is a fixture of conftest.py.)"""

import threading
from contextlib import contextmanager

import pytest
from pyspark.errors import AnalysisException

import ivm
from ivm import cli
from ivm.errors import CatalogError, SqlSyntaxError
from ivm.runtime.catalog.properties import DELETED_FILE_RETENTION, LOG_RETENTION
from ivm.runtime.catalog.tables import qualified_name, state_tables, store_name
from ivm.runtime.commands.scheduler import Vacuums, run
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh import upkeep
from ivm.runtime.spark.settings import STATE_LAYOUT, session_settings
from ivm.testing.data import MERGES

OPEN_ORDERS = "SELECT id, cust_id, amount FROM orders WHERE status <> 'void'"
BY_CUSTOMER = "SELECT cust_id, COUNT(*) AS n FROM open_orders GROUP BY cust_id"
TOP_CUSTOMERS = (
    "SELECT cust_id, SUM(amount) AS total FROM orders GROUP BY cust_id ORDER BY total DESC LIMIT 2"
)


def assert_equals_query(spark, view, query):
    got, want = spark.table(view), spark.sql(query)
    extra, missing = got.exceptAll(want).collect(), want.exceptAll(got).collect()
    assert not extra and not missing, f"extra rows {extra}, missing rows {missing}"


def files(spark, view):
    return DeltaLogReader(spark, store_name(qualified_name(spark, view))).file_count()


def test_a_store_that_refreshes_grow_is_compacted_and_stays_the_query(spark, shop, monkeypatch):
    monkeypatch.setattr(upkeep, "COMPACT_AT", 3)
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW open_orders AS {OPEN_ORDERS}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW by_customer AS {BY_CUSTOMER}")
    counts, compactions = [], []
    for i in range(10, 16):  # each refresh only inserts: a new file in the store
        spark.sql(f"INSERT INTO orders VALUES ({i}, {i % 3}, {i}.50, 'ok')")
        with session_settings(spark, MERGES):  # a rewrite writes the store as one file
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW open_orders")
        counts.append(files(spark, "open_orders"))
        compactions += result.upkeep
        assert all(
            f"compacted {store_name(f'{shop}.open_orders')}" in str(result) for _ in result.upkeep
        )
        assert_equals_query(spark, "open_orders", OPEN_ORDERS)
    assert compactions, f"no compaction over file counts {counts}"
    assert all(
        step.action == "compact" and step.files_after < step.files_before for step in compactions
    )
    assert max(counts) <= 1 + upkeep.COMPACT_AT, counts
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW open_orders").collect())
    assert described["store files"].startswith(f"{counts[-1]} files, ")
    assert described["store layout"].startswith("merge: ")
    # a view reading the compacted one consumes the compaction as no change
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW by_customer")
    assert_equals_query(spark, "by_customer", BY_CUSTOMER)
    rows = ivm.view_changes(spark, "open_orders", 1).collect()
    assert sorted(r.id for r in rows) == list(range(10, 16))


def test_a_refresh_that_changes_nothing_compacts_nothing(spark, shop, monkeypatch):
    monkeypatch.setattr(upkeep, "COMPACT_AT", 0)
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW open_orders AS {OPEN_ORDERS}")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW open_orders")
    assert result.mode == "noop" and result.upkeep == []


def test_a_compaction_that_fails_is_reported_and_the_refresh_stands(spark, shop, monkeypatch):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW open_orders AS {OPEN_ORDERS}")
    monkeypatch.setattr(upkeep, "COMPACT_AT", 0)

    @contextmanager
    def failing(spark, settings):
        raise AnalysisException("the disk is full")
        yield

    monkeypatch.setattr(upkeep, "session_settings", failing)
    spark.sql("INSERT INTO orders VALUES (21, 8, 5.00, 'ok')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW open_orders")
    assert result.mode == "incremental"
    [step] = result.upkeep
    assert step.error and "the disk is full" in step.error
    assert f"compaction of {store_name(f'{shop}.open_orders')} failed" in str(result)
    assert_equals_query(spark, "open_orders", OPEN_ORDERS)
    with pytest.raises(AnalysisException):  # asked for, it fails loudly
        upkeep.upkeep(spark, "open_orders", vacuum_too=False)


@pytest.mark.parametrize(("layout", "action"), [("merge", "compact"), ("log", "fold")])
def test_state_tables_are_compacted_with_their_view(spark, shop, monkeypatch, layout, action):
    """A refresh ends with the upkeep of its view's state tables too: a merged state table
    compacted, a logged one's log folded in, each here as soon as it can be due."""
    monkeypatch.setattr(upkeep, "COMPACT_AT", 0)
    with session_settings(spark, {STATE_LAYOUT: layout, upkeep.LOG_FOLD_AT: "1"}):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW top_customers AS {TOP_CUSTOMERS}")
        [state] = state_tables(spark, f"{shop}.top_customers")
        spark.sql("INSERT INTO orders VALUES (20, 7, 99.00, 'ok')")
        result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW top_customers")
    assert {step.store for step in result.upkeep} <= {
        store_name(state),
        store_name(f"{shop}.top_customers"),
    }
    assert (store_name(state), action) in {(done.store, done.action) for done in result.upkeep}
    assert_equals_query(spark, "top_customers", TOP_CUSTOMERS)


def test_upkeep_vacuums_the_view_and_its_state_tables_and_keeps_them_readable(
    spark, shop, monkeypatch, capsys
):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top_customers AS {TOP_CUSTOMERS}")
    spark.sql("UPDATE orders SET amount = 50 WHERE id = 1")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top_customers")
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    assert cli.main(["upkeep", "top_customers"]) == 0
    printed = capsys.readouterr().out
    stores = {
        store_name(t)
        for t in [*state_tables(spark, f"{shop}.top_customers"), f"{shop}.top_customers"]
    }
    assert printed.startswith(f"{shop}.top_customers: ") and len(stores) == 2
    assert all(f"vacuumed {store} in " in printed for store in stores), printed
    spark.sql("DELETE FROM orders WHERE id = 4")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW top_customers").mode == "incremental"
    assert_equals_query(spark, "top_customers", TOP_CUSTOMERS)
    assert ivm.verify(spark, "top_customers").equal


def test_retention_is_set_on_create_and_alter_for_the_view_and_its_state_tables(spark, shop):
    ivm.sql(
        spark,
        f"CREATE MATERIALIZED VIEW top_customers RETENTION = INTERVAL '2' DAYS AS {TOP_CUSTOMERS}",
    )
    tables = [*state_tables(spark, f"{shop}.top_customers"), f"{shop}.top_customers"]
    assert len(tables) == 2

    def retention(table):
        properties = DeltaLogReader(spark, store_name(table)).properties()
        return properties.get(DELETED_FILE_RETENTION), properties.get(LOG_RETENTION)

    assert {retention(t) for t in tables} == {("interval 172800 seconds",) * 2}
    ivm.sql(spark, "ALTER MATERIALIZED VIEW top_customers SET RETENTION = INTERVAL '30' DAYS")
    assert {retention(t) for t in tables} == {("interval 2592000 seconds",) * 2}
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW top_customers").collect())
    assert described["store retention"] == (
        f"{DELETED_FILE_RETENTION} interval 2592000 seconds; "
        f"{LOG_RETENTION} interval 2592000 seconds"
    )
    spark.sql("INSERT INTO orders VALUES (30, 1, 1.00, 'ok')")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW top_customers")
    assert_equals_query(spark, "top_customers", TOP_CUSTOMERS)


def test_a_view_keeps_its_log_as_long_as_its_files_unless_told(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW open_orders AS {OPEN_ORDERS}")
    properties = DeltaLogReader(spark, store_name(f"{shop}.open_orders")).properties()
    week = f"interval {7 * 86400} seconds"  # Delta's for files; its log's is 30 days
    assert (properties[DELETED_FILE_RETENTION], properties[LOG_RETENTION]) == (week, week)


def test_a_retention_too_short_or_misspelled_is_refused_by_name(spark, shop):
    with pytest.raises(CatalogError, match="RETENTION .* too short"):
        ivm.sql(
            spark, f"CREATE MATERIALIZED VIEW o RETENTION = INTERVAL '10' MINUTES AS {OPEN_ORDERS}"
        )
    assert not spark.catalog.tableExists("o")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW o AS {OPEN_ORDERS}")
    with pytest.raises(CatalogError, match="too short"):
        ivm.sql(spark, "ALTER MATERIALIZED VIEW o SET RETENTION = INTERVAL '59' MINUTES")
    with pytest.raises(SqlSyntaxError, match="RETENTION"):
        ivm.sql(spark, "ALTER MATERIALIZED VIEW o SET RETENTION INTERVAL '2' DAYS")


def test_vacuums_are_spread_over_their_period_and_forget_views_no_longer_watched():
    vacuums = Vacuums(every=100.0)
    vacuums.watch(["a", "b", "c", "d"], now=0.0)
    assert sorted(vacuums.due.values()) == [25.0, 50.0, 75.0, 100.0]
    assert vacuums.next(now=10.0) is None
    assert vacuums.next(now=60.0) == "a" and vacuums.due["a"] == 160.0
    assert vacuums.next(now=60.0) == "b"  # one call, one view: the most overdue
    assert vacuums.next(now=60.0) is None
    vacuums.watch(["b", "e"], now=60.0)  # a, c and d dropped, e new
    assert vacuums.due == {"b": 160.0, "e": 160.0}


def test_ivm_run_vacuums_between_passes_and_goes_on(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW o FRESHNESS = INTERVAL '1' HOUR AS {OPEN_ORDERS}")
    stop, lines = threading.Event(), []

    def report(line):
        lines.append(line)
        if "vacuumed" in line:
            stop.set()

    threading.Timer(120, stop.set).start()
    run(spark, tick=0.1, stop=stop, report=report, views=[f"{shop}.o"], vacuum_every=0.5)
    assert f"vacuumed {store_name(f'{shop}.o')} in " in "\n".join(lines), lines
