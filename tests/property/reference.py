"""A reference evaluator of compiled views that needs no Spark: DuckDB runs the compiler's SQL
and the view's own.

It checks two things. First, the view as ivm keeps it equals the view's own SQL: the query as
the user wrote it, translated by sqlglot from Spark's dialect to DuckDB's and run over the
source tables under their own names, with every column, without ivm's lowering, passes or
code generation (:func:`original_query`). Second, the identity every derivative rule must
satisfy (DBSP's incremental form): folding the delta query's rows into the store computed
before a change gives the store computed after it::

    fold(full(before), delta(before, after)) = full(after)

``full`` is the view's store query, ``delta`` the delta query over the ``before``/``after``
snapshots and the change ``after − before`` as a Z-set (rows weighted ±n), and ``fold`` the
MERGE the runtime runs; where every source's drawn change inserts rows only and the view has
rules for that (:mod:`ivm.rules.append`), ``delta`` is theirs, reading ``full(before)`` as
the view's store. The stores are compared as the view they show: with each other, and with
the SQL's rows over the rows before and after the change. Where the runtime recomputes rather
than folds (a sum of floats, a sum that overflowed), the recomputed view is still compared
with the SQL; where a query overflows, the SQL must overflow too (Spark, in ANSI mode, fails
then).

Both sides run through one translation (:func:`duck`), so where DuckDB's meaning differs from
Spark's and ivm's SQL and the view's differ alike (casts to strings, the division of
decimals), the comparison is unaffected; where they do not differ alike, :data:`SPARK_MEANING`
rewrites the query to Spark's meaning before sqlglot translates it. What neither covers is
named, not passed: a check whose SQL DuckDB cannot run, or which overflows on one side only,
is ``not comparable`` with the reason (:class:`Outcome`), and the tests count them. Spark
stays the oracle end to end.

One departure from the MERGE the runtime runs: DuckDB evaluates every action of a MERGE
eagerly, so the guard against negative counts (a RAISE_ERROR action in Spark) is a query of
its own before the MERGE, and a rule that gives a count below zero fails the check there.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from ivm import codegen, compile
from ivm.codegen.store import LOGGED, NEGATIVE_COUNT
from ivm.compiler import CompiledView
from ivm.frontend import lower, parse_query, qualify_query
from ivm.ir import reading, scans
from ivm.passes import optimize
from ivm.store import is_exact
from ivm.zset import COUNT, WEIGHT, Read, match_within, relation_name

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
"""Words of DuckDB errors where a value left its type: Spark fails there too, in ANSI mode
(the runtime recomputes a store whose fold overflowed)."""

COMPARED = "compared with the SQL"
"""The :attr:`Outcome.comparison` of a check whose view was compared with its own SQL."""


@dataclass(frozen=True)
class Outcome:
    """What a check found. ``holds``: every comparison it made agreed. ``how``: how the store
    was kept (``folded``, ``folded inserts only``, ``recomputed: …``; ``both plans ran`` for
    the passes) or why not (``the query fails on these rows``). ``comparison``:
    :data:`COMPARED`, or ``not comparable: <why>``. Where it does not hold, ``broken`` names
    the two sides that differ and ``sides`` holds each side's rows."""

    holds: bool
    how: str
    comparison: str = COMPARED
    broken: str = ""
    sides: tuple[tuple[str, object], ...] = ()

    @property
    def compared(self) -> bool:
        return self.comparison == COMPARED

    def describe(self) -> str:
        """Which sides differ, and the rows of each side."""
        return self.broken + "".join(f"\n  {side}:\n    {rows}" for side, rows in self.sides)


@dataclass(frozen=True)
class Failed:
    """A query DuckDB did not run to its end: the first line of its error."""

    error: str

    @property
    def overflowed(self) -> bool:
        """Whether a value left its type (:data:`OVERFLOW`), as Spark's would in ANSI mode."""
        return _overflow(self.error)


