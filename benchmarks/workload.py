"""The benchmark's views and change batches over TPC-H data (see :mod:`benchmarks.tpch_data`).

Views: the TPC-H queries (:mod:`benchmarks.tpch_queries`), a "latest row per key" dedup, and
a view on a view. Change batches follow TPC-H's refresh functions and add updates: a batch of
fraction ``f`` touches about ``f`` of ``lineitem`` in three equal parts, each a contiguous
range of order keys (as RF2 deletes a range of old orders; a range touches few files, so the
sources' own writes stay cheap and the benchmark measures the refresh):

* RF1: copies of the orders of one range, with all their line items, under new order keys;
* RF2: the orders of another range deleted, with all their line items;
* updates: the line items (quantity, price, discount) and orders (status, total price) of a
  third range changed in place.

Each batch takes ranges no earlier batch took, so every batch is a fresh change. An
*append* batch is RF1 alone, copies of the orders of one range of ``f`` of the keys: the
change of an append table, which views whose rules allow it fold into their own rows
(:mod:`ivm.rules.append`).
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.tpch_queries import QUERIES

#: The core views: single-table aggregates, joins, an EXISTS subquery.
CORE = ("q1", "q3", "q4", "q5", "q6", "q10", "q12", "q14")

#: Single-table aggregates, whose refresh should cost the change alone.
SINGLE_TABLE_AGGREGATES = ("q1", "q6")

LATEST_ORDER = """
SELECT o_custkey, o_orderkey, o_orderdate, o_totalprice
FROM (SELECT o_custkey, o_orderkey, o_orderdate, o_totalprice,
             ROW_NUMBER() OVER (PARTITION BY o_custkey
                                ORDER BY o_orderdate DESC, o_orderkey DESC) AS rn
      FROM orders)
WHERE rn = 1
"""

CUSTOMER_REVENUE = """
SELECT o_custkey, COUNT(*) AS line_count,
       SUM(l_extendedprice * (1 - l_discount)) AS revenue
FROM orders JOIN lineitem ON l_orderkey = o_orderkey
GROUP BY o_custkey
"""

FIRST_LAST_ORDER = """
SELECT o_custkey, MIN(o_orderdate) AS first_order, MAX(o_orderdate) AS last_order,
       COUNT(*) AS orders, MAX(o_totalprice) AS largest
FROM orders
GROUP BY o_custkey
"""

LARGEST_ORDERS = """
SELECT o_orderkey, o_custkey, o_totalprice
FROM orders
ORDER BY o_totalprice DESC, o_orderkey
LIMIT 100
"""

#: Views that an append batch lets fold inserted rows into their own rows.
APPEND_VIEWS = ("latest_order", "first_last_order", "largest_orders")

#: Over the view ``customer_revenue``.
REVENUE_BANDS = """
SELECT CAST(FLOOR(revenue / 100000) AS INT) AS band, COUNT(*) AS customers,
       SUM(revenue) AS revenue
