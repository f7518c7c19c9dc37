"""Incremental refresh equals full recomputation, after every refresh.

Hypothesis draws small Delta sources (NULLs in every column, repeated rows, keys from
``{0, 1, 2, NULL}``) and 2-4 batches of INSERT / DELETE / UPDATE. After each batch every view
is refreshed and compared, as a multiset, with Spark running the view's own SQL on the current
sources; at the end every view is refreshed FULL and compared again.

Spark costs about a second per statement and a refresh several, so each example checks
several views over the same sources (a *family*, see :mod:`views`), and each test runs a
fraction of the profile's ``max_examples``. Under ``ci`` each family runs its hand-written
scenario only (``deep`` adds 10 drawn ones per family), and the drawn queries run over drawn
scenarios. Those queries come from a recursive grammar of the SQL ivm maintains
(:func:`strategies.queries`): joins of every kind, aggregates, DISTINCT and set operations
nested in derived tables and CTEs; the oracle is still Spark running the query as drawn.
"""

from decimal import Decimal

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from harness import run_scenario
from strategies import Scenario, queries, scenarios
from views import FAMILIES


def examples(share: int) -> dict:
    """Settings for ``1/share`` of the profile's ``max_examples``; where that is none, only
    the ``@example`` scenarios run (and failures Hypothesis saved from earlier runs)."""
    count = settings().max_examples // share
    return {"max_examples": count} if count else {"phases": (Phase.explicit, Phase.reuse)}


EDGE_CASES = Scenario(
    tables={
        "r": [(1, 2, Decimal("2.00"), "x"), (1, None, None, "x"), (1, 2, Decimal("2.00"), "x"),
              (None, 3, Decimal("-1.50"), None), (2, None, Decimal("0.25"), "")],
        "s": [(1, 0, "p"), (1, 1, None), (None, 1, "q"), (2, 2, "p")],
        "t": [],  # empty when the views are created
    },
    batches=[
        # a row inserted, changed and deleted in the batch; a join key changed; set to NULL
        ["INSERT INTO r VALUES (2, 99, 10.10, 'y')",
         "UPDATE r SET s = NULL WHERE a = 99",
         "DELETE FROM r WHERE a = 99",
         "UPDATE s SET k = 2 WHERE c = 1",
         "UPDATE r SET b = NULL WHERE k IS NULL",
         "INSERT INTO t VALUES (0, 1), (1, NULL), (1, 2), (NULL, 0)"],
        # everything deleted, then partly inserted again (with a duplicate)
        ["DELETE FROM r",
         "INSERT INTO r VALUES (1, 2, 2.00, 'x'), (1, 2, 2.00, 'x'), (0, NULL, NULL, NULL)"],
        # no change at all
        [],
        # an update that changes nothing; a group emptied; the other sources emptied
        ["UPDATE r SET a = a", "DELETE FROM r WHERE k = 1", "DELETE FROM s", "DELETE FROM t"],
    ],
)
"""A hand-written scenario through the classic traps of incremental maintenance."""

NULL_GROUPS = Scenario(
    tables={
        "r": [(None, None, None, None), (None, None, None, None), (0, None, Decimal("0.00"), "y")],
        "s": [(None, None, None), (0, None, "q")],
        "t": [(None, None)],
    },
    batches=[
        # groups whose aggregated column is all NULL gain and lose a value
        ["UPDATE r SET a = 1 WHERE k IS NULL", "INSERT INTO t VALUES (0, NULL)"],
        ["UPDATE r SET a = NULL", "UPDATE r SET k = 0 WHERE k IS NULL"],
    ],
)
"""NULL keys and all-NULL aggregate arguments, with no deletes."""


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(**examples(20))
@example(scenario=EDGE_CASES)
@given(scenario=scenarios())
def test_view_families_equal_recompute(spark, family, scenario):
    run_scenario(spark, scenario, FAMILIES[family])


@settings(**examples(5))
@example(scenario=NULL_GROUPS, drawn=[
    "SELECT r.k AS g0, COUNT(r.a) AS x0, SUM(r.a) AS x1, AVG(r.b) AS x2 FROM r GROUP BY r.k",
    "SELECT DISTINCT COALESCE(s.d, '-') AS x0 FROM r JOIN s ON r.k = s.k AND r.a IS NULL",
])
@given(scenario=scenarios(), drawn=st.lists(queries(), min_size=2, max_size=3, unique=True))
def test_drawn_queries_equal_recompute(spark, scenario, drawn):
    """Two or three drawn queries, each with up to five table reads, over drawn changes."""
    run_scenario(spark, scenario, {f"q{i}": sql for i, sql in enumerate(drawn)})