Rows = list | Failed
"""A query's rows (canonical and sorted, :func:`_rows`), or why there are none."""


def _overflow(error: duckdb.Error | str) -> bool:
    return any(word in str(error) for word in OVERFLOW)


# --- Spark SQL as DuckDB runs it -------------------------------------------------------------


class Untranslated(Exception):
    """A construct :func:`duck` has no DuckDB translation of with Spark's meaning."""


ELEMENT, ORDINAL = "__element", "__ordinal"
"""Names of the columns of an ``UNNEST`` inside a translated lateral view: no view's own."""


def _lateral_views(query: exp.Expr) -> exp.Expr:
    """Each SELECT's lateral views as lateral joins where one is ``OUTER`` or ``posexplode``,
    which sqlglot's translation gets wrong (it drops OUTER, and leaves posexplode's columns
    unnamed by the view's alias)::

        LATERAL VIEW [OUTER] posexplode(a) g AS p, v
        [LEFT] JOIN LATERAL (SELECT __ordinal - 1 AS p, __element AS v
                             FROM UNNEST(a) WITH ORDINALITY AS u(__element, __ordinal))
                            AS g(p, v) ON TRUE

    So OUTER keeps a row whose array is empty or NULL once, with NULL in ``p`` and ``v``, as
    Spark does. A SELECT's other lateral views become joins too, in their order, for a view
    may read the columns of the one before it; ``explode`` is the same without ``p``."""
    for select in query.find_all(exp.Select):
        laterals = select.args.get("laterals") or []
        if any(
            lateral.args.get("outer") or isinstance(lateral.this, exp.Posexplode)
            for lateral in laterals
        ):
            select.set(
                "joins",
                [
                    *(select.args.get("joins") or []),
                    *(_lateral_join(lateral) for lateral in laterals),
                ],
            )
            select.set("laterals", [])
    return query


def _lateral_join(lateral: exp.Lateral) -> exp.Join:
    generator = lateral.this
    if not isinstance(generator, exp.Explode):
        raise Untranslated(f"{generator.sql('spark')} beside a LATERAL VIEW OUTER or posexplode")
    positional = isinstance(generator, exp.Posexplode)
    alias = lateral.args["alias"]
    names = [c.copy() for c in alias.columns] or [
        exp.to_identifier(n) for n in (("pos", "col") if positional else ("col",))
    ]
    outputs = [exp.alias_(exp.column(ELEMENT), names[-1])]
    if positional:
        outputs.insert(
            0,
            exp.alias_(
                exp.Sub(this=exp.column(ORDINAL), expression=exp.Literal.number(1)), names[0]
            ),
        )
    unnest = exp.Unnest(
        expressions=[generator.this.copy()],
        alias=exp.TableAlias(this=exp.to_identifier("u"), columns=[exp.to_identifier(ELEMENT)]),
        offset=exp.to_identifier(ORDINAL) if positional else None,
    )
    rows = exp.Subquery(this=exp.Select(expressions=outputs, from_=exp.From(this=unnest)))
    return exp.Join(
        this=exp.Lateral(this=rows, alias=exp.TableAlias(this=alias.this.copy(), columns=names)),
        side="LEFT" if lateral.args.get("outer") else None,
        on=exp.true(),
    )


def _semi_joins_on_true(query: exp.Expr) -> exp.Expr:
    """Each LEFT SEMI or LEFT ANTI JOIN without ON given ``ON TRUE``, which DuckDB needs (in
    Spark, every left row while the right input has a row, or while it has none)."""
    for join in query.find_all(exp.Join):
        if join.kind in ("SEMI", "ANTI") and not (join.args.get("on") or join.args.get("using")):
            join.set("on", exp.true())
    return query


