"""The passes between lowering and the rules, on plans: where each filter ends up.

That the rewritten plans give the rows the lowered ones give is checked over drawn data by
``tests/property/test_passes_keep_rows.py``; here, what moves and what must stay.
"""

import pytest
from sqlglot import exp

import ivm
from ivm.ir import (
    Aggregate,
    Filter,
    Join,
    JoinKind,
    Project,
    Restrict,
    Scan,
    Subquery,
    Union,
    Window,
    scans,
)
from ivm.passes import PASSES, join_on_equalities, optimize
from ivm.passes.pushdown import push_down_predicates
from ivm.rules import differentiate
from ivm.zset import Read
from tests.support.duck import query_rows, view_rows

pytestmark = pytest.mark.fast

SCHEMA = {
    "orders": {
        "id": "INT",
        "cust_id": "INT",
        "amount": "DECIMAL(10,2)",
        "status": "STRING",
        "weight": "DOUBLE",
    },
    "customers": {"id": "INT", "region": "STRING", "nation_id": "INT"},
    "nations": {"id": "INT", "name": "STRING"},
}


def plan_of(sql: str):
    """The view's plan under its final projection."""
    plan = ivm.compile(sql, SCHEMA).plan
    assert isinstance(plan, Project)
    return plan.input


def filters(node) -> dict[str, str]:
    """alias → the predicate filtering that input of a join ('' where none does)."""
    return {
        scans(x)[0].alias: x.predicate.sql() if isinstance(x, Filter) else "" for x in node.inputs
    }


def test_a_where_over_a_join_filters_the_input_it_reads():
    join = plan_of(
        "SELECT c.region, o.amount FROM orders o JOIN customers c "
        "ON o.cust_id = c.id WHERE o.status <> 'void'"
    )
    assert isinstance(join, Join) and join.condition.sql() == "o.cust_id = c.id"
    assert filters(join) == {"o": "o.status <> 'void'", "c": ""}


def test_a_change_the_filter_drops_gives_no_keys_to_read_the_other_input_at():
    join = plan_of(
        "SELECT c.region, o.amount FROM orders o JOIN customers c "
        "ON o.cust_id = c.id WHERE o.status <> 'void'"
    )
    change_of_orders, change_of_customers = differentiate(join).inputs
    # Δo ⋈ (c'⋉K − Δc): the keys K are those of Δo's rows that pass the filter
    orders, before = change_of_orders.inputs
    assert isinstance(orders, Filter) and orders.input.read is Read.DELTA
    customers = before.input.inputs[0].input  # c', out of c' − Δc
    assert isinstance(customers, Restrict) and customers.input.read is Read.AFTER
    (keys,) = customers.affected.input.inputs
    assert isinstance(keys.input, Filter) and keys.input.input.read is Read.DELTA
    # o'⋉K ⋈ Δc: the snapshot of orders is filtered, then restricted to the change's keys
    snapshot = change_of_customers.inputs[0]
    assert isinstance(snapshot, Restrict) and isinstance(snapshot.input, Filter)
    assert snapshot.input.input.read is Read.AFTER


def test_an_inner_joins_on_gives_its_single_input_conjuncts_to_the_inputs():
    join = plan_of(
        "SELECT o.id FROM orders o JOIN customers c "
        "ON o.cust_id = c.id AND c.region = 'eu' AND o.amount > c.nation_id"
    )
    assert join.condition.sql() == "o.cust_id = c.id AND o.amount > c.nation_id"
    assert filters(join) == {"o": "", "c": "c.region = 'eu'"}


def test_equalities_between_inputs_become_keys_the_rest_stays_above():
    plan = plan_of(
        "SELECT o.id FROM orders o, customers c, nations n WHERE o.cust_id = c.id "
        "AND c.nation_id = n.id AND n.name LIKE 'A%' AND o.amount > c.nation_id"
    )
    assert plan.predicate.sql() == "o.amount > c.nation_id"
    assert plan.input.condition.sql() == "o.cust_id = c.id AND c.nation_id = n.id"
    assert filters(plan.input) == {"o": "", "c": "", "n": "n.name LIKE 'A%'"}


