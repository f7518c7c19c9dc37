"""Parse Spark SQL with sqlglot and qualify every name against a schema.

The schema maps table names to ``{column: type}``, nested by database as sqlglot's
``MappingSchema`` accepts (``{"orders": {...}}`` or ``{"shop": {"orders": {...}}}``). Errors
carry the position of the offending name.

>>> q = qualify_query(parse_query("SELECT amount FROM orders"), "SELECT amount FROM orders",
...                   {"orders": {"id": "INT", "amount": "INT"}})
>>> q.sql("spark")
'SELECT orders.amount AS amount FROM orders AS orders'
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from ivm.errors import CatalogError, Position, SqlSyntaxError, UnsupportedQuery
from ivm.frontend.positions import position_of
from ivm.names import DIALECT, canonical, join


def parse_query(sql: str) -> exp.Expr:
    """Parse one query; raise :class:`SqlSyntaxError` with the line and column of the fault."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        highlight = detail.get("highlight") or ""
        position = None
        if "line" in detail and "col" in detail:
            position = Position(detail["line"], max(1, detail["col"] - len(highlight) + 1))
        message = detail.get("description") or str(error)
        raise SqlSyntaxError(
            f"syntax error: {message}", sql, position, hint="check the SQL near the marked position"
        ) from None
    except TokenError as error:
        raise SqlSyntaxError(f"syntax error: {error}", sql) from None
    if len(statements) != 1:
        raise SqlSyntaxError(f"expected one query, found {len(statements)} statements", sql)
    query = statements[0]
    _refuse_keyword_aliases(query, sql)
    if not isinstance(query, exp.Query):
        raise UnsupportedQuery(
            f"{query.key.upper()} statement",
            sql,
            position_of(query),
            hint="a materialized view is defined by a SELECT query",
        )
    return query


CLAUSE_KEYWORDS = {
    "GROUP",
    "ORDER",
    "SORT",
    "CLUSTER",
    "DISTRIBUTE",
    "PARTITION",
    "BY",
    "PIVOT",
    "OFFSET",
    "LIMIT",
    "WINDOW",
    "HAVING",
    "WHERE",
}
"""Words that start a clause: where sqlglot reads one as a table alias (``FROM t GROUP``),
the clause was left unfinished."""


def _refuse_keyword_aliases(query: exp.Expr, sql: str) -> None:
    """Raise :class:`SqlSyntaxError` at an unquoted clause keyword read as a table alias
    without ``AS``.

    >>> parse_query("SELECT a FROM t AS `group`, u AS order").sql("spark")
    'SELECT a FROM t AS `group` CROSS JOIN u AS order'
    >>> parse_query("SELECT a FROM t GROUP")
    Traceback (most recent call last):
    ...
    ivm.errors.SqlSyntaxError: syntax error: GROUP must be followed by BY (line 1, column 17)
      SELECT a FROM t GROUP
                      ^
    Hint: finish the clause, or quote a name that is a keyword: `group`
    """
    for alias in query.find_all(exp.TableAlias):
        name = alias.this
        word = name.name.upper() if isinstance(name, exp.Identifier) else ""
        if (
            word not in CLAUSE_KEYWORDS
            or name.quoted
            or sql[: name.meta.get("start", 0)].rstrip()[-2:].upper() == "AS"
        ):
            continue
        what = (
            f"{word} must be followed by BY"
            if word in ("GROUP", "ORDER", "SORT", "CLUSTER", "DISTRIBUTE", "PARTITION")
            else f"unexpected {word}"
        )
        raise SqlSyntaxError(
            f"syntax error: {what}",
            sql,
            position_of(name),
            hint=f"finish the clause, or quote a name that is a keyword: `{name.name.lower()}`",
        )


def referenced_tables(query: exp.Expr) -> list[exp.Table]:
    """The base tables ``query`` reads (not CTE names), in order of appearance."""
    cte_names = {cte.alias_or_name for cte in query.find_all(exp.CTE)}
    return [
        t for t in query.find_all(exp.Table) if t.name and not (not t.db and t.name in cte_names)
    ]


def canonical_name(table: exp.Table, database: str) -> str:
    """The canonical name of the table a reference names, one without a database being in
    ``database``.

    >>> canonical_name(exp.to_table("Orders"), "shop"), canonical_name(exp.to_table("db.t"), "x")
    ('shop.orders', 'db.t')
    """
    return canonical(join([table.db or database, table.name]))


def replace_tables(sql: str, database: str, names: Mapping[str, str]) -> str:
    """``sql`` with every reference to a table of ``names`` (canonical names; a reference
    without a database is in ``database``) replaced by the name it maps to, under the name
    the query knows it by (a reference already so named is left alone); the rest of the
    text as written.

    >>> replace_tables("SELECT t.a FROM t JOIN db.`Order` o USING (a)", "db",
    ...                {"db.t": "_s0", "db.`order`": "_s1"})
    'SELECT t.a FROM _s0 AS t JOIN _s1 o USING (a)'
    """
    spans = []
    for table in referenced_tables(parse_query(sql)):
        key = canonical_name(table, database)
        if key in names and (table.db or canonical(names[key]) != canonical(table.name)):
            parts = table.parts
            alias = "" if table.alias else f" AS {join([table.name])}"
            spans.append((parts[0].meta["start"], parts[-1].meta["end"] + 1, names[key] + alias))
    for start, end, text in sorted(spans, reverse=True):
        sql = sql[:start] + text + sql[end:]
    return sql


def qualify_query(
    query: exp.Expr, sql: str, schema: Mapping, default_db: str | None = None
) -> exp.Expr:
    """Qualify tables and columns of ``query`` against ``schema``; expand ``*``; give every
    expression its type (``expression.type``) as far as sqlglot can infer it.

    Raises :class:`CatalogError` for an unknown table or column, with its position.
    """
    mapping = MappingSchema(dict(schema), dialect=DIALECT)
    for table in referenced_tables(query):
        lookup = normalize_identifiers(table.copy(), dialect=DIALECT)
        if default_db and not lookup.args.get("db"):
            lookup.set("db", exp.to_identifier(default_db))
        if mapping.find(lookup) is None:
            raise CatalogError(
                f"table or view not found: {table.sql(DIALECT)}",
                sql,
                position_of(table),
                hint="check the name, or create the source table first",
            )
    try:
        qualified = qualify(
            query.copy(),
            schema=mapping,
            db=default_db,
            dialect=DIALECT,
            quote_identifiers=False,
            validate_qualify_columns=True,
        )
    except OptimizeError as error:
        raise _catalog_error(str(error), query, sql) from None
    return annotate_types(qualified, schema=mapping, dialect=DIALECT)


def _catalog_error(text: str, query: exp.Expr, sql: str) -> CatalogError:
    """Turn sqlglot's message into one that points at the offending column."""
    name = None
    for marker in ("Unknown column: ", "Column '"):
        if marker in text:
            name = text.split(marker, 1)[1].split("'")[0].split(" ")[0].strip()
    position = None
    if name:
        for column in query.find_all(exp.Column):
            if column.name == name:
                position = position_of(column)
                break
    if name:
        return CatalogError(
            f"column not found: {name}",
            sql,
            position,
            hint="check the column name and the table it comes from",
        )
    return CatalogError(f"cannot resolve the query's names: {text}", sql, position)