def _with_rollup(query: exp.Expr) -> exp.Expr:
    """``GROUP BY k, a WITH ROLLUP`` (MySQL's spelling, which Spark parses; or ``WITH CUBE``)
    as ``GROUP BY ROLLUP (k, a)``, which DuckDB parses."""
    for group in query.find_all(exp.Group):
        for kind in ("rollup", "cube"):
            for grouping in group.args.get(kind) or []:
                group.set("expressions", [grouping.__class__(expressions=group.expressions)])
                group.set(kind, None)
    return query


def _no_total_of_no_rows(query: exp.Expr) -> exp.Expr:
    """A SELECT grouped by ROLLUP, CUBE or GROUPING SETS with ``COUNT(*) > 0`` added to its
    HAVING: over no rows, Spark gives no row for the empty grouping set (it groups the rows
    each set repeats), where DuckDB, as the SQL standard says, gives the grand total."""
    for select in query.find_all(exp.Select):
        group = select.args.get("group")
        if group and group.find(exp.Rollup, exp.Cube, exp.GroupingSets):
            some = exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
            having = select.args.get("having")
            select.set("having", exp.Having(this=exp.and_(having.this, some) if having else some))
    return query


SPARK_MEANING = (_lateral_views, _semi_joins_on_true, _with_rollup, _no_total_of_no_rows)
"""Rewrites of a Spark query, in order, after which sqlglot's DuckDB SQL means what Spark's
does: for the constructs whose translation differs, in a way ivm's SQL does not share."""


def duck(query: exp.Expr) -> str:
    """``query`` (Spark SQL) as DuckDB SQL: :data:`SPARK_MEANING` applied, then sqlglot's
    translation.

    >>> duck(sqlglot.parse_one("SELECT k, g.v FROM s LATERAL VIEW OUTER explode(tags) g AS v",
    ...                        read="spark"))
    'SELECT k, g.v FROM s LEFT JOIN LATERAL
     (SELECT __element AS v FROM UNNEST(tags) AS u(__element)) AS g(v) ON TRUE'
    """
    query = query.copy()
    for rewrite in SPARK_MEANING:
        query = rewrite(query)
    return query.sql("duckdb")


@functools.lru_cache(maxsize=1024)
def original_query(sql: str) -> str:
    """A view's own SQL as DuckDB runs it over the source tables under their own names: read
    as Spark SQL, names in lower case (Spark resolves them whatever their case), then
    :func:`duck`.

    >>> original_query("SELECT `Rate`, k FROM R LEFT SEMI JOIN s")
    'SELECT "rate", k FROM r SEMI JOIN s ON TRUE'
    """
    return duck(normalize_identifiers(sqlglot.parse_one(sql, read="spark"), dialect="spark"))


# --- tables ----------------------------------------------------------------------------------


@functools.cache
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


def load(
    connection,
    name: str,
    columns: Sequence[tuple[str, str]],
    rows: Sequence[tuple],
    weights: Sequence[int] | None = None,
) -> None:
    """Create the table ``name`` of ``columns`` ((name, Spark type) pairs) holding ``rows``,
    each with its weight as :data:`~ivm.zset.WEIGHT` if ``weights`` are given."""
    spec = [f'"{column}" {_type(type_)}' for column, type_ in columns]
    spec += [f"{WEIGHT} BIGINT"] if weights is not None else []
    if not spec:  # a source of which the view reads no column (COUNT(*) FROM t)
        spec, rows = ["_row BOOLEAN"], [(True,) for _ in rows]
    connection.execute(f'CREATE OR REPLACE TABLE "{name}" ({", ".join(spec)})')
    data = [
        tuple(list(v) if isinstance(v, tuple) else v for v in row)  # an ARRAY's values
        + ((weight,) if weights is not None else ())
        for row, weight in zip(
            rows, weights if weights is not None else [None] * len(rows), strict=True
        )
    ]
    if data:  # one statement: DuckDB runs executemany's statement once per row
        marks = ", ".join([f"({', '.join('?' * len(data[0]))})"] * len(data))
        connection.execute(
            f'INSERT INTO "{name}" VALUES {marks}', [value for row in data for value in row]
        )


