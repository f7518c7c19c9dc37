"""Statements on a view's store: the MERGE that folds a change in, and the view over it.

The MERGE reads the change per store key (the delta query) as ``change`` and the stored row
as ``stored``; a key matches with null-safe equality, as NULL is a key like any other::

    count'   = stored._ivm_count + change._ivm_count
    count' < 0  → the store disagrees with its sources: fail, apply nothing
    count' = 0  → DELETE (unless the view is a global aggregate: it keeps its one row)
    matched     → UPDATE accumulators to their folded values, view columns recomputed
    not matched → INSERT when change._ivm_count > 0

``types`` (store column → type), where known, makes every assigned value a CAST to the
stored type, so the arithmetic of a fold does not widen the store's types.

A store *logged* (:data:`LOGGED`, the ``log`` layout) takes a change as an append instead:
each change row (keys + accumulator changes) is written as it is, marked ``_ivm_logged``,
and every read folds the logged rows into the stored ones (:func:`folded_query`)::

    untouched = stored rows whose key no logged row has               (read as they are)
    touched   = Σ accumulators over the stored and logged rows of each logged key
    store     = untouched ∪ touched, count' checked and filtered as the MERGE does

Accumulators form an abelian group, so the sum of the changes in any order is the MERGE's
fold applied change by change. :func:`compaction_statement` folds the log into the stored
rows in one MERGE and removes the logged rows in the same commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from ivm.names import DIALECT
from ivm.store import OVERFLOW, Store, parenthesized
from ivm.zset import COUNT

STORED, CHANGE = "stored", "change"
LOGGED = "_ivm_logged"
"""The column of a logged store that marks a row appended by a refresh (a change, not yet
folded in); the store is partitioned by it (after the view's own partition columns, keys of
the view), so that a read of either part prunes the other."""
LOG, TOUCHED = "_ivm_log", "_ivm_touched"
SORTED_KEYS = 4
"""A store is written in the order of this many of its first keys (:func:`stored_query`)."""
NEGATIVE_COUNT = (
    "ivm: a refresh would give a row a negative count: the view's store "
    "disagrees with its sources. Run REFRESH MATERIALIZED VIEW ... FULL."
)


Types = Mapping[str, str]
"""The Spark type of each store column, where a column's type is to be kept as it is."""

Value = Callable[[str], exp.Expr]
"""A column's value, by the column's name."""


def _cast(value: exp.Expr, column: str, types: Types | None) -> exp.Expr:
    if not types or column not in types:
        return value
    return exp.Cast(this=value, to=exp.DataType.build(types[column], dialect=DIALECT))


def _folded(
    store: Store,
    old_of: Callable[[str], exp.Expr | None],
    change_of: Value,
    types: Types | None,
) -> dict[str, exp.Expr]:
    """Store column → its new value, given the old and change value of each accumulator."""
    new: dict[str, exp.Expr] = {}
    for acc in store.accumulators:  # a sum's guard is folded before the sum
        guard = new[acc.guard].copy() if acc.guard else None
        new[acc.name] = _cast(
            acc.fold(
                old_of(acc.name), change_of(acc.name), guard, types.get(acc.name) if types else None
            ),
            acc.name,
            types,
        )
    return new


def _view_values(
    store: Store, key_of: Value, new: Mapping[str, exp.Expr], types: Types | None
) -> dict[str, exp.Expr]:
    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table:
            if store.is_key(node.name):
                return key_of(node.name)
            if node.name in new:
                return parenthesized(new[node.name].copy())
        return node

    return {
        name: _cast(e.copy().transform(replace), name, types)
        for name, e in store.visible
        if not store.is_key(name)
    }


def _negative_count_failure() -> exp.Expr:
    """A BIGINT that fails the statement: a group's count would be negative."""
    return exp.Cast(
        this=exp.func("raise_error", exp.Literal.string(NEGATIVE_COUNT)),
        to=exp.DataType.build("BIGINT"),
    )


