"""Hypothesis strategies: three small Delta sources, batches of changes to them, and queries.

The sources r, s and t are :class:`ivm.testing.data.Source`\\ s whose columns draw from tiny
domains with NULL in each (keys from ``{0, 1, 2, NULL}``), so joins and groups collide, rows
repeat and groups empty out. The domains put the values that break naive maintenance first:
decimals that use their last digit of scale and high precision, doubles of mixed magnitude
with NaN, ±Infinity and -0.0, strings that need escapes, timestamps near midnight (whose date
and hour depend on the session time zone); names include a mixed-case, a reserved and a
non-ASCII column. Rows and changes are drawn by :mod:`ivm.testing.data` (here under the
tables' names), as the DML text a user would run, so a falsifying example reads as a script::

    >>> render((1, None, Decimal("2.50"), "it's", float("nan")))
    "(1, NULL, 2.50, 'it\\\\'s', CAST('NaN' AS DOUBLE))"
    >>> insert("t", [(0, 1, None, Decimal("7"))])
    'INSERT INTO t VALUES (0, 1, NULL, 7)'

Queries are nested SELECTs over the sources drawn from a recursive grammar of the SQL ivm
maintains (:func:`queries`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from decimal import Decimal

from hypothesis import strategies as st

from ivm.names import quote as ident
from ivm.testing import data

# ANSI_OFF, Scenario, TIMES, ZONES and render: for the tests, which import them from here
from ivm.testing.data import (  # noqa: F401
    ANSI_OFF,
    CHANGE_KINDS,
    DATES,
    TIMES,
    ZONES,
    Column,
    Scenario,
    Source,
    literal,
    render,
)

KEYS = (0, 1, 2)

SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "r": (("k", "INT"), ("a", "INT"), ("b", "DECIMAL(18,8)"), ("s", "STRING"), ("Rate", "DOUBLE")),
    "s": (
        ("k", "INT"),
        ("c", "INT"),
        ("d", "STRING"),
        ("order", "TIMESTAMP"),
        ("tags", "ARRAY<STRING>"),
    ),
    "t": (("c", "INT"), ("e", "INT"), ("x", "DECIMAL(38,18)"), ("größe", "DECIMAL(38,0)")),
}
"""The source tables. ``r.k = s.k`` and ``s.c = t.c`` are the join keys. Names are as
written at CREATE TABLE (``Rate`` mixed case; ``order`` and ``größe`` need backticks, see
:func:`ident`). ``s.tags`` is an array, which only a generator reads."""

FLOATS = (1e16, 1.0, math.nan, math.inf, -0.0, -math.inf, 0.5, -1.0, 1e16)
"""The doubles of :data:`ivm.testing.data.DOUBLES`, 1e16 first and twice as often."""

DOMAINS: dict[tuple[str, str], tuple] = {
    ("r", "k"): KEYS,
    ("r", "a"): (-1, 0, 1, 2, 3),
    # the last digit of scale, and a magnitude that doubling in UPDATEs cannot overflow
    ("r", "b"): tuple(
        Decimal(v)
        for v in (
            "0.12345678",
            "0.00000001",
            "-1.50000000",
            "2.00000000",
            "123456.78901234",
            "0.12345678",
        )
    ),
    ("r", "s"): ("it's", "x", "y", "", "it's"),
    ("r", "Rate"): FLOATS,
    ("s", "k"): KEYS,
    ("s", "c"): KEYS,
    ("s", "d"): ('dq"x', "p", "q", 'dq"x'),
    ("s", "order"): TIMES,
    # empty, a value of s.d, one twice, a NULL element, two in another order
    ("s", "tags"): ((), ("p",), ("q", "q"), ('dq"x', None), ("q", "p")),
    ("t", "c"): KEYS,
    ("t", "e"): (-1, 0, 1, 2),
    # 18 digits of scale, 13 integer digits: sums over joins of a million rows still fit
    ("t", "x"): tuple(
        Decimal(v)
        for v in (
            "0.123456789012345678",
            "0.000000000000000001",
            "-9999999999999.999999999999999999",
            "2.5",
            "0.123456789012345678",
        )
    ),
    # large magnitudes; the headroom to 10^38 is for sums, not for the values
    ("t", "größe"): tuple(
        Decimal(v)
        for v in (
            "1000000000000000000000000000000",
            "-999999999999999999999999999999",
            "1",
            "0",
            "1000000000000000000000000000000",
        )
    ),
}
"""The non-NULL values of each column (NULL is drawn too); a value listed twice is drawn twice
as often."""

MAX_ROWS = {"r": 10, "s": 8, "t": 6}

MARKER = {"r": ("a", 99), "s": ("c", 99), "t": ("e", 99)}
"""Per table, a column and a value no drawn row has: marks a row that lives within one batch."""

KEY_COLUMNS = {("r", "k"), ("s", "k"), ("s", "c"), ("t", "c")}

SOURCES = {
    table: Source(
        table,
        tuple(
            Column(name, type_, DOMAINS[table, name], key=(table, name) in KEY_COLUMNS)
            for name, type_ in columns
        ),
        MAX_ROWS[table],
        MARKER[table],
    )
    for table, columns in SCHEMAS.items()
}


def create_table(table: str) -> str:
    return data.create_table(SOURCES[table])


def insert(table: str, rows) -> str:
    return data.insert(SOURCES[table], rows)


def table_rows(table: str) -> st.SearchStrategy[list[tuple]]:
    return data.table_rows(SOURCES[table])


def changes(table: str, known: list[tuple], kinds=CHANGE_KINDS) -> st.SearchStrategy[list[str]]:
    return data.changes(SOURCES[table], known, kinds)


def scenarios(
    tables=("r", "s", "t"), min_batches: int = 2, max_batches: int = 4
) -> st.SearchStrategy[Scenario]:
    return data.scenarios(
        [SOURCES[t] for t in tables], min_batches, max_batches, store_layouts=True
    )


@st.composite
def unchanging_dimension_scenarios(draw, min_batches: int = 2, max_batches: int = 4) -> Scenario:
    """Scenarios whose changes leave t, the dimension of the drawn lookup joins
    (:func:`lookup_joins`), as it was created: r and s change."""
    scenario = draw(scenarios(("r", "s"), min_batches, max_batches))
    return replace(scenario, tables={**scenario.tables, "t": draw(table_rows("t"))})


# --- predicates and expressions ------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """A typed SQL expression.

    ``type`` is coarse (``INT``, ``BIGINT``, ``DECIMAL``, ``DOUBLE``, ``STRING``, ``BOOLEAN``,
    ``TIMESTAMP``, ``DATE``); ``domain`` holds non-NULL values it takes, so a literal compared
    with it matches rows; ``constructs`` names the SQL constructs its text uses (see
    :data:`CONSTRUCTS`). In a query, ``{0}`` and ``{1}`` in ``sql`` stand for the aliases of
    the FROM items. ``approximate``: a SUM or AVG of doubles, exact only up to the order of
    summation; no query reads it again (it is shown, never compared, grouped or joined on).
    """

    sql: str
    type: str
    domain: tuple
    constructs: frozenset = frozenset()
    approximate: bool = False


def coarse(type_: str) -> str:
    """A type without its parameters.

    >>> coarse("DECIMAL(10,2)"), coarse("INT")
    ('DECIMAL', 'INT')
    """
    return type_.split("(")[0]


def table_columns(table: str, qualified: bool = False) -> list[Expr]:
    """The scalar columns of a source table, with the values of their domains."""
    return [
        Expr(
            f"{table}.{ident(c.name)}" if qualified else ident(c.name),
            coarse(c.type),
            tuple(dict.fromkeys(c.values)),
        )
        for c in SOURCES[table].columns
        if not c.type.startswith("ARRAY")
    ]


def table_arrays(table: str) -> list[Expr]:
    """The ARRAY columns of a source table, typed by their elements' type, with the values
    of their elements."""
    return [
        Expr(
            ident(c.name),
            c.type[len("ARRAY<") : -1],
            tuple(dict.fromkeys(v for a in c.values for v in a if v is not None)),
        )
        for c in SOURCES[table].columns
        if c.type.startswith("ARRAY")
    ]


def _joined(parts) -> frozenset:
    return frozenset().union(*(p.constructs for p in parts))


@st.composite
def atoms(draw, columns) -> Expr:
    """A test of one column of ``columns``: a comparison with a literal of its domain, NULL
    tests, an IN-list, LIKE for strings, the value itself for booleans."""
    column = draw(st.sampled_from(columns))
    name, type_ = column.sql, column.type
    value = literal(draw(st.sampled_from(column.domain)))
    if type_ == "BOOLEAN":
        forms = ["is", "null", "notnull", "not", "<=>"]
    elif type_ in ("STRING", "TIMESTAMP", "DATE") and draw(st.booleans()):
        # the domain's first value: the one that needs escaping or depends on the time zone
        value = literal(column.domain[0])
        forms = ["=", "<>"]
    elif type_ == "STRING":
        forms = ["=", "<>", "null", "notnull", "<=>", "in", "like"]
    else:
        forms = ["=", "<>", "<", ">=", "null", "notnull", "<=>", "in"]
    form = draw(st.sampled_from(forms))
    used = column.constructs
    if form == "is":
        sql = name
    elif form == "not":
        sql = f"NOT {name}"
    elif form == "null":
        sql = f"{name} IS NULL"
    elif form == "notnull":
        sql = f"{name} IS NOT NULL"
    elif form == "in":
        other = literal(draw(st.sampled_from(column.domain + (None,))))
        sql, used = f"{name} IN ({value}, {other})", used | {"IN list"}
    elif form == "like":
        text = draw(st.sampled_from(column.domain))
        pattern = draw(st.sampled_from([text[:1] + "%", "%", "_", "_%"]))
        negated = draw(st.sampled_from(["", "NOT "]))
        sql, used = f"{name} {negated}LIKE {literal(pattern)}", used | {"LIKE"}
    else:
        sql = f"{name} {form} {value}"
    return Expr(sql, "BOOLEAN", (True, False), used)


def conditions(columns) -> st.SearchStrategy[Expr]:
    """A boolean :class:`Expr` over ``columns``: tests of columns under AND / OR / NOT."""
    return st.recursive(
        atoms(columns),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: Expr(
                    f"({t[0].sql} {t[1]} {t[2].sql})",
                    "BOOLEAN",
                    (True, False),
                    t[0].constructs | t[2].constructs,
                )
            ),
            inner.map(lambda p: Expr(f"NOT ({p.sql})", "BOOLEAN", (True, False), p.constructs)),
        ),
        max_leaves=3,
    )


# --- queries ----------------------------------------------------------------------------------
#
# A query is drawn as a tree of relations (``st.recursive``): the source tables are its leaves;
# a SELECT block reads one relation or joins two; a set operation combines two. Every
# relation knows its output columns (named x0, x1, … and typed), so each level writes valid,
# type-correct Spark SQL over the one below, read as a derived table or a CTE. Expressions are
# templates over ``{0}``, ``{1}``: the aliases (q1, q2, …) the FROM items get when the tree
# is rendered, unique in the whole query; a subquery's over ``{sub}`` and ``{s}``, its
# relation as a FROM item and that item's alias.

EXACT = ("INT", "BIGINT", "DECIMAL")
"""Exact numeric types, narrowest first: the only arguments of SUM and AVG."""

NUMBERS = EXACT + ("DOUBLE",)

GENERIC_DOMAINS = {
    "INT": (-1, 0, 1, 2),
    "BIGINT": (0, 1, 2, 3),
    "DECIMAL": (Decimal("0.00"), Decimal("0.25"), Decimal("2.00")),
    "DOUBLE": (0.5, 1.0, 2.0),
    "STRING": ("x", "p", ""),
    "BOOLEAN": (True, False),
    "TIMESTAMP": TIMES,
    "DATE": DATES,
}
"""Values to compare a computed column with, by type."""

SET_OPERATORS = ("UNION ALL", "UNION", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL")

JOINS = (
    "INNER JOIN",
    "LEFT JOIN",
    "RIGHT JOIN",
    "FULL OUTER JOIN",
    "LEFT SEMI JOIN",
    "LEFT ANTI JOIN",
)

JOIN_FILTERS = {
    "INNER JOIN": "WHERE over an inner join",
    "CROSS JOIN": "WHERE over an inner join",
    **{join: "WHERE over an outer join" for join in ("LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN")},
    **{join: "WHERE over a semi or anti join" for join in ("LEFT SEMI JOIN", "LEFT ANTI JOIN")},
}
"""The construct a WHERE over each join is (see :data:`CONSTRUCTS`)."""

CONSTRUCTS: dict[str, str | None] = {
    "WHERE": r"\bWHERE\b",
    "CASE": r"\bCASE WHEN\b",
    "COALESCE": r"\bCOALESCE\(",
    "arithmetic": r" [-+*] ",
    "CAST": r"\bCAST\(",
    "hour": r"\bhour\(",
    "IN list": r" IN \(",
    "LIKE": r" LIKE '",
    **{join: rf"\b{join} " for join in JOINS},
    "INNER JOIN with a residual": r"\bINNER JOIN .* AND ",
    "CROSS JOIN": r"\bCROSS JOIN ",
    "SEMI or ANTI JOIN without ON": None,
    "GROUP BY": r"\bGROUP BY\b",
    "COUNT(*)": r"\bCOUNT\(\*\)",
    "COUNT(x)": r"\bCOUNT\((?!\*|DISTINCT )",
    "SUM": r"\bSUM\(",
    "AVG": r"\bAVG\(",
    "MIN": r"\bMIN\(",
    "MAX": r"\bMAX\(",
    "COUNT(DISTINCT x)": r"\bCOUNT\(DISTINCT ",
    "SUM(x) FILTER": r"\) FILTER \(WHERE ",
    "HAVING": r"\bHAVING\b",
    "global aggregate": None,
    "SELECT DISTINCT": r"\bSELECT DISTINCT\b",
    **{op: rf"\b{op}\b" + ("" if op.endswith("ALL") else "(?! ALL)") for op in SET_OPERATORS},
    "derived table": r"(FROM|JOIN) \(SELECT ",
    "nested derived tables": r"\(SELECT .*\(SELECT ",
    "CTE": r"^WITH c1 AS \(",
    "CTE read twice": None,
    "WHERE over an inner join": None,
    "WHERE over an outer join": None,
    "WHERE over a semi or anti join": None,
    "ROLLUP": r"\bGROUP BY ROLLUP\(",
    "CUBE": r"\bGROUP BY CUBE\(",
    "GROUPING SETS": r"\bGROUP BY GROUPING SETS \(\(",
    "grouping_id()": r"\bgrouping_id\(\)",
    "LATERAL VIEW": r"\bLATERAL VIEW (?!OUTER)",
    "LATERAL VIEW OUTER": r"\bLATERAL VIEW OUTER ",
    "posexplode": r"\bposexplode\(",
    "explode in SELECT": r"(SELECT |, )explode\(",
    "array column": r"\.tags\)",
    "collect_set": r"\bsize\(collect_set\(",
    "array_sort(collect_list)": r"\barray_sort\(collect_list\(",
    "ROW_NUMBER": r"\bROW_NUMBER\(\) OVER \(",
    "RANK": r"\bRANK\(\) OVER \(",
    "DENSE_RANK": r"\bDENSE_RANK\(\) OVER \(",
    "SUM OVER": r"\bSUM\(.*\) OVER \(",
    "COUNT(*) OVER": r"\bCOUNT\(\*\) OVER \(PARTITION BY ",
    "LAG": r"\bLAG\(.*\) OVER \(",
    "window without PARTITION BY": r"\bOVER \((ORDER BY |\))",
    "window over groups": None,
    "top-N per key": None,
    "QUALIFY": r"\bQUALIFY (ROW_NUMBER|RANK|DENSE_RANK)\(\) OVER \(",
    "ORDER BY LIMIT": r"\bORDER BY (x\d|`select`|c\b).* LIMIT \d+",
    "ORDER BY LIMIT of a set operation": None,
    "EXISTS": r"(?<!NOT )\bEXISTS \(SELECT 1 FROM ",
    "NOT EXISTS": r"\bNOT EXISTS \(SELECT 1 FROM ",
    "IN subquery": r"(?<!NOT) IN \(SELECT ",
    "NOT IN subquery": r"\bNOT IN \(SELECT ",
    "scalar subquery": r"\(SELECT (COUNT|MIN|MAX|SUM)\(",
    "scalar subquery in SELECT": None,
    "correlated subquery": None,
    "lookup join": r"(?<!LEFT) JOIN t FOR SYSTEM_TIME AS OF ",
    "LEFT lookup join": r"\bLEFT JOIN t FOR SYSTEM_TIME AS OF ",
}
"""Every construct the generator draws, with a pattern the SQL of a query using it matches
(None: no simple pattern)."""

LOOKUP_CONSTRUCTS = frozenset({"lookup join", "LEFT lookup join"})
"""The constructs :func:`drawn_queries` draws only when asked for lookup joins: a lookup view
equals a recomputation of its query only while its dimension does not change."""


def family(type_: str) -> str:
    """Types that compare, join and unite with each other: numbers, strings, booleans."""
    return "number" if type_ in NUMBERS else type_


def wider(a: str, b: str) -> str:
    """The type Spark widens ``a`` and ``b`` (of one family) to."""
    return max(a, b, key=NUMBERS.index) if a in NUMBERS else a


@dataclass(frozen=True, eq=False)
class Table:
    """A source table: a leaf of the tree."""

    name: str
    joins = 0

    @property
    def columns(self) -> tuple[Expr, ...]:
        return tuple(table_columns(self.name))


@dataclass(frozen=True)
class Qualify:
    """``QUALIFY window test``: a ranking window function and the test of its value
    (``<= 2``)."""

    window: Expr
    test: str


def output(i: int) -> str:
    """The name of a query's ``i``-th output column: ``x0``, ``x1``, …, but the second is
    ``select``, a reserved keyword, which every statement on it must quote (the views' own
    MERGE failed on it where Spark reserves keywords), and the third ``c``, a column of
    ``s`` and ``t``, which ``QUALIFY`` and ``HAVING`` may read by its table as well
    (``QUALIFY … ORDER BY SUM(q2.c)`` beside ``… AS c`` was analysed as ``SUM(SUM(q2.c))``).

    >>> [output(i) for i in range(4)]
    ['x0', '`select`', 'c', 'x3']
    """
    return {1: "`select`", 2: "c"}.get(i, f"x{i}")


@dataclass(frozen=True)
class TopN:
    """``ORDER BY keys LIMIT limit``; the keys name output columns (``x0 DESC``) and order
    the rows up to rows equal in every column, so which rows the limit keeps is decided."""

    keys: tuple[str, ...]
    limit: int


@dataclass(frozen=True, eq=False)
class Select:
    """``SELECT [DISTINCT] outputs FROM sources [LATERAL VIEW] [WHERE] [GROUP BY] [HAVING]
    [QUALIFY] [ORDER BY … LIMIT n]``.

    Two sources are joined by ``join`` (``"LEFT JOIN"``, …) ``ON on``; ``lookup``: the second
    is the dimension of a lookup join, ``FOR SYSTEM_TIME AS OF`` this column of the first.
    ``lateral``: a ``LATERAL VIEW`` clause. ``group`` is None for a query without
    aggregates, empty for a global aggregate; ``grouping`` (``ROLLUP``, ``CUBE`` or
    ``GROUPING SETS``) groups by sets of its keys. ``subquery``: the relation a subquery of
    WHERE or of an output reads (its SQL writes ``{sub}`` for the FROM item, ``{s}`` for
    its alias). ``cte``: read as a CTE.
    """

    sources: tuple
    outputs: tuple[Expr, ...]
    join: str | None = None
    on: Expr | None = None
    where: Expr | None = None
    group: tuple[Expr, ...] | None = None
    having: Expr | None = None
    distinct: bool = False
    cte: bool = False
    lateral: Expr | None = None
    grouping: str | None = None
    qualify: Qualify | None = None
    top: TopN | None = None
    subquery: Table | Select | SetOperation | None = None
    lookup: Expr | None = None

    @property
    def columns(self) -> tuple[Expr, ...]:
        return tuple(
            Expr(output(i), e.type, e.domain, approximate=e.approximate)
            for i, e in enumerate(self.outputs)
        )

    @property
    def joins(self) -> int:
        return (self.join is not None) + sum(s.joins for s in self.sources)

    @property
    def constructs(self) -> frozenset:
        parts = [
            *self.outputs,
            *(self.group or ()),
            *(e for e in (self.on, self.where, self.having, self.lateral) if e is not None),
            *([self.qualify.window] if self.qualify is not None else []),
        ]
        own = {
            "WHERE": self.where is not None,
            "HAVING": self.having is not None,
            "GROUP BY": bool(self.group),
            "global aggregate": self.group == (),
            "SELECT DISTINCT": self.distinct,
            "QUALIFY": self.qualify is not None,
            "ORDER BY LIMIT": self.top is not None,
        }
        if self.grouping is not None:
            own[self.grouping] = True
        if self.lookup is not None:
            own["LEFT lookup join" if self.join == "LEFT JOIN" else "lookup join"] = True
        if self.where is not None and self.join is not None:
            own[JOIN_FILTERS[self.join]] = True
        return _joined(parts) | {name for name, used in own.items() if used}


@dataclass(frozen=True, eq=False)
class SetOperation:
    """``left operator right``: two SELECTs of one relation each, with matching columns."""

    operator: str
    left: Select
    right: Select
    cte: bool = False
    top: TopN | None = None

    @property
    def columns(self) -> tuple[Expr, ...]:
        pairs = zip(self.left.outputs, self.right.outputs, strict=True)
        return tuple(
            Expr(output(i), wider(a.type, b.type), tuple(dict.fromkeys(a.domain + b.domain)))
            for i, (a, b) in enumerate(pairs)
        )

    @property
    def joins(self) -> int:
        return self.left.joins + self.right.joins


LEAVES = tuple(Table(name) for name in SCHEMAS)


@dataclass(frozen=True)
class Query:
    """A drawn query: its SQL text, the constructs it uses (keys of :data:`CONSTRUCTS`), its
    approximate output columns (float SUM or AVG, see :class:`Expr`) and, where Spark cannot
    run ``sql`` as written (``QUALIFY``, a lookup join), the equal query Spark runs as its
    ``oracle``."""

    sql: str
    constructs: frozenset
    approximate: tuple[str, ...] = ()
    oracle: str | None = None


QUALIFIED = "qualify_rank"
"""The column of the window a QUALIFY tests, in the oracle's form of the query."""


