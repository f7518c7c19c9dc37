"""Hypothesis strategies: small Delta sources, batches of changes to them, and queries.

Every strategy is a plain function returning a strategy. Values come from tiny domains with
NULL in each (keys from ``{0, 1, 2, NULL}``), so joins and groups collide, rows repeat and
groups empty out. Changes are drawn as the DML text a user would run, so a falsifying example
reads as a script::

    >>> render((1, None, Decimal("2.50"), "x"))
    "(1, NULL, 2.50, 'x')"
    >>> insert("t", [(0, 1), (None, None)])
    'INSERT INTO t VALUES (0, 1), (NULL, NULL)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from hypothesis import strategies as st

KEYS = (0, 1, 2, None)

SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    "r": (("k", "INT"), ("a", "INT"), ("b", "DECIMAL(10,2)"), ("s", "STRING")),
    "s": (("k", "INT"), ("c", "INT"), ("d", "STRING")),
    "t": (("c", "INT"), ("e", "INT")),
}
"""The source tables. ``r.k = s.k`` and ``s.c = t.c`` are the join keys."""

DOMAINS: dict[tuple[str, str], tuple] = {
    ("r", "k"): KEYS,
    ("r", "a"): (-1, 0, 1, 2, 3, None),
    ("r", "b"): tuple(Decimal(v) for v in ("-1.50", "0.00", "0.25", "2.00", "10.10")) + (None,),
    ("r", "s"): ("x", "y", "", None),
    ("s", "k"): KEYS,
    ("s", "c"): KEYS,
    ("s", "d"): ("p", "q", None),
    ("t", "c"): KEYS,
    ("t", "e"): (-1, 0, 1, 2, None),
}

MAX_ROWS = {"r": 10, "s": 8, "t": 6}

MARKER = {"r": ("a", 99), "s": ("c", 99), "t": ("e", 99)}
"""Per table, a column and a value no drawn row has: marks a row that lives within one batch."""

KEY_COLUMNS = {("r", "k"), ("s", "k"), ("s", "c"), ("t", "c")}


def literal(value) -> str:
    """A SQL literal for a value of a source domain.

    >>> [literal(v) for v in (None, 3, Decimal("1.50"), "it's", True)]
    ['NULL', '3', '1.50', "'it''s'", 'TRUE']
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def render(row: tuple) -> str:
    """``(v1, v2, …)``: a row as it goes in a VALUES list."""
    return "(" + ", ".join(literal(v) for v in row) + ")"


def insert(table: str, rows) -> str:
    return f"INSERT INTO {table} VALUES " + ", ".join(render(r) for r in rows)


def create_table(table: str) -> str:
    columns = ", ".join(f"{name} {type_}" for name, type_ in SCHEMAS[table])
    return (f"CREATE TABLE {table} ({columns}) USING DELTA "
            f"TBLPROPERTIES (delta.enableChangeDataFeed = true)")


# --- data ---------------------------------------------------------------------------------


def values(table: str, column: str) -> st.SearchStrategy:
    return st.sampled_from(DOMAINS[table, column])


def rows(table: str) -> st.SearchStrategy[tuple]:
    return st.tuples(*(values(table, name) for name, _ in SCHEMAS[table]))


@st.composite
def table_rows(draw, table: str) -> list[tuple]:
    """Up to ``MAX_ROWS[table]`` rows, some of them repeated; now and then none.

    Hypothesis tries the simplest example first; with Spark that costs as much as any
    other, so it should do some work: the simplest table has one row, not none.
    """
    if draw(st.integers(0, 5)) == 5:
        return []
    drawn = draw(st.lists(rows(table), min_size=1, max_size=MAX_ROWS[table] - 2))
    return drawn + draw(st.lists(st.sampled_from(drawn), max_size=2))


# --- predicates and expressions ------------------------------------------------------------


def _typed(table: str, column: str) -> str:
    return dict(SCHEMAS[table])[column]