def _some_rows() -> exp.Expr:
    """``COUNT(*) > 0``: a global aggregate over no rows gives no group here."""
    return exp.GT(this=exp.func("COUNT", exp.Star()), expression=exp.Literal.number(0))


def _new_group(name: str) -> None:
    """The old value of every column of a group the store does not hold yet: none."""
    return None


def _same_key(store: Store, left: str, right: str) -> exp.Expr:
    """The rows ``left`` and ``right`` hold the same key (NULL is a key like any other)."""
    if not store.keys:
        return exp.true()
    return exp.and_(
        *(
            exp.NullSafeEQ(this=exp.column(k, left), expression=exp.column(k, right))
            for k in store.keys
        )
    )


def merge_statement(
    store: Store,
    target: str,
    change: exp.Query,
    types: Types | None = None,
    compacting: bool = False,
    within: exp.Expr | None = None,
) -> exp.Merge:
    """``MERGE INTO target`` folding the rows of ``change`` (keys + accumulator changes).

    ``compacting``: ``target`` is a logged store and ``change`` its logged rows summed by
    key; the MERGE folds them into the stored rows and deletes the logged ones. ``within``:
    a predicate on the stored row (its columns qualified by ``stored``) that every row with a
    key of the change satisfies; added to the ON, it lets Delta skip the files of the store
    that hold none of the change's keys, and matches what the ON matched without it.

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")),), (ROWS,))
    >>> at_one = exp.column("k", STORED).eq(1)
    >>> merge = merge_statement(s, "t", exp.select("*").from_("c"), within=at_one)
    >>> merge.sql("spark").split(" WHEN")[0].split(" ON ")[1]
    'stored.k IS NOT DISTINCT FROM change.k AND stored.k = 1'
    """

    def stored(name: str) -> exp.Expr:
        return exp.column(name, STORED)

    def changed(name: str) -> exp.Expr:
        return exp.column(name, CHANGE)

    on = _same_key(store, STORED, CHANGE)
    if compacting:
        on = exp.and_(on, exp.not_(stored(LOGGED)))
    if within is not None:
        on = exp.and_(on, within.copy())

    updated = _folded(store, stored, changed, types)
    inserted = _folded(store, _new_group, changed, types)
    new_count = updated[COUNT]
    fail = _negative_count_failure()

    whens = [
        exp.When(
            matched=True,
            condition=exp.LT(this=new_count.copy(), expression=exp.Literal.number(0)),
            then=exp.Update(expressions=[exp.EQ(this=exp.column(COUNT), expression=fail.copy())]),
        )
    ]
    if not store.single_row:
        whens.append(
            exp.When(
                matched=True,
                condition=exp.EQ(this=new_count.copy(), expression=exp.Literal.number(0)),
                then=exp.var("DELETE"),
            )
        )
    assignments = {**_view_values(store, stored, updated, types), **updated}
    whens.append(
        exp.When(
            matched=True,
            then=exp.Update(
                expressions=[
                    exp.EQ(this=exp.column(name), expression=value)
                    for name, value in assignments.items()
                ]
            ),
        )
    )

    values = {
        **{k: changed(k) for k in store.keys},
        **_view_values(store, changed, inserted, types),
        **inserted,
    } | ({LOGGED: exp.false()} if compacting else {})
    columns = store.columns + ((LOGGED,) if compacting else ())
    whens.append(
        exp.When(
            matched=False,
            condition=exp.LT(this=changed(COUNT), expression=exp.Literal.number(0)),
            then=exp.Insert(
                this=exp.Tuple(expressions=[exp.column(COUNT)]),
                expression=exp.Tuple(expressions=[fail.copy()]),
            ),
        )
    )
    whens.append(
        exp.When(
            matched=False,
            condition=exp.GT(this=changed(COUNT), expression=exp.Literal.number(0)),
            then=exp.Insert(
                this=exp.Tuple(expressions=[exp.column(c) for c in columns]),
                expression=exp.Tuple(expressions=[values[c] for c in columns]),
            ),
        )
    )
    if compacting:
        whens.append(
            exp.When(matched=False, source=True, condition=stored(LOGGED), then=exp.var("DELETE"))
        )
    return exp.Merge(
        this=exp.alias_(exp.to_table(target, dialect=DIALECT), STORED, table=True),
        using=exp.Subquery(this=change, alias=exp.TableAlias(this=exp.to_identifier(CHANGE))),
        on=on,
        whens=exp.Whens(expressions=whens),
    )


