"""Names of tables and views, and identifiers in generated SQL: one spelling for each.

A name is written ``db.table``, each part in backticks where Spark needs them
(:func:`needs_quotes`). Spark's session catalog over the Hive metastore, ivm's catalog,
stores database and table names in lower case and finds them whatever their case (even with
``spark.sql.caseSensitive``), so the *canonical* name of a table is its parts in lower case
(:func:`canonical`). That spelling is the one ivm keeps everywhere it keeps a name: a store's
``ivm.view`` property, the source versions a refresh records, the nodes of the graph of views;
and it parses back to the same parts in Spark and in sqlglot.

>>> canonical("Shop.`Order`")
'shop.`order`'
>>> split("shop.`my view`")
['shop', 'my view']
>>> join(["shop", "a.b"])
'shop.`a.b`'
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
READ_AS_NAMES = frozenset({"default"})
"""Keywords that Spark's and sqlglot's parsers read as a name wherever a name may stand:
Spark's first database is called ``default``, and ``default.orders`` needs no backticks."""

KEYWORDS = (
    frozenset(
        word.lower()
        for keyword in Spark.Tokenizer.KEYWORDS
        for word in keyword.split()
        if _PLAIN.fullmatch(word)
    )
    - READ_AS_NAMES
)
"""Words that sqlglot's or Spark's parser may read as a keyword rather than a name."""

CATALOG_NAME = re.compile(r"[A-Za-z0-9_]+")
"""What Spark's session catalog accepts as a database or table name."""


def needs_quotes(part: str) -> bool:
    """Whether ``part`` must be written in backticks to be read back as one name: anything
    but ASCII letters, digits and ``_`` not starting with a digit, or a keyword.

    >>> [needs_quotes(p) for p in ("orders", "default", "order", "my view", "vü", "1a")]
    [False, False, True, True, True, True]
    """
    return not _PLAIN.fullmatch(part) or part.lower() in KEYWORDS


class IvmSpark(Spark):
    """Spark SQL, with every identifier Spark would not read back as itself in backticks
    (sqlglot's Spark generator quotes neither keywords nor non-ASCII names).

    >>> exp.column("group", "select").sql(DIALECT)
    '`select`.`group`'
    """

    class Generator(Spark.Generator):
        def identifier_sql(self, expression: exp.Identifier) -> str:
            if not expression.quoted and needs_quotes(expression.name):
                expression = exp.Identifier(this=expression.name, quoted=True)
            return super().identifier_sql(expression)


DIALECT = IvmSpark()
"""The SQL dialect ivm reads and writes: Spark's."""


def quote(part: str) -> str:
    """``part`` as Spark SQL text.

    >>> quote("a`b")
    '`a``b`'
    """
    return "`" + part.replace("`", "``") + "`" if needs_quotes(part) else part


def join(parts) -> str:
    """The name made of ``parts`` (database, table), as Spark SQL text."""
    return ".".join(quote(p) for p in parts)


def split(name: str) -> list[str]:
    """The parts of the name ``name`` (Spark SQL text: quoted where needed).

    >>> split("db.`a``b`")
    ['db', 'a`b']
    """
    try:
        table = exp.to_table(name, dialect=DIALECT)
    except (ParseError, TokenError):
        return name.split(".")
    if not isinstance(table, exp.Table) or not table.name:
        return name.split(".")
    return [part.name for part in table.parts]


def canonical(name: str) -> str:
    """The one spelling of the (qualified) name ``name``: its parts in lower case, quoted
    where needed.

    >>> canonical("DB.MixV"), canonical("db.order")
    ('db.mixv', 'db.`order`')
    """
    return join(p.lower() for p in split(name))


INTERNAL_SUFFIX = "__ivm"
"""What the name of the database holding ivm's own tables ends in (see
:func:`internal_database`)."""


def is_internal_database(database: str) -> bool:
    """Whether ``database`` is named as a database of ivm's own tables (ends in ``__ivm``)."""
    return database.lower().endswith(INTERNAL_SUFFIX)


def internal_database(database: str) -> str:
    """The database holding ivm's own tables (the stores and state tables) of the
    materialized views in ``database``: ``database__ivm``, so that the user's database
    holds the user's tables and views alone. A database so named is its own.

    >>> internal_database("shop"), internal_database("shop__ivm")
    ('shop__ivm', 'shop__ivm')
    """
    return database if is_internal_database(database) else database + INTERNAL_SUFFIX


def user_database(internal: str) -> str:
    """The database whose materialized views keep their tables in the internal database
    ``internal``.

    >>> user_database("shop__ivm")
    'shop'
    """
    return internal[: -len(INTERNAL_SUFFIX)]


def internal_table(view: str, suffix: str, legacy_layout: bool = False) -> str:
    """The name of one of ivm's own tables of the view (or state table) ``view``: its name
    followed by ``suffix``, in the internal database of its database; with
    ``legacy_layout``, in its own database, beside it: where a view created before ivm kept
    its tables apart has them (Spark's catalog cannot move a table to another database).

    >>> internal_table("shop.v", "__ivm_store")
    'shop__ivm.v__ivm_store'
    >>> internal_table("shop.v", "__ivm_store", legacy_layout=True)
    'shop.v__ivm_store'
    """
    *database, name = split(view)
    if database and not legacy_layout:
        database[-1] = internal_database(database[-1])
    return join([*database, name + suffix])