class _Renderer:
    """Writes a relation tree as SQL: aliases every FROM item uniquely, collects CTEs.
    ``oracle``: in the form Spark runs, a QUALIFY as a filter over a derived table and a
    lookup join as an ordinary join (equal while the dimension does not change)."""

    def __init__(self, oracle: bool = False):
        self.oracle = oracle
        self.aliases = 0
        self.depth = 0
        self.ctes: dict[int, tuple[str, str, object]] = {}  # id → (name, body, relation)
        self.constructs: set[str] = set()

    def query(self, relation) -> Query:
        body = self.body(relation)
        if self.ctes:
            body = (
                "WITH "
                + ", ".join(f"{name} AS ({sql})" for name, sql, _ in self.ctes.values())
                + " "
                + body
            )
        approximate = (
            tuple(c.sql.strip("`") for c in relation.columns if c.approximate)
            if isinstance(relation, Select)
            else ()
        )
        return Query(body, frozenset(self.constructs), approximate)

    def body(self, relation) -> str:
        if isinstance(relation, SetOperation):
            self.constructs.add(relation.operator)
            if relation.top is not None:
                self.constructs.add("ORDER BY LIMIT of a set operation")
            return (
                f"{self.body(relation.left)} {relation.operator} "
                f"{self.body(relation.right)}{_order_limit(relation.top)}"
            )
        self.constructs |= relation.constructs
        items = [self.from_item(source) for source in relation.sources]
        aliases = [alias for _, alias in items]
        subquery = {}
        if relation.subquery is not None:
            subquery["sub"], subquery["s"] = self.from_item(relation.subquery)

        def fill(e: Expr) -> str:
            return e.sql.format(*aliases, **subquery)

        distinct = "DISTINCT " if relation.distinct else ""
        outputs = ", ".join(f"{fill(e)} AS {output(i)}" for i, e in enumerate(relation.outputs))
        qualify = relation.qualify
        if qualify is not None and self.oracle:
            outputs += f", {fill(qualify.window)} AS {QUALIFIED}"
        sql = f"SELECT {distinct}{outputs} FROM {items[0][0]}"
        if relation.join:
            joined = items[1][0]
            if relation.lookup is not None and not self.oracle:
                table, alias = joined.split(" AS ")
                joined = f"{table} FOR SYSTEM_TIME AS OF {fill(relation.lookup)} AS {alias}"
            elif relation.lookup is None:
                self.constructs.add(relation.join)
            sql += f" {relation.join} {joined}"
            if relation.on is not None:
                sql += f" ON {fill(relation.on)}"
            elif relation.join != "CROSS JOIN":
                self.constructs.add("SEMI or ANTI JOIN without ON")
        if relation.lateral is not None:
            sql += f" {fill(relation.lateral)}"
        if relation.where is not None:
            sql += f" WHERE {fill(relation.where)}"
        keys = [fill(k) for k in relation.group or ()]
        if relation.grouping == "GROUPING SETS":
            sql += f" GROUP BY GROUPING SETS (({', '.join(keys)}), ({keys[-1]}), ())"
        elif relation.grouping is not None:
            sql += f" GROUP BY {relation.grouping}({', '.join(keys)})"
        elif keys:
            sql += " GROUP BY " + ", ".join(keys)
        if relation.having is not None:
            sql += f" HAVING {fill(relation.having)}"
        if qualify is not None and self.oracle:
            names = ", ".join(output(i) for i in range(len(relation.outputs)))
            sql = f"SELECT {names} FROM ({sql}) AS qualified WHERE {QUALIFIED} {qualify.test}"
        elif qualify is not None:
            sql += f" QUALIFY {fill(qualify.window)} {qualify.test}"
        return sql + _order_limit(relation.top)

    def from_item(self, relation) -> tuple[str, str]:
        self.aliases += 1
        alias = f"q{self.aliases}"
        if isinstance(relation, Table):
            return f"{relation.name} AS {alias}", alias
        self.depth += 1
        if self.depth > 1:
            self.constructs.add("nested derived tables")
        try:
            if not relation.cte:
                self.constructs.add("derived table")
                return f"({self.body(relation)}) AS {alias}", alias
            if id(relation) in self.ctes:
                self.constructs.add("CTE read twice")
            else:
                self.constructs.add("CTE")
                body = self.body(relation)
                self.ctes[id(relation)] = (f"c{len(self.ctes) + 1}", body, relation)
            return f"{self.ctes[id(relation)][0]} AS {alias}", alias
        finally:
            self.depth -= 1