def record_only_statement(target: str) -> exp.Update:
    """An ``UPDATE`` of no row: the commit of a change that leaves every stored row as it
    is, carrying the refresh's record, where it cannot go through Delta's transaction API
    (:mod:`ivm.runtime.log.transaction`: a Spark Connect session). It writes no file, and
    costs Delta less than a ``MERGE`` of no rows (no join to plan and run).

    >>> record_only_statement("db.v__ivm_store").sql("spark")
    'UPDATE db.v__ivm_store SET _ivm_count = _ivm_count WHERE FALSE'
    """
    return exp.Update(
        this=exp.to_table(target, dialect=DIALECT),
        expressions=[exp.EQ(this=exp.column(COUNT), expression=exp.column(COUNT))],
        where=exp.Where(this=exp.false()),
    )


def in_key_order(store: Store) -> bool:
    """Whether ``store`` is written in key order (:func:`stored_query`)."""
    return bool(store.keys) and not store.repeat_rows


def stored_query(store: Store, query: exp.Query, logged: bool) -> exp.Query:
    """The rows of ``query`` (``store``'s full query) as the store holds them: as they are in
    a merged store; in a ``logged`` one, folded, none of them logged. Rows of a store with
    keys are written in key order, so that each file holds a range of keys and its min/max
    statistics say which: a MERGE at a change's keys then rewrites the files around them, and
    a read restricted to them skips the others, where a shuffle by group would have put keys
    of every range in every file. The order is that of the first :data:`SORTED_KEYS` keys
    (Delta keeps statistics of the first columns of a table only, and a view may have
    hundreds of keys). A store whose key is every column of a view that keeps duplicates is
    left as computed (its sort would cost a recompute as much as its shuffle).

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")),), (ROWS,))
    >>> stored_query(s, exp.select("k").from_("t"), logged=False).sql("spark")
    'SELECT * FROM (SELECT k FROM t) AS _ivm_full ORDER BY k'
    """
    columns = [exp.Star(), exp.alias_(exp.false(), LOGGED)] if logged else [exp.Star()]
    ordered = in_key_order(store)
    if not logged and not ordered:
        return query
    rows = exp.select(*columns).from_(
        exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier("_ivm_full")))
    )
    return rows.order_by(*(exp.column(k) for k in store.keys[:SORTED_KEYS])) if ordered else rows


def append_statement(
    store: Store, target: str, change: exp.Query, types: Types | None = None
) -> exp.Insert:
    """``INSERT INTO target`` the rows of ``change`` (keys + accumulator changes), logged:
    one append, no stored row read. A view column that is not a key has no meaning in a
    change row and is NULL. A sum's change is NULL only where it overflowed, which fails
    here rather than vanish from the fold (which skips NULLs).

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")), ("n", exp.column("_ivm_count"))), (ROWS,))
    >>> append = append_statement(s, "t", exp.select("*").from_("c"), {"n": "bigint"})
    >>> append.sql("spark").split(" FROM ")[0]
    'INSERT INTO t SELECT k, CAST(NULL AS BIGINT) AS n, _ivm_count, TRUE AS _ivm_logged'
    """

    def value(column: str) -> exp.Expr:
        if store.is_key(column) or any(column == acc.name for acc in store.accumulators):
            return _overflow_checked(store, column)
        return exp.alias_(_cast(exp.Null(), column, types), column)

    rows = exp.select(*(value(c) for c in store.columns), exp.alias_(exp.true(), LOGGED)).from_(
        exp.Subquery(this=change.copy(), alias=exp.TableAlias(this=exp.to_identifier(CHANGE)))
    )
    return exp.Insert(this=exp.to_table(target, dialect=DIALECT), expression=rows)