def _project(table_columns: Sequence[tuple[str, str]], used: Sequence[str], rows):
    """``rows`` of a table with ``table_columns`` projected onto the ``used`` ones (the
    compiler's lowercase names), and those columns with their types."""
    names = [name.lower() for name, _ in table_columns]
    at = [names.index(column) for column in used]
    return (
        [(column, table_columns[i][1]) for column, i in zip(used, at, strict=True)],
        [tuple(row[i] for i in at) for row in rows],
    )


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
        load(
            connection,
            relation_name(table, Read.DELTA),
            columns,
            rows,
            [change[row] for row in rows],
        )


def _canonical(value):
    """A value as compared: floats to 12 significant digits, -0.0 as 0.0, NaN as text.
    Float sums added in another order differ in the last bits, a lost retraction
    (1e16 + 1.0 - 1e16 giving 0.0) in the first."""
    if isinstance(value, float):
        return (
            repr(value) if math.isnan(value) or math.isinf(value) else float(f"{value:.12g}") + 0.0
        )
    return value


def _canonical_rows(rows) -> list:
    """``rows`` as compared: their values canonical (:func:`_canonical`), sorted."""
    return sorted((tuple(_canonical(v) for v in row) for row in rows), key=repr)


def _same_rows(rows: list, other: list) -> bool:
    """Whether two canonical row lists hold the same rows, a float equal to another within
    :data:`FLOAT_TOLERANCE` of either. Rounding to 12 digits (:func:`_canonical`) is not
    enough alone: two doubles a bit apart on either side of a rounding boundary round apart."""
    if rows == other:
        return True
    widths = {len(row) for row in rows + other}
    if len(rows) != len(other) or len(widths) != 1:
        return False
    counted = [(row, 1, 0) for row in rows] + [(row, 0, 1) for row in other]
    return match_within(counted, set(range(widths.pop())), FLOAT_TOLERANCE)


FLOAT_TOLERANCE = 1e-11
"""The relative difference below which two doubles compare equal: ten times the last of the
12 digits that :func:`_canonical` keeps, far below a lost retraction (1.0 against 0.0)."""


def _rows(connection, view: str) -> list:
    """The rows of the DuckDB query ``view``, canonical and sorted."""
    return _canonical_rows(connection.execute(view).fetchall())


_sources: duckdb.DuckDBPyConnection | None = None
_loaded: dict[tuple[str, str], tuple] = {}


def _original_rows(
    sql: str,
    schema: Mapping[str, Sequence[tuple[str, str]]],
    snapshots: Mapping[str, Mapping[str, Sequence[tuple]]],
) -> dict[str, Rows]:
    """The rows of the view's own SQL (:func:`original_query`) over each snapshot of the
    sources (by name), the source tables under their own names, with all their columns. They
    live in a DuckDB of their own, each snapshot in a schema of its name, and a table is
    loaded again only if its rows changed: a family's views share the loads of an example."""
    global _sources
    try:
        query = original_query(sql)
    except (SqlglotError, Untranslated) as error:
        return dict.fromkeys(
            snapshots, Failed(f"no DuckDB translation: {str(error).splitlines()[0]}")
        )
    if _sources is None:
        _sources = duckdb.connect()
        for statement in SPARK_FUNCTIONS:
            _sources.execute(statement)
    results: dict[str, Rows] = {}
    for snapshot, rows in snapshots.items():
        _sources.execute(
            f"CREATE SCHEMA IF NOT EXISTS {snapshot}; SET schema = '{snapshot}'; "
            f"SET search_path = '{snapshot},main'"
        )
        for table, columns in schema.items():
            if _loaded.get((snapshot, table)) != (columns, rows[table]):
                load(
                    _sources, table, [(name.lower(), type_) for name, type_ in columns], rows[table]
                )
                _loaded[snapshot, table] = (columns, rows[table])
        try:
            results[snapshot] = _rows(_sources, query)
        except duckdb.Error as error:
            results[snapshot] = Failed(str(error).splitlines()[0])
    return results