def _order_limit(top: TopN | None) -> str:
    return "" if top is None else f" ORDER BY {', '.join(top.keys)} LIMIT {top.limit}"


def to_sql(relation) -> Query:
    """The SQL of a relation tree (a source table reads as ``SELECT *``).

    >>> join = Select((LEAVES[0], LEAVES[1]), (Expr("{1}.d", "STRING", ()),),
    ...               join="LEFT JOIN", on=Expr("{0}.k = {1}.k", "BOOLEAN", ()))
    >>> to_sql(Select((join,), (Expr("COUNT(*)", "BIGINT", ()),), group=())).sql
    'SELECT COUNT(*) AS x0 FROM
     (SELECT q3.d AS x0 FROM r AS q2 LEFT JOIN s AS q3 ON q2.k = q3.k) AS q1'

    Spark runs no QUALIFY: the oracle filters a derived table instead.

    >>> first = Qualify(Expr("ROW_NUMBER() OVER (PARTITION BY {0}.k ORDER BY {0}.a)", "", ()),
    ...                 "= 1")
    >>> query = to_sql(Select((LEAVES[0],), (Expr("{0}.a", "INT", ()),), qualify=first))
    >>> query.sql
    'SELECT q1.a AS x0 FROM r AS q1 QUALIFY ROW_NUMBER() OVER (PARTITION BY q1.k ORDER BY q1.a) = 1'
    >>> query.oracle
    'SELECT x0 FROM (SELECT q1.a AS x0, ROW_NUMBER() OVER (PARTITION BY q1.k ORDER BY q1.a)
     AS qualify_rank FROM r AS q1) AS qualified WHERE qualify_rank = 1'
    """
    if isinstance(relation, Table):
        relation = Select(
            (relation,), tuple(Expr(f"{{0}}.{c.sql}", c.type, c.domain) for c in relation.columns)
        )
    query = _Renderer().query(relation)
    oracle = _Renderer(oracle=True).query(relation).sql
    return query if oracle == query.sql else replace(query, oracle=oracle)


