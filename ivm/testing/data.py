"""Source rows and batches of changes for the tables a view reads, drawn by Hypothesis.

A :class:`Source` is a table whose columns each draw from a tiny domain of values, NULL
included: tiny, so that join keys collide (``0, 1, 2`` in every integral type), rows repeat
and groups empty out; and holding the values that break naive maintenance: decimals that use
their last digit of scale, doubles that absorb each other (1e16 + 1.0) or never retract (NaN,
±Infinity), -0.0, strings that need escapes, timestamps whose date depends on the session time
zone. :func:`sources` builds them for any schema (:func:`default_domain`, by type), adding the
literals a view compares its columns with, so that its filters keep some rows and not others.
Changes are drawn as the DML a user would run, so a falsifying example reads as a script::

    >>> orders, = sources({"orders": [("id", "INT"), ("status", "STRING")]},
    ...                   "SELECT status, COUNT(*) AS n FROM orders WHERE status = 'shipped' "
    ...                   "GROUP BY status")
    >>> orders.columns[1]
    Column(name='status', type='STRING', values=('x', "it's", 'dq"x', '', 'ß', 'shipped'),
           nullable=True, key=True)
    >>> insert(orders, [(0, "it's"), (None, None)])
    "INSERT INTO orders VALUES (0, 'it\\\\'s'), (NULL, NULL)"
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Context, Decimal, InvalidOperation, localcontext
from typing import Any

from hypothesis import strategies as st
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ivm.errors import IvmError
from ivm.frontend.parse import parse_query
from ivm.names import DIALECT, quote, split


class UnsupportedType(IvmError):
    """A source column of a type that no values are drawn for (MAP, STRUCT, BINARY, …)."""


@dataclass(frozen=True)
class Column:
    """A source column: its name as written at CREATE TABLE, its Spark SQL type, and the
    non-NULL values drawn for it, simplest first (Hypothesis shrinks towards the first; a
    value listed twice is drawn twice as often). ``nullable``: NULL is drawn too, last.
    ``key``: a join or group key, which an UPDATE sets to a value of its domain, never to
    arithmetic on it, so that keys keep meeting."""

    name: str
    type: str
    values: tuple
    nullable: bool = True
    key: bool = False

    @property
    def domain(self) -> tuple:
        """What a value of the column is drawn from: its values, then NULL if nullable."""
        return self.values + (None,) * self.nullable


@dataclass(frozen=True)
class Source:
    """A source table: its name as SQL text, its columns, at most ``max_rows`` (3 or more)
    initial rows, and ``marker``: a column and a value that no drawn row has, which marks a
    row that lives within one batch (a ``transient`` change; none for a source without a
    marker)."""

    name: str
    columns: tuple[Column, ...]
    max_rows: int = 8
    marker: tuple[str, object] | None = None


# --- domains ----------------------------------------------------------------------------------

T = exp.DataType.Type

KINDS = {
    T.TINYINT: "integral",
    T.SMALLINT: "integral",
    T.INT: "integral",
    T.BIGINT: "integral",
    T.DECIMAL: "decimal",
    T.FLOAT: "float",
    T.DOUBLE: "float",
    T.TEXT: "string",
    T.VARCHAR: "string",
    T.CHAR: "string",
    T.DATE: "date",
    T.TIMESTAMPTZ: "timestamp",
    T.TIMESTAMPLTZ: "timestamp",
    T.TIMESTAMPNTZ: "timestamp_ntz",
    T.BOOLEAN: "boolean",
}
"""The types values are drawn for, by kind, as sqlglot reads Spark's (its TIMESTAMP is
sqlglot's TIMESTAMPTZ, STRING its TEXT)."""

INTEGERS = {
    T.TINYINT: (2**7 - 1, 100),
    T.SMALLINT: (2**15 - 1, 10_000),
    T.INT: (2**31 - 1, 10**9),
    T.BIGINT: (2**63 - 1, 10**15),
}
"""Per integral type, its largest value and a large value of its domain: adding 1 fits, and
so does a SUM (a BIGINT) of thousands of rows."""

DOUBLES = (1.0, 1e16, math.nan, math.inf, -0.0, -math.inf, 0.5, -1.0)
"""1e16 absorbs 1.0 (so a running sum cannot retract it), NaN and ±Infinity stick, -0.0 equals
0.0. No -1e16, so no group cancels two large terms: a sum's rounding error stays relative to
the sum."""

STRINGS = ("x", "it's", 'dq"x', "", "ß")
"""Strings that need escapes in SQL, the empty one, and one whose upper case is longer."""

TIMES = (
    datetime(2024, 1, 1, 23, 30),
    datetime(2024, 1, 2, 0, 15),
    datetime(2024, 3, 31, 1, 30),
    datetime(2024, 12, 31, 18, 45),
)
"""Timestamps whose date or hour differs between UTC and most other zones."""