def folded_columns(store: Store, types: Types | None = None) -> dict[str, exp.Expr]:
    """Each column of ``store`` folded over the rows, stored and logged, of one key (or of
    the global aggregate's one group), as an aggregate over them: keys as they are,
    accumulators summed and folded as a new group's, view columns computed from those; a
    count that would be negative fails, as it fails the MERGE.

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")), ("n", exp.column("_ivm_count"))), (ROWS,))
    >>> folded = {c: v.sql("spark") for c, v in folded_columns(s).items()}
    >>> folded["k"], folded["n"].split(",")[0], folded["n"] == folded["_ivm_count"]
    ('k', 'IF(SUM(_ivm_count) < 0', True)
    """
    sums = {acc.name: exp.func("SUM", exp.column(acc.name)) for acc in store.accumulators}
    new = _folded(store, _new_group, lambda name: sums[name].copy(), types)
    count = new[COUNT]
    new[COUNT] = exp.If(
        this=exp.LT(this=count.copy(), expression=exp.Literal.number(0)),
        true=_negative_count_failure(),
        false=count,
    )
    return {
        **{k: exp.column(k) for k in store.keys},
        **_view_values(store, exp.column, new, types),
        **new,
    }


def folded_query(
    store: Store, target: str, types: Types | None = None, version: int | None = None
) -> exp.Query:
    """The store columns of the logged store ``target`` (as of ``version``, if given) with
    its logged rows folded in: its rows as a MERGE of each logged change would have left them
    (see the module docstring). A group's count that would be negative fails the read, as it
    fails the MERGE. The query reads ``target`` five times; Delta scans one table at one
    snapshot throughout a query (its ``PrepareDeltaScan``), so a fold of the log committed
    meanwhile is seen by every part or by none.

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")), ("n", exp.column("_ivm_count"))), (ROWS,))
    >>> folded_query(s, "t", version=4).sql("spark").count("FROM t VERSION AS OF 4")
    5
    """

    def part(logged: bool) -> exp.Select:
        condition = exp.column(LOGGED) if logged else exp.not_(exp.column(LOGGED))
        table = exp.to_table(target, dialect=DIALECT)
        if version is not None:
            table.set(
                "version",
                exp.Version(this="VERSION", kind="AS OF", expression=exp.Literal.number(version)),
            )
        return exp.select("*").from_(table).where(condition)

    def sub(query: exp.Query, alias: str) -> exp.Subquery:
        return exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias)))

    keys = [exp.column(k) for k in store.keys]
    # the logged keys, repeated as logged: a semi or anti join reads each key once however
    # often it repeats, and a DISTINCT would cost the read a shuffle (a Spark job)
    touched = exp.select(*keys).from_(sub(part(True), LOG)) if keys else None
    accumulators = [acc.name for acc in store.accumulators]

    def joined(kind: str) -> exp.Select:
        rows = exp.select(*(exp.column(c, STORED) for c in store.columns)).from_(
            sub(part(False), STORED)
        )
        if touched is None:  # a global aggregate: one group, touched by any logged row
            marker = (
                exp.select(exp.Literal.number(1).as_("one")).from_(sub(part(True), LOG)).limit(1)
            )
            return rows.join(sub(marker, TOUCHED), join_type=kind)
        return rows.join(
            sub(touched.copy(), TOUCHED), on=_same_key(store, STORED, TOUCHED), join_type=kind
        )

    inputs = exp.union(
        exp.select(*keys, *(exp.column(a) for a in accumulators)).from_(sub(part(True), LOG)),
        exp.select(*(exp.column(c, STORED) for c in [*store.keys, *accumulators])).from_(
            sub(joined("LEFT SEMI"), STORED)
        ),
        distinct=False,
    )
    folded = _summed_by_key(store, inputs, types)
    untouched = exp.select(*(exp.column(c) for c in store.columns)).from_(
        sub(joined("LEFT ANTI"), STORED)
    )
    return exp.union(untouched, folded, distinct=False)


