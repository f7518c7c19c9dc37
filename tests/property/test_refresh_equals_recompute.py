"""Incremental refresh equals full recomputation, after every refresh.

Hypothesis draws small Delta sources (NULLs in every column, repeated rows, keys from
``{0, 1, 2, NULL}``, wide decimals, doubles with NaN and ±Infinity, timestamps) and 2-4
batches of INSERT / DELETE / UPDATE, now and then a source dropped and created again, mostly
one switch of the session time zone and one batch that changes a source's columns (see
also :mod:`test_schema_changes`). After each batch every view
is refreshed and compared, as a multiset, with Spark running the view's own SQL on the current
sources; at the end every view is refreshed FULL and compared again.

Spark costs about a second per statement and a refresh several, so each example checks
several views over the same sources, and each test runs a fraction of the profile's
``max_examples``. The hand-written scenario runs the views of every family (see :mod:`views`)
at once, and the drawn queries run over drawn scenarios. Those queries come from a recursive
grammar of the SQL ivm maintains (:func:`strategies.drawn_queries`): joins of every kind,
aggregates, DISTINCT, set operations, window functions, top-N per key and overall, QUALIFY
and subqueries, nested in derived tables and CTEs; the oracle is still Spark running the
query as drawn (where Spark does not run QUALIFY, the same query written without it). Drawn
queries with lookup joins run over scenarios that leave their dimension as it is, where a
lookup join equals an ordinary one. ``make test-integration`` (``slow``) runs those, and
families over a drawn scenario (a third of them each run, all in ``make test-deep``).
"""

import math
import os
from decimal import Decimal

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.property.harness import Approximate, Rewritten, View, run_scenario
from tests.property.strategies import (
    ANSI_OFF,
    TIMES,
    Query,
    Scenario,
    create_table,
    drawn_queries,
    scenarios,
    unchanging_dimension_scenarios,
)
from tests.property.views import FAMILIES

pytestmark = pytest.mark.long


def examples(share: int) -> dict:
    """Settings for ``1/share`` of the profile's ``max_examples``; where that is none, only
    the ``@example`` scenarios run (and failures Hypothesis saved from earlier runs)."""
    count = settings().max_examples // share
    return {"max_examples": count} if count else {"phases": (Phase.explicit, Phase.reuse)}


BIG = "90000000000000000000000000000000000000"
"""9·10³⁷: twice that does not fit DECIMAL(38,0)."""

