"""Lookup joins (``JOIN d FOR SYSTEM_TIME AS OF o.t``) against their own definition.

A lookup view does not equal a recomputation of its query. What it equals, after every
refresh: each fact row joined with the dimension as of the refresh that first consumed it,
where rows with its values have been present at every refresh since. :class:`Definition`
computes that from the tables' contents at each refresh, in Python; the view is compared
with it after dimension inserts, updates and deletes and fact inserts, repeats, updates and
deletes. A full refresh enriches every fact row anew with the current dimension.
"""

from collections import Counter

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ivm
from ivm.errors import StateError
from ivm.runtime.observation.verify import verify
from ivm.runtime.refresh.execute import refresh_view
from tests.support.cdf import CDF

# minutes of refreshes against the definition: make test-integration, as the stateful machine
pytestmark = pytest.mark.slow

INNER = (
    "SELECT o.id, o.amount, c.region FROM orders o "
    "JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.cust = c.cid"
)
LEFT = (
    "SELECT o.id, c.region FROM orders o "
    "LEFT JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.cust = c.cid WHERE o.id > 0"
)
GROUPED = (
    "SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total FROM orders o "
    "LEFT JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.cust = c.cid "
    "GROUP BY c.region"
)
VIEWS = {"enriched": INNER, "kept": LEFT, "by_region": GROUPED}


class Definition:
    """The fact rows' enrichments by the definition: per fact value (id, cust, amount), the
    dimension rows (cid, region) it met at the refresh since which it has been present."""

    def __init__(self):
        self.enrichment: dict[tuple, list[tuple]] = {}

    def refreshed(self, facts: Counter, dimension: list[tuple], full: bool = False) -> None:
        """The facts and the dimension as a refresh read them."""
        self.enrichment = {f: e for f, e in self.enrichment.items() if f in facts and not full}
        for fact in facts:
            self.enrichment.setdefault(fact, [d for d in dimension if d[0] == fact[1]])

    def view(self, name: str, facts: Counter) -> Counter:
        rows: Counter = Counter()
        for (id_, cust, amount), n in facts.items():
            matches = self.enrichment[(id_, cust, amount)]
            if name == "enriched":
                for _, region in matches:
                    rows[(id_, amount, region)] += n
            elif id_ is not None and id_ > 0 or name == "by_region":
                for _, region in matches or [(None, None)]:
                    rows[(id_, amount, region)] += n
        if name == "kept":
            return Counter({(i, r): n for (i, _, r), n in rows.items()})
        if name == "enriched":
            return rows
        groups: dict = {}
        for (_, amount, region), n in rows.items():
            count, total = groups.get(region, (0, None))
            groups[region] = (count + n, total if amount is None else (total or 0) + amount * n)
        return Counter({(region, count, total) for region, (count, total) in groups.items()})


def contents(spark) -> tuple[Counter, list[tuple]]:
    facts = Counter(tuple(r) for r in spark.sql("SELECT id, cust, amount FROM orders").collect())
    return facts, [tuple(r) for r in spark.sql("SELECT cid, region FROM customers").collect()]


def check(spark, definition: Definition, full: bool = False) -> None:
    """Refresh every view, and compare it with the definition."""
    results = {name: refresh_view(spark, name, full=full) for name in VIEWS}
    facts, dimension = contents(spark)
    definition.refreshed(facts, dimension, full)
    for name in VIEWS:
        got = Counter(tuple(r) for r in spark.table(name).collect())
        assert got == definition.view(name, facts), name
    if full:
        state = results["enriched"].states[0]
        assert state.mode == "full" and "enriched anew" in (state.reason or "")


@pytest.fixture
def lookups(spark, fresh_db):
    spark.sql(f"CREATE TABLE orders (id INT, cust INT, amount INT, pt TIMESTAMP) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE customers (cid INT, region STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO customers VALUES (1, 'north'), (2, 'south'), (2, 'south')")
    spark.sql(
        "INSERT INTO orders VALUES (1, 1, 10, now()), (2, 2, 20, now()), "
        "(3, 3, 30, now()), (4, NULL, 40, now())"
    )
    for name, sql in VIEWS.items():
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    definition = Definition()
    definition.refreshed(*contents(spark))
    return definition


FACT_CHANGES = [
    "INSERT INTO orders VALUES (5, 1, 50, now()), (1, 1, 10, now())",  # a new one, a repeat
    "DELETE FROM orders WHERE id = 2",
    "UPDATE orders SET cust = 2 WHERE id = 3",  # a new value: enriched now
    "UPDATE orders SET amount = amount WHERE id = 1",  # no change
    "INSERT INTO orders VALUES (2, 2, 20, now())",  # back after a refresh without it
    "DELETE FROM orders WHERE id = 1 AND cust = 1",
]
DIMENSION_CHANGES = [
    "UPDATE customers SET region = 'east' WHERE cid = 1",
    "INSERT INTO customers VALUES (3, 'west')",
    "DELETE FROM customers WHERE cid = 2",
    "INSERT INTO customers VALUES (2, 'mid'), (NULL, 'none')",
]


DRAWN = max(1, settings().max_examples // 20)
"""Drawn batches beyond the written example: one in the ``ci`` profile, other ones every run,
2 in ``deep``."""


@settings(
    max_examples=DRAWN, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(
    batches=[
        [DIMENSION_CHANGES[0], FACT_CHANGES[0]],
        [FACT_CHANGES[1], FACT_CHANGES[2]],
        [DIMENSION_CHANGES[1], DIMENSION_CHANGES[2]],
        [FACT_CHANGES[4], FACT_CHANGES[3]],
        [DIMENSION_CHANGES[3], FACT_CHANGES[5]],
    ]
)
@given(
    batches=st.lists(
        st.lists(st.sampled_from(FACT_CHANGES + DIMENSION_CHANGES), max_size=3),
        min_size=1,
        max_size=4,
    )
)
def test_each_fact_row_keeps_the_dimension_it_first_met(spark, lookups, batches):
    for batch in batches:
        for statement in batch:
            spark.sql(statement)
        check(spark, lookups)
    spark.sql("DELETE FROM orders WHERE id > 0")  # the views' rows go, whatever enriched them
    check(spark, lookups)


def test_a_full_refresh_enriches_every_row_anew_and_says_so(spark, lookups):
    spark.sql(DIMENSION_CHANGES[0])
    spark.sql(FACT_CHANGES[0])
    check(spark, lookups)
    assert ("north",) in {(r.region,) for r in spark.table("enriched").collect()}
    check(spark, lookups, full=True)
    assert "north" not in {r.region for r in spark.table("enriched").collect()}
    spark.sql(DIMENSION_CHANGES[2])
    spark.sql(FACT_CHANGES[1])
    check(spark, lookups)


def test_a_lookup_view_says_what_it_equals_and_is_not_verified_as_a_query(spark, lookups):
    described = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW enriched").collect())
    assert "first consumed" in described["semantics"]
    assert "first consumed" in ivm.compile(INNER, spark=spark).explain()
    with pytest.raises(StateError, match="lookup join"):
        verify(spark, "enriched")
