"""A reference evaluator of compiled views that needs no Spark: DuckDB runs the compiler's SQL.

It checks the identity every derivative rule must satisfy (DBSP's incremental form): folding
the delta query's rows into the store computed before a change gives the store computed after
it::

    fold(full(before), delta(before, after)) = full(after)

``full`` is the view's store query, ``delta`` the delta query over the ``before``/``after``
snapshots and the change ``after − before`` as a Z-set (rows weighted ±n), and ``fold`` the
MERGE the runtime runs; where every source's drawn change inserts rows only and the view has
rules for that (:mod:`ivm.rules.append`), ``delta`` is theirs, reading ``full(before)`` as
the view's store. The two stores are compared as the view they show. DuckDB evaluates
both sides, so where its functions differ from Spark's it differs on both sides alike: what
the identity checks is the rules, not the SQL dialect. Spark stays the oracle end to end.

One departure from the MERGE the runtime runs: DuckDB evaluates every action of a MERGE
eagerly, so the guard against negative counts (a RAISE_ERROR action in Spark) is a query of
its own before the MERGE, and a rule that gives a count below zero fails the check there.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import duckdb
import sqlglot
from sqlglot import exp

from ivm import codegen, compile
from ivm.codegen.store import NEGATIVE_COUNT
from ivm.compiler import CompiledView
from ivm.frontend import lower, parse_query, qualify_query
from ivm.ir import reading, scans
from ivm.passes import optimize
from ivm.store import is_exact
from ivm.zset import COUNT, WEIGHT, Read, relation_name

SPARK_FUNCTIONS = (
    # volatile, so DuckDB cannot fold it into a constant that fails at planning
    "CREATE MACRO raise_error(message) AS error(message || left(CAST(random() AS VARCHAR), 0))",
    "CREATE MACRO array_repeat(element, n) AS list_transform(range(n), lambda i: element)",
    "CREATE MACRO sequence(first, last) AS range(first, last + 1)",
)
"""Spark functions the compiler's SQL uses that DuckDB lacks."""

FAST = 6
"""The fast tier's tests draw this many times the examples of the profile's Spark tests (each
takes milliseconds here); a family, whose every example checks all its views, a fraction."""

OVERFLOW = ("Overflow", "out of range")
"""Words of DuckDB errors where a sum left its type: the runtime recomputes then."""


@dataclass(frozen=True)
class Outcome:
    """What a check found: ``folded`` (the view folded and compared), or why not."""

    holds: bool
    how: str
    folded: list | None = None
    fresh: list | None = None


def duck(query: exp.Expression) -> str:
    return _inner_generators(query).sql("duckdb")


def _inner_generators(query: exp.Expression) -> exp.Expression:
    """``query`` with each ``LATERAL VIEW OUTER`` written as an inner one of an array that is
    never empty (``[NULL]`` for an empty or NULL one), which DuckDB's ``UNNEST`` (what sqlglot
    writes a lateral view as) runs. A position it generates for such a row is 0, not NULL:
    both sides of the identity see the same rows, which is what it checks."""
    def inner(node):
        if not (isinstance(node, exp.Lateral) and node.args.get("view")
                and node.args.get("outer")):
            return node
        generator = node.this.copy()
        array = generator.this
        generator.set("this", exp.If(
            this=exp.GT(this=exp.ArraySize(this=array.copy()), expression=exp.Literal.number(0)),
            true=array.copy(), false=exp.Array(expressions=[exp.Null()])))
        return exp.Lateral(this=generator, view=True, alias=node.args.get("alias"))
    return query.transform(inner)


def _type(spark_type: str) -> str:
    return exp.DataType.build(spark_type, dialect="spark").sql("duckdb")