@pytest.mark.parametrize(
    "sql, where, on, inputs",
    [
        # WHERE on the preserved input moves; on the NULL-padded one it decides on padded rows
        (
            "SELECT o.id FROM orders o LEFT JOIN customers c ON o.cust_id = c.id "
            "WHERE o.status = 'x' AND c.region = 'eu'",
            "c.region = 'eu'",
            "o.cust_id = c.id",
            {"o": "o.status = 'x'", "c": ""},
        ),
        # ON on the NULL-padded input moves; on the preserved one a failing row is still output
        (
            "SELECT o.id FROM orders o LEFT JOIN customers c "
            "ON o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x'",
            None,
            "o.cust_id = c.id AND o.status = 'x'",
            {"o": "", "c": "c.region = 'eu'"},
        ),
        (
            "SELECT o.id FROM orders o RIGHT JOIN customers c "
            "ON o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x' "
            "WHERE o.amount > 0 AND c.nation_id = 1",
            "o.amount > 0",
            "o.cust_id = c.id AND c.region = 'eu'",
            {"o": "o.status = 'x'", "c": "c.nation_id = 1"},
        ),
        # a FULL join pads both inputs: nothing moves
        (
            "SELECT o.id FROM orders o FULL JOIN customers c "
            "ON o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x' "
            "WHERE o.amount > 0 AND c.nation_id = 1",
            "o.amount > 0 AND c.nation_id = 1",
            "o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x'",
            {"o": "", "c": ""},
        ),
        # a semi join's ON keeps a left row only if it holds: it filters the left input too
        (
            "SELECT o.id FROM orders o LEFT SEMI JOIN customers c "
            "ON o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x' WHERE o.amount > 0",
            None,
            "o.cust_id = c.id",
            {"o": "o.status = 'x' AND o.amount > 0", "c": "c.region = 'eu'"},
        ),
        # an anti join outputs the left rows failing its ON: those stay
        (
            "SELECT o.id FROM orders o LEFT ANTI JOIN customers c "
            "ON o.cust_id = c.id AND c.region = 'eu' AND o.status = 'x' WHERE o.amount > 0",
            None,
            "o.cust_id = c.id AND o.status = 'x'",
            {"o": "o.amount > 0", "c": "c.region = 'eu'"},
        ),
        # an outer join keeps an ON to match rows by
        (
            "SELECT o.id FROM orders o LEFT JOIN customers c ON c.region = 'eu'",
            None,
            "c.region = 'eu'",
            {"o": "", "c": ""},
        ),
    ],
)
def test_outer_semi_and_anti_joins_move_only_what_keeps_their_rows(sql, where, on, inputs):
    plan = plan_of(sql)
    join = plan.input if isinstance(plan, Filter) else plan
    assert (plan.predicate.sql() if isinstance(plan, Filter) else None) == where
    assert join.condition.sql() == on
    assert filters(join) == inputs


def test_a_filter_of_the_padded_side_reaches_a_join_under_it():
    join = plan_of(
        "SELECT o.id FROM orders o JOIN customers c ON o.cust_id = c.id "
        "RIGHT JOIN nations n ON n.id = c.nation_id AND o.status = 'x' "
        "WHERE n.name = 'y'"
    )
    assert join.kind is JoinKind.RIGHT and join.condition.sql() == "n.id = c.nation_id"
    assert filters(join.inputs[0]) == {"o": "o.status = 'x'", "c": ""}
    assert join.inputs[1].predicate.sql() == "n.name = 'y'"


def test_through_a_derived_table_and_its_projection():
    plan = plan_of(
        "SELECT d.total FROM (SELECT o.cust_id AS who, o.amount * 2 AS total "
        "FROM orders o) d WHERE d.total > 10 AND d.who = 1"
    )
    assert isinstance(plan, Subquery) and isinstance(plan.input, Project)
    assert plan.input.input.predicate.sql() == "(o.amount * 2) > 10 AND o.cust_id = 1"


