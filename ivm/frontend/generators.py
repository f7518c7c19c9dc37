"""Generators (``LATERAL VIEW explode(…)``, ``explode`` in the SELECT list) as a derived table.

A SELECT's ``LATERAL VIEW``s apply to its FROM clause, before WHERE. The query is rewritten
so that they, its FROM and its joins form a derived table whose columns have plain names,
which the rest of the SELECT reads like any other::

    SELECT g.tag, COUNT(*) FROM t JOIN u ON … LATERAL VIEW explode(t.tags) g AS tag
    WHERE t.x > 0 GROUP BY g.tag
 →  SELECT l.tag, COUNT(*) FROM (SELECT t.x AS x, g.tag AS tag FROM t JOIN u ON …
                                 LATERAL VIEW explode(t.tags) g AS tag) AS l
    WHERE l.x > 0 GROUP BY l.tag

The derived table is lowered to :class:`~ivm.ir.Generate` nodes over a projection of the
joined rows (see :meth:`ivm.frontend.lower._Lowering.generated`). A generator in the SELECT
list (``SELECT id, explode(tags) AS tag``) is first written as the ``LATERAL VIEW`` it means.

>>> from ivm.frontend.parse import parse_query, qualify_query
>>> sql = "SELECT id, explode(tags) AS tag FROM t"
>>> q = qualify_query(parse_query(sql), sql, {"t": {"id": "INT", "tags": "ARRAY<INT>"}})
>>> print(as_derived_table(select_list_generator(q, lambda *a: None)).sql("spark"))
SELECT _ivm_lateral.id AS id, _ivm_lateral.tag AS tag FROM (SELECT t.id AS id, _ivm_gen.tag AS \
tag FROM t AS t LATERAL VIEW EXPLODE(t.tags) _ivm_gen AS tag) AS _ivm_lateral
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from sqlglot import exp

from ivm.frontend.subqueries import sources_of
from ivm.zset import BOOKKEEPING_PREFIX

DERIVED = f"{BOOKKEEPING_PREFIX}lateral"
"""The alias of the derived table that holds a SELECT's FROM clause and lateral views."""
GENERATED = f"{BOOKKEEPING_PREFIX}gen"
"""The alias of the lateral view a generator in the SELECT list becomes."""
MARK = "ivm_lateral"
"""Key of the ``meta`` that marks the derived table's own SELECT."""

WRITTEN = "ivm_written"
"""Key of the ``meta`` that keeps a column of the derived table as the query wrote it."""


def fresh_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name_2``, ``name_3``, … : the first not in ``taken`` (lower case, as
    Spark compares column names), which it joins.

    >>> taken = {"x"}
    >>> fresh_name("X", taken), fresh_name("y", taken), sorted(taken)
    ('X_2', 'y', ['x', 'x_2', 'y'])
    """
    candidate, n = name, 1
    while candidate.lower() in taken:
        n += 1
        candidate = f"{name}_{n}"
    taken.add(candidate.lower())
    return candidate


def written(column: exp.Column) -> str:
    """``column`` as the query wrote it, also where it now reads the derived table."""
    return column.meta.get(WRITTEN) or column.sql("spark")


OUTER_GENERATORS = {exp.ExplodeOuter: exp.Explode, exp.PosexplodeOuter: exp.Posexplode}
GENERATORS = (exp.Explode, exp.Posexplode, exp.Inline, *OUTER_GENERATORS)
INLINE_OUTER = "inline_outer"


def is_generator(node: exp.Expr) -> bool:
    """``node`` is a table-valued function a ``LATERAL VIEW`` maintains."""
    return isinstance(node, GENERATORS) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == INLINE_OUTER
    )


def plain_generator(node: exp.Expr) -> tuple[exp.Expr, bool]:
    """``node`` without its ``_outer`` suffix, and whether it had it.

    >>> from sqlglot import parse_one
    >>> g, outer = plain_generator(parse_one("explode_outer(x)", read="spark"))
    >>> g.sql("spark"), outer
    ('EXPLODE(x)', True)
    """
    for outer, plain in OUTER_GENERATORS.items():
        if isinstance(node, outer):
            return plain(this=node.this.copy()), True
    if isinstance(node, exp.Anonymous) and node.name.lower() == INLINE_OUTER:
        return exp.Inline(this=node.expressions[0].copy()), True
    return node, False


def default_names(generator: exp.Expr) -> list[str] | None:
    """The names Spark gives a generator's columns when the query does not, or None where its
    argument's type is unknown: ``col`` (``key``, ``value`` for a map), after ``pos`` for
    ``posexplode``; a struct's field names for ``inline``."""
    generator, _ = plain_generator(generator)
    argument = generator.this
    data_type = argument.type if argument is not None else None
    if data_type is None or data_type.this == exp.DataType.Type.UNKNOWN:
        return None
    if isinstance(generator, exp.Inline):
        element = data_type.expressions[0] if data_type.expressions else None
        if element is None or element.this != exp.DataType.Type.STRUCT:
            return None
        return [field.name for field in element.expressions]
    names = ["key", "value"] if data_type.this == exp.DataType.Type.MAP else ["col"]
    return (["pos"] if isinstance(generator, exp.Posexplode) else []) + names


