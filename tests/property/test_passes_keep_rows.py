"""The passes rewrite a plan into an equal one, and the plan as lowered means the view's SQL:
checked in-process, without Spark.

For each view of :mod:`views` and each query the generator draws, over drawn source rows, the
plan as lowered and the plan the passes leave (:func:`ivm.passes.optimize`) must both give
the rows of the view's own SQL (:func:`reference.check_passes`). DuckDB runs all three, the
SQL translated by sqlglot. The identity of :mod:`test_rule_identity` alone cannot see a pass
that changes a view's rows: it holds for the changed view as well. Each test counts its
checks and fails if too few compared the plans with the SQL (``tests/conftest.py``).
"""

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from harness import definition, oracle
from reference import FAST, check_passes
from strategies import SCHEMAS, drawn_queries, table_rows
from views import FAMILIES

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
