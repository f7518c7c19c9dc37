"""Bad input gets a clear error: what was wrong, where in the SQL, and what to do."""

import pytest

import ivm
from ivm.errors import (
    CatalogError,
    InvalidQuery,
    Position,
    ReservedName,
    SqlSyntaxError,
    UnsupportedQuery,
)
from ivm.frontend.statements import parse_statement

pytestmark = pytest.mark.fast

SCHEMA = {
    "orders": {"id": "INT", "cust_id": "INT", "amount": "INT", "status": "STRING"},
    "customers": {"id": "INT", "region": "STRING"},
}


def error_of(sql, kind=ivm.IvmError):
    with pytest.raises(kind) as caught:
        ivm.compile(sql, SCHEMA)
    return caught.value


def test_syntax_error_has_line_and_column():
    error = error_of("SELECT id,\n  amount +\nFROM orders WHERE", SqlSyntaxError)
    assert error.position is not None and error.position.line == 3
    assert "syntax error" in str(error) and "^" in str(error)


def test_unknown_table_points_at_it():
    error = error_of("SELECT id\nFROM orders JOIN nope n ON n.id = orders.id", CatalogError)
    assert "nope" in error.message and error.position == Position(2, 18)


def test_unknown_column_points_at_it():
    error = error_of("SELECT o.id, o.colour FROM orders o", CatalogError)
    assert "colour" in error.message and error.position == Position(1, 14)


def test_unqualified_unknown_column():
    error = error_of("SELECT colour FROM orders", CatalogError)
    assert "colour" in error.message and error.position == Position(1, 8)


@pytest.mark.parametrize(
    "sql, construct, position",
    [
        (
            "SELECT status, collect_list(amount) AS m FROM orders GROUP BY status",
            "aggregate function COLLECT_LIST",
            Position(1, 16),
        ),
        (
            "SELECT status, collect_set(amount) AS m FROM orders GROUP BY status",
            "aggregate function COLLECT_SET",
            Position(1, 16),
        ),
        (
            "SELECT id, grouping(status) AS g FROM orders GROUP BY id, status",
            "grouping() without GROUPING SETS, ROLLUP or CUBE",
            Position(1, 12),
        ),
        (
            "SELECT id, grouping(amount) AS g, COUNT(*) AS n FROM orders GROUP BY ROLLUP(id)",
            "grouping() of an expression not in GROUP BY",
            Position(1, 12),
        ),
        (
            "SELECT id, grouping_id(status) AS g FROM orders GROUP BY ROLLUP(id, status)",
            "grouping_id() of other than all GROUP BY expressions",
            Position(1, 12),
        ),
        (
            "SELECT explode(array(id)) + 1 AS x FROM orders",
            "a generator inside an expression",
            Position(1, 8),
        ),
        (
            "SELECT explode(array(id)) AS x, explode(array(amount)) AS y FROM orders",
            "more than one generator in a SELECT list",
            Position(1, 33),
        ),
        (
            "SELECT status, explode(array(id)) AS x, COUNT(*) AS n FROM orders GROUP BY status",
            "a generator in the SELECT list of a grouped or DISTINCT query",
            Position(1, 16),
        ),
        (
            "SELECT id, posexplode(array(id)) AS v FROM orders",
            "a generator named with 1 of its 2 columns",
            Position(1, 12),
        ),
        (
            "SELECT id, v FROM orders LATERAL VIEW stack(1, id) g AS v",
            "LATERAL VIEW stack",
            Position(1, 39),
        ),
        (
            "SELECT id, a FROM orders LATERAL VIEW posexplode(array(id)) g AS a",
            "a LATERAL VIEW naming 1 of the 2 columns of posexplode",
            Position(1, 39),
        ),
        (
            "SELECT id, v FROM orders LATERAL VIEW explode(array(id, rand())) g AS v",
            "non-deterministic function rand()",
            Position(1, 57),
        ),
        ("SELECT id FROM orders ORDER BY id", "ORDER BY without LIMIT", Position(1, 32)),
        ("SELECT id FROM orders LIMIT 5", "LIMIT without ORDER BY", Position(1, 29)),
        (
            "SELECT DISTINCT status FROM orders ORDER BY id LIMIT 3",
            "ORDER BY a column not in the SELECT DISTINCT list",
            Position(1, 45),
        ),
        ("SELECT id FROM orders ORDER BY id LIMIT 3 OFFSET 2", "OFFSET", Position(1, 50)),
        (
            "SELECT id, rand() AS r FROM orders",
            "non-deterministic function rand()",
            Position(1, 12),
        ),
        (
            "SELECT id FROM orders WHERE amount > 5 OR id IN (SELECT id FROM customers)",
            "IN (subquery) other than as a condition of WHERE",
            Position(1, 43),
        ),
        (
            "SELECT id FROM orders WHERE amount > (SELECT id FROM customers)",
            "scalar subquery that is not one aggregate",
            Position(1, 46),
        ),
        (
            "SELECT id FROM orders o WHERE o.id NOT IN "
            "(SELECT c.id FROM customers c WHERE c.region = o.status)",
            "correlated NOT IN",
            Position(1, 31),
        ),
        (
            "SELECT id FROM orders EXCEPT SELECT id, region FROM customers",
            "EXCEPT of queries with different numbers of columns",
            Position(1, 37),
        ),
        (
            "SELECT id FROM orders WHERE ROW_NUMBER() OVER (ORDER BY id) = 1",
            "window function in WHERE",
            Position(1, 29),
        ),
        (
            "SELECT id FROM orders WINDOW w AS (PARTITION BY status)",
            "WINDOW clause",
            Position(1, 30),
        ),
        (
            "SELECT id FROM orders UNION ALL SELECT id, status FROM orders",
            "UNION of queries with different numbers of columns",
            Position(1, 40),
        ),
    ],
)
def test_unsupported_construct_is_refused_by_name_and_place(sql, construct, position):
    error = error_of(sql, UnsupportedQuery)
    assert error.construct == construct
    assert error.position == position
    assert error.hint, "every refusal says what to do instead"