def _columns_of(relation, side: int | str) -> list[Expr]:
    """``relation``'s output columns as read from FROM item number ``side`` (or, for a
    subquery's relation, ``"s"``), without the approximate ones, which no query reads
    again."""
    return [
        Expr(f"{{{side}}}.{c.sql}", c.type, c.domain) for c in relation.columns if not c.approximate
    ]


def _sometimes(draw, one_in: int) -> bool:
    """True about once in ``one_in`` draws (shrinks to False)."""
    return draw(st.integers(0, one_in - 1)) == one_in - 1


def _text(value) -> str:
    """About how ``CAST(value AS STRING)`` writes a value (a literal to compare with)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(str(value), str(value))
    return str(value)


def as_string(c: Expr) -> Expr:
    """``CAST(c AS STRING)``, its domain as Spark writes the values."""
    domain = tuple(_text(v) for v in c.domain)
    return Expr(f"CAST({c.sql} AS STRING)", "STRING", domain, c.constructs | {"CAST"})


def _fits_int(domain) -> bool:
    """Every value casts to INT without overflow (ANSI mode raises)."""
    return all(not isinstance(v, float) or math.isfinite(v) for v in domain) and all(
        abs(v) < 2**31 for v in domain
    )


def _differences(a: Expr, b: Expr) -> tuple:
    """A few values of ``a - b``, the largest in magnitude among them."""
    values = {
        float(x) - float(y) if isinstance(x, float) or isinstance(y, float) else x - y
        for x in a.domain
        for y in b.domain
    }
    finite = sorted((v for v in values if v == v), key=abs)
    return tuple(finite[:4] + finite[-1:]) or GENERIC_DOMAINS["DOUBLE"]


@st.composite
def scalars(draw, columns) -> Expr:
    """A scalar expression over ``columns``: a column, COALESCE, CASE, CAST, arithmetic,
    string functions, or a predicate's truth value."""
    c = draw(st.sampled_from(columns))
    forms = ["column", "COALESCE", "CASE", "predicate"]
    if c.type in NUMBERS:
        forms += ["+", "*", "-", "CAST"]
    elif c.type == "STRING":
        forms += ["CONCAT", "UPPER", "LENGTH"]
    elif c.type == "TIMESTAMP":  # both depend on the session time zone
        forms = ["DATE", "HOUR", "DATE", "HOUR", *forms, "CAST"]
    else:
        forms += ["CAST"]
    form = draw(st.sampled_from(forms))
    used = c.constructs
    if form == "column":
        return c
    if form == "COALESCE":
        fallback = literal(draw(st.sampled_from(c.domain)))
        return Expr(f"COALESCE({c.sql}, {fallback})", c.type, c.domain, used | {"COALESCE"})
    if form == "predicate":
        p = draw(conditions(columns))
        return Expr(f"({p.sql})", "BOOLEAN", (True, False), p.constructs)
    if form == "CASE":
        p = draw(conditions(columns))
        used = used | p.constructs | {"CASE"}
        shape = draw(st.sampled_from(["flag", "value", "labels"]))
        if shape == "flag":
            return Expr(f"CASE WHEN {p.sql} THEN 1 ELSE 0 END", "INT", (0, 1), used)
        if shape == "value":
            return Expr(f"CASE WHEN {p.sql} THEN {c.sql} END", c.type, c.domain, used)
        q = draw(conditions(columns))
        return Expr(
            f"CASE WHEN {p.sql} THEN 'lo' WHEN {q.sql} THEN 'mid' ELSE 'hi' END",
            "STRING",
            ("lo", "mid", "hi"),
            used | q.constructs,
        )
    if form == "+":
        return Expr(f"{c.sql} + 1", c.type, tuple(v + 1 for v in c.domain), used | {"arithmetic"})
    if form == "*":
        return Expr(f"{c.sql} * 2", c.type, tuple(v * 2 for v in c.domain), used | {"arithmetic"})
    if form == "-":
        d = draw(st.sampled_from([n for n in columns if n.type in NUMBERS]))
        type_ = wider(c.type, d.type)
        return Expr(
            f"{c.sql} - {d.sql}", type_, _differences(c, d), used | d.constructs | {"arithmetic"}
        )
    if form == "DATE":
        return Expr(
            f"CAST({c.sql} AS DATE)",
            "DATE",
            tuple(dict.fromkeys(v.date() for v in c.domain)),
            used | {"CAST"},
        )
    if form == "HOUR":
        return Expr(
            f"hour({c.sql})", "INT", tuple(dict.fromkeys(v.hour for v in c.domain)), used | {"hour"}
        )
    if form == "CAST":
        used = used | {"CAST"}
        targets = ["STRING"] + (
            ["DECIMAL(12,2)"]
            if c.type in ("INT", "BIGINT")
            else ["INT"]
            if c.type == "BOOLEAN" or c.type in NUMBERS and _fits_int(c.domain)
            else []
        )
        target = draw(st.sampled_from(targets))
        if target == "STRING":
            return as_string(c)
        if target == "INT":
            return Expr(f"CAST({c.sql} AS INT)", "INT", GENERIC_DOMAINS["INT"], used)
        return Expr(
            f"CAST({c.sql} AS DECIMAL(12,2))", "DECIMAL", tuple(Decimal(v) for v in c.domain), used
        )
    if form == "CONCAT":
        return Expr(f"CONCAT({c.sql}, '!')", "STRING", tuple(v + "!" for v in c.domain), used)
    if form == "UPPER":
        return Expr(f"UPPER({c.sql})", "STRING", tuple(v.upper() for v in c.domain), used)
    return Expr(f"LENGTH({c.sql})", "INT", (0, 1, 2), used)


