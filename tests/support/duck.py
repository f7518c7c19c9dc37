"""Views maintained without Spark, for the compiler's tests: DuckDB runs a view's compiled SQL
and the view's own SQL over the same rows (the reference evaluator of
``tests/property/reference.py``), so that a test states what a view shows, not the text of
the SQL that shows it.

Rows are compared as multisets (:class:`~collections.Counter`), which also matches a decimal
with the same number at another scale, as Spark and DuckDB type some results differently.
"""

from collections import Counter
from collections.abc import Mapping, Sequence

import ivm
from ivm import codegen
from ivm.zset import Read, relation_name
from tests.property.reference import check_identity, connect, duck, load, original_query

Schema = Mapping[str, Sequence[tuple[str, str]]]
"""Each table's columns: ``(name, Spark type)`` pairs."""

Rows = Mapping[str, Sequence[tuple]]
"""Each table's rows (none where a table is not named)."""


def view_rows(sql: str, schema: Schema, rows: Rows) -> Counter:
    """The rows the view ``sql`` shows over tables of ``schema`` holding ``rows``: its store
    computed by its compiled query (its state tables' first), and the view over the store."""
    compiled = ivm.compile(sql, {table: dict(columns) for table, columns in schema.items()})
    connection = connect()
    for table, part in [*compiled.states, (None, compiled)]:
        for source, used in part.sources.items():
            if source in schema:  # not a state table, made before
                names = [name.lower() for name, _ in schema[source]]
                types = dict(zip(names, (type_ for _, type_ in schema[source]), strict=True))
                load(
                    connection,
                    relation_name(source, Read.AFTER),
                    [(c, types[c]) for c in used],
                    [tuple(row[names.index(c)] for c in used) for row in rows.get(source, ())],
                )
        connection.execute(f"CREATE OR REPLACE TABLE store AS {duck(part.full_query)}")
        shown = duck(codegen.view_query(part.store, "store"))
        if table is None:
            return Counter(connection.execute(shown).fetchall())
        connection.execute(f'CREATE TABLE "{relation_name(table, Read.AFTER)}" AS {shown}')
    raise AssertionError("unreachable: the view is the last part")


def query_rows(sql: str, schema: Schema, rows: Rows) -> Counter:
    """The rows of ``sql`` itself, run by DuckDB over tables of ``schema`` holding ``rows``
    (names in lower case: Spark resolves them whatever their case)."""
    connection = connect()
    for table, columns in schema.items():
        load(
            connection,
            table.lower(),
            [(name.lower(), type_) for name, type_ in columns],
            rows.get(table, ()),
        )
    return Counter(connection.execute(original_query(sql)).fetchall())


def assert_maintained(sql: str, schema: Schema, before: Rows, after: Rows) -> None:
    """The view ``sql`` shows its own SQL's rows over the ``before`` rows and over the
    ``after`` rows, and its change from the one to the other, folded into its store, gives
    the store computed anew (:func:`reference.check_identity`)."""

    def every_table(rows: Rows) -> dict[str, list]:
        return {table: list(rows.get(table, ())) for table in schema}

    outcome = check_identity(sql, schema, every_table(before), every_table(after))
    assert outcome.holds and outcome.compared, outcome.describe() or outcome
