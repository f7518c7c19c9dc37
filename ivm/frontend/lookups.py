"""Lookup joins: ``JOIN dim FOR SYSTEM_TIME AS OF fact.proc_time``, as Flink spells them.

A lookup join enriches each row of the FROM clause before it (the *fact* rows) with the
dimension table as it is when the row is first consumed, and leaves enriched rows alone when
the dimension changes later. It is an explicit opt-in, in Flink's spelling; Spark's own
``TIMESTAMP AS OF`` stays refused as time travel. The column named after ``AS OF`` only
marks the fact side (Flink's processing-time attribute); its values are not read.

The joins of a FROM clause with lookup joins are a derived table (as for lateral views, see
:mod:`ivm.frontend.generators`), which :mod:`ivm.passes.states` keeps as a state table.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ivm.errors import UnsupportedQuery
from ivm.frontend.positions import position_of

FLINK_SPELLING = re.compile(r"\bFOR\s+SYSTEM_TIME\s+AS\s+OF\s*$", re.IGNORECASE)


def is_lookup(join: exp.Join, sql: str) -> bool:
    """``join`` reads its table ``FOR SYSTEM_TIME AS OF`` a column of another table.

    >>> from sqlglot import parse_one
    >>> sql = "SELECT * FROM o JOIN d FOR SYSTEM_TIME AS OF o.pt ON o.k = d.k"
    >>> is_lookup(parse_one(sql, read="spark").args["joins"][0], sql)
    True
    >>> sql = "SELECT * FROM o JOIN d TIMESTAMP AS OF o.pt ON o.k = d.k"
    >>> is_lookup(parse_one(sql, read="spark").args["joins"][0], sql)
    False
    """
    table = join.this
    version = table.args.get("version") if isinstance(table, exp.Table) else None
    if version is None or not isinstance(version.expression, exp.Column):
        return False
    starts = [
        i.meta["start"] for i in version.expression.find_all(exp.Identifier) if "start" in i.meta
    ]
    return bool(starts) and FLINK_SPELLING.search(sql[: min(starts)]) is not None


def has_lookups(select: exp.Select, sql: str) -> bool:
    return any(is_lookup(j, sql) for j in select.args.get("joins") or [])


def check_marks_facts(join: exp.Join, facts: list[str], sql: str) -> None:
    """Refuse the lookup ``join`` unless its ``AS OF`` column (qualified) is one of a fact
    table, ``facts`` being their aliases (the FROM clause's tables before its lookup joins):
    the column marks the fact side, and a dimension's own column says the opposite.

    >>> from ivm.frontend.parse import parse_query
    >>> sql = "SELECT * FROM o JOIN d FOR SYSTEM_TIME AS OF d.pt ON o.k = d.k"
    >>> try:
    ...     check_marks_facts(parse_query(sql).args["joins"][0], ["o"], sql)
    ... except UnsupportedQuery as refused:
    ...     print(refused.construct, refused.position, refused.hint, sep="; ")
    FOR SYSTEM_TIME AS OF a column of the dimension d; line 1, column 46; write FOR \
SYSTEM_TIME AS OF o.<column>, a column of the facts (its values are not read)
    """
    column = join.this.args["version"].expression
    if column.table in facts:
        return
    looked_up = join.this.alias_or_name
    whose = (
        f"the dimension {looked_up}"
        if column.table == looked_up
        else f"{column.table} (no fact table)"
    )
    raise UnsupportedQuery(
        f"FOR SYSTEM_TIME AS OF a column of {whose}",
        sql,
        position_of(column),
        reason=f"the column after AS OF marks the fact side of a lookup join, the rows of "
        f"{' and '.join(facts)} that it enriches (Flink's processing-time attribute)",
        hint=f"write FOR SYSTEM_TIME AS OF {facts[0]}.<column>, a column of the facts (its "
        f"values are not read)",
    )
