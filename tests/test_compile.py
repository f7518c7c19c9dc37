"""The compiler without Spark: plans, rules, generated SQL and store layouts."""

import pytest
from sqlglot import exp, parse_one

import ivm
from ivm.ir import Join, JoinKind, Scan, Subquery, aliases_of, scans
from ivm.rules import differentiate
from ivm.rules.base import weight_of
from ivm.rules.unchanged import is_empty
from ivm.zset import COUNT, WEIGHT, Read
from tests.support.duck import assert_maintained, query_rows, view_rows

pytestmark = pytest.mark.fast

SCHEMA = {
    "orders": {"id": "INT", "cust_id": "INT", "amount": "DECIMAL(10,2)", "status": "STRING"},
    "customers": {"id": "INT", "region": "STRING", "nation_id": "INT"},
    "nations": {"id": "INT", "name": "STRING"},
}
SALES = (
    "SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total "
    "FROM orders o JOIN customers c ON o.cust_id = c.id "
    "WHERE o.status <> 'void' GROUP BY c.region"
)
COLUMNS = {table: list(columns.items()) for table, columns in SCHEMA.items()}
""":data:`SCHEMA` as :mod:`duck` takes it."""


def reads(term):
    """alias → read of each input of a join term, "⋉" marking a snapshot restricted to the
    change's keys, "−Δ" an input read before the change as its snapshot after it minus its
    change."""

    def read(x):
        if isinstance(x, Scan):
            return x.read.value
        if isinstance(x, Subquery):  # x' − Δx: (x', weight 1) ∪ (Δx, weight negated)
            after, minus = (branch.input for branch in x.input.inputs)
            assert minus.read is Read.DELTA
            return f"{read(after)}−Δ"
        return f"{x.input.read.value}⋉"

    return {aliases_of(x)[0]: read(x) for x in term.inputs}


@pytest.mark.parametrize(
    "joined",
    [
        "orders o JOIN customers c ON o.cust_id = c.id JOIN nations n ON c.nation_id = n.id",
        "orders o, customers c, nations n WHERE o.cust_id = c.id AND c.nation_id = n.id",
    ],
)
def test_join_delta_telescopes_one_term_per_input_reading_neighbours_at_its_keys(joined):
    q = ivm.compile(f"SELECT o.id, n.name FROM {joined}", SCHEMA)
    terms = differentiate(q.plan.input).inputs
    # a snapshot is restricted where an equality relates it to the term's change
    # a table is read before the change as after it minus its change: one version per table
    assert [reads(t) for t in terms] == [
        {"o": "delta", "c": "after⋉−Δ", "n": "after−Δ"},
        {"o": "after⋉", "c": "delta", "n": "after⋉−Δ"},
        {"o": "after", "c": "after⋉", "n": "delta"},
    ]
    restricted = terms[1].inputs[2].input.inputs[0].input
    assert [k.sql() for k in restricted.keys] == ["n.id"]
    (key_of_change,) = restricted.affected.input.inputs[0].columns
    assert key_of_change[1].sql() == "c.nation_id"


def test_where_equalities_between_join_inputs_join_them_the_rest_filters():
    q = ivm.compile(
        "SELECT o.id FROM orders o, customers c "
        "WHERE o.cust_id = c.id AND o.amount > c.nation_id AND o.status = 'ok'",
        SCHEMA,
    )
    assert q.plan.input.predicate.sql() == "o.amount > c.nation_id"
    assert q.plan.input.input.condition.sql() == "o.cust_id = c.id"
    # what reads one input filters it (ivm.passes.pushdown)
    assert q.plan.input.input.inputs[0].predicate.sql() == "o.status = 'ok'"


def test_weight_of_a_join_term_multiplies_only_changes():
    term = Join(
        (
            Scan("r", "r", ("k",), Read.DELTA),
            Scan("s", "s", ("k",), Read.DELTA),
            Scan("t", "t", ("k",), Read.BEFORE),
        )
    )
    assert weight_of(term).sql() == f"r.{WEIGHT} * s.{WEIGHT}"


def test_every_delta_term_reads_a_change():
    q = ivm.compile(SALES, SCHEMA)
    for term in differentiate(q.plan.input.input).inputs:
        assert any(s.read is Read.DELTA for s in scans(term))


