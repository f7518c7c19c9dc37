"""Materialized-view statements, parsed from SQL text (:mod:`ivm.runtime.commands.statements`
runs them).

    [EXPLAIN] CREATE [OR REPLACE] MATERIALIZED {VIEW|TABLE} [IF NOT EXISTS] name
        [PARTITIONED BY (column, ...)]
        [FRESHNESS = INTERVAL '<n>' {SECOND|MINUTE|HOUR|DAY}[S]]
        [RETENTION = INTERVAL '<n>' {SECOND|MINUTE|HOUR|DAY}[S]]
        [REFRESH POLICY {AUTO | INCREMENTAL [STRICT] | FULL}]
        [STORE LAYOUT {MERGE | LOG}] AS <select>
    REFRESH MATERIALIZED {VIEW|TABLE} name [FULL | PARTITION (column = literal, ...)]
    REFRESH ALL MATERIALIZED {VIEWS|TABLES}
    ALTER MATERIALIZED {VIEW|TABLE} name
        {SET FRESHNESS = INTERVAL ... | SET RETENTION = INTERVAL ... | SET REFRESH POLICY ...
         | SUSPEND | RESUME}
    DROP MATERIALIZED {VIEW|TABLE} [IF EXISTS] name
    DESCRIBE [HISTORY] MATERIALIZED {VIEW|TABLE} name
    VERIFY MATERIALIZED {VIEW|TABLE} name

``MATERIALIZED TABLE`` is Flink's spelling of the same thing; ``REFRESH POLICY`` and
``EXPLAIN CREATE`` are Databricks' (see :mod:`ivm.runtime.decision.terms`). ``STORE LAYOUT``
chooses how the view's store takes a change (:mod:`ivm.codegen.store`): merged into the
stored rows, or appended and folded on read; without it, the session's setting does. The
query keeps its place in the statement text, so errors in it point at the statement's own
lines and columns.

>>> s = parse_statement("CREATE MATERIALIZED TABLE s.v AS SELECT 1 AS x")
>>> type(s).__name__, s.name, s.query.strip()
('CreateView', 's.v', 'SELECT 1 AS x')
>>> parse_statement("CREATE MATERIALIZED VIEW v PARTITIONED BY (ds, k) AS SELECT 1").partitioned_by
('ds', 'k')
>>> parse_statement("REFRESH MATERIALIZED VIEW v FULL")
RefreshView(name='v', full=True, partition=None)
>>> parse_statement("REFRESH MATERIALIZED VIEW v PARTITION (ds = '2024-11-25')").partition
{'ds': Literal(this='2024-11-25', is_string=True)}
>>> parse_statement("REFRESH ALL MATERIALIZED TABLES")
RefreshAll()
>>> parse_statement("ALTER MATERIALIZED VIEW v SET FRESHNESS = INTERVAL '2' MINUTES").freshness
120
>>> parse_statement("ALTER MATERIALIZED VIEW v SET RETENTION = INTERVAL '3' DAYS").retention
259200
>>> parse_statement("ALTER MATERIALIZED VIEW v SET REFRESH POLICY INCREMENTAL STRICT").policy
'INCREMENTAL STRICT'
>>> explain = parse_statement("EXPLAIN CREATE MATERIALIZED VIEW v REFRESH POLICY FULL AS SELECT 1")
>>> type(explain).__name__, explain.create.policy
('ExplainCreate', 'FULL')
>>> parse_statement("CREATE MATERIALIZED VIEW v STORE LAYOUT LOG AS SELECT 1").layout
'log'
>>> parse_statement("DROP MATERIALIZED VIEW IF EXISTS db.`order`")
DropView(name='db.`order`', if_exists=True)
>>> [parse_statement(f"{verb} MATERIALIZED VIEW v") for verb in ("DESC HISTORY", "VERIFY")]
[DescribeHistory(name='v'), VerifyView(name='v')]
>>> parse_statement("SELECT 1") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ivm.errors import SqlSyntaxError
from ivm.frontend.positions import position_at_offset
from ivm.names import DIALECT, join


@dataclass(frozen=True)
class CreateView:
    """``CREATE [OR REPLACE] MATERIALIZED VIEW``; ``query`` is the statement's text with all
    before the query blanked out, so that positions in it are the statement's."""

    kind: ClassVar[str] = "CREATE"
    name: str
    query: str
    replace: bool = False
    if_not_exists: bool = False
    freshness: int | None = None  # seconds
    retention: int | None = None  # seconds (see ivm.runtime.refresh.upkeep)
    partitioned_by: tuple[str, ...] = ()
    policy: str | None = None  # REFRESH POLICY: AUTO | INCREMENTAL | INCREMENTAL STRICT | FULL
    layout: str | None = None  # STORE LAYOUT: merge | log


