"""Change batches for the TPC-H view tests, at scale factor :data:`SCALE`.

The batches follow TPC-H's refresh functions: RF1 inserts new orders with their line items;
RF2 deletes old orders with theirs, and the same batch updates other line items and orders in
place. The rows are chosen so that each query's view changes, by a hash of their keys, so
every run applies the same changes. (The data and its loading: :mod:`benchmarks.tpch_data`.)
"""

from __future__ import annotations

SCALE = "0.01"


# What makes a line item matter to a query: a predicate on the line item joined with its
# order, customer, part and supplier (``cn``/``cr``: the customer's nation and region, ``sn``:
# the supplier's nation). Each batch changes a line item or order of each kind, so that most
# views change. (No part is Brand#23 in a MED BOX at scale factor 0.01: q17 finds no line.)
_INTERESTS = {
    "q1 q4": "o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-10-01'",
    # A line of one of the ten orders with the most revenue.
    "q3": "c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15'"
    " AND l_shipdate > DATE '1995-03-15'"
    " AND l_orderkey IN (SELECT l_orderkey FROM lineitem JOIN orders"
    " ON l_orderkey = o_orderkey JOIN customer ON o_custkey = c_custkey"
    " WHERE c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15'"
    " AND l_shipdate > DATE '1995-03-15' GROUP BY l_orderkey"
    " ORDER BY SUM(l_extendedprice * (1 - l_discount)) DESC LIMIT 10)",
    "q5": "cr.r_name = 'ASIA' AND c_nationkey = s_nationkey"
    " AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'",
    "q6": "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'"
    " AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    "q7": "sn.n_name IN ('FRANCE', 'GERMANY') AND cn.n_name IN ('FRANCE', 'GERMANY')"
    " AND sn.n_name <> cn.n_name"
    " AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'",
    "q8": "p_type = 'ECONOMY ANODIZED STEEL' AND cr.r_name = 'AMERICA'"
    " AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'",
    "q9": "p_name LIKE '%green%'",
    # A returned line of one of the twenty customers with the most revenue returned.
    "q10": "l_returnflag = 'R'"
    " AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1994-01-01'"
    " AND o_custkey IN (SELECT o_custkey FROM lineitem JOIN orders"
    " ON l_orderkey = o_orderkey WHERE l_returnflag = 'R'"
    " AND o_orderdate >= DATE '1993-10-01' AND o_orderdate < DATE '1994-01-01'"
    " GROUP BY o_custkey ORDER BY SUM(l_extendedprice * (1 - l_discount)) DESC"
    " LIMIT 20)",
    "q12": "l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate"
    " AND l_shipdate < l_commitdate"
    " AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1995-01-01'",
    "q14": "l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01'",
    # A line of the supplier with the most revenue in the quarter.
    "q15": "l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'"
    " AND l_suppkey = (SELECT l_suppkey FROM lineitem"
    " WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'"
    " GROUP BY l_suppkey ORDER BY SUM(l_extendedprice * (1 - l_discount)) DESC,"
    " l_suppkey LIMIT 1)",
    "q17": "p_brand = 'Brand#23' AND p_container = 'MED BOX'",
    "q18": "o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey"
    " HAVING SUM(l_quantity) > 300)",
    "q19": "l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON'"
    " AND ((p_brand = 'Brand#12'"
    "       AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')"
    "       AND l_quantity BETWEEN 1 AND 11 AND p_size BETWEEN 1 AND 5)"
    "   OR (p_brand = 'Brand#23'"
    "       AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')"
    "       AND l_quantity BETWEEN 10 AND 20 AND p_size BETWEEN 1 AND 10)"
    "   OR (p_brand = 'Brand#34'"
    "       AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')"
    "       AND l_quantity BETWEEN 20 AND 30 AND p_size BETWEEN 1 AND 15))",
    "q20": "p_name LIKE 'forest%' AND sn.n_name = 'CANADA'"
    " AND l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'",
    # The only late line of a finished order with several suppliers.
    "q21": "o_orderstatus = 'F' AND sn.n_name = 'SAUDI ARABIA'"
    " AND l_receiptdate > l_commitdate"
    " AND l_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey"
    " HAVING COUNT(DISTINCT l_suppkey) > 1"
    " AND COUNT_IF(l_receiptdate > l_commitdate) = 1)",
}

_ORDER_LINES = """lineitem
    JOIN orders ON l_orderkey = o_orderkey
    JOIN customer ON o_custkey = c_custkey
    JOIN nation cn ON c_nationkey = cn.n_nationkey
    JOIN region cr ON cn.n_regionkey = cr.r_regionkey
    JOIN supplier ON l_suppkey = s_suppkey
    JOIN nation sn ON s_nationkey = sn.n_nationkey
    JOIN part ON l_partkey = p_partkey"""


def pick_lines(spark, *seeds: int) -> list[list[tuple[int, int]]]:
    """For each seed, one line item ``(l_orderkey, l_linenumber)`` of each interest, chosen
    by a hash of its key and the seed: the same lines every run, other lines for another
    seed. One Spark job."""
    columns = ", ".join(
        f"min_by(struct(l_orderkey, l_linenumber),"
        f" IF({predicate}, hash(l_orderkey, l_linenumber, {seed}), NULL))"
        for seed in seeds
        for predicate in _INTERESTS.values()
    )
    row = list(spark.sql(f"SELECT {columns} FROM {_ORDER_LINES}").first())
    per_seed = len(_INTERESTS)
    return [
        sorted({tuple(key) for key in row[i : i + per_seed] if key is not None})
        for i in range(0, len(row), per_seed)
    ]