def test_a_refresh_of_one_sources_change_runs_the_terms_of_that_change_alone():
    q = ivm.compile(
        "SELECT n.name, SUM(o.amount) AS total FROM orders o JOIN customers c "
        "ON o.cust_id = c.id JOIN nations n ON c.nation_id = n.id GROUP BY n.name",
        SCHEMA,
    )

    def changes(compiled):
        return {s.table for s in scans(compiled.maintenance.delta) if s.read is Read.DELTA}

    assert changes(q) == {"orders", "customers", "nations"}
    assert changes(q.changed_only(["orders"])) == {"orders"}
    assert changes(q.changed_only(["orders", "nations"])) == {"orders", "nations"}
    assert q.changed_only(["orders", "customers", "nations"]) is q


@pytest.mark.parametrize(
    ("kind", "empty_when"),
    [
        (JoinKind.INNER, {"left", "right", "both"}),
        (JoinKind.SEMI, {"left", "right", "both"}),
        (JoinKind.LEFT, {"left", "both"}),
        (JoinKind.ANTI, {"left", "both"}),
        (JoinKind.LOOKUP, {"left", "both"}),
        (JoinKind.RIGHT, {"right", "both"}),
        (JoinKind.FULL, {"both"}),
    ],
)
def test_a_join_is_empty_when_the_inputs_it_keeps_rows_of_are(kind, empty_when):
    left, right = Scan("l", "l", ("k",)), Scan("r", "r", ("k",))
    join = Join(
        (left.reading(Read.DELTA), right.reading(Read.DELTA)),
        exp.column("k", "l").eq(exp.column("k", "r")),
        kind,
    )
    unchanged = {"left": {"l"}, "right": {"r"}, "both": {"l", "r"}, "neither": set()}
    assert {
        side for side, tables in unchanged.items() if is_empty(join, frozenset(tables))
    } == empty_when


ORDERS_AND_CUSTOMERS = {
    "orders": [(1, 10, 5, "open"), (2, 11, 7, "open"), (3, 99, 1, "void")],
    "customers": [(10, "north", 1), (11, "south", 2)],
}


@pytest.mark.parametrize(
    "sql",
    [
        # the unchanged table's change would empty a term of the inner join, not of these
        "SELECT o.id, c.region FROM orders o LEFT JOIN customers c ON o.cust_id = c.id",
        "SELECT o.id FROM orders o WHERE NOT EXISTS "
        "(SELECT 1 FROM customers c WHERE c.id = o.cust_id)",
        "SELECT COUNT(*) AS n, SUM(o.amount) AS total FROM orders o JOIN customers c "
        "ON o.cust_id = c.id",
        "SELECT c.id FROM customers c EXCEPT SELECT o.cust_id FROM orders o",
    ],
)
def test_a_view_is_maintained_when_one_of_its_sources_does_not_change(sql):
    after = {
        "orders": [(1, 10, 6, "open"), (3, 99, 1, "void"), (4, 12, 2, "open")],
        "customers": ORDERS_AND_CUSTOMERS["customers"],
    }
    assert_maintained(sql, COLUMNS, ORDERS_AND_CUSTOMERS, after)
    changed_customers = {**ORDERS_AND_CUSTOMERS, "customers": [(12, "east", 1)]}
    assert_maintained(sql, COLUMNS, ORDERS_AND_CUSTOMERS, changed_customers)


def test_aggregate_store_keeps_counts_for_sums():
    store = ivm.compile(SALES, SCHEMA).store
    assert store.keys == ("region",)
    assert store.view_columns == ("region", "n", "total")
    kinds = {acc.name: acc.kind for acc in store.accumulators}
    assert kinds == {COUNT: "rows", "_ivm_nonnull0": "nonnull", "_ivm_sum0": "sum"}
    # SUM(x) of a group with only NULL x is NULL: the sum is guarded by the non-NULL count
    # when the change is folded into the store, where it would otherwise be 5 - 5 = 0
    assert store.accumulators[2].guard == "_ivm_nonnull0"
    customers = [(1, "EU", 1), (2, "US", 1)]
    assert_maintained(
        SALES,
        COLUMNS,
        {"orders": [(1, 1, 5, "ok"), (2, 2, 1, "ok")], "customers": customers},
        {"orders": [(1, 1, None, "ok"), (2, 2, 1, "ok")], "customers": customers},
    )