EDGE_CASES = Scenario(
    tables={
        "r": [
            (1, 2, Decimal("2.00"), "x", 1e16),
            (1, 0, Decimal("0.12345678"), "x", 1.0),
            (1, 2, Decimal("2.00"), "x", 1e16),
            (None, 3, Decimal("-1.50"), None, -0.0),
            (2, None, Decimal("0.25"), "", math.nan),
            (0, 1, Decimal("2.00"), "it's", math.inf),
            (0, None, Decimal("123456.78901234"), "it's", 0.5),
        ],
        "s": [
            (1, 0, "p", TIMES[0], ("p", "q")),
            (1, 1, None, None, ()),
            (None, 1, 'dq"x', TIMES[1], None),
            (2, 2, "p", TIMES[2], ("q", None, "q")),
        ],
        "t": [],  # empty when the views are created
    },
    batches=[
        # a row inserted, changed and deleted in the batch; a join key changed; set to NULL;
        # a decimal's last digit of scale; doubles retracted: 1e16 next to 1.0, NaN, Infinity
        [
            "INSERT INTO r VALUES (2, 99, 10.10, 'y', 0.5)",
            "UPDATE r SET s = NULL WHERE a = 99",
            "DELETE FROM r WHERE a = 99",
            "UPDATE s SET k = 2 WHERE c = 1",
            "UPDATE r SET b = NULL WHERE k IS NULL",
            "INSERT INTO r VALUES (1, 0, 0.00000001, 'x', 1.0)",
            "DELETE FROM r WHERE Rate > 1e15 OR isnan(Rate)",
            "INSERT INTO t VALUES (0, 1, 0.123456789012345678, -" + BIG + "), "
            "(1, NULL, 0.000000000000000001, 1), (1, 2, -9999999999999.999999999999999999, NULL), "
            "(NULL, 0, NULL, 0)",
        ],
        # refreshed under another time zone from here on; everything deleted, then partly
        # inserted again (with a duplicate); timestamps near midnight inserted and moved; a
        # change whose own sum overflows DECIMAL(38,0) (-9e37 becomes 9e37)
        [
            "SET TIME ZONE 'Asia/Kolkata'",
            "DELETE FROM r",
            "INSERT INTO r VALUES (1, 2, 2.00, 'x', 1.0), (1, 2, 2.00, 'x', 1.0), "
            "(0, NULL, NULL, NULL, NULL)",
            "INSERT INTO s VALUES (0, 2, 'q', TIMESTAMP '2024-01-01 20:00:00', array('q'))",
            "UPDATE s SET tags = array_union(tags, array('p')) WHERE c = 1",
            "UPDATE s SET `order` = `order` + INTERVAL 1 HOUR WHERE k = 1",
            "UPDATE t SET `größe` = " + BIG + " WHERE `größe` < 0",
        ],
        # no change at all
        [],
        # an update that changes nothing; a group emptied; a source emptied; t dropped and
        # created again, back at the version the views consumed last, with other rows
        [
            "UPDATE r SET a = a",
            "DELETE FROM r WHERE k = 1",
            "DELETE FROM s",
            "DROP TABLE t",
            create_table("t"),
            "INSERT INTO t VALUES (1, 2, 0.5, 7), (2, 1, NULL, NULL)",
            "INSERT INTO t VALUES (NULL, 1, 1.25, 3)",
        ],
    ],
)
"""A hand-written scenario through the classic traps of incremental maintenance, and through
each way a view has been found to drift silently: decimal scale and overflow, doubles that do
not retract, a source replaced under its name, refreshes under another session time zone (and,
through :mod:`views`, names in other cases and backticks, string literals with escapes)."""

NULL_GROUPS = Scenario(
    tables={
        "r": [
            (None, None, None, None, None),
            (None, None, None, None, None),
            (0, None, Decimal("0.00"), "y", 1e16),
        ],
        "s": [(None, None, None, None, None), (0, None, "q", TIMES[0], (None,))],
        "t": [(None, None, None, None)],
    },
    batches=[
        # groups whose aggregated column is all NULL gain and lose a value
        [
            "UPDATE r SET a = 1 WHERE k IS NULL",
            "INSERT INTO t VALUES (0, NULL, 0.000000000000000001, 1), (0, 1, NULL, -" + BIG + ")",
        ],
        # under another time zone: doubles 1.0 join 1e16, which leaves; timestamps move; a
        # change whose own sum overflows DECIMAL(38,0), which gives NULL without ANSI mode
        [
            "SET TIME ZONE 'America/Los_Angeles'",
            "UPDATE r SET a = NULL",
            "UPDATE r SET k = 0 WHERE k IS NULL",
            "UPDATE r SET Rate = 1.0 WHERE Rate IS NULL",
            "UPDATE r SET Rate = 0.5 WHERE Rate > 1.0",
            "UPDATE s SET `order` = `order` + INTERVAL 1 HOUR",
            "UPDATE t SET `größe` = " + BIG + " WHERE `größe` < 0",
        ],
    ],
    settings=ANSI_OFF,
)
"""NULL keys and all-NULL aggregate arguments, with no deletes, in views created with ANSI mode
off (an overflow gives NULL rather than failing)."""