def _verdict(how: str, pairs: Sequence[tuple[str, Rows | None, str, Rows | None]]) -> Outcome:
    """The outcome of comparing each pair of sides (name, rows) of ``pairs``: equal rows, or
    both overflowed. A side of None was not computed and is not compared; a pair of which
    one side overflowed and the other did not, or of which DuckDB could not run one side (the
    SQL), makes the check not comparable."""
    comparison, broken, sides = COMPARED, "", {}
    for name, rows, other_name, other in pairs:
        if rows is None or other is None:
            continue
        sides.update({name: rows, other_name: other})
        if isinstance(rows, list) and isinstance(other, list):
            broken = broken or (
                "" if _same_rows(rows, other) else f"{name} differs from {other_name}"
            )
        elif comparison != COMPARED:
            continue
        elif isinstance(other, Failed) and not other.overflowed:
            comparison = f"not comparable: DuckDB cannot run {other_name} ({other.error[:80]})"
        elif not (isinstance(rows, Failed) and isinstance(other, Failed)):
            fails, runs = (name, other_name) if isinstance(rows, Failed) else (other_name, name)
            comparison = f"not comparable: {fails} overflows where {runs} does not"
    return Outcome(not broken, how, comparison, broken, tuple(sides.items()) if broken else ())


# --- the identity ----------------------------------------------------------------------------


def _inexact_sums(connection, compiled: CompiledView) -> bool:
    """Whether the store keeps a sum the runtime recomputes rather than folds: one of floats,
    or a decimal with no digit to carry (:func:`ivm.store.is_exact`). DuckDB sums integers
    as HUGEINT, which is exact."""
    types = dict(
        connection.execute("SELECT column_name, column_type FROM (DESCRIBE store)").fetchall()
    )

    def exact(type_: str) -> bool:
        return type_ == "HUGEINT" or is_exact(
            exp.DataType.build(type_, dialect="duckdb").sql("spark")
        )

    return any(
        acc.kind == "sum" and not exact(types[acc.name]) for acc in compiled.store.accumulators
    )


@dataclass(frozen=True)
class _Statements:
    """A view compiled, and the DuckDB statements that check it: the same for every example,
    so made once per process (:func:`_statements`)."""

    compiled: CompiledView
    full: str  # every store row, over the AFTER relations
    delta: str  # the delta query
    negative: str  # the change's rows that would leave a count below zero
    merge: str  # the runtime's MERGE of ``change`` into ``store``, unguarded
    views: dict[str, str]  # the view's rows, of the stores ``store`` and ``fresh``, and of
    # ``logged``, the store before the change with the change appended, folded on read
    append: str  # the runtime's append of ``change`` to ``logged``
    compaction: str  # upkeep's fold of the log of ``logged``, unguarded
    inserting: str | None  # the delta query for changes that insert rows only (None: none)
    stored: str | None  # the name the delta queries read the store by (None: they do not)


@functools.lru_cache(maxsize=1024)
def _statements(
    sql: str, schema: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
) -> tuple[tuple[str | None, _Statements], ...]:
    """The statements of each state table of the view (by name), then of the view (None)."""
    compiled = compile(sql, {t: dict(columns) for t, columns in schema})
    return tuple(
        (table, _part_statements(part)) for table, part in [*compiled.states, (None, compiled)]
    )