def test_shared_accumulators_are_computed_once():
    q = ivm.compile(
        "SELECT k, SUM(a) AS s, AVG(a) AS m, COUNT(a) AS c, COUNT(*) AS n FROM t GROUP BY k",
        {"t": {"k": "INT", "a": "INT"}},
    )
    assert [acc.name for acc in q.store.accumulators] == [COUNT, "_ivm_nonnull0", "_ivm_sum0"]


def test_group_key_not_selected_is_a_hidden_store_key():
    q = ivm.compile("SELECT COUNT(*) AS n FROM t GROUP BY k", {"t": {"k": "INT"}})
    assert q.store.keys == ("_ivm_key0",) and q.store.view_columns == ("n",)
    assert q.store.hidden_keys == ("_ivm_key0",)


def test_global_aggregate_keeps_one_row():
    sql = "SELECT COUNT(*) AS n, SUM(a) AS s FROM t"
    q = ivm.compile(sql, {"t": {"a": "INT"}})
    assert q.store.single_row and q.store.keys == ()
    # every row deleted: the view still has its one row, (0, NULL)
    assert_maintained(sql, {"t": [("a", "INT")]}, {"t": [(1,), (2,)]}, {"t": []})


def test_view_with_duplicates_counts_rows():
    sql = "SELECT o.status FROM orders o"
    q = ivm.compile(sql, SCHEMA)
    assert q.store.repeat_rows and q.store.keys == ("status",)
    orders = {"orders": [(1, 1, 5, "ok"), (2, 1, 5, "ok"), (3, 2, 1, "void")]}
    assert view_rows(sql, COLUMNS, orders) == query_rows(sql, COLUMNS, orders)


def test_distinct_shows_each_row_once():
    sql = "SELECT DISTINCT c.region FROM orders o JOIN customers c ON o.cust_id = c.id"
    q = ivm.compile(sql, SCHEMA)
    assert not q.store.repeat_rows and q.store.keys == ("region",)
    rows = {"orders": [(1, 1, 5, "ok"), (2, 1, 5, "ok")], "customers": [(1, "EU", 1)]}
    assert view_rows(sql, COLUMNS, rows) == query_rows(sql, COLUMNS, rows)


def test_store_keys_match_null_safely():
    """A change to the group of a NULL key is folded into that group's row."""
    customers = [(1, None, 1), (2, "EU", 1)]
    assert_maintained(
        SALES,
        COLUMNS,
        {"orders": [(1, 1, 5, "ok")], "customers": customers},
        {"orders": [(1, 1, 5, "ok"), (2, 1, 3, "ok"), (3, 2, 1, "ok")], "customers": customers},
    )


def test_only_referenced_columns_are_read():
    q = ivm.compile(SALES, SCHEMA)
    assert q.sources == {"orders": ("amount", "cust_id", "status"), "customers": ("region", "id")}


def test_generated_sql_parses_back_as_spark_sql():
    q = ivm.compile(SALES, SCHEMA)
    for text in (q.delta_sql, q.full_sql, q.merge_sql("db.v__ivm_store"), q.view_sql("db.s")):
        assert parse_one(text, read="spark") is not None


def test_delta_reads_changes_and_snapshots_never_live_tables():
    q = ivm.compile(SALES, SCHEMA)
    ctes = {cte.alias for cte in q.delta_query.find_all(exp.CTE)}
    tables = {t.name for t in q.delta_query.find_all(exp.Table)} - ctes
    assert tables == {"delta__orders", "after__customers", "after__orders", "delta__customers"}


def test_explain_names_each_rule_and_what_it_reads():
    text = ivm.compile(SALES, SCHEMA).explain()
    for expected in (
        "rule join (bilinear)",
        "rule filter (linear)",
        "rule aggregate (invertible)",
        "Δo ⋈ (c@after⋉Δkeys − Δc); o@after⋉Δkeys ⋈ Δc",
        "keyed by (region)",
        "full recompute: never",
    ):
        assert expected in text