@st.composite
def numbers(draw, columns) -> Expr:
    """A numeric expression over ``columns`` (some of which are numbers): what SUM and AVG
    take. Doubles first: they are the arguments maintenance gets wrong most easily."""
    doubles = [n for n in columns if n.type == "DOUBLE"]
    c = draw(st.sampled_from(doubles + [n for n in columns if n.type in NUMBERS]))
    form = draw(st.sampled_from(["column", "*", "COALESCE", "CASE"]))
    if form == "column":
        return c
    if form == "*":
        return Expr(
            f"{c.sql} * 2", c.type, tuple(v * 2 for v in c.domain), c.constructs | {"arithmetic"}
        )
    if form == "COALESCE":
        return Expr(f"COALESCE({c.sql}, 0)", c.type, c.domain + (0,), c.constructs | {"COALESCE"})
    p = draw(conditions(columns))
    return Expr(
        f"CASE WHEN {p.sql} THEN {c.sql} ELSE 0 END",
        c.type,
        c.domain + (0,),
        c.constructs | p.constructs | {"CASE"},
    )


def _sums(type_: str, n: Expr) -> tuple:
    """Values to compare a SUM or AVG of ``n`` with; the last one as large as a sum of many
    rows of ``n`` may be, so that a CAST to INT is not drawn where it would overflow."""
    largest = max((abs(v) for v in n.domain if v == v), default=0)
    return GENERIC_DOMAINS[type_] + ((largest * 1000,) if largest >= 2**20 else ())


@st.composite
def aggregates(draw, columns) -> Expr:
    """An aggregate over ``columns``: COUNT(*), COUNT(x), MIN, MAX, COUNT(DISTINCT x), and
    over numbers SUM, AVG, an expression over two, or ``SUM(x) FILTER (WHERE …)`` (over
    doubles, an approximate column)."""
    forms = [
        "COUNT(*)",
        "COUNT(x)",
        "MIN",
        "MAX",
        "COUNT(DISTINCT x)",
        "collect_set",
        "array_sort(collect_list)",
    ]
    if any(c.type in NUMBERS for c in columns):
        forms[1:1] = ["SUM", "AVG", "SUM + COUNT(*)", "SUM(x) FILTER"]
    form = draw(st.sampled_from(forms))
    counts = GENERIC_DOMAINS["BIGINT"]
    if form == "COUNT(*)":
        return Expr("COUNT(*)", "BIGINT", counts, frozenset({form}))
    if form in (
        "COUNT(x)",
        "MIN",
        "MAX",
        "COUNT(DISTINCT x)",
        "collect_set",
        "array_sort(collect_list)",
    ):
        c = draw(scalars(columns))
        used = c.constructs | {form}
        if form == "collect_set":
            return Expr(f"size(collect_set({c.sql}))", "INT", (0, 1, 2), used)
        if form == "array_sort(collect_list)":  # sorted, so the order rows come in is lost
            text = as_string(c)
            return Expr(
                f"array_join(array_sort(collect_list({text.sql})), ',')",
                "STRING",
                GENERIC_DOMAINS["STRING"],
                used | text.constructs,
            )
        if form == "COUNT(x)":
            return Expr(f"COUNT({c.sql})", "BIGINT", counts, used)
        if form == "COUNT(DISTINCT x)":
            return Expr(f"COUNT(DISTINCT {c.sql})", "BIGINT", counts, used)
        # the sign of a MIN or MAX of -0.0 and 0.0 depends on the order of the rows
        return Expr(f"{form}({c.sql})", c.type, c.domain, used, c.type == "DOUBLE")
    n = draw(numbers(columns))
    total = {"INT": "BIGINT"}.get(n.type, n.type)
    inexact = n.type == "DOUBLE"
    if form == "SUM":
        return Expr(f"SUM({n.sql})", total, _sums(total, n), n.constructs | {"SUM"}, inexact)
    if form == "AVG":
        mean = "DOUBLE" if n.type in ("INT", "BIGINT") else n.type
        return Expr(f"AVG({n.sql})", mean, _sums(mean, n), n.constructs | {"AVG"}, inexact)
    if form == "SUM(x) FILTER":
        p = draw(conditions(columns))
        return Expr(
            f"SUM({n.sql}) FILTER (WHERE {p.sql})",
            total,
            _sums(total, n),
            n.constructs | p.constructs | {"SUM", form},
            inexact,
        )
    return Expr(
        f"SUM({n.sql}) + COUNT(*)",
        total,
        _sums(total, n),
        n.constructs | {"SUM", "COUNT(*)", "arithmetic"},
        inexact,
    )


RANKING = ("ROW_NUMBER", "RANK", "DENSE_RANK")

POSITIONAL = ("ROW_NUMBER", "LAG")
"""Window functions whose value depends on the order of rows tied in ORDER BY."""


def _key(draw, sql: str) -> str:
    """``sql`` as a key of ORDER BY: ascending or descending, NULLs first or last."""
    return sql + draw(st.sampled_from(["", " DESC", " NULLS LAST", " DESC NULLS FIRST"]))