def test_through_a_grouping_only_what_reads_its_keys():
    plan = plan_of(
        "SELECT g.status, g.n FROM (SELECT status, cust_id, COUNT(*) AS n "
        "FROM orders GROUP BY status, cust_id) g "
        "WHERE g.status = 'x' AND g.n > 1 AND g.cust_id + g.n > 2"
    )
    # what reads a count filters the groups (a HAVING), in the derived table
    having = plan.input.input
    assert having.predicate.sql() == "_ivm_agg0 > 1 AND _ivm_key1 + _ivm_agg0 > 2"
    assert isinstance(having.input, Aggregate)
    assert having.input.input.predicate.sql() == "orders.status = 'x'"


def test_having_on_a_key_filters_the_rows_grouped():
    plan = plan_of(
        "SELECT status, SUM(amount) AS total FROM orders GROUP BY status "
        "HAVING status <> 'void' AND SUM(amount) > 0"
    )
    assert isinstance(plan, Filter) and "SUM" not in plan.predicate.sql()
    assert plan.input.input.predicate.sql() == "orders.status <> 'void'"


@pytest.mark.parametrize(
    "sql",
    [
        # a global aggregate has a row over no rows
        "SELECT g.n FROM (SELECT COUNT(*) AS n FROM orders) g WHERE g.n > 0",
        # a group of doubles holds 0.0 and -0.0 together, a predicate may tell them apart
        "SELECT g.w FROM (SELECT weight AS w, COUNT(*) AS n FROM orders GROUP BY weight) g "
        "WHERE CAST(g.w AS STRING) = '-0.0'",
    ],
)
def test_what_a_grouping_keeps_from_moving(sql):
    having = plan_of(sql).input.input
    assert isinstance(having, Filter) and isinstance(having.input, Aggregate)
    assert isinstance(having.input.input, Scan)


def test_through_a_window_only_what_reads_its_partition():
    plan = plan_of(
        "SELECT x.cust_id, x.rn FROM (SELECT cust_id, amount, ROW_NUMBER() OVER "
        "(PARTITION BY cust_id ORDER BY amount) AS rn FROM orders) x "
        "WHERE x.cust_id = 1 AND x.amount > 0 AND x.rn = 1"
    )
    above = plan.input.input
    assert above.predicate.sql() == "_ivm_c1 > 0 AND _ivm_win0 = 1"
    window = above.input
    assert isinstance(window, Window) and window.input.input.predicate.sql() == "orders.cust_id = 1"


def test_a_top_n_keeps_its_filters():
    plan = plan_of(
        "SELECT d.id FROM (SELECT id, amount FROM orders ORDER BY amount DESC "
        "LIMIT 3) d WHERE d.id > 5"
    )
    ranked = plan.input.input  # the rows numbered, then those up to 3
    assert ranked.predicate.sql() == "_ivm_rank <= 3 AND id > 5"
    assert isinstance(ranked.input, Window) and not ranked.input.partition


def test_into_every_branch_of_a_union_where_their_types_agree():
    plan = plan_of(
        "SELECT u.x FROM (SELECT status AS x, id AS y FROM orders UNION ALL "
        "SELECT region, nation_id FROM customers) u WHERE u.x = 'a' AND u.y > 1"
    )
    union = plan.input
    assert isinstance(union, Union)
    assert [f.predicate.sql() for f in (union.inputs[0].input, union.inputs[1].input.input)] == [
        "orders.status = 'a' AND orders.id > 1",
        "customers.region = 'a' AND customers.nation_id > 1",
    ]


@pytest.mark.parametrize(
    "branches",
    [
        # a decimal and an integer: the union casts the integer
        "SELECT amount AS x FROM orders UNION ALL SELECT nation_id FROM customers",
        # two decimals sqlglot types DECIMAL(10, 2), and Spark DECIMAL(21, 4) and (10, 2): the
        # union casts the second, and '1.00' becomes '1.0000'
        "SELECT amount * amount AS x FROM orders UNION ALL SELECT amount FROM orders",
    ],
)
def test_a_union_whose_branches_may_differ_in_type_keeps_its_filter(branches):
    plan = plan_of(f"SELECT u.x FROM ({branches}) u WHERE CAST(u.x AS STRING) = '1.00'")
    assert isinstance(plan, Subquery) and isinstance(plan.input, Filter)
    assert isinstance(plan.input.input, Union)


