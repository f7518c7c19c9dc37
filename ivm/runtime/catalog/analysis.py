"""A view's query checked by Spark itself at CREATE, errors reported at the user's SQL.

ivm's frontend knows the query's shape, not every function and type of Spark. Before
anything generated runs, :func:`analyse` has Spark's analyzer resolve the user's own SELECT
(``spark.sql(query).schema`` runs no job), so an unknown function or a type error is
reported at its place in the user's statement, never in the generated SQL.

:func:`refuse_temporary` refuses temporary views and functions (Python UDFs among them):
they live in one session, and refreshes run in others.
"""

from __future__ import annotations

import re

from pyspark.errors import AnalysisException, ParseException
from sqlglot import exp
from sqlglot.helper import find_new_name

from ivm.compiler import SchemaLookup
from ivm.errors import CatalogError, InvalidQuery, IvmError, SqlSyntaxError, UnsupportedQuery
from ivm.frontend.lookups import is_lookup
from ivm.frontend.parse import parse_query, qualify_query, referenced_tables
from ivm.frontend.positions import position_at_offset, position_of
from ivm.names import DIALECT
from ivm.runtime.spark.connect import Session, is_connect, java_session
from ivm.runtime.spark.failures import Failure, classify
from ivm.runtime.spark.settings import RESERVED_KEYWORDS, session_settings

TEMPORARY_REASON = (
    "temporary objects cannot be used in a materialized view, because "
    "refreshes run in other sessions"
)


def _is_temporary_view(spark: Session, table: exp.Table) -> bool:
    """Whether ``table`` names a temporary view of ``spark``: unqualified, a session's own,
    or in Spark's database of global ones. In a classic session, asked of the session's
    catalog alone, where ``spark.catalog.getTable`` asks the metastore too (four calls)."""
    if is_connect(spark):
        try:
            return spark.catalog.getTable(table.sql(DIALECT)).isTemporary
        except AnalysisException:
            return False  # not found: the frontend says so
    catalog = java_session(spark).sessionState().catalog()
    if table.catalog:
        return False
    if not table.db:
        return catalog.getTempView(table.name).isDefined()
    if table.db.lower() == catalog.globalTempDatabase():
        return catalog.getGlobalTempView(table.name).isDefined()
    return False


def refuse_temporary(spark: Session, sql: str) -> None:
    """Raise :class:`UnsupportedQuery` at the first temporary view or function ``sql``
    reads, as ``spark`` (the session that defines the view) resolves it."""
    query = parse_query(sql)
    for table in referenced_tables(query):
        if _is_temporary_view(spark, table):
            _refuse(
                f"temporary view {table.sql(DIALECT)}",
                table,
                sql,
                "create the view's sources as tables (CREATE TABLE … USING DELTA)",
            )
    calls = [f for f in query.find_all(exp.Anonymous)]
    if calls:
        # SHOW USER FUNCTIONS names a session's functions bare, the catalog's qualified
        # (USER is a reserved keyword where the session enforces them)
        with session_settings(spark, {RESERVED_KEYWORDS: "false"}):
            listed = spark.sql("SHOW USER FUNCTIONS").collect()
        temporary = {row[0].lower() for row in listed if "." not in row[0]}
        for call in calls:
            if call.name.lower() in temporary:
                _refuse(
                    f"temporary function {call.name}",
                    call,
                    sql,
                    "use a built-in function, or a permanent function "
                    "(CREATE FUNCTION … in the catalog)",
                )


def _refuse(construct: str, node: exp.Expr, sql: str, hint: str):
    raise UnsupportedQuery(construct, sql, position_of(node), hint=hint, reason=TEMPORARY_REASON)


def analyse(spark: Session, sql: str, schema: SchemaLookup) -> list[str] | None:
    """Have Spark's analyzer resolve the SELECT ``sql``; raise an :class:`IvmError` at the
    place in ``sql`` Spark objects to. Returns the query's column names as Spark spells them
    (``SELECT Amount`` keeps the reference's spelling).

    Spark does not parse ``QUALIFY``, which ivm maintains: such a query is analysed in the
    form :func:`without_qualify` gives it, its names resolved as the frontend resolves them
    (``schema``: the catalog, as :func:`ivm.compiler.compile` takes it), and an error then
    names no position (nor are the names returned: the form is not the user's). A lookup
    join (``FOR SYSTEM_TIME AS OF`` a column) is analysed as the join it is at one version
    of its dimension, its error likewise without a position.
    """
    query = parse_query(sql)
    lookups = [j for j in query.find_all(exp.Join) if is_lookup(j, sql)]
    for join in lookups:
        join.this.set("version", None)
    qualified = query.find(exp.Qualify) is not None
    if qualified:
        tables, database = schema(query, sql, None)
        text = without_qualify(qualify_query(query, sql, tables, database)).sql(DIALECT)
    else:
        text = query.sql(DIALECT) if lookups else sql
    try:
        names = spark.sql(text).schema.names
    except (AnalysisException, ParseException) as error:
        raise spark_error(error, sql, located=text is sql) from None
    return None if qualified else names