def test_self_join_reads_one_source_under_two_aliases():
    q = ivm.compile(
        "SELECT a.id, b.id AS other FROM orders a JOIN orders b ON a.cust_id = b.cust_id", SCHEMA
    )
    assert list(q.sources) == ["orders"]
    assert set(q.sources["orders"]) == {"id", "cust_id"}


# Affected-key recompute and the linear rules for derived tables and UNION ALL.

from ivm.circuit import circuit  # noqa: E402
from ivm.ir import Aggregate, Restrict, Union, Weighted  # noqa: E402


def signs(delta):
    """The ±1 weight of each term of a keyed delta."""
    out = []
    for term in delta.inputs:
        if isinstance(term, Weighted):
            out.append(term.weight)
        else:
            out.append(int(dict(term.columns)[WEIGHT].sql()))
    return out


def test_outer_join_recomputes_affected_join_keys_before_and_after():
    q = ivm.compile(
        "SELECT c.id, o.amount FROM customers c LEFT JOIN orders o ON o.cust_id = c.id", SCHEMA
    )
    delta = differentiate(q.plan.input)
    assert signs(delta) == [1, -1]
    after, before = (term.input for term in delta.inputs)
    for join, read in ((after, Read.AFTER), (before, Read.BEFORE)):
        left, right = join.inputs
        assert isinstance(left, Restrict) and isinstance(right, Restrict)
        assert left.input.read is read and right.input.read is read
        assert [k.sql() for k in left.keys] == ["c.id"]
        assert [k.sql() for k in right.keys] == ["o.cust_id"]
        # The affected keys come from the changes of both sides.
        key_sources = {s.table for s in scans(left.affected)}
        assert key_sources == {"customers", "orders"}
        assert all(s.read is Read.DELTA for s in scans(left.affected))


def test_min_max_at_the_root_integrate_recomputed_groups():
    q = ivm.compile("SELECT status, MAX(amount) AS hi FROM orders GROUP BY status", SCHEMA)
    assert q.maintenance.rule.name == "integrate"
    assert q.store.repeat_rows
    aggregates = [t.input for t in differentiate(q.plan.input).inputs]
    assert all(isinstance(a, Aggregate) and isinstance(a.input, Restrict) for a in aggregates)


def test_invertible_aggregates_keep_accumulators_but_others_do_not():
    invertible = ivm.compile("SELECT status, SUM(amount) AS s FROM orders GROUP BY status", SCHEMA)
    distinct_count = ivm.compile(
        "SELECT status, COUNT(DISTINCT amount) AS s FROM orders GROUP BY status", SCHEMA
    )
    assert invertible.maintenance.rule.name == "aggregate"
    assert distinct_count.maintenance.rule.name == "integrate"


def test_having_filters_recomputed_groups():
    sql = "SELECT status, COUNT(*) AS n FROM orders GROUP BY status HAVING COUNT(*) > 1"
    q = ivm.compile(sql, SCHEMA)
    assert q.maintenance.rule.name == "integrate"
    # one group falls to the HAVING's bound, another rises past it
    assert_maintained(
        sql,
        COLUMNS,
        {"orders": [(1, 1, 5, "a"), (2, 1, 5, "a"), (3, 1, 5, "b")]},
        {"orders": [(1, 1, 5, "a"), (3, 1, 5, "b"), (4, 1, 5, "b")]},
    )


def test_union_all_is_the_sum_of_its_branches_changes():
    q = ivm.compile("SELECT status AS x FROM orders UNION ALL SELECT region FROM customers", SCHEMA)
    assert isinstance(q.plan, Union)
    tables = [scans(t)[0].table for t in differentiate(q.plan).inputs]
    assert tables == ["orders", "customers"]


def test_union_is_distinct_over_union_all():
    q = ivm.compile("SELECT status AS x FROM orders UNION SELECT region FROM customers", SCHEMA)
    assert q.maintenance.rule.name == "distinct" and not q.store.repeat_rows