_connection: duckdb.DuckDBPyConnection | None = None


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with :data:`SPARK_FUNCTIONS` and no tables. There is one per
    process, emptied for each check: opening a new one took longer than the check itself."""
    global _connection
    if _connection is None:
        _connection = duckdb.connect()
        for statement in SPARK_FUNCTIONS:
            _connection.execute(statement)
    for (table,) in _connection.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        _connection.execute(f'DROP TABLE "{table}"')
    return _connection


def load(connection, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[tuple],
         weights: Sequence[int] | None = None) -> None:
    """Create the table ``name`` of ``columns`` ((name, Spark type) pairs) holding ``rows``,
    each with its weight as :data:`~ivm.zset.WEIGHT` if ``weights`` are given."""
    spec = [f'"{column}" {_type(type_)}' for column, type_ in columns]
    spec += [f"{WEIGHT} BIGINT"] if weights is not None else []
    if not spec:    # a source of which the view reads no column (COUNT(*) FROM t)
        spec, rows = ["_row BOOLEAN"], [(True,) for _ in rows]
    connection.execute(f'CREATE OR REPLACE TABLE "{name}" ({", ".join(spec)})')
    data = [tuple(list(v) if isinstance(v, tuple) else v for v in row)  # an ARRAY's values
            + ((weight,) if weights is not None else ())
            for row, weight in zip(rows, weights if weights is not None else [None] * len(rows))]
    if data:    # one statement: DuckDB runs executemany's statement once per row
        marks = ", ".join([f"({', '.join('?' * len(data[0]))})"] * len(data))
        connection.execute(f'INSERT INTO "{name}" VALUES {marks}',
                           [value for row in data for value in row])


def _project(table_columns: Sequence[tuple[str, str]], used: Sequence[str], rows):
    """``rows`` of a table with ``table_columns`` projected onto the ``used`` ones (the
    compiler's lowercase names), and those columns with their types."""
    names = [name.lower() for name, _ in table_columns]
    at = [names.index(column) for column in used]
    return ([(column, table_columns[i][1]) for column, i in zip(used, at)],
            [tuple(row[i] for i in at) for row in rows])


def _bind(connection, compiled: CompiledView, schema, before, after) -> None:
    """The reads of a delta query: snapshots before and after, and the change as a Z-set."""
    for table, used in compiled.sources.items():
        columns, old = _project(schema[table], used, before[table])
        _, new = _project(schema[table], used, after[table])
        change = Counter(new)
        change.subtract(Counter(old))
        rows = [row for row, weight in change.items() if weight]
        load(connection, relation_name(table, Read.BEFORE), columns, old)
        load(connection, relation_name(table, Read.AFTER), columns, new)
        load(connection, relation_name(table, Read.DELTA), columns, rows,
             [change[row] for row in rows])


def _canonical(value):
    """A value as compared: floats to 12 significant digits, -0.0 as 0.0, NaN as text.
    Float sums added in another order differ in the last bits, a lost retraction
    (1e16 + 1.0 - 1e16 giving 0.0) in the first."""
    if isinstance(value, float):
        return repr(value) if math.isnan(value) or math.isinf(value) \
            else float(f"{value:.12g}") + 0.0
    return value


def _rows(connection, view: str) -> list:
    """The rows of the DuckDB query ``view``, canonical and sorted."""
    return sorted((tuple(_canonical(v) for v in row)
                   for row in connection.execute(view).fetchall()), key=repr)


def _inexact_sums(connection, compiled: CompiledView) -> bool:
    """Whether the store keeps a sum the runtime recomputes rather than folds: one of floats,
    or a decimal with no digit to carry (:func:`ivm.store.is_exact`). DuckDB sums integers
    as HUGEINT, which is exact."""
    types = dict(connection.execute("SELECT column_name, column_type FROM "
                                    "(DESCRIBE store)").fetchall())

    def exact(type_: str) -> bool:
        return type_ == "HUGEINT" or is_exact(
            exp.DataType.build(type_, dialect="duckdb").sql("spark"))
    return any(acc.kind == "sum" and not exact(types[acc.name])
               for acc in compiled.store.accumulators)


@dataclass(frozen=True)
class _Statements:
    """A view compiled, and the DuckDB statements that check it: the same for every example,
    so made once per process (:func:`_statements`)."""

    compiled: CompiledView
    full: str                   # every store row, over the AFTER relations
    delta: str                  # the delta query
    negative: str               # the change's rows that would leave a count below zero
    merge: str                  # the runtime's MERGE of ``change`` into ``store``, unguarded
    views: dict[str, str]       # the view's rows, of the stores ``store`` and ``fresh``
    inserting: tuple[str, str] | None   # the delta query for changes that insert rows only,
                                        # and the name it reads the store by (None: none)


@functools.lru_cache(maxsize=1024)
def _statements(sql: str, schema: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
                ) -> tuple[tuple[str | None, _Statements], ...]:
    """The statements of each state table of the view (by name), then of the view (None)."""
    compiled = compile(sql, {t: dict(columns) for t, columns in schema})
    return tuple((table, _part_statements(part))
                 for table, part in [*compiled.states, (None, compiled)])


def _part_statements(compiled: CompiledView) -> _Statements:
    on = " AND ".join(f'store."{k}" IS NOT DISTINCT FROM change."{k}"'
                      for k in compiled.store.keys) or "TRUE"
    merge = codegen.merge_statement(compiled.store, "store", sqlglot.parse_one(
        "SELECT * FROM change"))
    whens = merge.args["whens"]     # DuckDB runs every action eagerly: the guard is a query
    whens.set("expressions", [w for w in whens.expressions if not any(
        literal.this == NEGATIVE_COUNT for literal in w.find_all(exp.Literal))])
    inserting = compiled.inserting()
    stored = None if inserting is None else next(   # the rules read the view's own store
        relation_name(s.table, s.read) for s in scans(inserting.maintenance.delta)
        if s.read is Read.STORE)
    return _Statements(
        compiled, duck(compiled.full_query), duck(compiled.delta_query),
        f"SELECT change.* FROM change LEFT JOIN store ON {on} "
        f"WHERE COALESCE(store.{COUNT}, 0) + change.{COUNT} < 0", duck(merge),
        {store: duck(codegen.view_query(compiled.store, store)) for store in ("store", "fresh")},
        None if inserting is None or stored is None else (duck(inserting.delta_query),
                                                          stored))


def _fold(connection, statements: _Statements, inserts_only: bool) -> bool:
    """The runtime's MERGE of the change into ``store``, its negative-count guard a query;
    the change by the rules for inserted rows where it ``inserts_only`` and they apply
    (reading the store before the MERGE, as the runtime does). Whether they did."""
    delta = statements.delta
    if inserts_only and statements.inserting is not None:
        delta, stored = statements.inserting
        connection.execute(f'CREATE OR REPLACE VIEW "{stored}" AS SELECT * FROM store')
    connection.execute(f"CREATE TABLE change AS {delta}")
    negative = connection.execute(statements.negative).fetchall()
    if negative:
        raise AssertionError(f"the change gives rows a negative count: {negative[:3]}")
    connection.execute(statements.merge)
    return delta is not statements.delta


def _inserts_only(compiled: CompiledView, schema, before, after) -> bool:
    """Whether every source's change, as the view reads it, inserts rows and removes none."""
    for table, used in compiled.sources.items():
        _, old = _project(schema[table], used, before[table])
        _, new = _project(schema[table], used, after[table])
        if Counter(old) - Counter(new):
            return False
    return True


def check_identity(sql: str, schema: Mapping[str, Sequence[tuple[str, str]]],
                   before: Mapping[str, Sequence[tuple]],
                   after: Mapping[str, Sequence[tuple]]) -> Outcome:
    """Whether ``fold(full(before), delta(before, after)) = full(after)`` for the view ``sql``
    over tables of ``schema`` ({table: [(column, Spark type)]}) holding ``before`` and then
    ``after`` rows: for each of its state tables, then for the view, which reads the state
    tables' rows before and after the change as those of any source."""
    schema, before, after = dict(schema), dict(before), dict(after)
    for table, statements in _statements(
            sql, tuple((t, tuple(columns)) for t, columns in schema.items())):
        outcome, state = _check(statements, schema, before, after)
        if table is None or not outcome.holds or state is None:
            return outcome
        schema[table], before[table], after[table] = state


def _check(statements: _Statements, schema, before, after
           ) -> tuple[Outcome, tuple[list, list, list] | None]:
    """The identity for one store; and, where it holds or the runtime recomputes, the
    store's view as a source: its columns, and its rows before and after the change."""
    compiled = statements.compiled
    connection = connect()
    _bind(connection, compiled, schema, before, before)
    try:
        connection.execute(f"CREATE TABLE store AS {statements.full}")
    except duckdb.Error as error:
        if any(word in str(error) for word in OVERFLOW):
            return Outcome(True, "the query fails on these rows"), None
        raise
    old = connection.execute(statements.views["store"]).fetchall()
    columns = [(name, exp.DataType.build(type_, dialect="duckdb").sql("spark"))
               for name, type_ in connection.execute(
                   f"SELECT column_name, column_type FROM (DESCRIBE {statements.views['store']})"
               ).fetchall()]
    _bind(connection, compiled, schema, before, after)
    connection.execute(f"CREATE TABLE fresh AS {statements.full}")
    new = connection.execute(statements.views["fresh"]).fetchall()
    connection.execute("DROP TABLE fresh")
    if _inexact_sums(connection, compiled):
        return Outcome(True, "recomputed: a sum of floats"), (columns, old, new)
    try:
        appended = _fold(connection, statements, _inserts_only(compiled, schema, before, after))
    except duckdb.Error as error:
        if any(word in str(error) for word in OVERFLOW):
            return Outcome(True, "recomputed: a sum overflowed"), (columns, old, new)
        raise
    connection.execute(f"CREATE TABLE fresh AS {statements.full}")
    folded, fresh = (_rows(connection, statements.views[store]) for store in ("store", "fresh"))
    how = "folded inserts only" if appended else "folded"
    return Outcome(folded == fresh, how, folded, fresh), (columns, old, new)


def check_passes(sql: str, schema: Mapping[str, Sequence[tuple[str, str]]],
                 rows: Mapping[str, Sequence[tuple]]) -> Outcome:
    """Whether the passes keep the view's rows: its plan as lowered and as the passes leave
    it give the same multiset over tables of ``schema`` holding ``rows``."""
    mapping = {t: dict(columns) for t, columns in schema.items()}
    query = parse_query(sql)
    lowered = lower(qualify_query(query, sql, mapping), sql)
    connection = connect()
    for table in {scan.table for scan in scans(lowered)}:
        used = [c for s in scans(lowered) if s.table == table for c in s.columns]
        columns, values = _project(schema[table], list(dict.fromkeys(used)), rows[table])
        load(connection, relation_name(table, Read.AFTER), columns, values)
    results = []
    for plan in (lowered, optimize(lowered)):
        try:
            found = connection.execute(duck(codegen.to_select(reading(plan, Read.AFTER))))
        except duckdb.Error as error:
            if any(word in str(error) for word in OVERFLOW):
                return Outcome(True, "the query fails on these rows")
            raise
        results.append(sorted((tuple(_canonical(v) for v in row) for row in found.fetchall()),
                              key=repr))
    return Outcome(results[0] == results[1], "compared", results[1], results[0])