@dataclass(frozen=True)
class ExplainCreate:
    """``EXPLAIN CREATE MATERIALIZED VIEW``: the CREATE it explains."""

    kind: ClassVar[str] = "EXPLAIN"
    create: CreateView


@dataclass(frozen=True)
class RefreshView:
    """``REFRESH MATERIALIZED VIEW``, ``FULL`` or of one ``PARTITION`` ({column: literal})."""

    kind: ClassVar[str] = "REFRESH"
    name: str
    full: bool = False
    partition: dict[str, exp.Literal] | None = None


@dataclass(frozen=True)
class RefreshAll:
    """``REFRESH ALL MATERIALIZED VIEWS``."""

    kind: ClassVar[str] = "REFRESH ALL"


@dataclass(frozen=True)
class AlterView:
    """``ALTER MATERIALIZED VIEW``: the one setting it changes is not None."""

    kind: ClassVar[str] = "ALTER"
    name: str
    freshness: int | None = None  # seconds
    retention: int | None = None  # seconds
    policy: str | None = None
    suspended: bool | None = None  # SUSPEND / RESUME


@dataclass(frozen=True)
class DropView:
    """``DROP MATERIALIZED VIEW``."""

    kind: ClassVar[str] = "DROP"
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class DescribeView:
    """``DESCRIBE MATERIALIZED VIEW``."""

    kind: ClassVar[str] = "DESCRIBE"
    name: str


@dataclass(frozen=True)
class DescribeHistory:
    """``DESCRIBE HISTORY MATERIALIZED VIEW``."""

    kind: ClassVar[str] = "DESCRIBE HISTORY"
    name: str


@dataclass(frozen=True)
class VerifyView:
    """``VERIFY MATERIALIZED VIEW``."""

    kind: ClassVar[str] = "VERIFY"
    name: str


Statement = (
    CreateView
    | ExplainCreate
    | RefreshView
    | RefreshAll
    | AlterView
    | DropView
    | DescribeView
    | DescribeHistory
    | VerifyView
)
"""A materialized-view statement; each class's ``kind`` names it in messages."""


_EXPLAIN = re.compile(r"\s*EXPLAIN\b", re.IGNORECASE)
_UNITS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