def refolded_query(
    store: Store, target: str, change: exp.Query, types: Types | None = None
) -> exp.Query:
    """The rows of the merged store read as ``target`` (its table, or a relation of its
    rows) with the rows of ``change`` (keys + accumulator changes) folded in, as a MERGE of
    ``change`` would leave them: every stored and changed row summed by key
    (:func:`folded_columns`; a count that would be negative fails), groups whose count
    reaches 0 left out (a global aggregate keeps its one row), in key order
    (:func:`stored_query`). Overwritten into the store, it rewrites the whole store: for a
    store of a few rows, cheaper than a MERGE's search for the rows it changes.

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")),), (ROWS,))
    >>> q = refolded_query(s, "t", exp.select("*").from_("c")).sql("spark")
    >>> "SELECT k, _ivm_count FROM t UNION ALL SELECT k, _ivm_count FROM (SELECT" in q
    True
    >>> q.split(") AS _ivm_folded ")[1]
    'WHERE _ivm_count > 0 ORDER BY k'
    """
    columns = [*store.keys, *(acc.name for acc in store.accumulators)]
    changed = exp.Subquery(this=change.copy(), alias=exp.TableAlias(this=exp.to_identifier(CHANGE)))
    inputs = exp.union(
        exp.select(*map(exp.column, columns)).from_(exp.to_table(target, dialect=DIALECT)),
        exp.select(*(_overflow_checked(store, c) for c in columns)).from_(changed),
        distinct=False,
    )
    rows = _summed_by_key(store, inputs, types)
    if in_key_order(store):
        rows = rows.order_by(*(exp.column(k) for k in store.keys[:SORTED_KEYS]))
    return rows


def _summed_by_key(store: Store, inputs: exp.Query, types: Types | None) -> exp.Select:
    """The rows of ``inputs`` (keys and accumulators of ``store``) summed by key and folded
    (:func:`folded_columns`), less the groups whose count reaches 0 (a global aggregate
    keeps its one row)."""
    values = folded_columns(store, types)
    folded = exp.select(*(exp.alias_(values[c], c) for c in store.columns)).from_(
        exp.Subquery(this=inputs, alias=exp.TableAlias(this=exp.to_identifier("_ivm_inputs")))
    )
    keys = [exp.column(k) for k in store.keys]
    folded = folded.group_by(*keys) if keys else folded.having(_some_rows())
    if store.single_row:
        return folded
    return (
        exp.select("*")
        .from_(
            exp.Subquery(this=folded, alias=exp.TableAlias(this=exp.to_identifier("_ivm_folded")))
        )
        .where(exp.GT(this=exp.column(COUNT), expression=exp.Literal.number(0)))
    )


def _overflow_checked(store: Store, column: str) -> exp.Expr:
    """``column`` of a change row, failing where it is a sum that is NULL: a change's sum is
    NULL only where it overflowed, and a fold's SUM would skip it."""
    if not any(acc.name == column and acc.kind == "sum" for acc in store.accumulators):
        return exp.column(column)
    overflowed = exp.func("RAISE_ERROR", exp.Literal.string(OVERFLOW))
    return exp.alias_(exp.func("COALESCE", exp.column(column), overflowed), column)


def compaction_statement(store: Store, target: str, types: Types | None = None) -> exp.Merge:
    """The MERGE that folds the logged rows of ``target`` into its stored rows and removes
    them, in one commit: the logged changes summed by key, merged as one change. A stored
    DECIMAL(p, s)'s changes are summed as a DECIMAL(p + 1, s) (at most 37 digits), as their
    sum is the difference of two values of the stored type: Spark's own SUM would give
    DECIMAL(p + 10, s), and adding that to the stored value would round off a digit of its
    scale.

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("k",), (("k", exp.column("k")),), (ROWS,))
    >>> fold = compaction_statement(s, "t", {"_ivm_count": "bigint"}).sql("spark")
    >>> fold[fold.index("USING"):fold.index(" FROM")]
    'USING (SELECT k, SUM(_ivm_count) AS _ivm_count'
    >>> _change_sum("s", {"s": "decimal(28,8)"}).sql("spark")
    'CAST(SUM(s) AS DECIMAL(29, 8)) AS s'
    """
    accumulators = [acc.name for acc in store.accumulators]
    sums = [_change_sum(a, types) for a in accumulators]
    change = (
        exp.select(*(exp.column(k) for k in store.keys), *sums)
        .from_(exp.to_table(target, dialect=DIALECT))
        .where(exp.column(LOGGED))
    )
    if store.keys:
        change = change.group_by(*(exp.column(k) for k in store.keys))
    else:  # a global aggregate: nothing to fold where nothing is logged
        change = change.having(_some_rows())
    return merge_statement(store, target, change, types, compacting=True)


