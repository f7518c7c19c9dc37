"""Sources and changes drawn for any schema (:mod:`ivm.testing.data`), checked without Spark:
every domain value is a literal Spark reads back as itself, a view's literals and keys shape
the domains, and every drawn change is a statement that parses."""

from datetime import date
from decimal import Decimal

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from ivm.names import DIALECT
from ivm.testing.data import (
    CHANGE_KINDS,
    UnsupportedType,
    assignments,
    changes,
    create_table,
    default_domain,
    insert,
    literal,
    precision_scale,
    scenarios,
    sources,
    table_rows,
)

pytestmark = pytest.mark.fast

TYPES = (
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "DECIMAL",
    "DECIMAL(18,8)",
    "DECIMAL(38,0)",
    "DECIMAL(38,18)",
    "DECIMAL(3,3)",
    "DOUBLE",
    "FLOAT",
    "STRING",
    "VARCHAR(3)",
    "CHAR(1)",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "BOOLEAN",
)

SCHEMA = {
    "orders": [
        ("id", "BIGINT"),
        ("customer", "INT"),
        ("status", "VARCHAR(10)"),
        ("amount", "DECIMAL(12,2)"),
        ("placed", "TIMESTAMP_NTZ"),
        ("day", "DATE"),
    ],
    "customers": [
        ("id", "INT"),
        ("name", "STRING"),
        ("vip", "BOOLEAN"),
        ("score", "DOUBLE"),
        ("size", "TINYINT"),
        ("joined", "TIMESTAMP"),
        ("group", "CHAR(2)"),
    ],
    "flags": [("on", "BOOLEAN")],  # nothing can hold a marker
}
VIEW = (
    "SELECT c.name, o.day, SUM(o.amount) AS total FROM orders o JOIN customers c "
    "ON o.customer = c.id WHERE o.status = 'shipped' AND c.size > 100 GROUP BY c.name, o.day"
)
SOURCES = sources(SCHEMA, VIEW)


def parse(statement: str) -> exp.Expr:
    """The statement as sqlglot reads Spark SQL, refusing a fallback to an unparsed command."""
    parsed = sqlglot.parse_one(statement, read=DIALECT)
    assert not isinstance(parsed, exp.Command), statement
    return parsed


@pytest.mark.parametrize("type_", TYPES)
def test_every_value_of_a_domain_is_a_literal_read_back_as_itself(type_):
    values = default_domain(type_)
    assert values
    for value in values + (None,):
        read = parse(f"SELECT {literal(value, type_)}").expressions[0]
        if isinstance(value, str):
            assert read.this == value
        elif isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            number = -Decimal(read.this.this) if isinstance(read, exp.Neg) else Decimal(read.this)
            assert number == value


@pytest.mark.parametrize("type_", [t for t in TYPES if t.startswith("DECIMAL")])
def test_decimals_fit_their_type_doubled(type_):
    precision, scale = precision_scale(type_)
    for value in default_domain(type_) or ():
        assert abs(2 * value) < 10 ** (precision - scale)
        assert value.as_tuple().exponent >= -scale
    assert Decimal(1).scaleb(-scale) in (default_domain(type_) or ())


def test_the_literals_a_view_compares_with_enter_the_domains():
    (orders,) = sources(
        {
            "orders": [
                ("status", "STRING"),
                ("code", "VARCHAR(3)"),
                ("qty", "INT"),
                ("d", "DATE"),
                ("price", "DECIMAL(10,2)"),
            ]
        },
        "SELECT status, SUM(price) AS total FROM orders WHERE status = 'shipped' "
        "AND code <> 'toolong' AND 100 < qty AND d >= DATE '1995-03-15' "
        "AND price BETWEEN 0.05 AND 0.07 GROUP BY status",
    )
    values = {c.name: c.values for c in orders.columns}
    assert "shipped" in values["status"]
    assert "toolong" not in values["code"]  # longer than the column
    assert {100, 101} <= set(values["qty"])
    assert {date(1995, 3, 14), date(1995, 3, 15)} <= set(values["d"])
    assert {Decimal("0.04"), Decimal("0.05"), Decimal("0.07"), Decimal("0.08")} <= set(
        values["price"]
    )
    assert all(isinstance(v, int) for v in values["qty"])


def test_keys_are_columns_compared_with_another_or_grouped():
    keys = {(s.name, c.name) for s in SOURCES for c in s.columns if c.key}
    assert keys == {
        ("orders", "customer"),
        ("customers", "id"),
        ("customers", "name"),
        ("orders", "day"),
    }


def test_a_marker_is_a_value_no_row_has_in_a_column_other_than_a_key():
    markers = {s.name: s.marker for s in SOURCES}
    assert markers == {"orders": ("id", 99), "customers": ("score", 99.0), "flags": None}


@pytest.mark.parametrize(
    "type_",
    [
        "ARRAY<MAP<INT,INT>>",
        "MAP<STRING,INT>",
        "STRUCT<a:INT>",
        "BINARY",
        "INTERVAL DAY",
        "GEOGRAPHY",
    ],
)
def test_a_type_without_a_domain_is_refused_naming_table_column_and_type(type_):
    with pytest.raises(UnsupportedType) as refused:
        sources({"events": [("id", "INT"), ("tags", type_)]})
    assert "tags" in refused.value.message and "events" in refused.value.message
    assert type_ in refused.value.message and refused.value.hint


@settings(max_examples=60)
@given(data=st.data())
def test_drawn_changes_are_statements_that_parse(data):
    source = data.draw(st.sampled_from(SOURCES))
    known = data.draw(table_rows(source))
    statements = [create_table(source)] + ([insert(source, known)] if known else [])
    kinds = (*CHANGE_KINDS, "alter")
    for kind in data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=4)):
        if (kind != "transient" or source.marker) and (kind != "repeat" or known):
            statements += data.draw(changes(source, known, (kind,)))
    for statement in statements:
        parse(statement)
    if source.marker:
        column, mark = source.marker
        index = [c.name for c in source.columns].index(column)
        assert all(row[index] != mark for row in known)


@settings(max_examples=30)
@given(data=st.data())
def test_a_key_is_only_ever_set_to_a_value_of_its_domain(data):
    orders = SOURCES[0]
    keys = [c for c in orders.columns if c.key]
    assignment = data.draw(
        assignments(orders, exclude=[c.name for c in orders.columns if not c.key])
    )
    column = next(c for c in keys if assignment.startswith(f"{c.name} = "))
    assert assignment.split(" = ", 1)[1] in {literal(v, column.type) for v in column.domain}


@settings(max_examples=10)
@given(scenario=scenarios(SOURCES))
def test_a_scenario_creates_every_source_and_batches_statements(scenario):
    assert set(scenario.tables) == set(SCHEMA)
    for batch in scenario.batches:
        for statement in batch:
            if not statement.startswith("SET TIME ZONE"):
                parse(statement)