Refuse = Callable[..., NoReturn]


def _own(item: exp.Expr):
    """The nodes of a SELECT list's item, not those of a subquery in it, which belong to the
    subquery's own query (its LATERAL VIEW, its aggregate)."""
    return item.walk(prune=lambda node: isinstance(node, exp.Query))


def select_list_generator(select: exp.Select, refuse: Refuse) -> exp.Select:
    """``select`` with the generator in its SELECT list (there is at most one) written as a
    ``LATERAL VIEW``, its columns selected where it stood."""
    found = [
        (i, item)
        for i, item in enumerate(select.expressions)
        if any(is_generator(n) for n in _own(item))
    ]
    if not found:
        return select
    if len(found) > 1:
        refuse(
            "more than one generator in a SELECT list",
            found[1][1],
            "write each but one as a LATERAL VIEW",
        )
    ((index, item),) = found
    generator = item.this if isinstance(item, (exp.Alias, exp.Aliases)) else item
    if not is_generator(generator):
        refuse(
            "a generator inside an expression",
            item,
            "select the generator alone, or write it as a LATERAL VIEW",
        )
    if (
        select.args.get("group")
        or select.args.get("distinct")
        or any(
            isinstance(n, (exp.AggFunc, exp.Window)) for e in select.expressions for n in _own(e)
        )
    ):
        refuse(
            "a generator in the SELECT list of a grouped or DISTINCT query",
            item,
            "explode in a LATERAL VIEW, or in a query over this one",
        )
    expected = default_names(generator)
    if isinstance(item, exp.Aliases):
        names = [i.name for i in item.expressions]
    elif isinstance(item, exp.Alias) and not item.alias.startswith("_col_"):
        names = [item.alias]
    else:
        names = expected
    if names is None:
        refuse(
            "a generator whose columns cannot be named",
            item,
            "name its columns: explode(x) AS name, posexplode(x) AS (pos, name)",
        )
    if expected is not None and len(names) != len(expected):
        refuse(
            f"a generator named with {len(names)} of its {len(expected)} columns",
            item,
            f"name each: AS ({', '.join(expected)})",
        )
    select = select.copy()
    lateral = exp.Lateral(
        this=generator.copy(),
        view=True,
        alias=exp.TableAlias(
            this=exp.to_identifier(GENERATED), columns=[exp.to_identifier(n) for n in names]
        ),
    )
    items = list(select.expressions)
    items[index : index + 1] = [exp.alias_(exp.column(n, GENERATED), n) for n in names]
    select.set("expressions", items)
    select.set("laterals", list(select.args.get("laterals") or []) + [lateral])
    return select


def as_derived_table(select: exp.Select) -> exp.Select:
    """``select`` reading its FROM clause, joins and lateral views as one derived table
    (:data:`DERIVED`), whose SELECT (marked :data:`MARK`) names each column read after it."""
    moved = sources_of(select) | {
        lateral.alias_or_name for lateral in select.args.get("laterals") or []
    }
    outer = select.copy()
    inner = exp.Select()
    for arg in ("from_", "joins", "laterals"):
        inner.set(arg, outer.args.get(arg))
        outer.set(arg, None)
    read: dict[tuple[str, str], str] = {}
    taken: set[str] = set()

    def plain(table: str, name: str) -> str:
        if (table, name) not in read:
            read[(table, name)] = fresh_name(name, taken)
        return read[(table, name)]

    def rename(node: exp.Expr, shadowed: frozenset[str]) -> None:
        for child in list(node.iter_expressions()):
            if isinstance(child, exp.Select):
                rename(child, shadowed | sources_of(child))
            elif isinstance(child, exp.Column) and child.table in moved - shadowed:
                column = exp.column(plain(child.table, child.name), DERIVED)
                column.this.meta.update(child.this.meta)
                column.args["table"].meta.update(child.args["table"].meta)
                column.meta[WRITTEN] = child.sql("spark")
                column.type = child.type
                child.replace(column)
            else:
                rename(child, shadowed)

    rename(outer, frozenset())
    inner.set(
        "expressions",
        [exp.alias_(exp.column(name, table), alias) for (table, name), alias in read.items()]
        or [exp.alias_(exp.true(), f"{BOOKKEEPING_PREFIX}row")],
    )
    inner.meta[MARK] = True
    outer.set(
        "from_",
        exp.From(
            this=exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(DERIVED)))
        ),
    )
    return outer
