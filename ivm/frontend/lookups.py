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
    starts = [i.meta["start"] for i in version.expression.find_all(exp.Identifier)
              if "start" in i.meta]
    return bool(starts) and FLINK_SPELLING.search(sql[:min(starts)]) is not None


def has_lookups(select: exp.Select, sql: str) -> bool:
    return any(is_lookup(j, sql) for j in select.args.get("joins") or [])