LOOKUP = "SELECT o.id, c.region FROM orders o {} customers {} AS OF o.at AS c ON o.cust_id = c.id"


@pytest.mark.parametrize(
    "sql, construct, position",
    [
        (
            LOOKUP.format("JOIN", "FOR SYSTEM_TIME") + " JOIN customers d ON d.id = o.id",
            "a join after a lookup join",
            Position(1, 109),
        ),
        (LOOKUP.format("RIGHT JOIN", "FOR SYSTEM_TIME"), "RIGHT lookup join", Position(1, 48)),
        (
            LOOKUP.format("JOIN", "TIMESTAMP"),
            "time travel (VERSION/TIMESTAMP AS OF)",
            Position(1, 42),
        ),
    ],
)
def test_a_lookup_join_is_refused_where_it_is_not_flinks(sql, construct, position):
    schema = {**SCHEMA, "orders": {**SCHEMA["orders"], "at": "TIMESTAMP"}}
    with pytest.raises(UnsupportedQuery) as caught:
        ivm.compile(sql, schema)
    assert (caught.value.construct, caught.value.position) == (construct, position)
    assert caught.value.hint


MARKED = (
    "SELECT o.id, c.region FROM orders o JOIN customers FOR SYSTEM_TIME AS OF {} AS c "
    "ON o.cust_id = c.id"
)


@pytest.mark.parametrize(
    "sql, construct, position",
    [
        (
            MARKED.format("c.at"),
            "FOR SYSTEM_TIME AS OF a column of the dimension c",
            Position(1, 74),
        ),
        (
            MARKED.format("region"),
            "FOR SYSTEM_TIME AS OF a column of the dimension c",
            Position(1, 74),
        ),
        (
            MARKED.format("o.at")
            + " JOIN customers FOR SYSTEM_TIME AS OF c.at AS d ON d.id = o.id",
            "FOR SYSTEM_TIME AS OF a column of c (no fact table)",
            Position(1, 141),
        ),
    ],
    ids=["qualified", "unqualified", "another_dimension"],
)
def test_a_lookup_join_as_of_a_dimensions_column_is_refused(sql, construct, position):
    """The column after AS OF marks the fact side: a dimension's own column is no lookup."""
    schema = {
        "orders": {**SCHEMA["orders"], "at": "TIMESTAMP"},
        "customers": {**SCHEMA["customers"], "at": "TIMESTAMP"},
    }
    with pytest.raises(UnsupportedQuery) as caught:
        ivm.compile(sql, schema)
    assert (caught.value.construct, caught.value.position) == (construct, position)
    assert "marks the fact side" in caught.value.message
    assert caught.value.hint is not None and "AS OF o.<column>" in caught.value.hint


def test_column_neither_grouped_nor_aggregated():
    error = error_of(
        "SELECT status, amount, COUNT(*) AS n FROM orders GROUP BY status", InvalidQuery
    )
    assert "amount" in error.message and "GROUP BY" in error.message


def test_a_column_read_after_a_lateral_view_is_named_as_written():
    error = error_of(
        "SELECT o.amount, v, COUNT(*) AS n FROM orders o "
        "LATERAL VIEW explode(array(o.id)) g AS v GROUP BY v",
        InvalidQuery,
    )
    assert error.message.startswith("column o.amount is neither in GROUP BY")
    assert error.position == Position(1, 8)


def test_computed_column_needs_a_name():
    error = error_of("SELECT status, COUNT(*) FROM orders GROUP BY status", InvalidQuery)
    assert "needs a name" in error.message and error.position == Position(1, 16)


def test_duplicate_column_names_are_refused():
    error = error_of(
        "SELECT o.id, c.id FROM orders o JOIN customers c ON o.cust_id = c.id", InvalidQuery
    )
    assert "two columns named id" in error.message


def test_column_names_differing_only_in_case_are_duplicates():
    error = error_of("SELECT id AS Key, cust_id AS key FROM orders", InvalidQuery)
    assert "two columns named key" in error.message


def test_bookkeeping_column_names_are_reserved():
    error = error_of("SELECT id AS _ivm_count FROM orders", ReservedName)
    assert "reserved" in error.message


def test_statement_errors_point_into_the_statement():
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement("CREATE MATERIALIZED VIEW v\nSELECT 1")
    assert caught.value.position == Position(2, 1)


def test_query_errors_keep_the_statement_positions():
    statement = parse_statement("CREATE MATERIALIZED VIEW v AS\nSELECT colour FROM orders")
    with pytest.raises(CatalogError) as caught:
        ivm.compile(statement.query, SCHEMA)
    assert caught.value.position == Position(2, 8)


def test_error_text_shows_the_line_and_a_caret():
    text = str(error_of("SELECT id FROM orders ORDER BY id"))
    assert (
        "ORDER BY without LIMIT is not supported in a materialized view (line 1, column 32)"
    ) in text
    assert "\n  SELECT id FROM orders ORDER BY id\n" in text and "Hint:" in text