APPENDED = Scenario(
    tables={
        "r": [
            (1, 2, Decimal("2.00"), "x", 1.0),
            (1, 2, Decimal("2.00"), "x", 1.0),
            (None, 3, None, None, None),
            (2, None, Decimal("0.25"), "", 0.5),
        ],
        "s": [],
        "t": [(0, 1, Decimal("0.5"), 1)],
    },
    batches=[
        # inserts only, in several commits of two sources: rows that lose to the stored ones
        # (k 1, NULL; the low of t), a new best twice over (k 2), ties, NULL keys and values,
        # new keys
        [
            "INSERT INTO r VALUES (1, 0, 0.00000001, 'a', 1e16), (NULL, 1, NULL, NULL, NULL), "
            "(3, -1, 0.5, 'x', 1.0), (2, 7, 0.25, '', 0.5), (2, 7, 0.25, '', 0.5)",
            "INSERT INTO r VALUES (5, 1, 1.5, 'z', 2.0), (1, 2, 2.00, 'x', 1.0)",
            "INSERT INTO t VALUES (2, 7, 1.0, 1), (NULL, NULL, NULL, NULL)",
        ],
        # the stored bests deleted: the next refresh reads the source
        ["DELETE FROM r WHERE a = 7", "UPDATE t SET e = -e"],
        # inserts only again, after a refresh that was not
        [
            "INSERT INTO r VALUES (1, -5, 4.0, 'w', 4.0), (4, 3, 3.0, 'v', 3.0), "
            "(NULL, 0, 1.0, 'n', 0.0)",
            "INSERT INTO t VALUES (3, -9, 0.1, 2)",
        ],
    ],
)
"""Changes that insert rows only (an append table), which views whose rules allow it fold into
their own rows (:mod:`ivm.rules.append`), between them a change that does not."""

APPENDED_VIEWS = ("latest", "lowest_two", "top3", "global_max", "min_max_counted")
"""Views of each kind the rules for inserted rows apply to (:data:`EDGE_CASES` runs them, and
every other, under changes that remove rows)."""


def test_appends_equal_recompute(spark):
    """:data:`APPENDED` over views the rules for inserted rows maintain."""
    views = {name: view for family in FAMILIES.values() for name, view in family.items()}
    run_scenario(spark, APPENDED, {name: views[name] for name in APPENDED_VIEWS}, log=print)


EDGE_CASE_GROUPS = (
    ("rows", "joins", "aggregates", "pushed_filters", "subqueries", "arrays", "set_operations"),
    ("keyed_joins", "keyed_aggregates", "nested", "windows", "grouping_sets"),
)
"""The view families :data:`EDGE_CASES` runs, in two groups that take about as long: each
group one test, which the two test workers share (``tests/conftest.py``); one scenario of all
71 views was a third of ``make test`` on one worker. Each group pays the scenario's own
statements (about 20 Delta writes), so there are no more groups than workers."""


def test_edge_case_groups_hold_every_family():
    assert sorted(family for group in EDGE_CASE_GROUPS for family in group) == sorted(FAMILIES)


EDGE_CASE_TURNS = 2
"""A run given a seed under the ``ci`` profile runs every second view of each group over
:data:`EDGE_CASES`, the half the seed picks (every family keeps views in each half); every
view still runs in the fast tier's reference check, every run. The whole of both groups was a
third of CI's time, and took it near its limit."""


def views_of_this_run(config, views: dict) -> dict:
    """The ``views`` (by name) that run over :data:`EDGE_CASES` in this run (see
    :data:`EDGE_CASE_TURNS`): under the ``ci`` profile and a seed, every second in name
    order, from the seed's turn; otherwise all of them."""
    seed = config.getoption("hypothesis_seed", None)
    if seed is None or os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci":
        return views
    names = sorted(views)[int(seed) % EDGE_CASE_TURNS :: EDGE_CASE_TURNS]
    return {name: views[name] for name in names}


@pytest.mark.parametrize("families", EDGE_CASE_GROUPS, ids="+".join)
def test_edge_cases_equal_recompute(spark, families, request):
    """The views of ``families`` over :data:`EDGE_CASES`, all at once: one set of sources and
    changes for all of them (half of them in a CI run: :func:`views_of_this_run`)."""
    views = {name: view for family in families for name, view in FAMILIES[family].items()}
    run_scenario(spark, EDGE_CASES, views_of_this_run(request.config, views), log=print)


FAMILY_BATCHES = 3
"""At most this many batches in a family's drawn scenario, and in the lookup joins'."""