DATES = tuple(dict.fromkeys(t.date() for t in TIMES))

MARKERS = (99, "marker", date(1999, 9, 9))
"""Values tried as a source's marker, in each column of a type they fit."""

_EXACT = Context(prec=80)
"""Room for any DECIMAL(38, s) value, whatever its scale."""


@functools.cache
def _parsed(type_: str) -> exp.DataType | None:
    try:
        return exp.DataType.build(type_, dialect=DIALECT)
    except SqlglotError:
        return None


def _kind(type_: str) -> str | None:
    """``integral``, ``decimal``, ``float``, ``string``, ``date``, ``timestamp``,
    ``timestamp_ntz`` or ``boolean``; None for a type without a domain."""
    parsed = _parsed(type_)
    return KINDS.get(parsed.this) if parsed is not None else None


def precision_scale(type_: str) -> tuple[int, int]:
    """The precision and scale of a DECIMAL type (Spark's DECIMAL is DECIMAL(10,0)).

    >>> precision_scale("DECIMAL(38,18)"), precision_scale("DECIMAL"), precision_scale("DEC(5)")
    ((38, 18), (10, 0), (5, 0))
    """
    parsed = _parsed(type_)
    params = [int(p.name) for p in parsed.expressions] if parsed is not None else []
    precision, scale = params + [10, 0][len(params) :]
    return precision, scale


def _length(type_: str) -> int | None:
    """The length of a VARCHAR(n) or CHAR(n); None for STRING."""
    parsed = _parsed(type_)
    return int(parsed.expressions[0].name) if parsed is not None and parsed.expressions else None


def default_domain(type_: str) -> tuple | None:
    """The non-NULL values drawn for a column of Spark SQL type ``type_``, simplest first; None
    for a type without a domain. Decimals of DECIMAL(p,s) hold 10^-s (their last digit of
    scale), a negative one with digits of scale, and 10^(p-s-1), which doubling in an UPDATE
    cannot overflow, kept below 10^(34-s) so that a SUM, whose precision stops at 38, holds
    thousands of them. Strings of VARCHAR(n) and CHAR(n) are cut to ``n``.

    >>> default_domain("DECIMAL(5,2)")
    (Decimal('1.00'), Decimal('0.01'), Decimal('-1.25'), Decimal('2.00'), Decimal('100.00'))
    >>> default_domain("BIGINT"), default_domain("VARCHAR(3)")
    ((0, 1, 2, -1, 1000000000000000), ('x', "it'", 'dq"', '', 'ß'))

    An ARRAY's values are tuples: empty, one element, an element twice, one with a NULL
    element, and two elements in the other order than another.

    >>> default_domain("ARRAY<INT>")
    ((), (0,), (1, 1), (2, None), (1, 0))
    >>> default_domain("MAP<INT, INT>") is None
    True
    """
    kind, parsed = _kind(type_), _parsed(type_)
    if parsed is not None and parsed.this == T.ARRAY and parsed.expressions:
        elements = default_domain(parsed.expressions[0].sql(DIALECT))
        if elements is None or len(elements) < 3:
            return None
        first, second, third = elements[:3]
        return ((), (first,), (second, second), (third, None), (second, first))
    if kind == "integral" and parsed is not None:
        return (0, 1, 2, -1, INTEGERS[parsed.this][1])
    if kind == "decimal":
        p, s = precision_scale(type_)
        unit, large = Decimal(1).scaleb(-s), Decimal(1).scaleb(min(p, 34) - s - 1)
        return _distinct(
            _fit(v, type_) for v in (Decimal(1), unit, Decimal("-1.25"), Decimal(2), large)
        )
    if kind == "string":
        return _distinct(v[: _length(type_)] for v in STRINGS)
    return {
        "float": DOUBLES,
        "date": DATES,
        "timestamp": TIMES,
        "timestamp_ntz": TIMES,
        "boolean": (True, False),
    }.get(kind or "")


def _distinct(values: Iterable) -> tuple:
    """``values`` without None and repeats, in order."""
    return tuple(dict.fromkeys(v for v in values if v is not None))


def _fit(value, type_: str) -> Any:
    """``value`` as a value of a column of type ``type_``: a number of the column's type if it
    fits, a string within the column's length, a date or timestamp (also from its ISO text);
    None where there is none."""
    kind, parsed = _kind(type_), _parsed(type_)
    if isinstance(value, bool) or kind == "boolean":
        return value if isinstance(value, bool) and kind == "boolean" else None
    if isinstance(value, (int, Decimal)):
        if kind == "integral" and parsed is not None:
            fits = value == int(value) and abs(value) <= INTEGERS[parsed.this][0]
            return int(value) if fits else None
        if kind == "decimal":
            p, s = precision_scale(type_)
            if abs(value) >= 10 ** (p - s):
                return None
            fitted = Decimal(value).quantize(Decimal(1).scaleb(-s), context=_EXACT)
            return fitted if abs(fitted) < 10 ** (p - s) else None
        return float(value) if kind == "float" else None
    if isinstance(value, str):
        length = _length(type_)
        if kind == "string":
            return value if length is None or len(value) <= length else None
        try:
            if kind == "date":
                return date.fromisoformat(value)
            if kind in ("timestamp", "timestamp_ntz"):
                return datetime.fromisoformat(value)
        except ValueError:
            return None
        return None
    if isinstance(value, datetime):
        return value if kind in ("timestamp", "timestamp_ntz") else None
    if isinstance(value, date):
        if kind in ("timestamp", "timestamp_ntz"):
            return datetime(value.year, value.month, value.day)
        return value if kind == "date" else None
    return None