def test_a_cte_read_twice_is_one_plan_read_twice():
    q = ivm.compile(
        "WITH paid AS (SELECT id, cust_id FROM orders WHERE status = 'paid') "
        "SELECT a.id, b.id AS other FROM paid a JOIN paid b "
        "ON a.cust_id = b.cust_id",
        SCHEMA,
    )
    first, second = q.plan.input.inputs
    assert isinstance(first, Subquery) and first.input == second.input
    graph = circuit(q.plan)
    assert sum(isinstance(n, Subquery) for n in graph) == 2
    assert graph.in_degree(first) == 1 and graph.out_degree(first.input) == 2


def test_global_aggregate_inside_a_plan_is_keyed_on_a_constant():
    q = ivm.compile("SELECT g.m + 1 AS m1 FROM (SELECT MAX(amount) AS m FROM orders) g", SCHEMA)
    restricts = [n for n in circuit(differentiate(q.plan.input.input)) if isinstance(n, Restrict)]
    assert restricts and all([k.sql() for k in r.keys] == ["1"] for r in restricts)


def test_intersect_and_except_recompute_the_affected_rows():
    for sql, kind, all_ in (
        ("SELECT id FROM orders INTERSECT SELECT id FROM customers", "intersect", False),
        ("SELECT id FROM orders EXCEPT ALL SELECT id FROM customers", "except", True),
    ):
        q = ivm.compile(sql, SCHEMA)
        assert (q.plan.kind, q.plan.all) == (kind, all_)
        after = differentiate(q.plan).inputs[0].input
        assert isinstance(after.left, Restrict) and isinstance(after.right, Restrict)
        assert after.left.affected == after.right.affected


def nodes_of(plan, kind):
    from ivm.circuit import circuit

    return [n for n in circuit(plan) if isinstance(n, kind)]


def test_window_partitions_are_the_recompute_keys():
    from ivm.ir import Restrict, Window

    q = ivm.compile(
        "SELECT id, status, ROW_NUMBER() OVER (PARTITION BY status ORDER BY "
        "amount DESC) AS rn, SUM(amount) OVER (PARTITION BY cust_id) AS total "
        "FROM orders",
        SCHEMA,
    )
    windows = nodes_of(q.plan, Window)
    assert len(windows) == 2  # one per partitioning
    restricts = nodes_of(differentiate(windows[-1]), Restrict)
    partitions = {tuple(k.sql() for k in w.partition) for w in windows}
    assert {tuple(k.sql() for k in r.keys) for r in restricts} <= partitions
    assert "full recompute: never" in q.explain()


def test_row_number_breaks_ties_by_every_column_but_rank_does_not():
    from ivm.ir import Window

    q = ivm.compile(
        "SELECT id, RANK() OVER (PARTITION BY status ORDER BY amount) AS r, "
        "ROW_NUMBER() OVER (PARTITION BY status ORDER BY amount) AS n FROM orders",
        SCHEMA,
    )
    (window,) = nodes_of(q.plan, Window)
    rank, number = (f.args["order"].expressions for _, f in window.functions)
    assert len(rank) == 1 and len(number) == 1 + len(window.input.columns) - 1


def test_qualify_is_a_filter_over_the_window():
    from ivm.ir import Filter, Window

    sql = (
        "SELECT id, status FROM orders QUALIFY ROW_NUMBER() OVER "
        "(PARTITION BY status ORDER BY amount DESC) = 1"
    )
    q = ivm.compile(sql, SCHEMA)
    (qualify,) = [f for f in nodes_of(q.plan, Filter) if isinstance(f.input, Window)]
    # the change of a partition's first row, and of another partition's only row
    assert_maintained(
        sql,
        COLUMNS,
        {"orders": [(1, 1, 5, "a"), (2, 1, 7, "a"), (3, 1, 1, "b")]},
        {"orders": [(1, 1, 9, "a"), (2, 1, 7, "a"), (4, 1, 2, "b")]},
    )