def atoms(columns) -> st.SearchStrategy[str]:
    """A comparison of one column: ``columns`` is ``[(sql name, table, column)]``."""

    @st.composite
    def atom(draw):
        name, table, column = draw(st.sampled_from(columns))
        domain = [v for v in DOMAINS[table, column] if v is not None]
        value = literal(draw(st.sampled_from(domain)))
        if _typed(table, column) == "STRING":
            form = draw(st.sampled_from(["=", "<>", "null", "notnull", "<=>"]))
        else:
            form = draw(st.sampled_from(["=", "<>", "<", ">=", "null", "notnull", "<=>", "in"]))
        if form == "null":
            return f"{name} IS NULL"
        if form == "notnull":
            return f"{name} IS NOT NULL"
        if form == "in":
            other = literal(draw(st.sampled_from(DOMAINS[table, column])))
            return f"{name} IN ({value}, {other})"
        return f"{name} {form} {value}"

    return atom()


def predicates(columns) -> st.SearchStrategy[str]:
    """A boolean SQL predicate over ``columns``: comparisons under AND / OR / NOT."""
    return st.recursive(
        atoms(columns),
        lambda inner: st.one_of(
            st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
                lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda p: f"NOT ({p})"),
        ),
        max_leaves=3,
    )


def table_columns(table: str, qualified: bool = False) -> list[tuple[str, str, str]]:
    return [(f"{table}.{name}" if qualified else name, table, name)
            for name, _ in SCHEMAS[table]]


# --- changes --------------------------------------------------------------------------------


@st.composite
def assignments(draw, table: str, exclude=()) -> str:
    """``col = expr`` for UPDATE: +1, a new value, NULL, or a new join key."""
    name, type_ = draw(st.sampled_from([c for c in SCHEMAS[table] if c[0] not in exclude]))
    domain = DOMAINS[table, name]
    options = [literal(v) for v in domain]
    if type_ == "INT" and (table, name) not in KEY_COLUMNS:
        options += [f"{name} + 1", f"{name} - 1", f"COALESCE({name}, 0)"]
    if type_.startswith("DECIMAL"):
        options += [f"{name} * 2", f"{name} + 0.5"]
    return f"{name} = {draw(st.sampled_from(options))}"


CHANGE_KINDS = ("insert", "repeat", "delete", "clear", "update", "transient")
"""``repeat`` inserts copies of rows the table has had; ``clear`` deletes every row;
``transient`` inserts a row, maybe updates it, and deletes it again."""


@st.composite
def changes(draw, table: str, known: list[tuple], kinds=CHANGE_KINDS) -> list[str]:
    """One change to ``table`` of one of ``kinds``, as one or more DML statements.

    ``known`` holds rows the table has had, so an insert can repeat an existing row.
    """
    kinds = [k for k in kinds if k != "repeat" or known]
    kind = draw(st.sampled_from(kinds))
    where = predicates(table_columns(table))
    if kind == "insert":
        new = draw(st.lists(rows(table), min_size=1, max_size=3))
        known.extend(new)
        return [insert(table, new)]
    if kind == "repeat":
        return [insert(table, draw(st.lists(st.sampled_from(known), min_size=1, max_size=2)))]
    if kind == "delete":
        return [f"DELETE FROM {table} WHERE {draw(where)}"]
    if kind == "clear":
        return [f"DELETE FROM {table}"]
    if kind == "update":
        sets = draw(st.lists(assignments(table), min_size=1, max_size=2,
                             unique_by=lambda a: a.split(" = ")[0]))
        return [f"UPDATE {table} SET {', '.join(sets)} WHERE {draw(where)}"]
    # transient: a row inserted (maybe updated) and deleted again within the batch
    column, mark = MARKER[table]
    row = list(draw(rows(table)))
    row[[n for n, _ in SCHEMAS[table]].index(column)] = mark
    statements = [insert(table, [tuple(row)])]
    if draw(st.booleans()):
        statements.append(f"UPDATE {table} SET {draw(assignments(table, exclude=(column,)))} "
                          f"WHERE {column} = {mark}")
    statements.append(f"DELETE FROM {table} WHERE {column} = {mark}")
    return statements