def _step(type_: str) -> Any:
    """The distance from a value of type ``type_`` to its neighbour; None for strings and
    booleans, which have none."""
    kind = _kind(type_)
    if kind == "decimal":
        return Decimal(1).scaleb(-precision_scale(type_)[1])
    return {
        "integral": 1,
        "float": 1.0,
        "date": timedelta(days=1),
        "timestamp": timedelta(seconds=1),
        "timestamp_ntz": timedelta(seconds=1),
    }.get(kind or "")


# --- sources for a view -----------------------------------------------------------------------


def sources(
    schema: Mapping[str, Sequence[tuple[str, str]]], sql: str | None = None
) -> tuple[Source, ...]:
    """A :class:`Source` per table of ``schema`` (table → ``(column, type)`` pairs; a type may
    end in NOT NULL), its columns' values drawn from :func:`default_domain`. Given the view's
    ``sql``, a literal it compares a column with (inside any expression; the column of the
    table its qualifier names, or of every table with its name) enters that column's domain,
    with its neighbour across the comparison (``qty > 100``: also 101; ``d >= DATE
    '1995-03-15'``: also the 14th), so that the view's filters keep some rows and not others;
    a column it compares with another by ``=``, joins USING or groups by is a key. Each source
    gets a marker in a column that can hold one, other than a key if it can.

    >>> view = ("SELECT o.d, SUM(o.qty) AS q FROM o JOIN c ON o.c = c.id WHERE o.qty > 100 "
    ...         "GROUP BY o.d")
    >>> o, c = sources({"o": [("c", "INT"), ("qty", "INT"), ("d", "DATE NOT NULL")],
    ...                 "c": [("id", "BIGINT")]}, view)
    >>> [(col.name, col.key, col.nullable) for col in o.columns], o.marker, c.marker
    ([('c', True, True), ('qty', False, True), ('d', True, False)], ('qty', 99), ('id', 99))
    >>> o.columns[1].values
    (0, 1, 2, -1, 1000000000, 100, 101)
    """
    compared, keys = _read_view(sql) if sql is not None else ({}, frozenset())
    built = []
    for table, columns in schema.items():
        made = []
        for name, type_ in columns:
            places = [(owner, name.lower()) for owner in (split(table)[-1].lower(), None)]
            literals = [found for place in places for found in compared.get(place, ())]
            made.append(_column(table, name, type_, literals, any(p in keys for p in places)))
        built.append(Source(table, tuple(made), marker=_marker(made)))
    return tuple(built)


def _column(
    table: str, name: str, type_text: str, literals: Iterable[tuple[object, int]], key: bool
) -> Column:
    not_null = re.fullmatch(r"(.*?)\s+NOT\s+NULL\s*", type_text, re.IGNORECASE | re.DOTALL)
    type_ = not_null.group(1) if not_null else type_text.strip()
    values = default_domain(type_)
    if values is None:
        raise UnsupportedType(
            f"column {quote(name)} of table {table} has type {type_}, which ivm draws no "
            f"values for",
            hint="give the table a column of a supported type, or check the "
            "view against your own data",
        )
    step, extra = _step(type_), []
    for value, toward in literals:
        fitted = _fit(value, type_)
        extra.append(fitted)
        if fitted is not None and toward and step is not None:
            with localcontext(_EXACT):
                extra.append(_fit(fitted + toward * step, type_))
    return Column(name, type_, _distinct(values + tuple(extra)), not not_null, key)


def _marker(columns: Sequence[Column]) -> tuple[str, object] | None:
    for column in sorted(columns, key=lambda c: c.key):
        for candidate in MARKERS:
            value = _fit(candidate, column.type)
            if value is not None and value not in column.values:
                return column.name, value
    return None


NEIGHBOUR = {
    exp.GT: 1,
    exp.LTE: 1,
    exp.LT: -1,
    exp.GTE: -1,
    exp.EQ: 0,
    exp.NEQ: 0,
    exp.NullSafeEQ: 0,
}
"""Per comparison ``column op literal``, the side of the literal its neighbour takes so that
one of the two meets the comparison and the other does not (``> 100``: 101)."""