def _change_sum(column: str, types: Types | None) -> exp.Expr:
    """``SUM(column)`` over logged changes of a store column, typed as the change of a
    stored value (see :func:`compaction_statement`)."""
    total = exp.func("SUM", exp.column(column))
    stored = (
        exp.DataType.build(types[column], dialect=DIALECT) if types and column in types else None
    )
    if stored is not None and stored.this == exp.DataType.Type.DECIMAL and stored.expressions:
        precision, scale = (int(p.name) for p in stored.expressions)
        total = exp.Cast(
            this=total, to=exp.DataType.build(f"DECIMAL({min(precision + 1, 37)}, {scale})")
        )
    return exp.alias_(total, column)


def view_query(
    store: Store,
    target: str,
    spelled: tuple[str, ...] | None = None,
    logged: bool = False,
    types: Types | None = None,
) -> exp.Select:
    """The query behind the view: its columns from the store, each row repeated as counted,
    named as ``spelled`` says where given (the query's own spelling of each column).
    ``logged``: the store is logged, and read folded (:func:`folded_query`, with ``types``).

    >>> from ivm.store import ROWS, Store
    >>> s = Store(("a",), (("a", exp.column("a")),), (ROWS,), repeat_rows=True)
    >>> view_query(s, "db.v__ivm_store").sql("spark")
    'SELECT a FROM db.v__ivm_store LATERAL VIEW EXPLODE(SEQUENCE(1, _ivm_count)) copies AS copy'
    >>> view_query(s, "db.v__ivm_store", ("A",)).sql("spark").split(" FROM")[0]
    'SELECT a AS A'
    """
    names = spelled or store.view_columns
    select = exp.select(
        *(
            exp.column(column) if name == column else exp.alias_(exp.column(column), name)
            for column, name in zip(store.view_columns, names, strict=True)
        )
    )
    if logged:
        select = select.from_(
            exp.Subquery(
                this=folded_query(store, target, types),
                alias=exp.TableAlias(this=exp.to_identifier("_ivm_store")),
            )
        )
    else:
        select = select.from_(exp.to_table(target, dialect=DIALECT))
    if store.repeat_rows:
        explode = exp.Explode(this=exp.func("SEQUENCE", exp.Literal.number(1), exp.column(COUNT)))
        select.set(
            "laterals",
            [
                exp.Lateral(
                    this=explode,
                    view=True,
                    alias=exp.TableAlias(
                        this=exp.to_identifier("copies"), columns=[exp.to_identifier("copy")]
                    ),
                )
            ],
        )
    return select


def _properties(properties: Mapping[str, str], delta: bool) -> exp.Properties:
    items = [exp.FileFormatProperty(this=exp.var("DELTA"))] if delta else []
    items += [
        exp.Property(this=exp.Literal.string(k), value=exp.Literal.string(v))
        for k, v in properties.items()
    ]
    return exp.Properties(expressions=items)


def create_table_statement(
    target: str,
    query: exp.Query,
    properties: Mapping[str, str],
    replace: bool = False,
    partitioned_by: tuple[str, ...] = (),
) -> exp.Create:
    """``CREATE [OR REPLACE] TABLE target USING DELTA [PARTITIONED BY (...)]
    TBLPROPERTIES (...) AS query``."""
    items = _properties(properties, delta=True)
    if partitioned_by:
        items.expressions.insert(
            1,
            exp.PartitionedByProperty(
                this=exp.Schema(expressions=[exp.to_identifier(c) for c in partitioned_by])
            ),
        )
    return exp.Create(
        this=exp.to_table(target, dialect=DIALECT),
        kind="TABLE",
        expression=query,
        properties=items,
        replace=replace,
    )