@st.composite
def windows(draw, columns, partitions, order, ranking=False, grouped=False) -> Expr:
    """A window function: ROW_NUMBER, RANK or DENSE_RANK (only these if ``ranking``), and
    over rows (not ``grouped``) COUNT(*), LAG or a running SUM of ``columns``. It partitions
    by some of ``partitions`` (or by none: one partition of every row) and orders by some of
    ``order``; a function whose value depends on the order of rows tied there (ROW_NUMBER,
    LAG) orders by all of ``order`` too, which tells apart any two rows that differ in an
    output, so that the query's answer is decided (Spark picks any order of tied rows)."""
    others = (
        []
        if ranking or grouped
        else ["COUNT(*) OVER", "LAG"]
        + (["SUM OVER"] if any(c.type in NUMBERS for c in columns) else [])
    )
    forms = list(RANKING) + others * 3
    form = draw(st.sampled_from(forms))
    keys = draw(
        st.lists(st.sampled_from(partitions), min_size=1, max_size=2, unique_by=lambda e: e.sql)
        if partitions and not _sometimes(draw, 4)
        else st.just([])
    )
    if form == "COUNT(*) OVER" and not keys:
        form = "RANK"
    sorted_by = draw(
        st.lists(st.sampled_from(order), min_size=1, max_size=2, unique_by=lambda e: e.sql)
    )
    used = _joined(keys + sorted_by) | {form}
    if grouped:
        used |= {"window over groups"}
    if not keys:
        used |= {"window without PARTITION BY"}
    ordering = [_key(draw, e.sql) for e in sorted_by]
    if form in POSITIONAL:
        ordering += [e.sql for e in order]
        used |= _joined(order)
    partition = f"PARTITION BY {', '.join(k.sql for k in keys)}" if keys else ""
    spec = " ".join(part for part in (partition, "ORDER BY " + ", ".join(ordering)) if part)
    if form in RANKING:
        return Expr(f"{form}() OVER ({spec})", "INT", (1, 2, 3), frozenset(used))
    if form == "COUNT(*) OVER":
        return Expr(
            f"COUNT(*) OVER ({partition})", "BIGINT", GENERIC_DOMAINS["BIGINT"], frozenset(used)
        )
    if form == "LAG":
        c = draw(st.sampled_from(columns))
        return Expr(f"LAG({c.sql}) OVER ({spec})", c.type, c.domain, frozenset(used | c.constructs))
    n = draw(numbers(columns))
    total = {"INT": "BIGINT"}.get(n.type, n.type)
    spec = partition if _sometimes(draw, 3) else spec  # the partition's total, or running
    return Expr(
        f"SUM({n.sql}) OVER ({spec})",
        total,
        _sums(total, n),
        frozenset(used | n.constructs),
        n.type == "DOUBLE",
    )


@st.composite
def subqueries(draw, relations, columns, output=False) -> tuple[object, Expr]:
    """A relation, and a condition on ``columns`` that reads it in a subquery: ``[NOT]
    EXISTS``, ``[NOT] IN`` or a comparison with a scalar subquery (an exact aggregate), or,
    if ``output``, maybe a scalar subquery to select (an Expr not BOOLEAN). Correlated, now
    and then, by an equality of the relation's columns and ``columns`` (EXISTS also by
    another comparison). In the SQL, ``{sub}`` is the relation as a FROM item, ``{s}`` its
    alias."""
    source = draw(relations)
    inner = _columns_of(source, "s")
    local = [draw(conditions(inner))] if _sometimes(draw, 3) else []
    form = draw(
        st.sampled_from(
            ["EXISTS", "NOT EXISTS", "IN", "NOT IN", "scalar"]
            + ["scalar subquery in SELECT"] * 2 * output
        )
    )
    pairs = [(a, b) for a in inner for b in columns if family(a.type) == family(b.type)]
    correlated = []
    if form in ("EXISTS", "NOT EXISTS") and draw(st.booleans()):
        correlated.append(draw(equalities(inner, columns)))
        if _sometimes(draw, 3):
            correlated.append(draw(residuals(inner, columns)))
    elif form != "NOT IN" and pairs and draw(st.booleans()):  # by a column equality
        a, b = draw(st.sampled_from(pairs))
        correlated.append(Expr(f"{a.sql} = {b.sql}", "BOOLEAN", (True, False)))
    where = correlated + local
    condition = f" WHERE {' AND '.join(p.sql for p in where)}" if where else ""
    used = _joined(where) | ({"correlated subquery"} if correlated else set())
    if form in ("EXISTS", "NOT EXISTS"):
        negated = "NOT " if form == "NOT EXISTS" else ""
        return source, Expr(
            f"{negated}EXISTS (SELECT 1 FROM {{sub}}{condition})",
            "BOOLEAN",
            (True, False),
            frozenset(used | {form}),
        )
    if form in ("IN", "NOT IN"):
        meeting = [(a, b) for a, b in pairs if set(a.domain) & set(b.domain)]
        if pairs:
            value, probe = draw(st.sampled_from(meeting or pairs))
        else:
            value, probe = (as_string(draw(st.sampled_from(side))) for side in (inner, columns))
        negated = "NOT " if form == "NOT IN" else ""
        return source, Expr(
            f"{probe.sql} {negated}IN (SELECT {value.sql} FROM {{sub}}{condition})",
            "BOOLEAN",
            (True, False),
            frozenset(used | value.constructs | probe.constructs | {f"{form} subquery"}),
        )
    exact = [c for c in inner if c.type in EXACT or c.type in ("STRING", "BOOLEAN", "DATE")]
    call = draw(
        st.sampled_from(["COUNT(*)", "COUNT", "MIN", "MAX", "SUM"] if exact else ["COUNT(*)"])
    )
    counts = GENERIC_DOMAINS["BIGINT"]
    if call == "COUNT(*)":
        aggregate = Expr("COUNT(*)", "BIGINT", counts)
    else:
        c = draw(st.sampled_from([c for c in exact if call != "SUM" or c.type in EXACT] or exact))
        if call == "SUM" and c.type in EXACT:
            total = {"INT": "BIGINT"}.get(c.type, c.type)
            aggregate = Expr(f"SUM({c.sql})", total, _sums(total, c), c.constructs)
        elif call in ("MIN", "MAX"):
            aggregate = Expr(f"{call}({c.sql})", c.type, c.domain, c.constructs)
        else:
            aggregate = Expr(f"COUNT({c.sql})", "BIGINT", counts, c.constructs)
    scalar = Expr(
        f"(SELECT {aggregate.sql} FROM {{sub}}{condition})",
        aggregate.type,
        aggregate.domain,
        frozenset(used | aggregate.constructs | {"scalar subquery"}),
    )
    if form == "scalar subquery in SELECT":
        return source, replace(scalar, constructs=scalar.constructs | {form})
    comparable = [c for c in columns if family(c.type) == family(scalar.type)]
    if comparable:
        c = draw(st.sampled_from(comparable))
        op = draw(
            st.sampled_from(["=", "<>", "<", ">="] if scalar.type != "BOOLEAN" else ["=", "<>"])
        )
        return source, Expr(
            f"{c.sql} {op} {scalar.sql}", "BOOLEAN", (True, False), scalar.constructs | c.constructs
        )
    value = literal(draw(st.sampled_from(scalar.domain)))
    return source, Expr(f"{scalar.sql} >= {value}", "BOOLEAN", (True, False), scalar.constructs)