FROM customer_revenue
GROUP BY CAST(FLOOR(revenue / 100000) AS INT)
"""


@dataclass(frozen=True)
class View:
    """A benchmarked view: its definition, the query a full recompute runs (the definition
    with any view it reads written out, as a user recomputing it would), and the benchmarked
    views it reads (refreshed before it)."""

    name: str
    sql: str
    full_sql: str
    reads: tuple[str, ...] = ()


def views(names: list[str] | None = None) -> list[View]:
    """The views of ``names`` (TPC-H query names, ``latest_order``, ``first_last_order``,
    ``largest_orders``, ``customer_revenue``, ``revenue_bands``), or all of them, each after
    the views it reads."""
    every = [View(name, sql, sql) for name, sql in QUERIES.items()] + [
        View("latest_order", LATEST_ORDER, LATEST_ORDER),
        View("first_last_order", FIRST_LAST_ORDER, FIRST_LAST_ORDER),
        View("largest_orders", LARGEST_ORDERS, LARGEST_ORDERS),
        View("customer_revenue", CUSTOMER_REVENUE, CUSTOMER_REVENUE),
        View(
            "revenue_bands",
            REVENUE_BANDS,
            f"WITH customer_revenue AS ({CUSTOMER_REVENUE}) {REVENUE_BANDS}",
            reads=("customer_revenue",),
        ),
    ]
    if names is None:
        return every
    unknown = set(names) - {v.name for v in every}
    if unknown:
        raise SystemExit(f"unknown view(s): {', '.join(sorted(unknown))}")
    wanted = set(names) | {read for v in every if v.name in names for read in v.reads}
    return [v for v in every if v.name in wanted]


def _keys(column: str, span: tuple[int, int]) -> str:
    return f"{column} >= {span[0]} AND {column} < {span[1]}"


class Batches:
    """Change batches over the loaded TPC-H tables; ``next(f)`` gives one batch's SQL."""

    #: Where in the order key space the three parts of successive batches start, as a
    #: fraction of the largest key: deletes, updates and copies walk upwards from here.
    STARTS = {"delete": 0.02, "update": 0.35, "copy": 0.68}

    def __init__(self, spark):
        row = spark.sql("SELECT MAX(o_orderkey) AS top FROM orders").first()
        self.top = int(row.top)  # the largest key TPC-H generated
        self.next_key = self.top + 1  # where the copies' keys start
        self.used = {part: start * self.top for part, start in self.STARTS.items()}

    def _range(self, part: str, fraction: float) -> tuple[int, int]:
        """The next ``[low, high)`` order keys of ``part``: ``fraction`` of all keys."""
        low = int(self.used[part])
        high = low + max(1, int(fraction * self.top))
        self.used[part] = high
        return low, high

    def next(self, fraction: float, appends: bool = False) -> list[str]:
        """One batch touching about ``fraction`` of ``lineitem``; with ``appends``, inserting
        that much only."""
        if appends:
            return self._copies(self._range("copy", fraction))
        third = fraction / 3
        gone, changed, copied = (self._range(part, third) for part in ("delete", "update", "copy"))
        quantity = "(l_quantity % 4 + 1)"
        return self._copies(copied) + [
            f"DELETE FROM lineitem WHERE {_keys('l_orderkey', gone)}",
            f"DELETE FROM orders WHERE {_keys('o_orderkey', gone)}",
            f"UPDATE lineitem SET l_quantity = CAST({quantity} AS DECIMAL(15,2)), "
            f"l_extendedprice = CAST(l_extendedprice / l_quantity * {quantity} "
            f"AS DECIMAL(15,2)), "
            f"l_discount = CAST(pmod(CAST(l_discount * 100 AS INT) + 4, 11) / 100 "
            f"AS DECIMAL(15,2)) WHERE {_keys('l_orderkey', changed)}",
            f"UPDATE orders SET o_orderstatus = IF(o_orderstatus = 'F', 'O', 'F'), "
            f"o_totalprice = o_totalprice + 1000.00 WHERE {_keys('o_orderkey', changed)}",
        ]

    def _copies(self, copied: tuple[int, int]) -> list[str]:
        """RF1: the orders of the keys ``copied``, with their line items, under new keys."""
        offset = self.next_key - copied[0]
        self.next_key += copied[1] - copied[0]
        return [
            f"INSERT INTO orders SELECT o_orderkey + {offset}, o_custkey, o_orderstatus, "
            f"o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment "
            f"FROM orders WHERE {_keys('o_orderkey', copied)}",
            f"INSERT INTO lineitem SELECT l_orderkey + {offset}, l_partkey, l_suppkey, "
            f"l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag, "
            f"l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, "
            f"l_shipmode, l_comment FROM lineitem WHERE {_keys('l_orderkey', copied)}",
        ]

    def one_row(self, spark, appends: bool = False) -> list[str]:
        """A change of one line item (its discount), for the fixed overhead; with
        ``appends``, one order inserted with its line items."""
        if appends:
            low, _ = self._range("copy", 0)
            key = (
                spark.sql(f"SELECT MIN(o_orderkey) AS k FROM orders WHERE o_orderkey >= {low}")
                .first()
                .k
            )
            self.used["copy"] = key + 1
            return self._copies((key, key + 1))
        low, _ = self._range("update", 0)
        key = (
            spark.sql(f"SELECT MIN(l_orderkey) AS k FROM lineitem WHERE l_orderkey >= {low}")
            .first()
            .k
        )
        return [
            f"UPDATE lineitem SET l_discount = CAST(pmod(CAST(l_discount * 100 AS INT) "
            f"+ 1, 11) / 100 AS DECIMAL(15,2)) "
            f"WHERE l_orderkey = {key} AND l_linenumber = 1"
        ]