class _Tokens:
    def __init__(self, sql: str, tokens: list[Token]):
        self.sql, self.tokens, self.i = sql, tokens, 0

    def peek(self, *words: str) -> bool:
        ahead = self.tokens[self.i : self.i + len(words)]
        return len(ahead) == len(words) and all(
            t.text.upper() == w for t, w in zip(ahead, words, strict=True)
        )

    def accept(self, *words: str) -> bool:
        if self.peek(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, what: str, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {what}")

    def fail(self, message: str):
        if self.i < len(self.tokens):
            token = self.tokens[self.i]
            position = position_at_offset(self.sql, token.start)
            message += f", found {token.text!r}"
        else:
            position = position_at_offset(self.sql, len(self.sql.rstrip()))
            message += " at the end of the statement"
        raise SqlSyntaxError(message, self.sql, position)

    def identifier(self, what: str = "a name") -> str:
        """One name, plain or in backticks."""
        if (
            self.i >= len(self.tokens)
            or self.tokens[self.i].token_type not in (TokenType.VAR, TokenType.IDENTIFIER)
            and not self.tokens[self.i].text.isidentifier()
        ):
            self.fail(f"expected {what}")
        self.i += 1
        return self.tokens[self.i - 1].text

    def name(self) -> str:
        """A view's name, ``name`` or ``database.name``, as Spark SQL text."""
        parts = [self.identifier("a view name")]
        while self.accept("."):
            parts.append(self.identifier("a view name"))
        return join(parts)

    def interval(self) -> int:
        """``INTERVAL '<n>' <unit>`` (or ``INTERVAL <n> <unit>``), in seconds."""
        self.expect("INTERVAL", "INTERVAL")
        if self.i + 1 >= len(self.tokens):
            self.fail("expected a number and a unit, such as INTERVAL '30' SECONDS")
        amount, unit = self.tokens[self.i].text, self.tokens[self.i + 1].text.upper()
        seconds = _UNITS.get(unit.rstrip("S"))
        if not amount.isdigit() or int(amount) == 0 or seconds is None:
            self.fail("expected a positive number and a unit (SECOND, MINUTE, HOUR or DAY)")
        self.i += 2
        return int(amount) * seconds

    def columns(self) -> tuple[str, ...]:
        """``(column, ...)``."""
        self.expect("(", "(")
        names = [self.identifier("a column name")]
        while self.accept(","):
            names.append(self.identifier("a column name"))
        self.expect(")", ")")
        return tuple(names)

    def policy(self) -> str:
        """``AUTO | INCREMENTAL [STRICT] | FULL``, after ``REFRESH POLICY``."""
        for words in (("INCREMENTAL", "STRICT"), ("INCREMENTAL",), ("AUTO",), ("FULL",)):
            if self.accept(*words):
                return " ".join(words)
        self.fail("expected AUTO, INCREMENTAL, INCREMENTAL STRICT or FULL after REFRESH POLICY")

    def layout(self) -> str:
        """``MERGE | LOG``, after ``STORE LAYOUT``, in lower case."""
        for word in ("MERGE", "LOG"):
            if self.accept(word):
                return word.lower()
        self.fail("expected MERGE or LOG after STORE LAYOUT")

    def partition_spec(self) -> dict[str, exp.Literal]:
        """``(column = literal, ...)``."""
        self.expect("(", "(")
        spec = {}
        while True:
            column = self.identifier("a column name")
            self.expect("= after the partition column", "=")
            token = self.tokens[self.i] if self.i < len(self.tokens) else None
            if token is None or token.token_type not in (TokenType.STRING, TokenType.NUMBER):
                self.fail("expected a string or number literal as the partition value")
            spec[column] = exp.Literal(
                this=token.text, is_string=token.token_type == TokenType.STRING
            )
            self.i += 1
            if not self.accept(","):
                break
        self.expect(")", ")")
        return spec

    def end(self) -> None:
        while self.accept(";"):
            pass
        if self.i < len(self.tokens):
            self.fail("expected the end of the statement")


def parse_statement(sql: str) -> Statement | None:
    """The materialized-view statement in ``sql``, or None if it is not one."""
    explain = _EXPLAIN.match(sql)
    if explain:  # Spark's tokenizer takes the rest of an EXPLAIN for one string
        sql = " " * explain.end() + sql[explain.end() :]
    try:  # Spark's tokenizer: backslash escapes in literals, backquoted names
        tokens = _Tokens(sql, DIALECT.tokenize(sql))
    except TokenError:
        return None
    if tokens.accept("CREATE"):
        create = _create(tokens, sql)
        return ExplainCreate(create) if explain and create is not None else create
    if explain:
        return None
    if tokens.accept("REFRESH"):
        return _refresh(tokens)
    if tokens.accept("ALTER"):
        return _alter(tokens) if _materialized(tokens) else None
    if tokens.accept("DROP"):
        if not _materialized(tokens):
            return None
        if_exists = tokens.accept("IF", "EXISTS")
        return DropView(_named(tokens), if_exists=if_exists)
    if tokens.accept("VERIFY"):
        return VerifyView(_named(tokens)) if _materialized(tokens) else None
    if tokens.accept("DESCRIBE") or tokens.accept("DESC"):
        describe = DescribeHistory if tokens.accept("HISTORY") else DescribeView
        return describe(_named(tokens)) if _materialized(tokens) else None
    return None


def _named(tokens: _Tokens) -> str:
    """The view a statement that names nothing else names, its end reached."""
    name = tokens.name()
    tokens.end()
    return name


def _create(tokens: _Tokens, sql: str) -> CreateView | None:
    """The rest of a ``CREATE`` in ``sql`` (None: not a materialized view's)."""
    replace = tokens.accept("OR", "REPLACE")
    if not _materialized(tokens):
        return None
    if_not_exists = tokens.accept("IF", "NOT", "EXISTS")
    name = tokens.name()
    options = _create_options(tokens)
    tokens.expect("AS before the query", "AS")
    if tokens.i >= len(tokens.tokens):
        tokens.fail("expected the view's query")
    start = tokens.tokens[tokens.i].start
    # Blank out the statement's head so positions in the query stay the statement's own.
    query = "".join(c if c == "\n" else " " for c in sql[:start]) + sql[start:]
    return CreateView(name, query, replace=replace, if_not_exists=if_not_exists, **options)


def _create_options(tokens: _Tokens) -> dict[str, Any]:
    """The options of a ``CREATE`` before its ``AS``, each at most once, in any order."""
    options: dict[str, Any] = {}
    while not tokens.peek("AS"):
        if "freshness" not in options and tokens.accept("FRESHNESS"):
            tokens.expect("= after FRESHNESS", "=")
            options["freshness"] = tokens.interval()
        elif "retention" not in options and tokens.accept("RETENTION"):
            tokens.expect("= after RETENTION", "=")
            options["retention"] = tokens.interval()
        elif "partitioned_by" not in options and (
            tokens.accept("PARTITIONED BY")  # one token
            or tokens.accept("PARTITIONED", "BY")
        ):
            options["partitioned_by"] = tokens.columns()
        elif "policy" not in options and tokens.accept("REFRESH", "POLICY"):
            options["policy"] = tokens.policy()
        elif "layout" not in options and tokens.accept("STORE", "LAYOUT"):
            options["layout"] = tokens.layout()
        else:
            tokens.fail(
                "expected PARTITIONED BY, FRESHNESS, RETENTION, REFRESH POLICY, "
                "STORE LAYOUT or AS before the query"
            )
    return options


def _refresh(tokens: _Tokens) -> RefreshView | RefreshAll | None:
    """The rest of a ``REFRESH`` (None: not a materialized view's)."""
    if tokens.accept("ALL", "MATERIALIZED", "VIEWS") or tokens.accept(
        "ALL", "MATERIALIZED", "TABLES"
    ):
        tokens.end()
        return RefreshAll()
    if not _materialized(tokens):
        return None
    name = tokens.name()
    full = tokens.accept("FULL")
    partition = None if full or not tokens.accept("PARTITION") else tokens.partition_spec()
    tokens.end()
    return RefreshView(name, full=full, partition=partition)


def _alter(tokens: _Tokens) -> AlterView:
    """The rest of an ``ALTER MATERIALIZED VIEW``."""
    name = tokens.name()
    if tokens.accept("SET", "FRESHNESS"):
        tokens.expect("= after FRESHNESS", "=")
        statement = AlterView(name, freshness=tokens.interval())
    elif tokens.accept("SET", "RETENTION"):
        tokens.expect("= after RETENTION", "=")
        statement = AlterView(name, retention=tokens.interval())
    elif tokens.accept("SET", "REFRESH", "POLICY"):
        statement = AlterView(name, policy=tokens.policy())
    elif tokens.accept("SUSPEND") or tokens.accept("RESUME"):
        statement = AlterView(name, suspended=tokens.tokens[tokens.i - 1].text.upper() == "SUSPEND")
    else:
        tokens.fail(
            "expected SET FRESHNESS = INTERVAL ..., SET RETENTION = INTERVAL ..., "
            "SET REFRESH POLICY ..., SUSPEND or RESUME"
        )
    tokens.end()
    return statement


@dataclass(frozen=True)
class SparkStatement:
    """A Spark statement that acts on one named table, view or database, as
    :func:`spark_statement` reads it: ``verb`` is its head in upper case (``DROP VIEW``,
    ``ALTER TABLE``, ``INSERT``, ``DROP DATABASE`` …), ``name`` what it names, ``cascade``
    whether a ``DROP DATABASE`` drops what the database holds."""

    verb: str
    name: str
    cascade: bool = False

    @property
    def writes_rows(self) -> bool:
        """Whether it writes rows (or a table's history) rather than the catalog."""
        return self.verb in _ROW_WRITES


_ROW_WRITES = frozenset({"INSERT", "DELETE", "UPDATE", "MERGE", "TRUNCATE", "RESTORE"})
_DATABASE = ("DATABASE", "SCHEMA", "NAMESPACE")


def spark_statement(sql: str) -> SparkStatement | None:
    """The table, view or database that the Spark statement ``sql`` drops, alters, replaces
    or writes; None for any other statement (a query, a temporary view, ``CREATE TABLE``).

    >>> spark_statement("DROP VIEW IF EXISTS shop.v")
    SparkStatement(verb='DROP VIEW', name='shop.v', cascade=False)
    >>> [spark_statement(s).verb for s in ("ALTER VIEW v AS SELECT 1", "INSERT INTO t SELECT 1")]
    ['ALTER VIEW', 'INSERT']
    >>> spark_statement("CREATE OR REPLACE VIEW `my v` AS SELECT 1").name
    '`my v`'
    >>> spark_statement("DROP SCHEMA shop CASCADE")
    SparkStatement(verb='DROP DATABASE', name='shop', cascade=True)
    >>> [spark_statement(s) for s in ("CREATE TEMP VIEW v AS SELECT 1", "SELECT 1")]
    [None, None]
    """
    try:
        tokens = _Tokens(sql, DIALECT.tokenize(sql))
    except TokenError:
        return None
    heads: list[tuple[tuple[str, ...], str]] = [
        (("DROP", "VIEW"), "DROP VIEW"),
        (("DROP", "TABLE"), "DROP TABLE"),
        (("ALTER", "VIEW"), "ALTER VIEW"),
        (("ALTER", "TABLE"), "ALTER TABLE"),
        (("CREATE", "OR", "REPLACE", "VIEW"), "CREATE VIEW"),
        (("CREATE", "VIEW"), "CREATE VIEW"),
        (("CREATE", "OR", "REPLACE", "TABLE"), "REPLACE TABLE"),
        (("REPLACE", "TABLE"), "REPLACE TABLE"),
        (("INSERT", "INTO", "TABLE"), "INSERT"),
        (("INSERT", "INTO"), "INSERT"),
        (("INSERT", "OVERWRITE", "TABLE"), "INSERT"),
        (("INSERT", "OVERWRITE"), "INSERT"),
        (("DELETE", "FROM"), "DELETE"),
        (("UPDATE",), "UPDATE"),
        (("MERGE", "INTO"), "MERGE"),
        (("TRUNCATE", "TABLE"), "TRUNCATE"),
        (("RESTORE", "TABLE"), "RESTORE"),
        (("RESTORE",), "RESTORE"),
    ]
    heads += [(("DROP", kind), "DROP DATABASE") for kind in _DATABASE]
    verb = next((verb for words, verb in heads if tokens.accept(*words)), None)
    if verb is None:
        return None
    if not tokens.accept("IF", "EXISTS"):
        tokens.accept("IF", "NOT", "EXISTS")
    try:
        name = tokens.name()
    except SqlSyntaxError:  # Spark's parser says what is wrong with it
        return None
    cascade = verb == "DROP DATABASE" and any(
        token.text.upper() == "CASCADE" for token in tokens.tokens[tokens.i :]
    )
    return SparkStatement(verb, name, cascade)


def _materialized(tokens: _Tokens) -> bool:
    return tokens.accept("MATERIALIZED", "VIEW") or tokens.accept("MATERIALIZED", "TABLE")


def split_script(text: str) -> list[str]:
    """The statements of the SQL script ``text``, split at the semicolons outside literals
    and comments; the comments before a statement stay with it, a script's last comments go.

    >>> split_script("-- the sources\\nSELECT 'a;b';\\nINSERT INTO t VALUES (1);\\n-- end\\n")
    ["-- the sources\\nSELECT 'a;b'", 'INSERT INTO t VALUES (1)']
    """
    try:
        tokens = DIALECT.tokenize(text)
    except TokenError as error:
        raise SqlSyntaxError(f"syntax error: {error}", text) from None
    statements, start, has_token = [], 0, False
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if has_token:
                statements.append(text[start : token.start].strip())
            start, has_token = token.end + 1, False
        else:
            has_token = True
    if has_token:
        statements.append(text[start:].strip())
    return statements