@st.composite
def selects(
    draw,
    sources,
    columns,
    join=None,
    on=None,
    wheres=None,
    lateral=None,
    exploded=None,
    relations=None,
    lookup=None,
) -> Select:
    """A SELECT block over ``sources`` reading ``columns``: rows, DISTINCT rows, groups
    (GROUP BY, maybe by ROLLUP, CUBE or GROUPING SETS, maybe HAVING) or a global aggregate,
    maybe under a WHERE (one of ``wheres``, in one case of two, if given; else of the
    columns, in one of three), which may test a subquery over one of ``relations`` (if
    given); rows and groups now and then with a window function, or filtered by one
    (QUALIFY); now and then its first rows in an order (ORDER BY … LIMIT). ``lateral``: the
    block's LATERAL VIEW; ``exploded``: a generator that rows may select; ``lookup``: see
    :class:`Select`."""
    if wheres is not None:
        where = draw(wheres) if draw(st.booleans()) else None
    else:
        where = draw(conditions(columns)) if _sometimes(draw, 3) else None  # nested, they add up
    shape = draw(st.sampled_from(["rows", "group", "distinct", "global"]))
    subquery = scalar = None
    if relations is not None and _sometimes(draw, 4):
        subquery, test = draw(
            subqueries(relations, columns, output=shape == "rows" and exploded is None)
        )
        if test.type != "BOOLEAN":
            scalar = test
        else:
            where = (
                test
                if where is None
                else Expr(
                    f"{where.sql} AND {test.sql}",
                    "BOOLEAN",
                    (True, False),
                    where.constructs | test.constructs,
                )
            )
    qualify = None
    if shape in ("rows", "distinct"):
        outputs = draw(st.lists(scalars(columns), min_size=1, max_size=3))
        if shape == "rows" and exploded is not None:
            outputs.append(exploded)
        elif shape == "rows":
            order = list({e.sql: e for e in outputs + list(columns)}.values())
            if _sometimes(draw, 2):
                outputs.append(draw(windows(columns, columns, order)))
            if _sometimes(draw, 6):
                test = draw(st.sampled_from(["<= 1", "<= 2", "= 1", "< 3"]))
                qualify = Qualify(draw(windows(columns, columns, order, ranking=True)), test)
        if scalar is not None:
            outputs.append(scalar)
        return _limited(
            draw,
            Select(
                sources,
                tuple(outputs),
                join,
                on,
                where,
                distinct=shape == "distinct",
                cte=_sometimes(draw, 6),
                lateral=lateral,
                qualify=qualify,
                subquery=subquery,
                lookup=lookup,
            ),
        )
    keys = (
        []
        if shape == "global"
        else draw(st.lists(scalars(columns), min_size=1, max_size=2, unique_by=lambda e: e.sql))
    )
    grouping = (
        draw(st.sampled_from([None, None, None, "ROLLUP", "CUBE", "GROUPING SETS"]))
        if keys
        else None
    )
    shown = [k for k in keys if draw(st.booleans())]
    if grouping is not None and draw(st.booleans()):
        shown.append(Expr("grouping_id()", "BIGINT", (0, 1, 2, 3), frozenset({"grouping_id()"})))
    calls = draw(st.lists(aggregates(columns), min_size=1, max_size=3))
    if all(e.approximate for e in shown + calls):  # a column a query over this one can read
        calls.append(Expr("COUNT(*)", "BIGINT", GENERIC_DOMAINS["BIGINT"], frozenset({"COUNT(*)"})))
    # under ROLLUP, CUBE or GROUPING SETS Spark resolves a HAVING over a key that is a
    # column, not over one that is an expression (UNRESOLVED_COLUMN)
    havable = [k for k in keys if grouping is None or k in columns]
    exact = havable + [c for c in calls if not c.approximate]
    having = draw(st.none() | conditions(exact)) if exact and _sometimes(draw, 2) else None
    outputs = shown + calls
    if keys and grouping is None and _sometimes(draw, 3):
        # over groups, which their keys tell apart
        order = keys + [c for c in calls if not c.approximate]
        window = draw(windows(columns, keys, order, grouped=True))
        if draw(st.booleans()):
            outputs.append(window)
        else:
            qualify = Qualify(window, draw(st.sampled_from(["<= 1", "<= 2", "= 1"])))
    return _limited(
        draw,
        Select(
            sources,
            tuple(outputs),
            join,
            on,
            where,
            group=tuple(keys),
            having=having,
            cte=_sometimes(draw, 6),
            lateral=lateral,
            grouping=grouping,
            qualify=qualify,
            subquery=subquery,
            lookup=lookup,
        ),
    )


def _limited(draw, relation):
    """``relation`` now and then cut to its first rows in an order of all its columns
    (``ORDER BY … LIMIT n``), unless a column is approximate (the order of its values is not
    decided)."""
    if any(c.approximate for c in relation.columns) or not _sometimes(draw, 8):
        return relation
    names = draw(st.permutations([c.sql for c in relation.columns]))
    keys = tuple(_key(draw, name) for name in names)
    return replace(relation, top=TopN(keys, draw(st.integers(1, 3))))


@st.composite
def ranked(draw, relations) -> Select:
    """Top-N per key as a user writes it without QUALIFY: rows numbered or ranked within
    partitions in a derived table, the outer query keeping the first ones
    (``WHERE rank <= n``)."""
    source = draw(relations)
    columns = _columns_of(source, 0)
    outputs = draw(st.lists(scalars(columns), min_size=1, max_size=3))
    order = list({e.sql: e for e in outputs + columns}.values())
    rank = draw(windows(columns, columns, order, ranking=True))
    numbered = Select((source,), tuple(outputs) + (rank,), cte=_sometimes(draw, 6))
    inner = _columns_of(numbered, 0)
    kept = draw(st.lists(st.sampled_from(inner[:-1]), min_size=1, unique_by=lambda e: e.sql))
    if draw(st.booleans()):
        kept.append(inner[-1])
    test = draw(st.sampled_from(["<= 1", "<= 2", "= 1"]))
    where = Expr(
        f"{inner[-1].sql} {test}", "BOOLEAN", (True, False), frozenset({"top-N per key", "WHERE"})
    )
    return Select((numbered,), tuple(kept), where=where)


@st.composite
def arrays(draw, relation, columns) -> Expr:
    """An array to generate rows from: an ARRAY column of a source table, or ``array(c, d)``
    of two of ``columns`` of one type; typed by its elements."""
    owned = [
        Expr(f"{{0}}.{a.sql}", a.type, a.domain, frozenset({"array column"}))
        for a in (table_arrays(relation.name) if isinstance(relation, Table) else ())
    ]
    if owned and draw(st.booleans()):
        return draw(st.sampled_from(owned))
    c = draw(st.sampled_from(columns))
    d = draw(st.sampled_from([d for d in columns if d.type == c.type]))
    return Expr(
        f"array({c.sql}, {d.sql})",
        c.type,
        tuple(dict.fromkeys(c.domain + d.domain)),
        c.constructs | d.constructs,
    )


@st.composite
def lateral_views(draw, relation, columns) -> tuple[Expr, list[Expr]]:
    """A ``LATERAL VIEW [OUTER] explode`` (or ``posexplode``) of an array over ``relation``,
    and the columns it adds (``gv``, and ``gp`` for the position)."""
    array = draw(arrays(relation, columns))
    outer, positional = draw(st.booleans()), _sometimes(draw, 3)
    used = (
        array.constructs
        | {"LATERAL VIEW OUTER" if outer else "LATERAL VIEW"}
        | ({"posexplode"} if positional else set())
    )
    generator = "posexplode" if positional else "explode"
    clause = Expr(
        f"LATERAL VIEW {'OUTER ' * outer}{generator}({array.sql}) lv AS {'gp, ' * positional}gv",
        "",
        (),
        frozenset(used),
    )
    added = [Expr("gv", array.type, array.domain)] + (
        [Expr("gp", "INT", (0, 1))] if positional else []
    )
    return clause, added


@st.composite
def one_source(draw, relations) -> Select:
    """A SELECT block over one relation, now and then with a LATERAL VIEW (or a generator
    in its SELECT list), or the top rows per key of one (:func:`ranked`)."""
    if _sometimes(draw, 8):
        return draw(ranked(relations))
    source = draw(relations)
    columns = _columns_of(source, 0)
    if _sometimes(draw, 4):
        lateral, added = draw(lateral_views(source, columns))
        return draw(selects((source,), columns + added, lateral=lateral, relations=relations))
    exploded = None
    if _sometimes(draw, 6):
        array = draw(arrays(source, columns))
        exploded = Expr(
            f"explode({array.sql})",
            array.type,
            array.domain,
            array.constructs | {"explode in SELECT"},
        )
    return draw(selects((source,), columns, exploded=exploded, relations=relations))