FLIPPED = {exp.GT: exp.LT, exp.LT: exp.GT, exp.GTE: exp.LTE, exp.LTE: exp.GTE}
"""``literal op column`` as ``column op' literal``."""


Place = tuple[str | None, str]
"""A column of a query: the table its qualifier names (None where it names none) and its name,
both in lower case."""


def _read_view(sql: str) -> tuple[dict[Place, list[tuple[object, int]]], frozenset[Place]]:
    """The literals ``sql`` compares columns with, with the side of each its neighbour takes
    (see :data:`NEIGHBOUR`); and its keys."""
    query = parse_query(sql)
    tables = {t.alias_or_name.lower(): t.name.lower() for t in query.find_all(exp.Table)}

    def place(column: exp.Column) -> Place:
        return tables.get(column.table.lower()) if column.table else None, column.name.lower()

    compared: dict[Place, list[tuple[object, int]]] = defaultdict(list)

    def note(side: exp.Expr, value, toward: int) -> None:
        if value is not None:
            for column in side.find_all(exp.Column):
                compared[place(column)].append((value, toward))

    keys: set[Place] = set()
    for node in query.walk():
        if (
            isinstance(node, exp.EQ)
            and isinstance(node.this, exp.Column)
            and isinstance(node.expression, exp.Column)
        ):
            keys |= {place(node.this), place(node.expression)}
            continue
        if isinstance(node, exp.Group):
            keys |= {place(c) for c in node.find_all(exp.Column)}
        elif isinstance(node, exp.Join):
            keys |= {(None, i.name.lower()) for i in node.args.get("using") or ()}
        for side, value, toward in _compared(node):
            note(side, value, toward)
    return compared, frozenset(keys)


def _compared(node: exp.Expr) -> list[tuple[exp.Expr, object, int]]:
    """The literals ``node`` compares a side with, as (side, literal, the side of it a
    neighbour takes: :data:`NEIGHBOUR`); a literal None where it is no value
    :func:`_value` reads."""
    if type(node) in NEIGHBOUR:
        left, right = node.this, node.expression
        if (value := _value(right)) is not None:
            return [(left, value, NEIGHBOUR[type(node)])]
        return [(right, _value(left), NEIGHBOUR[FLIPPED.get(type(node), type(node))])]
    if isinstance(node, exp.In):
        return [(node.this, _value(item), 0) for item in node.expressions]
    if isinstance(node, exp.Between):
        return [
            (node.this, _value(node.args["low"]), -1),
            (node.this, _value(node.args["high"]), 1),
        ]
    if isinstance(node, (exp.Like, exp.ILike)):
        pattern = _value(node.expression)
        if isinstance(pattern, str):  # a string it matches: % as nothing, _ as x
            return [(node.this, pattern.replace("%", "").replace("_", "x"), 0)]
    return []


def _value(node: exp.Expr):
    """The value of a literal: a number, string, boolean, or date or timestamp (``DATE '…'``,
    ``TIMESTAMP '…'``); None for anything else."""
    if isinstance(node, exp.Neg):
        inner = _value(node.this)
        return -inner if isinstance(inner, (int, Decimal)) and not isinstance(inner, bool) else None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Cast):  # and TRY_CAST, which sqlglot reads 100L as
        inner = _value(node.this)
        if isinstance(inner, str) and node.to.this == T.DATE:
            return _fit(inner, "DATE")
        if isinstance(inner, str) and node.to.this in (
            T.TIMESTAMPTZ,
            T.TIMESTAMPLTZ,
            T.TIMESTAMPNTZ,
        ):
            return _fit(inner, "TIMESTAMP")
        return inner if isinstance(inner, (int, Decimal)) else None
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        try:
            number = Decimal(node.this)
        except InvalidOperation:
            return None
        return int(number) if re.fullmatch(r"\d+", node.this) else number
    return None


# --- SQL text ---------------------------------------------------------------------------------