@dataclass
class Scenario:
    """Initial rows of each source, then batches of DML; the view is refreshed after each."""

    tables: dict[str, list[tuple]]
    batches: list[list[str]] = field(default_factory=list)


@st.composite
def scenarios(draw, tables=("r", "s", "t"), min_batches: int = 2,
              max_batches: int = 4) -> Scenario:
    """Sources ``tables`` with initial rows, and 2-4 batches of 0-3 changes each."""
    initial = {t: draw(table_rows(t)) for t in tables}
    known = {t: list(rs) for t, rs in initial.items()}
    batches = []
    for _ in range(draw(st.integers(min_batches, max_batches))):
        batch: list[str] = []
        for _ in range(draw(st.sampled_from([1, 2, 0, 3]))):  # simplest: one change
            table = draw(st.sampled_from(tables))
            batch += draw(changes(table, known[table]))
        batches.append(batch)
    return Scenario(initial, batches)


# --- queries ----------------------------------------------------------------------------------

FROM_CLAUSES = {  # the simplest first
    ("r", "s"): "r JOIN s ON r.k = s.k",
    ("r",): "r",
    ("r", "s", "t"): "r JOIN s ON r.k = s.k JOIN t ON s.c = t.c",
}

NUMERIC = {"INT", "DECIMAL(10,2)"}


@st.composite
def scalar_expressions(draw, columns) -> str:
    name, table, column = draw(st.sampled_from(columns))
    numeric = _typed(table, column) in NUMERIC
    forms = ["{c}", "COALESCE({c}, {z})", "CASE WHEN {p} THEN 1 ELSE 0 END"]
    if numeric:
        forms += ["{c} + 1", "{c} * 2"]
    form = draw(st.sampled_from(forms))
    if "{p}" in form:
        return form.format(p=draw(predicates(columns)))
    zero = "0" if numeric else "'-'"
    return form.format(c=name, z=zero)


@st.composite
def aggregate_calls(draw, columns) -> str:
    numeric = [c for c in columns if _typed(c[1], c[2]) in NUMERIC]
    name = draw(st.sampled_from(columns))[0]
    number = draw(st.sampled_from(numeric))[0]
    return draw(st.sampled_from([
        "COUNT(*)", f"COUNT({name})", f"SUM({number})", f"AVG({number})",
        f"SUM({number}) + COUNT(*)",
    ]))


@st.composite
def queries(draw) -> str:
    """A supported SELECT over r [⋈ s [⋈ t]]: rows, DISTINCT rows, or groups."""
    tables = draw(st.sampled_from(list(FROM_CLAUSES)))
    columns = [c for t in tables for c in table_columns(t, qualified=True)]
    from_ = FROM_CLAUSES[tables]
    if len(tables) > 1 and draw(st.booleans()):  # a residual predicate on r ⋈ s
        residual = draw(predicates([c for c in columns if c[1] in ("r", "s")]))
        from_ = from_.replace("r.k = s.k", f"r.k = s.k AND {residual}", 1)
    where = draw(st.none() | predicates(columns))
    shape = draw(st.sampled_from(["group", "rows", "distinct", "global"]))
    if shape in ("rows", "distinct"):
        exprs = draw(st.lists(scalar_expressions(columns), min_size=1, max_size=3))
        outputs = [f"{e} AS x{i}" for i, e in enumerate(exprs)]
        group = ""
    else:
        keys = [] if shape == "global" else draw(
            st.lists(scalar_expressions(columns), min_size=1, max_size=2, unique=True))
        shown = [k for k in keys if draw(st.booleans())]
        calls = draw(st.lists(aggregate_calls(columns), min_size=1, max_size=3))
        outputs = ([f"{k} AS g{i}" for i, k in enumerate(shown)]
                   + [f"{c} AS x{i}" for i, c in enumerate(calls)])
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
    distinct = "DISTINCT " if shape == "distinct" else ""
    sql = f"SELECT {distinct}{', '.join(outputs)} FROM {from_}"
    if where:
        sql += f" WHERE {where}"
    return sql + group