def _part_statements(compiled: CompiledView) -> _Statements:
    on = (
        " AND ".join(f'store."{k}" IS NOT DISTINCT FROM change."{k}"' for k in compiled.store.keys)
        or "TRUE"
    )
    merge = _unguarded(
        codegen.merge_statement(compiled.store, "store", sqlglot.parse_one("SELECT * FROM change"))
    )
    inserting = compiled.inserting()
    stored = next(  # the rules that read the view's own store, under its name
        (
            relation_name(s.table, s.read)
            for part in (compiled, inserting)
            if part is not None
            for s in scans(part.maintenance.delta)
            if s.read is Read.STORE
        ),
        None,
    )
    return _Statements(
        compiled,
        duck(compiled.full_query),
        duck(compiled.delta_query),
        f"SELECT change.* FROM change LEFT JOIN store ON {on} "
        f"WHERE COALESCE(store.{COUNT}, 0) + change.{COUNT} < 0",
        duck(merge),
        {store: duck(codegen.view_query(compiled.store, store)) for store in ("store", "fresh")}
        # DuckDB sums BIGINTs as HUGEINTs, which its range() does not take: the count as Spark
        # types it
        | {
            "logged": duck(
                codegen.view_query(compiled.store, "logged", logged=True, types={COUNT: "bigint"})
            )
        },
        duck(
            codegen.append_statement(
                compiled.store, "logged", sqlglot.parse_one("SELECT * FROM change")
            )
        ),
        duck(_unguarded(codegen.compaction_statement(compiled.store, "logged"))),
        None if inserting is None else duck(inserting.delta_query),
        stored,
    )


def _unguarded(merge: exp.Merge) -> exp.Merge:
    """``merge`` without its action that fails on a negative count: DuckDB runs every action
    eagerly, so the guard is a query (:attr:`_Statements.negative`)."""
    whens = merge.args["whens"]
    whens.set(
        "expressions",
        [
            w
            for w in whens.expressions
            if not any(literal.this == NEGATIVE_COUNT for literal in w.find_all(exp.Literal))
        ],
    )
    return merge


def _fold(
    connection, statements: _Statements, inserts_only: bool, changed: Collection[str]
) -> bool:
    """The runtime's MERGE of the change into ``store``, its negative-count guard a query;
    the change by the rules for inserted rows where it ``inserts_only`` and they apply
    (reading the store before the MERGE, as the runtime does), by the delta query without
    the terms of the sources not ``changed`` where that differs, as a refresh runs it
    (:meth:`~ivm.compiler.CompiledView.changed_only`). Whether the rules for inserted rows
    applied. Before the MERGE, the store is copied to ``logged`` and the change appended to
    it, as a logged store takes it."""
    appended = inserts_only and statements.inserting is not None
    delta = statements.inserting if appended else statements.delta
    compiled = statements.compiled.inserting() if appended else statements.compiled
    assert compiled is not None and delta is not None
    if (fewer := compiled.changed_only(changed)) is not compiled:
        delta = duck(fewer.delta_query)
    if statements.stored is not None:
        connection.execute(f'CREATE OR REPLACE VIEW "{statements.stored}" AS SELECT * FROM store')
    connection.execute(f"CREATE TABLE change AS {delta}")
    negative = connection.execute(statements.negative).fetchall()
    if negative:
        raise AssertionError(f"the change gives rows a negative count: {negative[:3]}")
    connection.execute(f"CREATE OR REPLACE TABLE logged AS SELECT *, FALSE AS {LOGGED} FROM store")
    connection.execute(statements.append)
    connection.execute(statements.merge)
    return appended


def _compacted(connection, statements: _Statements) -> Rows:
    """The view of ``logged`` once upkeep folded its log in; no logged row is left."""
    connection.execute(statements.compaction)
    left = connection.execute(f"SELECT COUNT(*) FROM logged WHERE {LOGGED}").fetchone()
    assert left == (0,), f"the fold left {left} logged rows"
    return _rows(connection, statements.views["logged"])


def _read_rows(compiled: CompiledView, schema, before, after) -> dict[str, tuple[Counter, Counter]]:
    """Each source's rows before and after the change, as the view reads them (multisets)."""
    return {
        table: (
            Counter(_project(schema[table], used, before[table])[1]),
            Counter(_project(schema[table], used, after[table])[1]),
        )
        for table, used in compiled.sources.items()
    }