def literal(value, type_: str = "") -> str:
    """A SQL literal for ``value``, a value of a column of type ``type_`` where given (a
    timestamp of a TIMESTAMP_NTZ column is written as one). Strings are escaped with
    backslashes (Spark reads ``'it''s'`` as two adjacent literals: ``its``); one with a double
    quote is written in double quotes.

    >>> [literal(v) for v in (None, 3, Decimal("1.50"), "it's", 'dq"x', True)]
    ['NULL', '3', '1.50', "'it\\\\'s'", '"dq\\\\"x"', 'TRUE']
    >>> [literal(v) for v in (1e16, -0.0, -math.inf)]
    ['1e+16', "CAST('-0.0' AS DOUBLE)", "CAST('-Infinity' AS DOUBLE)"]
    >>> literal(datetime(2024, 1, 1, 23, 30)), literal(TIMES[0], "TIMESTAMP_NTZ")
    ("TIMESTAMP '2024-01-01 23:30:00'", "TIMESTAMP_NTZ '2024-01-01 23:30:00'")
    >>> literal((1, None), "ARRAY<INT>"), literal((), "ARRAY<INT>")
    ('CAST(array(1, NULL) AS ARRAY<INT>)', 'CAST(array() AS ARRAY<INT>)')
    """
    if value is None:
        return "NULL"
    if isinstance(value, tuple):
        parsed = _parsed(type_)
        element = (
            parsed.expressions[0].sql(DIALECT) if parsed is not None and parsed.expressions else ""
        )
        items = ", ".join(literal(v, element) for v in value)
        return f"CAST(array({items}) AS {parsed.sql(DIALECT) if parsed else type_})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\")
        if '"' in value and "'" not in value:
            return '"' + escaped.replace('"', '\\"') + '"'
        return "'" + escaped.replace("'", "\\'") + "'"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value == 0 and math.copysign(1, value) < 0:
            text = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(str(value), "-0.0")
            return f"CAST('{text}' AS DOUBLE)"
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        prefix = "TIMESTAMP_NTZ" if _kind(type_) == "timestamp_ntz" else "TIMESTAMP"
        return f"{prefix} '{value:%Y-%m-%d %H:%M:%S}'"
    if isinstance(value, date):
        return f"DATE '{value:%Y-%m-%d}'"
    return str(value)


def render(row: tuple, types: Sequence[str] = ()) -> str:
    """``(v1, v2, …)``: a row as it goes in a VALUES list, each value a literal of its
    column's type (where given).

    >>> render((1, None, Decimal("2.50"), "it's", float("nan")))
    "(1, NULL, 2.50, 'it\\\\'s', CAST('NaN' AS DOUBLE))"
    """
    types = tuple(types) or ("",) * len(row)
    return "(" + ", ".join(literal(v, t) for v, t in zip(row, types, strict=True)) + ")"


def insert(source: Source, rows: Iterable[tuple]) -> str:
    types = [c.type for c in source.columns]
    return f"INSERT INTO {source.name} VALUES " + ", ".join(render(r, types) for r in rows)


def insert_into(source: Source, columns: Sequence[Column], rows: Iterable[tuple]) -> str:
    """``INSERT INTO t (columns) VALUES …``: rows of those of the table's columns, the others
    NULL (as while a column of ``source`` is dropped or renamed).

    >>> k = Column("k", "INT", (0,))
    >>> insert_into(Source("t", (k,)), [k, Column("was", "STRING", ("x",))], [(1, "x")])
    "INSERT INTO t (k, was) VALUES (1, 'x')"
    """
    names = ", ".join(quote(c.name) for c in columns)
    return f"INSERT INTO {source.name} ({names}) VALUES " + ", ".join(
        render(r, [c.type for c in columns]) for r in rows
    )


def create_table(source: Source) -> str:
    """The source as a Delta table with its change data feed on.

    >>> create_table(Source("t", (Column("order", "INT", (0,), nullable=False),)))
    'CREATE TABLE t (`order` INT NOT NULL) USING DELTA
     TBLPROPERTIES (delta.enableChangeDataFeed = true)'
    """
    columns = ", ".join(
        f"{quote(c.name)} {c.type}" + " NOT NULL" * (not c.nullable) for c in source.columns
    )
    return (
        f"CREATE TABLE {source.name} ({columns}) USING DELTA "
        f"TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )


# --- rows -------------------------------------------------------------------------------------


def rows(source: Source) -> st.SearchStrategy[tuple]:
    return st.tuples(*(st.sampled_from(c.domain) for c in source.columns))


@st.composite
def table_rows(draw, source: Source) -> list[tuple]:
    """Up to ``source.max_rows`` rows, some of them repeated; now and then none.

    Hypothesis tries the simplest example first; with Spark that costs as much as any
    other, so it should do some work: the simplest table has one row, not none.
    """
    if draw(st.integers(0, 5)) == 5:
        return []
    drawn = draw(st.lists(rows(source), min_size=1, max_size=source.max_rows - 2))
    return drawn + draw(st.lists(st.sampled_from(drawn), max_size=2))


# --- predicates -------------------------------------------------------------------------------


@st.composite
def column_tests(draw, source: Source) -> str:
    """A test of one column of ``source``: a comparison with a value of its domain, NULL
    tests, an IN-list, LIKE for strings, the value itself for booleans. A string, date or
    timestamp is compared, one time in two, with its first value: the one the rows of a
    shrunk example hold."""
    column = draw(st.sampled_from(source.columns))
    name, kind, domain = quote(column.name), _kind(column.type), _distinct(column.values)
    value = literal(draw(st.sampled_from(domain)), column.type)
    if kind == "boolean":
        forms = ["is", "null", "notnull", "not", "<=>"]
    elif kind in ("string", "timestamp", "timestamp_ntz", "date") and draw(st.booleans()):
        value = literal(domain[0], column.type)
        forms = ["=", "<>"]
    elif kind == "string":
        forms = ["=", "<>", "null", "notnull", "<=>", "in", "like"]
    else:
        forms = ["=", "<>", "<", ">=", "null", "notnull", "<=>", "in"]
    form = draw(st.sampled_from(forms))
    if form == "is":
        return name
    if form == "not":
        return f"NOT {name}"
    if form == "null":
        return f"{name} IS NULL"
    if form == "notnull":
        return f"{name} IS NOT NULL"
    if form == "in":
        other = literal(draw(st.sampled_from(domain + (None,))), column.type)
        return f"{name} IN ({value}, {other})"
    if form == "like":
        text = draw(st.sampled_from(domain))
        pattern = draw(st.sampled_from([text[:1] + "%", "%", "_", "_%"]))
        negated = draw(st.sampled_from(["", "NOT "]))
        return f"{name} {negated}LIKE {literal(pattern)}"
    return f"{name} {form} {value}"


def predicates(source: Source) -> st.SearchStrategy[str]:
    """A WHERE condition over ``source``: tests of its columns under AND / OR / NOT."""
    return st.recursive(
        column_tests(source),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"
            ),
            inner.map(lambda p: f"NOT ({p})"),
        ),
        max_leaves=3,
    )