def create_view_statement(
    name: str, query: exp.Query, properties: Mapping[str, str], replace: bool = False
) -> exp.Create:
    """``CREATE [OR REPLACE] VIEW name TBLPROPERTIES (...) AS query``."""
    return exp.Create(
        this=exp.to_table(name, dialect=DIALECT),
        kind="VIEW",
        expression=query,
        properties=_properties(properties, delta=False),
        replace=replace,
    )


def overwrite_statement(target: str, query: exp.Query) -> exp.Insert:
    """``INSERT OVERWRITE TABLE target query``: replace every row in one commit."""
    return exp.Insert(this=exp.to_table(target, dialect=DIALECT), expression=query, overwrite=True)


def replace_where_statement(target: str, query: exp.Query, predicate: exp.Expr) -> exp.Insert:
    """``INSERT INTO target REPLACE WHERE predicate SELECT * FROM (query) WHERE predicate``:
    the rows of ``target`` matching ``predicate`` replaced by those of ``query``, in one commit.

    >>> q = exp.select("k").from_("s")
    >>> replace_where_statement("t", q, exp.column("k").eq(1)).sql("spark")
    'INSERT INTO t REPLACE WHERE k = 1 SELECT * FROM (SELECT k FROM s) AS _ivm_part WHERE k = 1'
    """
    rows = (
        exp.select("*")
        .from_(
            exp.Subquery(
                this=query.copy(), alias=exp.TableAlias(this=exp.to_identifier("_ivm_part"))
            )
        )
        .where(predicate.copy())
    )
    return exp.Insert(
        this=exp.to_table(target, dialect=DIALECT), expression=rows, where=predicate.copy()
    )


def set_properties_statement(target: str, properties: Mapping[str, str]) -> exp.Alter:
    """``ALTER TABLE target SET TBLPROPERTIES (...)``.

    >>> set_properties_statement("db.s", {"k": "1"}).sql("spark")
    "ALTER TABLE db.s SET TBLPROPERTIES ('k'='1')"
    """
    return exp.Alter(
        this=exp.to_table(target, dialect=DIALECT),
        kind="TABLE",
        actions=[
            exp.AlterSet(
                expressions=[
                    exp.Properties(
                        expressions=[
                            exp.Property(this=exp.Literal.string(k), value=exp.Literal.string(v))
                            for k, v in properties.items()
                        ]
                    )
                ]
            )
        ],
    )


def create_database_statement(name: str, comment: str) -> exp.Create:
    """``CREATE DATABASE IF NOT EXISTS name COMMENT 'comment'``.

    >>> create_database_statement("db__ivm", "the tables of db").sql("spark")
    "CREATE DATABASE IF NOT EXISTS db__ivm COMMENT 'the tables of db'"
    """
    return exp.Create(
        this=exp.to_table(name, dialect=DIALECT),
        kind="DATABASE",
        exists=True,
        properties=exp.Properties(
            expressions=[exp.SchemaCommentProperty(this=exp.Literal.string(comment))]
        ),
    )


def drop_database_statement(name: str) -> exp.Drop:
    """``DROP DATABASE IF EXISTS name CASCADE``: the database and every table in it.

    >>> drop_database_statement("db__ivm").sql("spark")
    'DROP DATABASE IF EXISTS db__ivm CASCADE'
    """
    return exp.Drop(
        tables=[exp.to_table(name, dialect=DIALECT)], kind="DATABASE", exists=True, cascade=True
    )


def drop_statement(kind: str, name: str) -> exp.Drop:
    """``DROP <kind> IF EXISTS name``."""
    return exp.Drop(tables=[exp.to_table(name, dialect=DIALECT)], kind=kind, exists=True)