def test_order_by_limit_over_groups_reads_them_from_a_state_table():
    from ivm.ir import Aggregate, Window

    sql = (
        "SELECT cust_id, SUM(amount) AS total FROM orders GROUP BY cust_id "
        "ORDER BY total DESC LIMIT 3"
    )
    q = ivm.compile(sql, SCHEMA, name="top")
    (top,) = nodes_of(q.plan, Window)
    assert top.partition == ()
    # a group rises into the top 3, another falls out of it
    assert_maintained(
        sql,
        COLUMNS,
        {"orders": [(i, i, 10 * i, "ok") for i in range(1, 6)]},
        {"orders": [(i, i, 10 * i, "ok") for i in range(1, 6) if i != 4] + [(9, 1, 100, "ok")]},
    )
    assert [name for name, _ in q.plan.columns] == ["cust_id", "total"]
    assert not nodes_of(q.plan, Aggregate), "the view reads the groups, not the orders"
    ((table, state),) = q.states
    assert table == "top__ivm_state1" and state.maintenance.rule.name == "aggregate"
    assert state.store.keys == ("cust_id",)
    explain = q.explain()
    assert "reads state table top__ivm_state1 whole" in explain
    assert "full recompute: never" in explain


def test_order_by_limit_over_a_table_is_a_top_n_recomputed_whole():
    q = ivm.compile("SELECT id, amount FROM orders ORDER BY amount DESC LIMIT 3", SCHEMA)
    assert not q.states, "a state table would copy the table"
    explain = q.explain()
    assert "a full recompute of this operator" in explain
    assert "full recompute: never" not in explain


@pytest.mark.parametrize(
    "sql, kind",
    [
        (
            "SELECT id FROM orders o "
            "WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.cust_id)",
            JoinKind.SEMI,
        ),
        (
            "SELECT id FROM orders o WHERE NOT EXISTS "
            "(SELECT 1 FROM customers c WHERE c.id = o.cust_id AND c.region = 'x')",
            JoinKind.ANTI,
        ),
        ("SELECT id FROM orders WHERE cust_id IN (SELECT id FROM customers)", JoinKind.SEMI),
        ("SELECT id FROM orders WHERE cust_id NOT IN (SELECT id FROM customers)", JoinKind.ANTI),
    ],
)
def test_exists_and_in_become_semi_and_anti_joins_on_their_keys(sql, kind):
    q = ivm.compile(sql, SCHEMA)
    (join,) = [j for j in nodes_of(q.plan, Join) if j.kind is kind]
    # a customer twice, one of region x; NULL keys on both sides; the change adds and
    # removes matches
    customers = [(1, "x", 1), (1, "y", 1), (2, "y", 1), (None, "y", 1)]
    assert_maintained(
        sql,
        COLUMNS,
        {
            "orders": [(1, 1, 5, "a"), (2, 2, 5, "a"), (3, 3, 5, "a"), (4, None, 5, "a")],
            "customers": customers,
        },
        {
            "orders": [(1, 1, 5, "a"), (3, 3, 5, "a"), (4, None, 5, "a"), (5, 2, 5, "a")],
            "customers": customers[:2] + [(3, "y", 1)],
        },
    )
    # NOT IN also counts the subquery's rows and NULLs: a global aggregate, recomputed whole
    assert ("full recompute: never" in q.explain()) == ("NOT IN" not in sql)


def test_not_in_keeps_sql_null_rules():
    """NOT IN is false for a NULL key while the subquery has rows, and for every key once
    the subquery holds a NULL."""
    sql = "SELECT id FROM orders WHERE cust_id NOT IN (SELECT id FROM customers)"
    orders = [(1, 1, 5, "a"), (2, 2, 5, "a"), (3, None, 5, "a")]
    assert_maintained(
        sql,
        COLUMNS,
        {"orders": orders, "customers": [(1, "x", 1)]},
        {"orders": orders, "customers": [(1, "x", 1), (None, "y", 1)]},
    )
    assert_maintained(
        sql,
        COLUMNS,
        {"orders": orders, "customers": []},
        {"orders": orders, "customers": [(2, "x", 1)]},
    )