# --- changes ----------------------------------------------------------------------------------


@st.composite
def assignments(draw, source: Source, exclude=()) -> str:
    """``col = expr`` for UPDATE: a value of the column's domain (NULL included) or, but for
    a key, arithmetic on it: ±1 or COALESCE of an integer, doubling or +0.5 of a decimal or
    double, an hour or a day later, NOT of a boolean. A DECIMAL(38, s) is negated rather than
    doubled, which would overflow near 10^38; a double is never negated (see
    :data:`DOUBLES`)."""
    column = draw(st.sampled_from([c for c in source.columns if c.name not in exclude]))
    options = [literal(v, column.type) for v in column.domain]
    name, kind = quote(column.name), None if column.key else _kind(column.type)
    if kind == "integral":
        options += [f"{name} + 1", f"{name} - 1", f"COALESCE({name}, 0)"]
    if kind == "decimal" and precision_scale(column.type)[0] < 38:
        options += [f"{name} * 2", f"{name} + 0.5"]
    elif kind == "decimal":
        options += [f"-{name}", f"{name} + 0.5"]
    if kind == "float":
        options += [f"{name} * 2", f"{name} + 0.5"]
    if kind in ("timestamp", "timestamp_ntz"):
        options += [f"{name} + INTERVAL 1 HOUR"]
    if kind == "date":
        options += [f"date_add({name}, 1)"]
    if kind == "boolean":
        options += [f"NOT {name}"]
    return f"{name} = {draw(st.sampled_from(options))}"


CHANGE_KINDS = ("insert", "repeat", "delete", "clear", "update", "transient", "recreate")
"""``repeat`` inserts copies of rows the table has had; ``clear`` deletes every row;
``transient`` inserts a row, maybe updates it, and deletes it again; ``recreate`` drops the
table and creates it again under its name (see :func:`recreate`). :func:`changes` also takes
``alter``, a change of the table's columns (see :func:`alter`), which :func:`scenarios` draws
in a batch of its own."""

APPENDS = ("insert", "repeat")
"""The changes of an append table."""

ZONES = ("Asia/Kolkata", "America/Los_Angeles", "Pacific/Chatham")
"""Session time zones other than the one views are created in (UTC in the tests)."""


@st.composite
def recreate(draw, source: Source, known: list[tuple]) -> list[str]:
    """``DROP TABLE``, ``CREATE TABLE`` and one or two commits: the same rows the table had
    last or new ones. A new table counts its versions from 0 again, so its version may equal
    the version of the dropped one that a view consumed last."""
    rows = known[-3:] if known and draw(st.booleans()) else draw(table_rows(source))
    known.extend(rows)
    commits = [insert(source, rows)] if rows else []
    if rows and draw(st.booleans()):
        commits += draw(changes(source, known, ("delete", "update", "insert")))
    return [f"DROP TABLE {source.name}", create_table(source), *commits]


SCHEMA_CHANGES = (
    "drop_add",
    "rename_back",
    "widen",
    "drop_add",
    "add_drop",
    "mapping_on",
    "drop_add",
    "mapping_off",
)
"""The column changes :func:`alter` draws; a column dropped and added back, which leaves its
name and type as they were and its values gone, three times as often as the others."""

WIDER = {"TINYINT": "SMALLINT", "SMALLINT": "INT", "INT": "BIGINT", "FLOAT": "DOUBLE"}
"""A type Delta's type widening turns each of these into."""


def _mapping(table: str, mode: str) -> str:
    return f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')"


