"""The query generator of :mod:`strategies`, tested without Spark.

Every drawn query compiles against the source schemas, every construct it claims to use shows
in its SQL, and each construct of the grammar (:data:`strategies.CONSTRUCTS`) is drawn. A
query that Spark cannot run as written (QUALIFY, a lookup join) carries an oracle Spark runs,
which compiles too; lookup joins are drawn only when asked for.
"""

import re
from contextlib import suppress

import pytest
from hypothesis import Phase, event, find, given, settings
from hypothesis.errors import NoSuchExample

import ivm
from tests.property.strategies import CONSTRUCTS, LOOKUP_CONSTRUCTS, SCHEMAS, Query, drawn_queries
from tests.support.duck import assert_maintained

pytestmark = pytest.mark.fast

SCHEMA = {table: dict(columns) for table, columns in SCHEMAS.items()}

NOT_SPARK = re.compile(r"\bQUALIFY\b|\bFOR SYSTEM_TIME AS OF\b")
"""The SQL Spark does not run, which a drawn query's oracle replaces."""


def check_drawn(query: Query) -> None:
    for construct in sorted(query.constructs):
        pattern = CONSTRUCTS[construct]
        assert pattern is None or re.search(pattern, query.sql), (construct, query.sql)
    ivm.compile(query.sql, schema=SCHEMA)
    assert (query.oracle is not None) == bool(NOT_SPARK.search(query.sql)), query
    if query.oracle is not None:
        assert not NOT_SPARK.search(query.oracle), query.oracle
        ivm.compile(query.oracle, schema=SCHEMA)


@settings(max_examples=settings().max_examples * 10)
@given(query=drawn_queries())
def test_drawn_queries_compile(query):
    assert not query.constructs & LOOKUP_CONSTRUCTS, query.sql
    for construct in sorted(query.constructs):
        event(construct)
    check_drawn(query)


@settings(max_examples=settings().max_examples * 5)
@given(query=drawn_queries(lookups=True))
def test_drawn_queries_with_lookup_joins_compile(query):
    assert query.constructs & LOOKUP_CONSTRUCTS, query.sql
    check_drawn(query)


def first_uses(queries, constructs: set[str], draws: int = 3000) -> dict[str, Query]:
    """The first of at most ``draws`` queries drawn from ``queries`` to use each of
    ``constructs``, for those drawn."""
    found: dict[str, Query] = {}

    def every_one_found(query: Query) -> bool:
        for construct in query.constructs & constructs:
            found.setdefault(construct, query)
        return found.keys() >= constructs

    with suppress(NoSuchExample):
        find(
            queries,
            every_one_found,
            settings=settings(max_examples=draws, phases=(Phase.generate,), database=None),
        )
    return found


def test_generator_draws_every_construct():
    """Each construct of the grammar turns up among a few thousand drawn queries (a lookup
    join among those drawn with lookup joins), and the first query that uses it compiles."""
    found = first_uses(drawn_queries(), set(CONSTRUCTS) - LOOKUP_CONSTRUCTS) | first_uses(
        drawn_queries(lookups=True), set(LOOKUP_CONSTRUCTS)
    )
    assert found.keys() == CONSTRUCTS.keys(), sorted(CONSTRUCTS.keys() - found.keys())
    for query in {id(q): q for q in found.values()}.values():
        check_drawn(query)


@pytest.mark.parametrize("condition", ["k > 0", "a > 0"])
def test_sum_filter_is_maintained(condition):
    """``SUM(a) FILTER (WHERE …)`` shows what its SQL shows, before and after a change, the
    change folded in giving the store anew; its condition may read a column that is not
    grouped (``a``), and rows of a group that all fail it give NULL, not 0."""
    sql = f"SELECT k, SUM(a) FILTER (WHERE {condition}) AS n FROM r GROUP BY k"
    schema = {"r": SCHEMAS["r"]}
    before = {
        "r": [
            (1, 5, None, "x", 1.0),
            (1, -2, None, "y", 1.0),
            (-1, 3, None, "z", 1.0),
            (2, -4, None, "w", 1.0),
        ]
    }
    after = {
        "r": [
            (1, -2, None, "y", 1.0),
            (-1, 3, None, "z", 1.0),
            (2, -4, None, "w", 1.0),
            (2, 7, None, "v", 1.0),
            (3, -1, None, "u", 1.0),
        ]
    }
    assert_maintained(sql, schema, before, after)
