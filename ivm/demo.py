"""A guided run: sample Delta sources, a materialized view, changes, refreshes.

Run with ``ivm demo`` (or ``make demo``). It works in the database ``ivm_demo`` of the
embedded catalog, recreated on each run, and verifies after every refresh that the view equals
its query run from scratch (:func:`ivm.runtime.observation.verify.verify`, as ``ivm verify`` does).
"""

from __future__ import annotations

import time

from ivm.compiler import compile
from ivm.names import internal_database
from ivm.runtime.catalog.tables import catalog_schema
from ivm.runtime.commands.statements import sql
from ivm.runtime.observation.verify import verify
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.session import spark_session

DATABASE = "ivm_demo"
VIEW = f"{DATABASE}.sales_by_region"
QUERY = f"""SELECT c.region, COUNT(*) AS orders, SUM(o.amount) AS total, AVG(o.amount) AS average
FROM {DATABASE}.orders o JOIN {DATABASE}.customers c ON o.cust_id = c.id
WHERE o.status <> 'void'
GROUP BY c.region"""

SETUP = [
    f"DROP DATABASE IF EXISTS {DATABASE} CASCADE",
    f"DROP DATABASE IF EXISTS {internal_database(DATABASE)} CASCADE",
    f"CREATE DATABASE {DATABASE}",
    f"CREATE TABLE {DATABASE}.customers (id INT, name STRING, region STRING) USING DELTA "
    "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
    f"CREATE TABLE {DATABASE}.orders (id INT, cust_id INT, amount DECIMAL(10,2), status STRING) "
    "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)",
    f"INSERT INTO {DATABASE}.customers VALUES (1, 'Ada', 'EU'), (2, 'Grace', 'US'), "
    "(3, 'Edsger', 'EU'), (4, 'Barbara', NULL)",
    f"INSERT INTO {DATABASE}.orders VALUES (1, 1, 120.00, 'paid'), (2, 2, 80.50, 'paid'), "
    "(3, 3, 42.00, 'void'), (4, 4, 19.99, 'paid'), (5, 2, NULL, 'open')",
]

CHANGES = [
    (
        "new orders arrive",
        [f"INSERT INTO {DATABASE}.orders VALUES (6, 3, 300.00, 'paid'), (7, 1, 15.00, 'open')"],
    ),
    (
        "an order is voided, another corrected, one deleted",
        [
            f"UPDATE {DATABASE}.orders SET status = 'void' WHERE id = 1",
            f"UPDATE {DATABASE}.orders SET amount = 90.50 WHERE id = 2",
            f"DELETE FROM {DATABASE}.orders WHERE id = 4",
        ],
    ),
    (
        "a customer moves and a new one signs up with an order (MERGE)",
        [
            f"MERGE INTO {DATABASE}.customers t USING (SELECT 2 AS id, 'Grace' AS name, "
            "'APAC' AS region UNION ALL SELECT 5, 'Alan', 'EU') s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
            f"INSERT INTO {DATABASE}.orders VALUES (8, 5, 64.00, 'paid')",
        ],
    ),
]


def _show(spark: Session, title: str) -> None:
    print(f"\n{title}")
    spark.sql(f"SELECT * FROM {VIEW} ORDER BY region").show(truncate=False)


def _verify(spark: Session) -> None:
    verdict = verify(spark, VIEW)
    print(f"verify: {verdict}")
    if not verdict.equal:
        raise SystemExit(1)


def run(home=None, remote: str | None = None) -> None:
    """The demo in the session of ``home``, or as a client of the Spark Connect server at
    ``remote``."""
    started = time.perf_counter()
    spark = spark_session(home, remote=remote)
    for statement in SETUP:
        spark.sql(statement)
    print(
        f"sources {DATABASE}.orders and {DATABASE}.customers created (Delta, change data feed on)"
    )
    print(f"\nthe view:\n{QUERY}\n")
    print(compile(QUERY, catalog_schema(spark)).explain())
    print(sql(spark, f"CREATE MATERIALIZED VIEW {VIEW} AS {QUERY}"))
    _show(spark, "the view after CREATE:")
    for what, statements in CHANGES:
        print(f"\n== {what}:")
        for statement in statements:
            print(f"   {statement}")
            spark.sql(statement)
        print(sql(spark, f"REFRESH MATERIALIZED VIEW {VIEW}"))
        _show(spark, "the view after REFRESH:")
        _verify(spark)
    print(sql(spark, f"REFRESH MATERIALIZED VIEW {VIEW}"))
    print(
        f"\n== an order arrives after the last refresh; `ivm verify {VIEW}` compares the "
        "view with its query at the source versions the view reflects:"
    )
    spark.sql(f"INSERT INTO {DATABASE}.orders VALUES (9, 1, 5.00, 'paid')")
    _verify(spark)
    print(f"\ndemo finished in {time.perf_counter() - started:.0f}s")
