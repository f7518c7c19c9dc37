"""compile(sql): a view definition → its delta query, store layout and explain.

>>> q = compile("SELECT k, COUNT(*) AS n FROM t GROUP BY k", schema={"t": {"k": "INT"}})
>>> q.store.columns
('k', 'n', '_ivm_count')
>>> print(q.delta_sql)
WITH change_rows AS (
  SELECT
    t.k AS k,
    t._ivm_weight AS _ivm_weight
  FROM delta__t AS t
)
SELECT
  k AS k,
  SUM(_ivm_weight) AS _ivm_count
FROM change_rows
GROUP BY
  k
HAVING
  SUM(_ivm_weight) <> 0
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from functools import cached_property

from sqlglot import exp

from ivm import codegen
from ivm.circuit import explain, to_dot
from ivm.errors import InvalidQuery
from ivm.frontend import lower, parse_query, qualify_query
from ivm.frontend.positions import position_of
from ivm.ir import Relation, reading, scans
from ivm.names import DIALECT, canonical, join, split
from ivm.passes import optimize
from ivm.passes.states import StatePlan, split_lookups, split_states
from ivm.rules import Kind, Maintenance, maintain
from ivm.rules.replace import replaced_operator
from ivm.rules.unchanged import without_unchanged
from ivm.zset import Read


@dataclass(frozen=True)
class CompiledView:
    """A compiled view definition: everything a refresh needs, and how to inspect it.

    ``states``: the view's state tables (:mod:`ivm.passes.states`) by name, each a view of
    its own over the same definition, in the order they are refreshed (before the view)."""

    sql: str
    plan: Relation
    maintenance: Maintenance
    states: tuple[tuple[str, CompiledView], ...] = ()

    @property
    def store(self):
        return self.maintenance.store

    @cached_property
    def sources(self) -> dict[str, tuple[str, ...]]:
        """Each source table and the columns the view reads of it (over all its aliases)."""
        used: dict[str, list[str]] = {}
        for scan in scans(self.plan):
            cols = used.setdefault(scan.table, [])
            cols += [c for c in scan.columns if c not in cols]
        return {table: tuple(cols) for table, cols in used.items()}

    @cached_property
    def tables_read(self) -> tuple[str, ...]:
        """The tables that the view and its state tables read (the state tables among
        them)."""
        tables = list(self.sources)
        for _, state in self.states:
            tables += [t for t in state.sources if t not in tables]
        return tuple(tables)

    @cached_property
    def source_tables(self) -> tuple[str, ...]:
        """The tables the view and its state tables read, less its state tables: those that
        must be sources a refresh can read changes of."""
        states = {table for table, _ in self.states}
        return tuple(t for t in self.tables_read if t not in states)

    @cached_property
    def delta_reads(self) -> dict[str, frozenset[Read]]:
        """The reads of each source that the delta query makes (its change, snapshots)."""
        reads: dict[str, set[Read]] = {}
        for scan in scans(self.maintenance.delta):
            reads.setdefault(scan.table, set()).add(scan.read)
        return {table: frozenset(kinds) for table, kinds in reads.items()}

    @property
    def delta_query(self) -> exp.Query:
        """Per affected store key, the change of every accumulator (see :mod:`ivm.store`)."""
        return codegen.to_select(self.maintenance.delta)

    @property
    def full_query(self) -> exp.Query:
        """Every store row, computed from the sources as of the version being consumed."""
        return codegen.to_select(reading(self.maintenance.full, Read.AFTER))

    @property
    def delta_sql(self) -> str:
        return codegen.to_sql(self.maintenance.delta)

    @property
    def full_sql(self) -> str:
        return codegen.to_sql(reading(self.maintenance.full, Read.AFTER))

    def merge_sql(self, target: str, types: Mapping | None = None) -> str:
        """The MERGE folding the delta query's rows into the store ``target``."""
        statement = codegen.merge_statement(self.store, target, self.delta_query, types)
        return statement.sql(DIALECT, pretty=True)

    def view_sql(self, target: str) -> str:
        """The query the catalog view runs over the store ``target``."""
        return codegen.view_query(self.store, target).sql(DIALECT)

    @property
    def semantics(self) -> str | None:
        """What the view equals, where that is not a recomputation of its query (lookup
        joins); None for a view that equals its query after every refresh."""
        if not any(s.maintenance.rule.kind is Kind.LOOKUP for _, s in self.states):
            return None
        return LOOKUP_SEMANTICS

    def inserting(self) -> CompiledView | None:
        """This view as refreshed from changes that insert rows only, by the rules for them
        (:mod:`ivm.rules.append`); None where they do not apply."""
        appended = self.maintenance.inserts_only
        if appended is None:
            return None
        return replace(self, maintenance=replace(self.maintenance, delta=appended))

    def changed_only(self, changed: Collection[str]) -> CompiledView:
        """This view as refreshed from a change of the sources ``changed`` alone: its delta
        query without the terms that read the others' (empty) change
        (:mod:`ivm.rules.unchanged`)."""
        unchanged = [table for table in self.delta_reads if table not in changed]
        delta = without_unchanged(self.maintenance.delta, unchanged)
        if delta is self.maintenance.delta:  # no term dropped: the same plan, not a copy
            return self
        return replace(self, maintenance=replace(self.maintenance, delta=delta))

    def state(self, table: str) -> CompiledView:
        """The state table ``table`` of this view."""
        return dict(self.states)[table]

    def explain(self) -> str:
        """Each state table's circuit, then the view's."""
        parts = [
            f"state table {table} (a hidden view, refreshed before the view):\n"
            + _indented(state.explain())
            for table, state in self.states
        ]
        names = frozenset(table for table, _ in self.states)
        view = explain(self.plan, self.maintenance, names)
        semantics = [f"semantics: {self.semantics}"] if self.semantics else []
        return "\n".join([*semantics, *parts, f"view:\n{_indented(view)}"]) if parts else view

    def to_dot(self) -> str:
        """The delta circuit in Graphviz's DOT language (the view's; a state table's is the
        circuit of its own view)."""
        return to_dot(self.plan, self.maintenance)