def _changed(read: dict[str, tuple[Counter, Counter]]) -> list[str]:
    """The sources whose rows ``read`` (:func:`_read_rows`) the change changes (the others'
    Δ is empty, as a source's whose version a refresh does not move)."""
    return [table for table, (old, new) in read.items() if old != new]


def _inserts_only(read: dict[str, tuple[Counter, Counter]]) -> bool:
    """Whether every source's change in ``read`` (:func:`_read_rows`) inserts rows and
    removes none."""
    return not any(old - new for old, new in read.values())


@dataclass(frozen=True)
class _Kept:
    """One store kept over a change: how (see :class:`Outcome`); its view's rows before the
    change, and after it, recomputed and folded (None: not computed, or not folded); and,
    where both snapshots ran, the store's view as a source of the next part (a state table's
    of the view): its columns, and its rows before and after the change."""

    how: str
    before: Rows | None
    fresh: Rows | None = None
    folded: Rows | None = None
    logged: Rows | None = None  # the view of the logged store, folded on read
    compacted: Rows | None = None  # and once its log is folded into its stored rows
    source: tuple[list, list, list] | None = None


def check_identity(
    sql: str,
    schema: Mapping[str, Sequence[tuple[str, str]]],
    before: Mapping[str, Sequence[tuple]],
    after: Mapping[str, Sequence[tuple]],
    original: str | None = None,
) -> Outcome:
    """Whether ``fold(full(before), delta(before, after)) = full(after)`` for the view ``sql``
    over tables of ``schema`` ({table: [(column, Spark type)]}) holding ``before`` and then
    ``after`` rows: for each of its state tables, then for the view, which reads the state
    tables' rows before and after the change as those of any source; and whether the view
    shows, before the change and after it, the rows of ``original`` (its own SQL, ``sql``
    unless given) over the same source rows; and whether the view's logged store, the change
    appended, reads as the view recomputed, folded on read and once its log is folded in."""
    expected = _original_rows(original or sql, schema, {"before": before, "after": after})
    schema, before, after = dict(schema), dict(before), dict(after)
    *states, (_, statements) = _statements(
        sql, tuple((t, tuple(columns)) for t, columns in schema.items())
    )
    for table, part in states:
        kept = _check(part, schema, before, after)
        if kept.source is None:  # the state table's query overflowed: so does the view's
            return _verdict(
                kept.how,
                [
                    (
                        "the view before the change",
                        kept.before if isinstance(kept.before, Failed) else None,
                        "its SQL before the change",
                        expected["before"],
                    ),
                    (
                        "the view after the change",
                        kept.fresh if isinstance(kept.fresh, Failed) else None,
                        "its SQL after the change",
                        expected["after"],
                    ),
                ],
            )
        outcome = _verdict(
            kept.how,
            [
                (
                    f"the state table {table} folded",
                    kept.folded,
                    f"the state table {table} recomputed",
                    kept.fresh,
                )
            ],
        )
        if not outcome.holds:
            return outcome
        schema[table], before[table], after[table] = kept.source
    kept = _check(statements, schema, before, after)
    return _verdict(
        kept.how,
        [
            ("the view folded", kept.folded, "the view recomputed", kept.fresh),
            ("the logged store read", kept.logged, "the view recomputed", kept.fresh),
            ("the logged store compacted", kept.compacted, "the view recomputed", kept.fresh),
            (
                "the view before the change",
                kept.before,
                "its SQL before the change",
                expected["before"],
            ),
            ("the view recomputed", kept.fresh, "its SQL after the change", expected["after"]),
            ("the view folded", kept.folded, "its SQL after the change", expected["after"]),
        ],
    )


