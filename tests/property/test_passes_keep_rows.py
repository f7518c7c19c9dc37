"""The passes rewrite a plan into an equal one, and the plan as lowered means the view's SQL:
checked in-process, without Spark.

For each view of :mod:`views` and each query the generator draws, over drawn source rows, the
plan as lowered and the plan the passes leave (:func:`ivm.passes.optimize`) must both give
the rows of the view's own SQL (:func:`reference.check_passes`). DuckDB runs all three, the
SQL translated by sqlglot. The identity of :mod:`test_rule_identity` alone cannot see a pass
that changes a view's rows: it holds for the changed view as well. Each test counts its
checks and fails if too few compared the plans with the SQL (``tests/conftest.py``).
"""

from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from tests.property.harness import definition, oracle
from tests.property.reference import FAST, check_passes
from tests.property.strategies import SCHEMAS, drawn_queries, table_rows
from tests.property.views import FAMILIES

pytestmark = pytest.mark.fast


def sources():
    return st.fixed_dictionaries({table: table_rows(table) for table in SCHEMAS})


def assert_same_rows(tally, name: str, sql: str, rows: dict, original: str | None = None) -> None:
    outcome = check_passes(sql, SCHEMAS, rows, original)
    tally.record(outcome)
    event(outcome.how)
    event(outcome.comparison)
    if not outcome.holds:
        note(f"rows: {rows}")
    assert outcome.holds, f"{name}: {outcome.describe()}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
# an eighth of the examples for a family, half the identity's: a plan's rows depend on the
# data less than its fold does on the change
@settings(max_examples=settings().max_examples * FAST // 8)
@given(rows=sources())
def test_the_views_keep_their_rows(tally, family, rows):
    for name, view in FAMILIES[family].items():
        assert_same_rows(tally, name, definition(view), rows, oracle(view))


@settings(max_examples=settings().max_examples * FAST)
@given(query=drawn_queries(), rows=sources())
def test_drawn_queries_keep_their_rows(tally, query, rows):
    assert_same_rows(tally, query.sql, query.sql, rows)


def test_a_query_duckdb_cannot_run_is_not_compared_rather_than_failing():
    """Drawn by seed 20261201: ``x0 = -1000…0`` (31 digits) against a DECIMAL(38, 18)
    column. Spark compares the two as DECIMAL(38, 7) and finds no row; DuckDB cannot cast
    the literal to the column's type, in the SQL as in either plan, so the reference cannot
    say what the view holds: the check is not comparable (which the tally's floor of compared
    checks bounds), where it raised DuckDB's error."""
    sql = (
        "SELECT q1.x0 AS x0 FROM (SELECT DISTINCT q2.x - q2.`größe` AS x0 FROM t AS q2 "
        "INNER JOIN r AS q3 ON q2.c = q3.k) AS q1 INNER JOIN r AS q4 ON q1.x0 = q4.k "
        "WHERE (q1.x0 = 0.000000000000000001 OR q1.x0 = -1000000000000000010000000000000)"
    )
    r = [(k, -1, Decimal("0.12345678"), "it's", 1e16) for k in (0, 1)]
    s = [(0, 0, 'dq"x', datetime(2024, 1, 1, 23, 30), ())]
    rows = {"r": r, "s": s, "t": [(0, -1, Decimal("0.123456789012345678"), Decimal("0"))]}
    outcome = check_passes(sql, SCHEMAS, rows)
    assert outcome.holds and outcome.comparison.startswith("not comparable: DuckDB cannot run")