LOOKUP_SEMANTICS = (
    "a lookup join (FOR SYSTEM_TIME AS OF): the view does not equal a recomputation of its "
    "query. Each fact row is joined with the dimension as of the refresh that first consumed "
    "it (rows with its values present since, without a break); later changes of the "
    "dimension leave it as it is. A full refresh enriches every fact row anew with the "
    "dimension as it is then."
)


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


SchemaLookup = Callable[[exp.Expr, str, "str | None"], "tuple[Mapping, str | None]"]
"""``(query, sql, default_db) → (schema, default_db)``: the schema of the tables a parsed
query reads, looked up where they are kept (the runtime's: Spark's catalog)."""


DEFAULT_NAME = "view"
"""The name of a view compiled without one (its state tables are named after it)."""


def compile(
    sql: str,
    schema: Mapping | SchemaLookup,
    *,
    default_db: str | None = None,
    name: str | None = None,
    legacy_layout: bool = False,
) -> CompiledView:
    """Compile a view's SELECT into its delta query and store layout.

    Names are resolved against ``schema``: ``{table: {column: type}}``, optionally nested by
    database, or a :data:`SchemaLookup` that gives it; a name without a database is in
    ``default_db`` (or the one the lookup gives). ``name``: the view's, after which its state
    tables are named, in the internal database of its database
    (:func:`ivm.names.internal_database`), or beside it with ``legacy_layout`` (a view
    created before ivm kept its tables apart, as the runtime finds in the catalog). Raises
    :class:`~ivm.errors.IvmError` subclasses for bad or unsupported SQL.
    """
    query = parse_query(sql)
    if callable(schema):
        schema, default_db = schema(query, sql, default_db)
    qualified = qualify_query(query, sql, schema, default_db)
    view = split(name or DEFAULT_NAME)
    if len(view) == 1 and default_db:
        view = [default_db, *view]
    # a lookup join's state is split off first: the passes would move the view's filters
    # into it, and it must keep every fact row as it enriched it
    named = canonical(join(view))
    plan, lookups = split_lookups(lower(qualified, sql), named, legacy_layout)
    optimized = optimize(plan)
    plan, windows = split_states(
        optimized,
        named,
        first=len(lookups) + 1,
        legacy_layout=legacy_layout,
        kept=replaced_operator(optimized),
    )
    states = [StatePlan(s.table, optimize(s.plan)) for s in lookups] + list(windows)
    compiled = CompiledView(
        sql,
        plan,
        maintain(plan, named),
        tuple(
            (state.table, CompiledView(sql, state.plan, maintain(state.plan, state.table)))
            for state in states
        ),
    )
    _refuse_unstorable_names(compiled, qualified, sql)
    return compiled


DELTA_REFUSED = " ,;{}()\n\t="
"""The characters Delta refuses in the column names of a table that does not map its columns
by name (``delta.columnMapping.mode``), as a view's store and state tables do not."""
_CHARACTER_NAMES = {" ": "spaces", "\n": "newlines", "\t": "tabs"}


def _refuse_unstorable_names(compiled: CompiledView, query: exp.Expr, sql: str) -> None:
    """Raise :class:`~ivm.errors.InvalidQuery` for a column of the view's store or of a state
    table whose name holds a character of :data:`DELTA_REFUSED`, at the alias or column of
    ``query`` (of the text ``sql``) that names it, before Delta refuses the table."""
    for store in [compiled.store, *(state.store for _, state in compiled.states)]:
        for name in store.columns:
            refused = [_CHARACTER_NAMES.get(c, repr(c)) for c in DELTA_REFUSED if c in name]
            if not refused:
                continue
            naming = next(
                (n for n in query.find_all(exp.Alias, exp.Column) if n.alias_or_name == name),
                None,
            )
            suggestion = "_".join(re.split(f"[{re.escape(DELTA_REFUSED)}]+", name)).strip("_")
            raise InvalidQuery(
                f"column name `{name}` cannot be stored: Delta refuses "
                f"{' and '.join(refused)} in column names",
                sql,
                position_of(naming),
                hint=f"rename it, e.g. AS {suggestion or 'c'} (Delta refuses spaces, tabs, "
                "newlines and ,;{}()= in the column names of a table without column mapping, "
                "as a view's store is)",
            )
