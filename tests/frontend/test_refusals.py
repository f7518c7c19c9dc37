"""Valid SQL is accepted, and what cannot be maintained is refused by name, at the user's SQL."""

import pytest

import ivm
from ivm.errors import CatalogError, Position, SqlSyntaxError, UnsupportedQuery
from ivm.frontend.statements import CreateView, parse_statement
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.spark.settings import session_settings
from tests.support.cdf import CDF

SCHEMA = {"orders": {"id": "INT", "status": "STRING", "amount": "INT"}}


def error_of(sql, kind=ivm.IvmError):
    with pytest.raises(kind) as caught:
        ivm.compile(sql, SCHEMA)
    return caught.value


@pytest.mark.parametrize("literal, value", [(r"'it\'s'", "it's"), (r'"dq\"x"', 'dq"x')])
def test_statement_with_escaped_quotes_in_a_literal_is_parsed(literal, value):
    statement = parse_statement(
        f"CREATE MATERIALIZED VIEW v AS SELECT id FROM orders WHERE status <> {literal}"
    )
    assert isinstance(statement, CreateView) and statement.name == "v"
    assert statement.query.strip().endswith(literal)


def test_trailing_group_is_a_syntax_error_where_it_stands():
    error = error_of("SELECT status, COUNT(*) AS n\nFROM orders GROUP", SqlSyntaxError)
    assert error.position == Position(2, 13)
    assert "GROUP" in error.message and "group.status" not in str(error)


@pytest.mark.parametrize(
    "function",
    [
        "current_user()",
        "current_database()",
        "current_schema()",
        "current_catalog()",
        "session_user()",
        "user()",
        "current_user",
    ],
)
def test_session_dependent_function_is_refused_by_name(function):
    error = error_of(f"SELECT id, {function} AS who FROM orders", UnsupportedQuery)
    assert error.construct.startswith("session-dependent function") and error.hint
    if function.endswith(")"):  # sqlglot keeps no position for a bare CURRENT_USER
        assert error.position == Position(1, 12)


@pytest.fixture
def orders(spark, fresh_db):
    spark.sql(f"CREATE TABLE orders (id INT, status STRING, amount INT) USING DELTA {CDF}")
    spark.sql("""INSERT INTO orders VALUES (1, 'it\\'s', 3), (2, 'dq"x', 4), (3, 'ok', 5)""")
    return fresh_db


def test_view_with_escaped_quotes_in_literals_equals_its_query(spark, orders):
    query = r"""SELECT id, status FROM orders WHERE status <> 'it\'s' AND status <> "dq\"x" """
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("INSERT INTO orders VALUES (4, 'it\\'s', 6), (5, 'new', 7)")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW v")
    assert sorted(spark.table("v").collect()) == sorted(spark.sql(query).collect())
    assert len(spark.sql(query).collect()) == 2


@pytest.mark.parametrize(
    "select, kind, position, fragment",
    [
        ("SELECT id, nosuchfn(amount) AS y FROM orders", CatalogError, Position(2, 12), "nosuchfn"),
        (
            "SELECT id, amount + array(1) AS y FROM orders",
            ivm.errors.InvalidQuery,
            Position(2, 12),
            "data type mismatch",
        ),
        (
            "SELECT id FROM orders\nWHERE amount > 0 AND status - array('x') > 0",
            ivm.errors.InvalidQuery,
            Position(3, 22),
            "data type mismatch",
        ),
    ],
)
def test_query_spark_refuses_is_reported_at_the_users_sql(
    spark, orders, select, kind, position, fragment
):
    with pytest.raises(kind) as caught:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS\n{select}")
    error = caught.value
    assert error.position == position and fragment in error.message
    text = str(error)
    assert "delta__" not in text and "_ivm_" not in text and "SubqueryAlias" not in text
    assert "Project [" not in text and "\n+-" not in text
    assert not spark.catalog.tableExists(store_name(f"{orders}.v"))


def _temporary_view(spark):
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW recent AS SELECT * FROM orders WHERE id > 1")


def _python_udf(spark):
    spark.udf.register("plus_one", lambda x: x + 1, "int")


@pytest.mark.parametrize(
    "make, select, construct, position",
    [
        (_temporary_view, "SELECT id FROM recent", "temporary view recent", Position(1, 46)),
        (
            _python_udf,
            "SELECT id, plus_one(id) AS n FROM orders",
            "temporary function plus_one",
            Position(1, 42),
        ),
    ],
    ids=["temporary_view", "python_udf"],
)
def test_what_lives_only_in_this_session_is_refused_as_temporary(
    spark, orders, make, select, construct, position
):
    make(spark)
    with pytest.raises(UnsupportedQuery) as caught:
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {select}")
    assert construct in caught.value.construct
    assert "refreshes run in other sessions" in caught.value.message
    assert caught.value.position == position


def test_session_functions_are_looked_up_where_spark_reserves_keywords(spark, orders):
    """The functions a query calls are listed with ``SHOW USER FUNCTIONS``, which Spark
    cannot parse where it enforces reserved keywords (``USER`` is one): the lookup must not
    fail with Spark's parse error in such a session."""
    _python_udf(spark)
    with session_settings(spark, {"spark.sql.ansi.enforceReservedKeywords": "true"}):
        with pytest.raises(UnsupportedQuery) as temporary:
            ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT id, plus_one(id) AS n FROM orders")
        with pytest.raises(CatalogError) as unknown:
            ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT id, nosuchfn(id) AS n FROM orders")
    assert "temporary function plus_one" in temporary.value.construct
    assert "nosuchfn" in unknown.value.message


@pytest.mark.slow
def test_a_1500_column_distinct_view_is_created_and_refreshed(spark, fresh_db):
    columns = [f"c{i}" for i in range(1500)]
    spark.sql(f"CREATE TABLE w ({', '.join(c + ' INT' for c in columns)}) USING DELTA {CDF}")
    row = ", ".join(str(i) for i in range(1500))
    spark.sql(f"INSERT INTO w VALUES ({row})")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT DISTINCT * FROM w")
    spark.sql(f"INSERT INTO w VALUES ({row}), ({', '.join('1' for _ in columns)})")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
    assert spark.table("v").count() == 2 and spark.table("v").columns == columns