@st.composite
def equalities(draw, left, right) -> Expr:
    """``l = r`` for a column of each side, of one type family (preferring columns whose
    values meet); if the sides share no family, their values compared as strings."""
    pairs = [(a, b) for a in left for b in right if family(a.type) == family(b.type)]
    meeting = [(a, b) for a, b in pairs if set(a.domain) & set(b.domain)]
    if pairs:
        a, b = draw(st.sampled_from(meeting or pairs))
        return Expr(f"{a.sql} = {b.sql}", "BOOLEAN", (True, False))
    a, b = draw(st.sampled_from(left)), draw(st.sampled_from(right))
    return Expr(
        f"{as_string(a).sql} = {as_string(b).sql}", "BOOLEAN", (True, False), frozenset({"CAST"})
    )


@st.composite
def residuals(draw, left, right) -> Expr:
    """A join condition beyond the equality: a comparison of the two sides' columns, or a
    predicate over them."""
    pairs = [
        (a, b)
        for a in left
        for b in right
        if family(a.type) == family(b.type) and a.type != "BOOLEAN"
    ]
    if pairs and draw(st.booleans()):
        a, b = draw(st.sampled_from(pairs))
        op = draw(st.sampled_from(["<=", "<>", ">"] if a.type in NUMBERS else ["<>"]))
        return Expr(f"{a.sql} {op} {b.sql}", "BOOLEAN", (True, False))
    return draw(conditions(left + right))


def join_filters(left, right) -> st.SearchStrategy[Expr]:
    """A WHERE over a join: a condition over both sides' columns, or a test of each side
    ANDed (a filter each side's input could apply)."""
    if not right:
        return conditions(left)
    return st.one_of(
        conditions(left + right),
        st.tuples(conditions(left), conditions(right)).map(
            lambda t: Expr(
                f"{t[0].sql} AND {t[1].sql}",
                "BOOLEAN",
                (True, False),
                t[0].constructs | t[1].constructs,
            )
        ),
    )


@st.composite
def joins(draw, relations, lookups: bool = False) -> Select:
    """A SELECT block over a join of two relations (now and then a relation with itself):
    INNER, LEFT, RIGHT, FULL OUTER, LEFT SEMI or LEFT ANTI on at least one equality, maybe
    with a residual condition; or a CROSS JOIN of two relations without joins, or a LEFT SEMI
    or LEFT ANTI JOIN without ON; if ``lookups``, now and then an inner or left lookup join
    of the table t (:func:`lookup_joins`)."""
    if lookups and _sometimes(draw, 3):
        return draw(lookup_joins(relations))
    left = draw(relations)
    right = left if _sometimes(draw, 8) else draw(relations)
    if right is left and not isinstance(left, Table) and draw(st.booleans()):
        left = right = replace(left, cte=True)  # a CTE read twice
    kinds = list(JOINS) + (["CROSS JOIN"] if left.joins == right.joins == 0 else [])
    kind = draw(st.sampled_from(kinds))
    a, b = _columns_of(left, 0), _columns_of(right, 1)
    visible = a if kind in ("LEFT SEMI JOIN", "LEFT ANTI JOIN") else a + b
    wheres = join_filters(a, b if visible != a else [])
    if kind == "CROSS JOIN":
        return draw(selects((left, right), visible, kind, wheres=wheres, relations=relations))
    if kind in ("LEFT SEMI JOIN", "LEFT ANTI JOIN") and _sometimes(draw, 4):
        return draw(selects((left, right), visible, kind, wheres=wheres, relations=relations))
    on = draw(join_conditions(a, b, kind))
    return draw(selects((left, right), visible, kind, on, wheres, relations=relations))


@st.composite
def join_conditions(draw, a, b, kind: str) -> Expr:
    """The ON of a join of columns ``a`` and ``b``: an equality, maybe with a residual."""
    on = draw(equalities(a, b))
    if draw(st.booleans()):
        residual = draw(residuals(a, b))
        used = on.constructs | residual.constructs
        if kind == "INNER JOIN":
            used |= {"INNER JOIN with a residual"}
        on = Expr(f"{on.sql} AND {residual.sql}", "BOOLEAN", (True, False), used)
    return on


@st.composite
def lookup_joins(draw, relations) -> Select:
    """A SELECT block over a relation (the facts) and a lookup join of the table t,
    ``[LEFT] JOIN t FOR SYSTEM_TIME AS OF`` a column of the facts, on an equality, maybe with
    a residual. A scenario for them leaves t as it is
    (:func:`unchanging_dimension_scenarios`)."""
    facts = draw(relations)
    dimension = Table("t")
    kind = draw(st.sampled_from(["INNER JOIN", "LEFT JOIN"]))
    a, b = _columns_of(facts, 0), _columns_of(dimension, 1)
    on = draw(join_conditions(a, b, kind))
    marked = draw(st.sampled_from(a))
    return draw(
        selects(
            (facts, dimension),
            a + b,
            kind,
            on,
            join_filters(a, b),
            relations=relations,
            lookup=marked,
        )
    )


@st.composite
def set_operations(draw, relations) -> SetOperation:
    """Two relations' columns, chosen to match in number and type family, under a set
    operator (a branch may filter its rows)."""
    left, right = draw(relations), draw(relations)
    a, b = _columns_of(left, 0), _columns_of(right, 0)
    picked = []
    for _ in range(draw(st.integers(1, 3))):
        families = sorted({family(c.type) for c in a} & {family(c.type) for c in b})
        if families:
            f = draw(st.sampled_from(families))
            picked.append(
                (
                    draw(st.sampled_from([c for c in a if family(c.type) == f])),
                    draw(st.sampled_from([c for c in b if family(c.type) == f])),
                )
            )
        else:  # no family in common: compare as strings
            picked.append(
                (as_string(draw(st.sampled_from(a))), as_string(draw(st.sampled_from(b))))
            )
    branches = [
        Select(
            (source,),
            tuple(side),
            where=draw(st.none() | conditions(columns)) if _sometimes(draw, 3) else None,
        )
        for source, side, columns in (
            (left, [p[0] for p in picked], a),
            (right, [p[1] for p in picked], b),
        )
    ]
    operator = draw(st.sampled_from(SET_OPERATORS))
    return _limited(draw, SetOperation(operator, *branches, cte=_sometimes(draw, 6)))


@functools.cache
def relations(max_leaves: int = 5, lookups: bool = False) -> st.SearchStrategy:
    """Trees of relations over r, s and t with at most ``max_leaves`` table reads;
    ``lookups``: with lookup joins of t."""
    return st.recursive(
        st.sampled_from(LEAVES),
        lambda inner: st.one_of(one_source(inner), joins(inner, lookups), set_operations(inner)),
        max_leaves=max_leaves,
    )


@st.composite
def drawn_queries(draw, max_leaves: int = 5, lookups: bool = False) -> Query:
    """A supported query over r, s and t, with the constructs it uses. ``lookups``: it joins
    t by a lookup join at least once (:data:`LOOKUP_CONSTRUCTS`), and its oracle is Spark
    running it with ordinary joins, which equals the view while t does not change."""
    relation = draw(relations(max_leaves, lookups))
    if lookups and not to_sql(relation).constructs & LOOKUP_CONSTRUCTS:
        relation = draw(lookup_joins(st.just(relation)))  # the facts: the relation drawn
    if isinstance(relation, Table):
        relation = draw(one_source(st.just(relation)))
    return to_sql(relation)


def queries(max_leaves: int = 5) -> st.SearchStrategy[str]:
    """The SQL of a supported query over r, s and t (see :func:`drawn_queries`)."""
    return drawn_queries(max_leaves).map(lambda q: q.sql)