@pytest.mark.parametrize(
    "sql, kind",
    [
        # compared in WHERE: an unmatched key fails the comparison either way
        (
            "SELECT id FROM orders o WHERE o.amount > "
            "(SELECT AVG(p.amount) FROM orders p WHERE p.cust_id = o.cust_id)",
            JoinKind.INNER,
        ),
        # COUNT over no rows is 0, not NULL: a left join that supplies the 0
        (
            "SELECT c.id, (SELECT COUNT(*) FROM orders o WHERE o.cust_id = c.id) AS n "
            "FROM customers c",
            JoinKind.LEFT,
        ),
    ],
)
def test_correlated_scalar_subquery_joins_its_grouped_aggregate(sql, kind):
    from ivm.ir import Aggregate

    q = ivm.compile(sql, SCHEMA)
    (join,) = [j for j in nodes_of(q.plan, Join) if j.inputs[1].alias.startswith("_ivm_sq")]
    assert join.kind is kind and nodes_of(join.inputs[1], Aggregate)
    # customer 3 has no order (a count of 0), customer 2 loses its last one
    assert_maintained(
        sql,
        COLUMNS,
        {
            "orders": [(1, 1, 5, "a"), (2, 1, 9, "a"), (3, 2, 4, "a")],
            "customers": [(1, "x", 1), (2, "x", 1), (3, "y", 1)],
        },
        {
            "orders": [(1, 1, 5, "a"), (2, 1, 9, "a"), (4, 1, 1, "a")],
            "customers": [(1, "x", 1), (2, "x", 1), (3, "y", 1)],
        },
    )


@pytest.mark.parametrize(
    "sql",
    [
        # the subquery's LATERAL VIEW generates its own rows, not the SELECT list's
        "SELECT c.id, (SELECT COUNT(*) FROM orders o LATERAL VIEW explode(array(o.id, o.cust_id)) "
        "g AS v WHERE v > 1) AS n FROM customers c",
        "SELECT c.id, (SELECT COUNT(*) FROM orders o LATERAL VIEW explode(array(o.id, o.cust_id)) "
        "g AS v WHERE o.cust_id = c.id AND v > 1) AS n FROM customers c",
        "SELECT c.id, (SELECT COUNT(*) FROM (SELECT o.cust_id, v FROM orders o LATERAL VIEW "
        "explode(array(o.id, o.cust_id)) g AS v) e WHERE e.cust_id = c.id AND e.v > 1) AS n "
        "FROM customers c",
        # nor does its aggregate group the query whose SELECT list explodes
        "SELECT explode(array(c.id, c.nation_id)) AS v, (SELECT COUNT(*) FROM orders) AS n "
        "FROM customers c",
    ],
)
def test_a_scalar_subquery_keeps_its_generator_and_aggregate_to_itself(sql):
    from ivm.ir import Aggregate, Generate

    q = ivm.compile(sql, SCHEMA)
    (join,) = [j for j in nodes_of(q.plan, Join) if j.inputs[1].alias.startswith("_ivm_sq")]
    assert nodes_of(join.inputs[1], Aggregate) and nodes_of(q.plan, Generate)


def test_uncorrelated_scalar_subquery_is_a_cross_join_with_one_row():
    from ivm.ir import Aggregate

    q = ivm.compile("SELECT id FROM orders WHERE amount > (SELECT AVG(amount) FROM orders)", SCHEMA)
    (join,) = nodes_of(q.plan, Join)
    (aggregate,) = nodes_of(join.inputs[-1], Aggregate)
    assert join.condition is None and aggregate.keys == ()


def test_outer_join_without_an_equality_is_recomputed_whole():
    q = ivm.compile(
        "SELECT o.id, c.region FROM orders o LEFT JOIN customers c ON o.cust_id > c.id", SCHEMA
    )
    assert "a full recompute of this operator" in q.explain()


def test_a_filtered_join_input_applies_its_filter_before_any_padding():
    """A filter of a join's input, first or not, whatever joins the block holds later."""
    from ivm.codegen import to_sql
    from ivm.ir import Filter

    o, c, n = (Scan(t, t[0], ("id", "k")) for t in ("orders", "customers", "nations"))
    small = Filter(o, exp.condition("o.id > 0"))
    inner = Join((small, Filter(c, exp.condition("c.id < 9"))), exp.condition("o.k = c.k"))
    left = Join((small, c), exp.condition("o.k = c.k"), JoinKind.LEFT)
    # nation 2 is padded: a filter applied after the RIGHT JOIN would drop its row
    tables = {t: [("id", "INT"), ("k", "INT")] for t in ("orders", "customers", "nations")}
    rows = {
        "orders": [(0, 1), (5, 2), (6, 1)],
        "customers": [(1, 1), (9, 2)],
        "nations": [(1, 1), (2, 2)],
    }
    filtered = "(SELECT * FROM orders WHERE id > 0) o"
    for nested, meant in (
        (inner, f"{filtered} JOIN (SELECT * FROM customers WHERE id < 9) c ON o.k = c.k"),
        (left, f"{filtered} LEFT JOIN customers c ON o.k = c.k"),
    ):
        padded = Join((nested, n), exp.condition("n.k = c.k"), JoinKind.RIGHT)
        text = to_sql(padded, pretty=False)
        assert parse_one(text, read="spark") is not None
        assert query_rows(text, tables, rows) == query_rows(
            f"SELECT o.id, o.k, c.id, c.k, n.id, n.k FROM {meant} RIGHT JOIN nations n "
            f"ON n.k = c.k",
            tables,
            rows,
        )