def test_stacked_filters_merge():
    t = Scan("t", "t", ("a", "b"))
    plan = Filter(Filter(t, exp.condition("t.a > 0")), exp.condition("t.b < 1"))
    assert push_down_predicates(plan) == Filter(t, exp.condition("t.a > 0 AND t.b < 1"))


def test_a_non_deterministic_conjunct_stays_and_so_does_one_reading_such_a_column():
    # lowering refuses rand(); a plan built otherwise keeps it where it was
    t, u = Scan("t", "t", ("a", "k")), Scan("u", "u", ("k",))
    join = Join((t, u), exp.condition("t.k = u.k"))
    plan = push_down_predicates(Filter(join, exp.condition("t.a > 0 AND rand() < t.a")))
    assert plan.predicate.sql() == "RAND() < t.a"
    assert plan.input.inputs[0].predicate.sql() == "t.a > 0"
    projected = Project(t, (("r", exp.condition("rand() * t.a")), ("a", exp.column("a", "t"))))
    plan = push_down_predicates(Filter(projected, exp.condition("r > 0 AND a > 0")))
    assert plan.predicate.sql() == "r > 0"
    assert plan.input.input.predicate.sql() == "t.a > 0"


def test_an_aggregate_or_a_subquery_in_a_conjunct_stays():
    t, u = Scan("t", "t", ("a", "k")), Scan("u", "u", ("k",))
    join = Join((t, u), exp.condition("t.k = u.k"))
    where = exp.condition("t.a IN (SELECT 1) AND SUM(t.a) > 0")
    assert push_down_predicates(Filter(join, where)) == Filter(join, where)


def test_pushing_down_first_lets_equalities_of_an_outer_where_join_the_inputs():
    plan = ivm.compile(
        "SELECT d.a FROM (SELECT o.id AS a, o.cust_id AS k, c.id AS cid "
        "FROM orders o, customers c) d WHERE d.k = d.cid",
        SCHEMA,
    ).plan
    join = plan.input.input.input
    assert isinstance(join, Join) and join.condition.sql() == "o.cust_id = c.id"
    assert PASSES.index(push_down_predicates) < PASSES.index(join_on_equalities)


def test_the_passes_change_nothing_the_second_time():
    sql = (
        "SELECT c.region, COUNT(*) AS n FROM orders o JOIN customers c ON o.cust_id = c.id "
        "AND c.region <> 'x' LEFT JOIN nations n ON n.id = c.nation_id AND n.name = 'y' "
        "WHERE o.status <> 'void' GROUP BY c.region HAVING c.region > 'a'"
    )
    plan = ivm.compile(sql, SCHEMA).plan
    assert optimize(plan) == plan


def test_a_filtered_input_in_any_position_reads_as_sql_spark_parses():
    from sqlglot import parse_one

    sql = (
        "SELECT o.id, n.name FROM orders o JOIN customers c ON o.cust_id = c.id "
        "AND c.region = 'eu' RIGHT JOIN nations n ON n.id = c.nation_id "
        "AND o.status = 'x' LEFT JOIN customers d ON d.nation_id = n.id "
        "AND d.region = 'us' WHERE n.name = 'y' AND o.amount > 0"
    )
    q = ivm.compile(sql, SCHEMA)
    for text in (q.full_sql, q.delta_sql):
        assert parse_one(text, read="spark") is not None
    # the filter of the join left of RIGHT JOIN applies before the padding: nation 2, whose
    # customer's order is not 'x', is padded (the WHERE on o would drop that row again)
    rows = {
        "orders": [(1, 1, 5, "x", 1.0), (2, 2, 5, "q", 1.0)],
        "customers": [(1, "eu", 1), (2, "eu", 2), (3, "us", 1)],
        "nations": [(1, "y"), (2, "y"), (3, "z")],
    }
    columns = {table: list(types.items()) for table, types in SCHEMA.items()}
    for padded in (sql, sql.replace(" AND o.amount > 0", "")):
        assert view_rows(padded, columns, rows) == query_rows(padded, columns, rows)
