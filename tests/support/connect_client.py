"""A Spark Connect client's use of ivm, run by ``tests/runtime/spark/test_connect.py`` in a
process of its own (PySpark chooses between its classic and its Connect functions per process):

    python tests/support/connect_client.py sc://127.0.0.1:PORT

Every step checks the views against their queries, run by Spark; a failed check raises."""

import subprocess
import sys
import time

import ivm
import ivm.testing
from ivm.runtime.commands.scheduler import run_pass, watch
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh import faults
from ivm.runtime.spark.connect import is_connect

TOTALS = (
    "SELECT c.region, SUM(o.amount) AS total, COUNT(*) AS n FROM orders o "
    "JOIN customers c ON o.cust = c.id GROUP BY c.region"
)
DAILY = "SELECT day, cust, SUM(amount) AS total FROM orders GROUP BY day, cust"
TOP = (
    "SELECT c.region, SUM(o.amount) AS total FROM orders o JOIN customers c "
    "ON o.cust = c.id GROUP BY c.region ORDER BY total DESC, c.region LIMIT 2"
)
VIEWS = {"totals": TOTALS, "daily": DAILY, "top": TOP}


def equal(spark, view: str, query: str) -> None:
    extra = spark.sql(f"SELECT * FROM {view} EXCEPT ALL ({query})").count()
    missing = spark.sql(f"({query}) EXCEPT ALL SELECT * FROM {view}").count()
    assert (extra, missing) == (0, 0), f"{view}: {extra} rows not in its query, {missing} missing"
    print(f"  {view} equals its query")


def refresh(spark, view: str, mode: str = "incremental") -> None:
    result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    assert result.mode == mode, result
    print(f"  {result}")


def refresh_dies(spark, view: str, point: str) -> None:
    """A refresh of ``view`` that dies at the write point ``point``: a refresh that does not
    fails (``faults.FaultNotFired``), as does one that dies of anything else."""
    try:
        with faults.inject(point):
            ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    except Exception as error:
        if f"injected fault at {point}" not in str(error):
            raise
    print(f"  a refresh of {view} died at {point}")


def main(url: str) -> None:
    spark = ivm.spark_session(remote=url)
    assert is_connect(spark), type(spark)
    spark.sql("CREATE DATABASE IF NOT EXISTS shop")
    spark.sql("USE shop")
    cdf = "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    spark.sql(f"CREATE TABLE customers (id INT, region STRING) {cdf}")
    spark.sql(f"CREATE TABLE orders (id INT, cust INT, amount DECIMAL(12, 2), day DATE) {cdf}")
    spark.sql("INSERT INTO customers VALUES (1, 'north'), (2, 'south'), (3, 'north')")
    spark.sql(
        "INSERT INTO orders VALUES (1, 1, 10.50, DATE'2026-11-01'), "
        "(2, 2, 5.25, DATE'2026-11-01'), (3, 3, 7.00, DATE'2026-11-02')"
    )

    print("create")
    explained = ivm.sql(spark, f"EXPLAIN CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    plan = [row.plan for row in explained.collect()]
    assert "maintained: incrementally" in plan[3], plan
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {TOTALS}")
    # a logged store (changes appended, folded on read), folded after two appends in a row
    spark.conf.set("spark.ivm.logFoldAt", "2")
    ivm.sql(
        spark, f"CREATE MATERIALIZED VIEW daily PARTITIONED BY (day) STORE LAYOUT LOG AS {DAILY}"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top AS {TOP}")  # keeps a state table
    for view, query in VIEWS.items():
        equal(spark, view, query)
    assert "join" in ivm.compile(TOTALS, spark=spark).explain()

    print("inserts, deletes and updates")
    spark.sql(
        "INSERT INTO orders VALUES (4, 1, 1.25, DATE'2026-11-02'), (5, 2, 2.00, DATE'2026-11-03')"
    )
    spark.sql("DELETE FROM orders WHERE id = 2")
    spark.sql("UPDATE customers SET region = 'east' WHERE id = 3")
    for view, query in VIEWS.items():
        refresh(spark, view)
        equal(spark, view, query)
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW daily").collect())
    assert described["store layout"].startswith("log: "), described
    assert described["last refresh technique"] == "append", described
    changes = ivm.view_changes(spark, "totals", 1).collect()
    assert {row._op for row in changes} >= {"+I"}, changes

    print("a partition recomputed (its logged rows with it)")
    spark.sql("UPDATE shop__ivm.daily__ivm_store SET total = -1 WHERE day = DATE'2026-11-02'")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW daily PARTITION (day = '2026-11-02')")
    equal(spark, "daily", DAILY)

    print("a refresh that dies is completed by the next")
    for point, after in (("refresh.during_write", "incremental"), ("refresh.after_commit", "noop")):
        spark.sql("INSERT INTO orders VALUES (6, 3, 3.50, DATE'2026-11-04')")
        spark.sql("DELETE FROM orders WHERE id = 6") if point.endswith("commit") else None
        refresh_dies(spark, "totals", point)
        refresh(spark, "totals", after)
        equal(spark, "totals", TOTALS)
    refresh_dies(spark, "top", "refresh.after_state")
    refresh(spark, "top")
    equal(spark, "top", TOP)

    print("a reader of a log answers of the version it first found")
    # a refresh writes as the idempotent transaction of the version its plan read: had its
    # reader answered anew, a refresh committed meanwhile would have been applied twice
    log = DeltaLogReader(spark, "shop.orders")
    version = log.version()
    spark.sql("INSERT INTO orders VALUES (8, 2, 6.00, DATE'2026-11-04')")
    assert log.version() == version, (log.version(), version)
    assert DeltaLogReader(spark, "shop.orders").version() == version + 1

    print("ivm verify, ivm status and a scheduler pass")
    assert ivm.verify(spark, "totals").equal
    ivm.sql(spark, "ALTER MATERIALIZED VIEW daily SET FRESHNESS = INTERVAL '1' SECOND")
    spark.sql("INSERT INTO orders VALUES (7, 1, 4.00, DATE'2026-11-05')")
    done = run_pass(spark, watch(spark, ["shop.daily"]), now=time.time() + 1)  # it is due
    assert [r.view for r in done.refreshed] == ["shop.daily"], done
    equal(spark, "daily", DAILY)
    checked = ivm.testing.check_view(spark, TOTALS, examples=1, seed=1)
    print(f"  {checked}")
    for command in (["status"], ["verify", "--all"]):
        done = subprocess.run(
            [sys.executable, "-m", "ivm.cli", "--remote", url, *command],
            capture_output=True,
            text=True,
            timeout=300,
        )
        print(done.stdout)
        assert done.returncode == 0, done.stderr


if __name__ == "__main__":
    main(sys.argv[1])