def without_qualify(query: exp.Expr) -> exp.Expr:
    """``query`` with each ``SELECT o₁ AS n₁, … QUALIFY p`` in it written as
    ``SELECT n₁, … FROM (SELECT o₁ AS n₁, …, p AS _qualify …) WHERE _qualify``, a form
    Spark parses. ``query`` is qualified (:func:`qualify_query`): ``p`` names a column by its
    table and an output by its expression, so nothing in ``p`` is resolved again (a source
    column named like an output stays the column).

    >>> from ivm.frontend.parse import parse_query, qualify_query
    >>> sql = "SELECT k, SUM(v) AS v FROM t GROUP BY k QUALIFY RANK() OVER (ORDER BY SUM(v)) = 1"
    >>> query = qualify_query(parse_query(sql), sql, {"t": {"k": "INT", "v": "INT"}})
    >>> print(without_qualify(query).sql(DIALECT, pretty=True))
    SELECT
      `k`,
      `v`
    FROM (
      SELECT
        t.k AS k,
        SUM(t.v) AS v,
        RANK() OVER (ORDER BY SUM(t.v)) = 1 AS _qualify
      FROM t AS t
      GROUP BY
        t.k
    ) AS _qualified
    WHERE
      _qualify
    """

    def rewrite(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Select) or node.args.get("qualify") is None:
            return node
        qualify = node.args["qualify"]
        flag = find_new_name(set(node.named_selects), "_qualify")
        names = [exp.column(s.alias_or_name, quoted=True) for s in node.selects]
        inner = node.copy()
        inner.set("qualify", None)
        inner.select(exp.alias_(qualify.this, flag), copy=False)
        return exp.select(*names).from_(inner.subquery("_qualified")).where(exp.column(flag))

    return query.copy().transform(rewrite)


def spark_error(error: AnalysisException, sql: str, located: bool = True) -> IvmError:
    """Spark's refusal of the user's query ``sql``, as an error at the user's SQL: the
    message's first sentence, without the plan Spark appends; at the place Spark names if
    ``located`` (Spark analysed ``sql`` itself).

    >>> from ivm.errors import Position
    >>> class Refusal:  # what Spark raises, reduced to what is read of it
    ...     def getCondition(self): return "UNRESOLVED_ROUTINE"
    ...     def getMessage(self): return ("[UNRESOLVED_ROUTINE] Cannot resolve routine `f`. "
    ...                                   "SQLSTATE: 42883; line 1 pos 7;\\n'Project [...]")
    ...     def getQueryContext(self): return []
    >>> error = spark_error(Refusal(), "SELECT f(x) AS y FROM t")
    >>> type(error).__name__, error.message, error.position
    ('CatalogError', 'Spark cannot resolve the query: Cannot resolve routine `f`', None)
    """
    text = (error.getMessage() or "").strip().splitlines()[0]
    text = re.sub(r"^\[[A-Z_.]+\]\s*", "", text)
    text = re.split(r"\.?\s*SQLSTATE:|; line \d+ pos \d+", text)[0].rstrip(". ")
    position = None
    for context in error.getQueryContext() if located else ():
        if context.fragment() and 0 <= context.startIndex() < len(sql):
            position = position_at_offset(sql, context.startIndex())
            break
    if isinstance(error, ParseException):
        return SqlSyntaxError(
            f"syntax error: {text}", sql, position, hint="check the SQL near the marked position"
        )
    if classify(error) is Failure.UNRESOLVED_NAME:
        return CatalogError(
            f"Spark cannot resolve the query: {text}",
            sql,
            position,
            hint="check the name: it must be a built-in function, or a table, "
            "column or function of the catalog",
        )
    return InvalidQuery(
        f"Spark refuses the query: {text}",
        sql,
        position,
        hint="run the SELECT alone and correct it until it works",
    )