FAMILY_TURNS = 3
"""A run given a seed under the ``ci`` profile draws scenarios for a third of the families,
the third the seed picks; every family's views still run through :data:`EDGE_CASES`. The 12
families' scenarios were a quarter of ``make test-integration`` and took CI past its limit."""


def families_of_this_run(config) -> list[str]:
    """The families whose views run over a drawn scenario in this run: under the ``ci``
    profile and a seed (as the Makefile's targets give), every :data:`FAMILY_TURNS`-th, from
    the seed on (each worker picks the same); otherwise all of them."""
    families = sorted(FAMILIES)
    seed = config.getoption("hypothesis_seed", None)
    if seed is None or os.environ.get("HYPOTHESIS_PROFILE", "ci") != "ci":
        return families
    return families[int(seed) % FAMILY_TURNS :: FAMILY_TURNS]


def pytest_generate_tests(metafunc):
    if metafunc.definition.name == "test_view_families_equal_recompute":
        metafunc.parametrize("family", families_of_this_run(metafunc.config))


@pytest.mark.slow
@settings(max_examples=max(1, settings().max_examples // 20))
@given(scenario=scenarios(max_batches=FAMILY_BATCHES))
def test_view_families_equal_recompute(spark, family, scenario):
    """Families over a drawn scenario each (:func:`families_of_this_run`), another each run (2
    in ``make test-deep``)."""
    run_scenario(spark, scenario, FAMILIES[family])


def as_view(query: Query) -> View:
    """A drawn query as the harness checks it: against its oracle where Spark does not run
    it as written, its float aggregates within a tolerance."""
    if query.oracle is not None:
        return Rewritten(query.sql, query.oracle)
    return Approximate(query.sql, query.approximate) if query.approximate else query.sql


def checkable(query: Query) -> bool:
    """The harness compares a view with an oracle of its own exactly: no float aggregate."""
    return query.oracle is None or not query.approximate


@settings(**examples(5))
@example(
    scenario=NULL_GROUPS,
    drawn=[
        Approximate(
            "SELECT r.k AS g0, COUNT(r.a) AS x0, SUM(r.a) AS x1, AVG(r.b) AS x2, "
            "SUM(r.Rate) AS x3 FROM r GROUP BY r.k",
            ("x3",),
        ),
        "SELECT DISTINCT COALESCE(s.d, '-') AS x0, hour(s.`order`) AS x1 FROM r JOIN s "
        "ON r.k = s.k AND r.a IS NULL WHERE s.d <> \"dq\\\"x\" OR r.s = 'it\\'s'",
        "SELECT q1.c AS x0, SUM(q1.x) AS x1, COUNT(q1.x) AS x2, SUM(q1.`größe`) AS x3 FROM t AS q1 "
        "GROUP BY q1.c",
    ],
)
@given(
    scenario=scenarios(),
    drawn=st.lists(
        drawn_queries().filter(checkable).map(as_view),
        min_size=2,
        max_size=3,
        unique_by=lambda view: getattr(view, "definition", view),
    ),
)
def test_drawn_queries_equal_recompute(spark, scenario, drawn):
    """Two or three drawn queries, each with up to five table reads, over drawn changes."""
    run_scenario(spark, scenario, {f"q{i}": sql for i, sql in enumerate(drawn)})


@pytest.mark.slow
@settings(max_examples=max(1, settings().max_examples // 15))
@given(
    scenario=unchanging_dimension_scenarios(max_batches=FAMILY_BATCHES),
    drawn=st.lists(
        drawn_queries(lookups=True).filter(checkable).map(as_view),
        min_size=2,
        max_size=3,
        unique_by=lambda view: getattr(view, "definition", view),
    ),
)
def test_drawn_lookup_queries_equal_recompute(spark, scenario, drawn):
    """Drawn queries with lookup joins over drawn changes of r and s, one example a run (two
    in ``make test-deep``): t, the lookup joins' dimension, stays as created, so each fact row
    meets what it would meet now, and the oracle is the query with ordinary joins
    (``tests/rules/test_lookup_join.py`` checks what a change of the dimension does)."""
    run_scenario(spark, scenario, {f"q{i}": sql for i, sql in enumerate(drawn)})