def _free(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with a number, that no column in ``taken`` (lower case) has."""
    return next(
        n
        for i in range(len(taken) + 1)
        if (n := name if i == 0 else f"{name}{i}").lower() not in taken
    )


def _wider(column: Column) -> str | None:
    """The type ``column`` widens to; None where Delta widens it to nothing drawn."""
    if _kind(column.type) == "decimal":
        precision, scale = precision_scale(column.type)
        return f"DECIMAL({precision + 2},{scale})" if precision <= 36 else None
    parsed = _parsed(column.type)
    return WIDER.get(parsed.sql(DIALECT).upper()) if parsed is not None else None


@st.composite
def alter(draw, source: Source) -> list[str]:
    """A change of the table's columns that leaves them as they were, by name, position and
    kind of type, so that later changes and the views' queries still apply:

    * ``drop_add``: a column dropped and added back at its place (its values are gone: NULL);
    * ``rename_back``: a column renamed and renamed back;
    * ``add_drop``: a column added and dropped again;
    * ``widen``: a column's type widened (INT to BIGINT, DECIMAL(p,s) to DECIMAL(p+2,s));
    * ``mapping_on`` / ``mapping_off``: column mapping turned on or off.

    Dropping and renaming need column mapping, which the change turns on first. Between the
    two halves of a change, rows may be inserted into the columns the table then has. A
    column of another physical name, or of another type, is another column to the change
    data feed: a refresh must see each such commit, not only the schema at its two ends.
    """
    table, columns = source.name, list(source.columns)
    form = draw(st.sampled_from(SCHEMA_CHANGES))
    widened = [(c, wider) for c in columns if (wider := _wider(c)) is not None]
    nullable = [c for c in columns if c.nullable]
    if form == "widen" and widened:
        column, wider = draw(st.sampled_from(widened))
        return [
            f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')",
            f"ALTER TABLE {table} ALTER COLUMN {quote(column.name)} TYPE {wider}",
        ]
    if form == "mapping_off":
        return [_mapping(table, "none")]
    statements = [_mapping(table, "name")]
    if form == "mapping_on":
        return statements
    taken = {c.name.lower() for c in columns}
    if form == "drop_add" and nullable:
        column = draw(st.sampled_from(nullable))
        index = columns.index(column)
        place = f" AFTER {quote(columns[index - 1].name)}" if index else " FIRST"
        before, after = (
            [f"ALTER TABLE {table} DROP COLUMN {quote(column.name)}"],
            [f"ALTER TABLE {table} ADD COLUMNS ({quote(column.name)} {column.type}{place})"],
        )
        meanwhile = columns[:index] + columns[index + 1 :]
    elif form == "add_drop" or not nullable:
        added = Column(_free("added", taken), "INT", (0, 1))
        before = [f"ALTER TABLE {table} ADD COLUMNS ({added.name} {added.type})"]
        after = [f"ALTER TABLE {table} DROP COLUMN {added.name}"]
        meanwhile = columns + [added]
    else:  # rename_back
        column = draw(st.sampled_from(columns))
        renamed = Column(
            _free(f"{column.name}_was", taken), column.type, column.values, column.nullable
        )
        before = [
            f"ALTER TABLE {table} RENAME COLUMN {quote(column.name)} TO {quote(renamed.name)}"
        ]
        after = [f"ALTER TABLE {table} RENAME COLUMN {quote(renamed.name)} TO {quote(column.name)}"]
        meanwhile = [renamed if c is column else c for c in columns]
    inserted = (
        draw(st.lists(st.tuples(*(st.sampled_from(c.domain) for c in meanwhile)), max_size=2))
        if draw(st.booleans())
        else []
    )
    return [
        *statements,
        *before,
        *([insert_into(source, meanwhile, inserted)] * bool(inserted)),
        *after,
    ]


@st.composite
def changes(draw, source: Source, known: list[tuple], kinds=CHANGE_KINDS) -> list[str]:
    """One change to ``source`` of one of ``kinds``, as one or more DML statements.

    ``known`` holds rows the table has had, so an insert can repeat an existing row.
    """
    kinds = [
        k
        for k in kinds
        if (k != "repeat" or known) and (k != "transient" or source.marker is not None)
    ]
    kind = draw(st.sampled_from(kinds))
    table, where = source.name, predicates(source)
    if kind == "recreate":
        return draw(recreate(source, known))
    if kind == "alter":
        return draw(alter(source))
    if kind == "insert":
        new = draw(st.lists(rows(source), min_size=1, max_size=3))
        known.extend(new)
        return [insert(source, new)]
    if kind == "repeat":
        return [insert(source, draw(st.lists(st.sampled_from(known), min_size=1, max_size=2)))]
    if kind == "delete":
        return [f"DELETE FROM {table} WHERE {draw(where)}"]
    if kind == "clear":
        return [f"DELETE FROM {table}"]
    if kind == "update":
        sets = draw(
            st.lists(
                assignments(source), min_size=1, max_size=2, unique_by=lambda a: a.split(" = ")[0]
            )
        )
        return [f"UPDATE {table} SET {', '.join(sets)} WHERE {draw(where)}"]
    # transient: a row inserted (maybe updated) and deleted again within the batch
    assert source.marker is not None
    column, mark = source.marker
    index = [c.name for c in source.columns].index(column)
    marked = f"{quote(column)} = {literal(mark, source.columns[index].type)}"
    row = list(draw(rows(source)))
    row[index] = mark
    statements = [insert(source, [tuple(row)])]
    if draw(st.booleans()):
        statements.append(
            f"UPDATE {table} SET {draw(assignments(source, exclude=(column,)))} WHERE {marked}"
        )
    statements.append(f"DELETE FROM {table} WHERE {marked}")
    return statements


# --- scenarios --------------------------------------------------------------------------------


@dataclass
class Scenario:
    """Initial rows of each source, then batches of SQL (DML, DROP and CREATE TABLE, ALTER
    TABLE, SET TIME ZONE); the view is refreshed after each. ``settings``: the session's
    settings when the views are created, which they keep (e.g. ANSI mode off, where an
    overflow gives NULL)."""

    tables: dict[str, list[tuple]]
    batches: list[list[str]] = field(default_factory=list)
    settings: dict[str, str] = field(default_factory=dict)


ANSI_OFF = {"spark.sql.ansi.enabled": "false"}
"""Spark 3's default: an overflow or a bad cast gives NULL instead of failing the query."""

KEYWORDS_RESERVED = {"spark.sql.ansi.enforceReservedKeywords": "true"}
"""ANSI SQL's reserved keywords are no names unless quoted: a keyword named column or table
must be quoted in every statement, ivm's included."""

LOGGED_STORES = {
    "spark.ivm.storeLayout": "log",
    "spark.ivm.stateLayout": "log",
    "spark.ivm.logFoldAt": "2",
}
"""Views created with logged stores and state tables (the runtime's ``STORE_LAYOUT``,
``STATE_LAYOUT`` and ``LOG_FOLD_AT``): each refresh appends its change, every read folds it
in, and upkeep folds the log in after two appends, so that a scenario's refreshes read and
write each store at every point of its cycle."""

MERGES = {"spark.ivm.rewriteMaxBytes": "0"}
"""Refreshes that MERGE every change into the store, however small (the runtime's
``REWRITE_MAX_BYTES``): a store of a few rows, as a scenario's are, is otherwise rewritten
with the change folded in."""

MERGED_STATES = {"spark.ivm.stateLayout": "merge"}
"""Views created with merged state tables (logged is their default): each refresh merges the
state table's change into its stored rows."""


@st.composite
def scenarios(
    draw,
    sources: Sequence[Source],
    min_batches: int = 2,
    max_batches: int = 4,
    store_layouts: bool = False,
) -> Scenario:
    """``sources`` with initial rows, and ``min_batches``-``max_batches`` batches of 0-3
    changes each; in most scenarios one batch first sets another session time zone, which the
    later refreshes run under (a view keeps the settings of its CREATE), and one batch only
    changes a source's columns (:func:`alter`), so that a refresh sees the change of columns
    and no other; in some the views are created with ANSI mode off, in others where
    Spark reserves keywords (:data:`KEYWORDS_RESERVED`); in some every other
    change inserts rows only, as into an append table (which views refresh by the rules for
    inserted rows, :mod:`ivm.rules.append`). In half of them the refreshes MERGE their
    changes (:data:`MERGES`), in the others they rewrite the scenario's small stores. With
    ``store_layouts``, in some the views' stores are logged as well as their state tables
    (:data:`LOGGED_STORES`), in others both merged (:data:`MERGED_STATES`)."""
    settings = draw(st.sampled_from([{}, {}, ANSI_OFF, KEYWORDS_RESERVED]))
    settings = settings | draw(st.sampled_from([{}, MERGES]))
    if store_layouts:
        settings = settings | draw(st.sampled_from([{}, {}, LOGGED_STORES, MERGED_STATES]))
    kinds = draw(st.sampled_from([CHANGE_KINDS, CHANGE_KINDS, APPENDS]))
    initial = {s.name: draw(table_rows(s)) for s in sources}
    known = {name: list(rs) for name, rs in initial.items()}
    batches = []
    count = draw(st.integers(min_batches, max_batches))
    zone_at = draw(st.sampled_from([0, 1, None]))
    alter_at = draw(st.sampled_from([1, 0, None]))
    for i in range(count):
        batch: list[str] = []
        if i == zone_at:
            batch.append(f"SET TIME ZONE '{draw(st.sampled_from(ZONES))}'")
        if i == alter_at:
            batches.append(batch + draw(alter(draw(st.sampled_from(sources)))))
            continue
        for _ in range(draw(st.sampled_from([1, 2, 0, 3]))):  # simplest: one change
            source = draw(st.sampled_from(sources))
            batch += draw(changes(source, known[source.name], kinds))
        batches.append(batch)
    return Scenario(initial, batches, settings)