def _check(statements: _Statements, schema, before, after) -> _Kept:
    """One store kept over the change: computed over the rows before, folded, and computed
    over the rows after; a query that overflows on a snapshot stops there."""
    compiled = statements.compiled
    connection = connect()
    # The store as written by a query that read the rows in the other order: a value that
    # depends on the order (a sum of floats) then differs from its recomputation before the
    # change, as it may in Spark, and a refresh must retract the stored value, not that one.
    written = {table: list(reversed(rows)) for table, rows in before.items()}
    _bind(connection, compiled, schema, written, written)
    try:
        connection.execute(f"CREATE TABLE store AS {statements.full}")
    except duckdb.Error as error:
        if _overflow(error):
            return _Kept("the query fails on these rows", Failed(str(error).splitlines()[0]))
        raise
    old = connection.execute(statements.views["store"]).fetchall()
    columns = [
        (name, exp.DataType.build(type_, dialect="duckdb").sql("spark"))
        for name, type_ in connection.execute(
            f"SELECT column_name, column_type FROM (DESCRIBE {statements.views['store']})"
        ).fetchall()
    ]
    _bind(connection, compiled, schema, before, after)
    try:
        connection.execute(f"CREATE TABLE fresh AS {statements.full}")
    except duckdb.Error as error:
        if _overflow(error):
            return _Kept(
                "the query fails on these rows",
                _canonical_rows(old),
                Failed(str(error).splitlines()[0]),
            )
        raise
    new = connection.execute(statements.views["fresh"]).fetchall()
    connection.execute("DROP TABLE fresh")
    kept = _Kept("", _canonical_rows(old), _canonical_rows(new), source=(columns, old, new))
    if _inexact_sums(connection, compiled):
        return replace(kept, how="recomputed: a sum of floats")
    try:
        read = _read_rows(compiled, schema, before, after)
        appended = _fold(connection, statements, _inserts_only(read), _changed(read))
    except duckdb.Error as error:
        if _overflow(error):
            return replace(kept, how="recomputed: a sum overflowed")
        raise
    return replace(
        kept,
        how="folded inserts only" if appended else "folded",
        folded=_rows(connection, statements.views["store"]),
        logged=_rows(connection, statements.views["logged"]),
        compacted=_compacted(connection, statements),
    )


def check_passes(
    sql: str,
    schema: Mapping[str, Sequence[tuple[str, str]]],
    rows: Mapping[str, Sequence[tuple]],
    original: str | None = None,
) -> Outcome:
    """Whether the passes keep the view's rows: its plan as lowered and as the passes leave
    it give the same multiset over tables of ``schema`` holding ``rows``, that of
    ``original`` (its own SQL, ``sql`` unless given)."""
    expected = _original_rows(original or sql, schema, {"rows": rows})["rows"]
    mapping = {t: dict(columns) for t, columns in schema.items()}
    query = parse_query(sql)
    lowered = lower(qualify_query(query, sql, mapping), sql)
    connection = connect()
    for table in {scan.table for scan in scans(lowered)}:
        used = [c for s in scans(lowered) if s.table == table for c in s.columns]
        columns, values = _project(schema[table], list(dict.fromkeys(used)), rows[table])
        load(connection, relation_name(table, Read.AFTER), columns, values)
    results: list[Rows] = []
    for plan in (lowered, optimize(lowered)):
        try:
            results.append(_rows(connection, duck(codegen.to_select(reading(plan, Read.AFTER)))))
        except duckdb.Error as error:
            # a plan of SQL that DuckDB runs must run; of SQL it cannot run, it need not
            if not _overflow(error) and not isinstance(expected, Failed):
                raise
            results.append(Failed(str(error).splitlines()[0]))
    how = (
        "the query fails on these rows"
        if any(isinstance(r, Failed) for r in results)
        else "both plans ran"
    )
    as_lowered, optimized = results
    return _verdict(
        how,
        [
            ("the plan the passes leave", optimized, "the plan as lowered", as_lowered),
            ("the plan as lowered", as_lowered, "its SQL", expected),
            ("the plan the passes leave", optimized, "its SQL", expected),
        ],
    )
