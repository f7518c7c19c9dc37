"""The query generator of :mod:`strategies`, tested without Spark.

Every drawn query compiles against the source schemas, every construct it claims to use shows
in its SQL, and each construct of the grammar (:data:`strategies.CONSTRUCTS`) is drawn.
"""

import re

import pytest
from hypothesis import Phase, event, find, given, settings

import ivm
from strategies import CONSTRUCTS, SCHEMAS, drawn_queries

pytestmark = pytest.mark.fast

SCHEMA = {table: dict(columns) for table, columns in SCHEMAS.items()}


@settings(max_examples=settings().max_examples * 20)
@given(query=drawn_queries())
def test_drawn_queries_compile(query):
    for construct in sorted(query.constructs):
        event(construct)
        pattern = CONSTRUCTS[construct]
        assert pattern is None or re.search(pattern, query.sql), (construct, query.sql)
    ivm.compile(query.sql, schema=SCHEMA)


@pytest.mark.parametrize("construct", sorted(CONSTRUCTS))
def test_generator_draws(construct):
    """A query using ``construct`` turns up among a few thousand drawn ones, and compiles."""
    query = find(drawn_queries(), lambda q: construct in q.constructs,
                 settings=settings(max_examples=3000, phases=(Phase.generate,), database=None))
    ivm.compile(query.sql, schema=SCHEMA)


@pytest.mark.parametrize("condition", ["k > 0", "a > 0"])
def test_sum_filter_compiles(condition):
    """``SUM(a) FILTER (WHERE …)``: the FILTER clause once, on the aggregate only (its
    condition may read a column that is not grouped)."""
    sql = f"SELECT k, SUM(a) FILTER (WHERE {condition}) AS n FROM r GROUP BY k"
    compiled = ivm.compile(sql, schema=SCHEMA)
    for generated in (compiled.full_sql, compiled.delta_sql):
        assert generated.count("FILTER") == len(re.findall(r"SUM\(r\.a\) FILTER", generated)), \
            generated