@pytest.mark.parametrize(
    "sql",
    [
        # a dedup, a top-N per key with RANK, a global top-N, written either way round
        "SELECT id, cust_id, amount FROM (SELECT id, cust_id, amount, ROW_NUMBER() OVER "
        "(PARTITION BY cust_id ORDER BY amount DESC) AS rn FROM orders) WHERE rn = 1",
        "SELECT id, cust_id FROM (SELECT id, cust_id, RANK() OVER (PARTITION BY cust_id "
        "ORDER BY id) AS r FROM orders WHERE status = 'open') WHERE 3 >= r AND r < 5",
        "SELECT id, amount FROM orders ORDER BY amount DESC LIMIT 5",
        # MIN and MAX beside counts and exact sums, by key and global
        "SELECT cust_id, MIN(amount) AS lo, MAX(status) AS hi, COUNT(*) AS n, SUM(id) AS s, "
        "MIN(amount) + 1 AS lo1 FROM orders GROUP BY cust_id",
        "SELECT MAX(id) AS high_water FROM orders",
    ],
)
def test_a_top_n_or_min_max_view_has_rules_for_inserted_rows_reading_its_store(sql):
    compiled = ivm.compile(sql, SCHEMA, name="v")
    inserting = compiled.inserting()
    assert inserting is not None
    assert {(s.table, s.read) for s in scans(inserting.maintenance.delta)} == {
        ("orders", Read.DELTA),
        ("v", Read.STORE),
    }, "it reads the change and its own rows"


@pytest.mark.parametrize(
    "sql",
    [
        # a bound that a row can come back into (a rank from below, exactly 2)
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM orders) "
        "WHERE rn = 2",
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM orders) "
        "WHERE rn > 1",
        # a filter on more than the rank; two window functions; a running sum
        "SELECT id FROM (SELECT id, status, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM orders) "
        "WHERE rn <= 2 AND status = 'open'",
        "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn, RANK() OVER "
        "(ORDER BY amount) AS r FROM orders) WHERE rn <= 2 AND r <= 2",
        "SELECT id, SUM(amount) OVER (PARTITION BY cust_id ORDER BY id) AS running FROM orders",
        # a window input the view does not show whole (amount is not selected)
        "SELECT id, cust_id FROM (SELECT id, cust_id, amount, ROW_NUMBER() OVER "
        "(PARTITION BY cust_id ORDER BY amount) AS rn FROM orders) WHERE rn = 1",
        # an aggregate only an expression shows, HAVING, COUNT(DISTINCT), an inexact input
        "SELECT cust_id, MAX(amount) - MIN(amount) AS spread FROM orders GROUP BY cust_id",
        "SELECT cust_id, MAX(amount) AS hi FROM orders GROUP BY cust_id HAVING COUNT(*) > 1",
        "SELECT cust_id, MAX(id) AS hi, COUNT(DISTINCT status) AS kinds FROM orders "
        "GROUP BY cust_id",
        "SELECT cust_id, MAX(id) AS hi, SUM(CAST(amount AS DOUBLE)) AS total FROM orders "
        "GROUP BY cust_id",
        # a join's change holds rows of negative weight that cancel
        "SELECT c.region, MAX(o.amount) AS hi FROM orders o JOIN customers c ON o.cust_id = c.id "
        "GROUP BY c.region",
    ],
)
def test_views_whose_rows_inserted_rows_can_bring_back_have_no_rules_for_them(sql):
    assert ivm.compile(sql, SCHEMA, name="v").inserting() is None
