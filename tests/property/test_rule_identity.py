"""The fast tier: every view kept by ivm checked against its own SQL, and every rule's
incremental form, in-process without Spark.

For each view of :mod:`views` and each query the generator draws, and for source rows before
and after a drawn change, folding the delta query's rows into the store computed before the
change must give the store computed after it, and the view must show the rows of its own SQL
before the change and after it (:func:`reference.check_identity`); so must the view of a
logged store, the change appended to the store before it, folded on read and once its log is
folded in. DuckDB runs both, the SQL
translated by sqlglot, so a rule or lowering bug shows here in milliseconds; Spark, Delta and
the MERGE stay checked end to end by :mod:`test_refresh_equals_recompute`. Each test counts
its checks and fails if too few compared the view with its SQL (``tests/conftest.py``).
``make test-fast`` runs this tier alone.
"""

from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from tests.property.harness import definition, oracle
from tests.property.reference import FAST, check_identity
from tests.property.strategies import SCHEMAS, drawn_queries, table_rows
from tests.property.views import FAMILIES

pytestmark = pytest.mark.fast


@st.composite
def changes(draw) -> tuple[dict, dict]:
    """Rows of every source before and after a change: some rows deleted, others inserted
    (an update is both), some repeated; in a third of the changes, rows inserted only (an
    append table's, which views fold by the rules for inserted rows); a third of the tables
    not changed at all (a refresh then leaves out the terms of their change)."""
    before = {table: draw(table_rows(table)) for table in SCHEMAS}
    appends = draw(st.integers(0, 2)) == 0
    after = {
        table: rows
        if draw(st.integers(0, 2)) == 0
        else [row for row in rows if appends or draw(st.booleans())] + draw(table_rows(table))
        for table, rows in before.items()
    }
    return before, after


def assert_identity(
    tally, name: str, sql: str, before: dict, after: dict, original: str | None = None
) -> None:
    outcome = check_identity(sql, SCHEMAS, before, after, original)
    tally.record(outcome)
    event(outcome.how)
    event(outcome.comparison)
    if not outcome.holds:
        note(f"before: {before}\nafter: {after}")
    assert outcome.holds, f"{name}: {outcome.describe()}"


def assert_compared(
    tally, sql: str, before: dict, after: dict, original: str | None = None
) -> None:
    """A fixed example: the identity holds, and the view was compared with its SQL."""
    outcome = check_identity(sql, SCHEMAS, before, after, original)
    tally.record(outcome)
    assert outcome.holds and outcome.compared, outcome.describe()


@pytest.mark.parametrize("family", sorted(FAMILIES))
# a family's every example checks all its views: a quarter of the examples
@settings(max_examples=settings().max_examples * FAST // 4)
@given(change=changes())
def test_the_views_fold_to_their_recomputation(tally, family, change):
    before, after = change
    for name, view in FAMILIES[family].items():
        assert_identity(tally, name, definition(view), before, after, oracle(view))


@settings(max_examples=settings().max_examples * FAST)
@given(query=drawn_queries(), change=changes())
def test_drawn_queries_fold_to_their_recomputation(tally, query, change):
    assert_identity(tally, query.sql, query.sql, *change)


def test_an_average_on_a_rounding_boundary_is_compared_as_the_same_number(tally):
    """DuckDB averages a decimal as a double, and the view computes it from its store's sum and
    count: the two may differ in the last bit. 123456.0359259 / 6 is 20576.00598765, on
    the boundary of rounding to 12 digits, where one side rounds up and the other down."""
    rows = [
        (0, -1, Decimal(b), "it's", 1e16)
        for b in ("0.12345678", "0.12345678", "-1.5", "-1.5", "2", "123456.78901234")
    ]
    before = {"r": rows, "s": [], "t": []}
    after = {"r": [*rows, rows[0]], "s": [], "t": []}
    sql = (
        "SELECT k, s, grouping(s) AS s_total, grouping_id() AS level, COUNT(*) AS n, "
        "SUM(a) AS sum_a, AVG(b) AS avg_b FROM r GROUP BY ROLLUP(k, s)"
    )
    assert_compared(tally, sql, before, after)


def test_a_float_sum_is_retracted_as_the_store_holds_it(tally):
    """A SUM of DOUBLEs depends on the order its rows are added in: 1e16 + 1.0 + 1e16 + 1.0
    is not 1e16 + 1e16 + 1.0 + 1.0. The query that stored the group and the one that
    recomputed it before the change added the join's six rows in different orders; retracting
    the recomputed value matched no stored row, and the refresh failed on a negative count.
    The view's change retracts the stored row itself (:mod:`ivm.rules.replace`)."""
    order = datetime(2024, 1, 1, 23, 30)
    before = {
        "r": [(1, -1, Decimal("0.12345678"), "it's", rate) for rate in (1e16, 1.0)],
        "s": [(1, 1, 'dq"x', order, ())] * 3,
        "t": [(1, -1, Decimal("0.123456789012345678"), Decimal(10) ** 30)],
    }
    after = {"r": [], "s": [], "t": []}
    view = FAMILIES["joins"]["join3_by_d"]
    assert_compared(tally, definition(view), before, after, oracle(view))


def test_a_float_sum_under_a_join_is_read_as_its_state_table_stored_it(tally):
    """1.0 + 1.0 + 1e16 is not 1e16 + 1.0 + 1.0. A join reads the per-key sums; recomputed
    over the input before the change, key 0's sum is not the one the stored joined row holds
    (the store was written from the rows in reverse order), and retracting it fails. The
    sums are a state table of the view, whose stored rows the join reads."""
    order = datetime(2024, 1, 1, 23, 30)
    rows = [(0, -1, Decimal(0), "x", rate) for rate in (1.0, 1.0, 1e16)]
    before = {"r": rows, "s": [(0, 0, "d", order, ())], "t": []}
    after = {"r": rows, "s": [], "t": []}
    sql = (
        "SELECT s.d, q.total FROM s JOIN "
        "(SELECT k, SUM(Rate) AS total FROM r GROUP BY k) q ON s.k = q.k"
    )
    assert_compared(tally, sql, before, after)