def _orders_of(lines: list[tuple[int, int]]) -> str:
    """The order keys of ``lines``, as the list of an ``IN`` (NULL, matching none, if no
    line)."""
    return ", ".join(sorted({str(order) for order, _ in lines}, key=int)) or "NULL"


def _lines(lines: list[tuple[int, int]]) -> str:
    """A predicate true for exactly the line items ``lines``."""
    pairs = ", ".join(f"({order}L, {number})" for order, number in lines)
    return f"(l_orderkey, l_linenumber) IN ({pairs})" if lines else "FALSE"


# A line item returned (R) or accepted (A) after receipt becomes the other; N stays N.
_SWAP_RETURNFLAG = "CASE l_returnflag WHEN 'R' THEN 'A' WHEN 'A' THEN 'R' ELSE 'N' END"


def insert_orders(spark) -> list[str]:
    """RF1: copies of the orders of the picked line items under fresh order keys, with all
    their line items. The picked lines are copied as they are; the copies of the other lines
    differ in quantity and price, discount, return flag and ship mode; half the new orders go
    to customers that had no orders (in TPC-H a customer key divisible by 3 has none), some
    change status and priority."""
    picked = pick_lines(spark, 1)[0]
    orders = _orders_of(picked)
    offset = spark.sql("SELECT MAX(o_orderkey) AS m FROM orders").first().m
    varied = f"NOT {_lines(picked)}"
    quantity = "(pmod(l_quantity + l_linenumber * 7, 50) + 1)"
    return [
        f"""INSERT INTO orders
        SELECT o_orderkey + {offset},
               IF(o_orderkey % 2 = 0, o_custkey + 3 - pmod(o_custkey, 3), o_custkey),
               IF(o_orderkey % 3 = 0, 'F', o_orderstatus),
               o_totalprice, o_orderdate,
               IF(o_orderkey % 4 = 0, '1-URGENT', o_orderpriority),
               o_clerk, o_shippriority, o_comment
        FROM orders WHERE o_orderkey IN ({orders})""",
        f"""INSERT INTO lineitem
        SELECT l_orderkey + {offset}, l_partkey, l_suppkey, l_linenumber,
               IF({varied}, CAST({quantity} AS DECIMAL(15,2)), l_quantity),
               IF({varied}, CAST(l_extendedprice / l_quantity * {quantity} AS DECIMAL(15,2)),
                  l_extendedprice),
               IF({varied}, CAST(pmod(CAST(l_discount * 100 AS INT) + 3, 11) / 100
                                 AS DECIMAL(15,2)), l_discount),
               l_tax,
               IF({varied}, {_SWAP_RETURNFLAG}, l_returnflag),
               l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct,
               IF({varied}, IF(l_shipmode = 'MAIL', 'SHIP', 'MAIL'), l_shipmode),
               l_comment
        FROM lineitem WHERE l_orderkey IN ({orders})""",
    ]


def delete_orders(lines: list[tuple[int, int]]) -> list[str]:
    """RF2: delete the orders of ``lines``, and all their line items."""
    orders = _orders_of(lines)
    return [
        f"""MERGE INTO lineitem USING (SELECT explode(array({orders})) AS k) doomed
        ON lineitem.l_orderkey = doomed.k
        WHEN MATCHED THEN DELETE""",
        f"DELETE FROM orders WHERE o_orderkey IN ({orders})",
    ]


def update_rows(lines: list[tuple[int, int]], orders: list[tuple[int, int]]) -> list[str]:
    """Change the line items ``lines`` (a small quantity and its price, discount, ship date,
    return flag) and the orders of ``orders`` (status, total price)."""
    quantity = "(l_quantity % 4 + 1)"
    return [
        f"""UPDATE lineitem SET
            l_quantity = CAST({quantity} AS DECIMAL(15,2)),
            l_extendedprice = CAST(l_extendedprice / l_quantity * {quantity}
                                   AS DECIMAL(15,2)),
            l_discount = CAST(pmod(CAST(l_discount * 100 AS INT) + 4, 11) / 100
                              AS DECIMAL(15,2)),
            l_shipdate = l_shipdate - 40,
            l_returnflag = {_SWAP_RETURNFLAG}
        WHERE {_lines(lines)}""",
        f"""UPDATE orders SET
            o_orderstatus = IF(o_orderstatus = 'F', 'O', 'F'),
            o_totalprice = o_totalprice + 1000.00
        WHERE o_orderkey IN ({_orders_of(orders)})""",
    ]


def delete_and_update(spark) -> list[str]:
    """RF2 on the orders of some picked line items, then updates of other picked line items
    and orders (of orders RF2 keeps)."""
    doomed, lines, orders = pick_lines(spark, 2, 3, 4)
    gone = {order for order, _ in doomed}
    lines, orders = ([line for line in picked if line[0] not in gone] for picked in (lines, orders))
    return delete_orders(doomed) + update_rows(lines, orders)


#: The change batches in the order they are applied: a name, and a function of the Spark
#: session that returns the batch's statements (the rows they touch depend on the data).
#: Deletes and updates share a batch: every batch costs a refresh of every view, and two
#: batches keep the test within its time.
BATCHES = [
    ("RF1 inserts", insert_orders),
    ("RF2 deletes and updates", delete_and_update),
]
