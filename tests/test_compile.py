"""The compiler without Spark: plans, rules, generated SQL and store layouts."""

import pytest
from sqlglot import exp, parse_one

import ivm
from ivm.ir import Join, Scan
from ivm.rules import differentiate
from ivm.rules.base import weight_of
from ivm.zset import COUNT, WEIGHT, Read

SCHEMA = {
    "orders": {"id": "INT", "cust_id": "INT", "amount": "DECIMAL(10,2)", "status": "STRING"},
    "customers": {"id": "INT", "region": "STRING", "nation_id": "INT"},
    "nations": {"id": "INT", "name": "STRING"},
}
SALES = ("SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total "
         "FROM orders o JOIN customers c ON o.cust_id = c.id "
         "WHERE o.status <> 'void' GROUP BY c.region")


def reads(term):
    """alias → read of each scan of a join term."""
    return {scan.alias: scan.read for scan in term.inputs}


def test_join_delta_telescopes_one_term_per_input():
    q = ivm.compile("SELECT o.id, n.name FROM orders o JOIN customers c ON o.cust_id = c.id "
                    "JOIN nations n ON c.nation_id = n.id", SCHEMA)
    terms = differentiate(q.plan.input).inputs
    assert [reads(t) for t in terms] == [
        {"o": Read.DELTA, "c": Read.BEFORE, "n": Read.BEFORE},
        {"o": Read.AFTER, "c": Read.DELTA, "n": Read.BEFORE},
        {"o": Read.AFTER, "c": Read.AFTER, "n": Read.DELTA},
    ]


def test_weight_of_a_join_term_multiplies_only_changes():
    term = Join((Scan("r", "r", ("k",), Read.DELTA), Scan("s", "s", ("k",), Read.DELTA),
                 Scan("t", "t", ("k",), Read.BEFORE)))
    assert weight_of(term).sql() == f"r.{WEIGHT} * s.{WEIGHT}"


def test_every_delta_term_reads_a_change():
    q = ivm.compile(SALES, SCHEMA)
    for term in differentiate(q.plan.input.input).inputs:
        assert any(scan.read is Read.DELTA for scan in term.input.inputs)


def test_aggregate_store_keeps_counts_for_sums():
    store = ivm.compile(SALES, SCHEMA).store
    assert store.keys == ("region",)
    assert store.view_columns == ("region", "n", "total")
    kinds = {acc.name: acc.kind for acc in store.accumulators}
    assert kinds == {COUNT: "rows", "_ivm_nonnull0": "nonnull", "_ivm_sum0": "sum"}
    # SUM(x) of a group with only NULL x is NULL: the sum is guarded by the non-NULL count,
    # both when folded into the store and in the MERGE that does it.
    assert store.accumulators[2].guard == "_ivm_nonnull0"
    merge = " ".join(ivm.compile(SALES, SCHEMA).merge_sql("db.v__ivm_store").split())
    assert "WHEN ( stored._ivm_nonnull0 + change._ivm_nonnull0 ) > 0" in merge


def test_shared_accumulators_are_computed_once():
    q = ivm.compile("SELECT k, SUM(a) AS s, AVG(a) AS m, COUNT(a) AS c, COUNT(*) AS n "
                    "FROM t GROUP BY k", {"t": {"k": "INT", "a": "INT"}})
    assert [acc.name for acc in q.store.accumulators] == [COUNT, "_ivm_nonnull0", "_ivm_sum0"]


def test_group_key_not_selected_is_a_hidden_store_key():
    q = ivm.compile("SELECT COUNT(*) AS n FROM t GROUP BY k", {"t": {"k": "INT"}})
    assert q.store.keys == ("_ivm_key0",) and q.store.view_columns == ("n",)
    assert q.store.hidden_keys == ("_ivm_key0",)


def test_global_aggregate_keeps_one_row():
    q = ivm.compile("SELECT COUNT(*) AS n, SUM(a) AS s FROM t", {"t": {"a": "INT"}})
    assert q.store.single_row and q.store.keys == ()
    merge = q.merge_sql("db.v__ivm_store")
    assert "DELETE" not in merge and "ON TRUE" in merge


def test_view_with_duplicates_counts_rows():
    q = ivm.compile("SELECT o.status FROM orders o", SCHEMA)
    assert q.store.repeat_rows and q.store.keys == ("status",)
    assert "EXPLODE(SEQUENCE(1, _ivm_count))" in q.view_sql("db.v__ivm_store")


def test_distinct_shows_each_row_once():
    q = ivm.compile("SELECT DISTINCT c.region FROM orders o JOIN customers c "
                    "ON o.cust_id = c.id", SCHEMA)
    assert not q.store.repeat_rows and q.store.keys == ("region",)
    assert "EXPLODE" not in q.view_sql("db.v__ivm_store")


def test_store_keys_match_null_safely():
    merge = ivm.compile(SALES, SCHEMA).merge_sql("db.v__ivm_store")
    assert "stored.region IS NOT DISTINCT FROM change.region" in merge


def test_merge_casts_to_store_types_when_known():
    merge = ivm.compile(SALES, SCHEMA).merge_sql(
        "db.v__ivm_store", {"total": "decimal(20,2)", "_ivm_sum0": "decimal(20,2)"})
    assert "AS DECIMAL(20, 2)" in merge


def test_only_referenced_columns_are_read():
    q = ivm.compile(SALES, SCHEMA)
    assert q.sources == {"orders": ("amount", "cust_id", "status"),
                         "customers": ("region", "id")}


def test_generated_sql_parses_back_as_spark_sql():
    q = ivm.compile(SALES, SCHEMA)
    for text in (q.delta_sql, q.full_sql, q.merge_sql("db.v__ivm_store"), q.view_sql("db.s")):
        assert parse_one(text, read="spark") is not None


def test_delta_reads_changes_and_snapshots_never_live_tables():
    q = ivm.compile(SALES, SCHEMA)
    tables = {t.name for t in q.delta_query.find_all(exp.Table)} - {"change_rows"}
    assert tables == {"delta__orders", "before__customers", "after__orders",
                      "delta__customers"}


def test_explain_names_each_rule_and_what_it_reads():
    text = ivm.compile(SALES, SCHEMA).explain()
    for expected in ("rule join (bilinear)", "rule filter (linear)",
                     "rule aggregate (invertible)", "Δo ⋈ c@before; o@after ⋈ Δc",
                     "keyed by (region)", "full recompute: never"):
        assert expected in text


def test_self_join_reads_one_source_under_two_aliases():
    q = ivm.compile("SELECT a.id, b.id AS other FROM orders a JOIN orders b "
                    "ON a.cust_id = b.cust_id", SCHEMA)
    assert list(q.sources) == ["orders"]
    assert set(q.sources["orders"]) == {"id", "cust_id"}
