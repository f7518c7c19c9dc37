"""``check_view``: property-test a view definition before it is deployed.

Hypothesis draws sources for the tables the view reads, from their schemas (values of each
type that break naive maintenance, the view's own literals, NULLs, repeated rows, colliding
keys: :mod:`ivm.testing.data`) and batches of changes (inserts, deletes, updates that move
rows between groups, rows that live within one batch, a table dropped and created again, a
switch of the session time zone). In a scratch database it creates the sources and the view,
refreshes after every batch and compares the view with Spark running its SQL
(:mod:`ivm.testing.scenario`). On a difference it shrinks the scenario to a minimal one and
raises :class:`ViewCheckFailed` with a reproduction: a SQL script that ``ivm sql -f`` runs
in an empty database and that ends by showing the differing rows.

Tables the view reads are created under their own names without a database (``db.orders``
becomes ``orders``; two tables of one name in two databases become ``db_orders``), and the
view's SQL reads them so. Cost: each example creates the sources and the view and refreshes
it 1-4 times, about 5-20 seconds on a laptop.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as seeded
from hypothesis.errors import Unsatisfiable, UnsatisfiedAssumption
from pyspark.errors import PySparkException

from ivm.compiler import compile
from ivm.errors import CatalogError, IvmError
from ivm.frontend.parse import canonical_name, parse_query, referenced_tables, replace_tables
from ivm.frontend.statements import CreateView, parse_statement
from ivm.names import join, split
from ivm.runtime.catalog.tables import current_database
from ivm.runtime.spark.connect import Session
from ivm.testing.data import Scenario, Source, create_table, insert, scenarios, sources
from ivm.testing.scenario import (
    Approximate,
    InvalidScenario,
    ScenarioFailed,
    pinned_settings,
    run_scenario,
)

DEFAULT_EXAMPLES = 25
"""Scenarios drawn by default (``ivm check --help`` states it)."""

SHRINK_SECONDS = 120.0
"""How long a failing scenario is shrunk (:func:`shrink`): each attempt runs Spark for
seconds."""


class ViewCheckFailed(AssertionError):
    """A view differed from its query in a drawn scenario; ``reproduction`` is a SQL script
    that shows the difference."""

    def __init__(self, message: str, reproduction: str):
        super().__init__(message)
        self.reproduction = reproduction


@dataclass(frozen=True)
class Checked:
    """What :func:`check_view` checked: the view's name, its SQL over the scratch tables, the
    sources drawn for, how many scenarios ran through (others were drawn and dropped: a
    statement or the query failed on their rows), and the seed that draws them again."""

    view: str
    sql: str
    sources: tuple[Source, ...]
    examples: int
    seed: int

    def __str__(self) -> str:
        scenarios = "scenario" if self.examples == 1 else "scenarios"
        return (
            f"ok: {self.view} equalled its query after every refresh in {self.examples} "
            f"drawn {scenarios} over {', '.join(s.name for s in self.sources)} "
            f"(seed {self.seed})"
        )


def check_view(
    spark: Session,
    sql: str,
    *,
    schema: Mapping | None = None,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = None,
    name: str | None = None,
    shrink_seconds: float = SHRINK_SECONDS,
    progress: Callable[[str], None] | None = None,
) -> Checked:
    """Check the view ``sql`` (a SELECT, or ``CREATE MATERIALIZED VIEW name AS SELECT``)
    over ``examples`` drawn scenarios (see the module's docstring); raise
    :class:`ViewCheckFailed` with a reproduction on the first difference, shrunk.

    ``schema``: ``{table: {column: type}}`` (or nested by database) of the tables the view
    reads; without it they are read from ``spark``'s catalog. ``seed``: draws the same
    scenarios again (default: a new seed, which the result and a failure name). ``name``:
    the view's (default: the CREATE's, else ``checked_view``). ``shrink_seconds``: how long
    a failing scenario is made smaller; after that, the smallest found is reported.
    ``progress``, if given, is called with a line saying where the check is: as an example
    starts and after each of its batches' refresh (``example 3/25: batch 2/4 refreshed``),
    and so for each attempt of the shrinking."""
    statement = parse_statement(sql)
    if isinstance(statement, CreateView):
        query, name = statement.query.strip(), name or split(statement.name)[-1]
    else:
        query = sql.strip().rstrip(";")
    name = name or "checked_view"
    database = _database(spark, schema)
    tables = _source_tables(spark, query, schema, database)
    flat = _flat_names(tables)
    view_sql = replace_tables(query, database, flat)
    compiled = compile(view_sql, {flat[t]: dict(columns) for t, columns in tables.items()})
    if compiled.semantics is not None:  # what it equals is no query Spark runs
        raise IvmError(
            f"check_view compares a view with its query, which this view does not "
            f"equal: {compiled.semantics}",
            hint="check a lookup view against the definition of its semantics "
            "(docs/sql.md, Lookup joins)",
        )
    drawn = sources({flat[t]: columns for t, columns in tables.items()}, view_sql)
    seed = random.randrange(2**32) if seed is None else seed
    views = {name: Approximate(view_sql)}
    runs = []
    report = progress or (lambda line: None)

    def run(scenario: Scenario, invalid=reject, doing: str = "") -> None:
        doing = doing or f"example {len(runs) + 1}/{examples}"
        refreshed = itertools.count(1)
        report(f"{doing}: creating the sources and the view")
        run_scenario(
            spark,
            scenario,
            drawn,
            views,
            invalid=invalid,
            log=lambda line: report(
                f"{doing}: batch {next(refreshed)}/{len(scenario.batches)} refreshed"
            ),
        )
        runs.append(scenario)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
        print_blob=False,
        phases=(Phase.generate,),
    )
    @seeded(seed)
    @given(scenario=scenarios(drawn, min_batches=1))
    def example(scenario: Scenario) -> None:
        try:
            run(scenario)
        except ScenarioFailed as failure:
            raise _Found(scenario, failure) from None

    try:
        example()
    except _Found as found:
        started, attempts = time.monotonic(), itertools.count(1)

        def attempt(candidate: Scenario, invalid) -> None:
            run(
                candidate,
                invalid,
                f"shrinking, attempt {next(attempts)} ("
                f"{time.monotonic() - started:.0f}/{shrink_seconds:.0f} s, {_size(candidate)})",
            )

        scenario, failure = shrink(found.scenario, found.failure, attempt, shrink_seconds)
        script = reproduction(
            name,
            view_sql,
            drawn,
            scenario,
            failure,
            pinned_settings(spark) | scenario.settings,
            seed,
        )
        raise ViewCheckFailed(
            f"{name} differs from its query {failure.when} in a scenario shrunk to "
            f"{_size(scenario)} (seed {seed}):\n{failure.shown}\nA reproduction (run it with "
            f"`ivm sql -f FILE` in an empty database):\n\n{script}",
            script,
        ) from None
    except Unsatisfiable:
        raise IvmError(
            f"no drawn scenario could run: every one failed a statement on the "
            f"sources, or the query of {name} failed on their rows",
            hint="run the query on sample data: an error there (a division by "
            "zero, an overflow in ANSI mode) fails every scenario",
        ) from None
    return Checked(name, view_sql, drawn, len(runs), seed)


class _Found(Exception):
    """A drawn scenario in which the view differs (raised past Hypothesis, which would
    otherwise shrink it with a Spark run per attempt for many minutes)."""

    def __init__(self, scenario: Scenario, failure: ScenarioFailed):
        super().__init__(str(failure))
        self.scenario, self.failure = scenario, failure


def shrink(
    scenario: Scenario, failure: ScenarioFailed, run, seconds: float
) -> tuple[Scenario, ScenarioFailed]:
    """A smaller scenario that fails still, found greedily within ``seconds``: the batches
    after the failing refresh go, then each batch, each statement and each initial row that
    the failure does not need, and the settings of the CREATE; ``run`` raises
    :class:`ScenarioFailed` where the view differs."""
    deadline = time.monotonic() + seconds
    scenario = _up_to(scenario, failure)
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for candidate in _smaller(scenario):
            if time.monotonic() >= deadline:
                break
            try:
                run(candidate, invalid=_invalid)
            except ScenarioFailed as smaller:
                scenario, failure, progress = _up_to(candidate, smaller), smaller, True
                break
            except (InvalidScenario, UnsatisfiedAssumption):
                pass
    return scenario, failure


def _invalid() -> None:
    """A candidate whose statements fail (a DROP TABLE kept, its CREATE TABLE removed)."""
    raise InvalidScenario("a statement of a smaller scenario failed")


def _up_to(scenario: Scenario, failure: ScenarioFailed) -> Scenario:
    """``scenario`` without the batches after the one whose refresh failed."""
    return replace(scenario, batches=scenario.batches[: failure.batches])


def _smaller(scenario: Scenario):
    """Scenarios smaller than ``scenario``: without a batch, without some of a table's
    initial rows or of a batch's statements (:func:`_without_parts`), or with the CREATE under
    the session's own settings."""
    batches = scenario.batches
    for fewer in _without_parts(batches):
        yield replace(scenario, batches=fewer)
    for table, rows in scenario.tables.items():
        for fewer in _without_parts(rows):
            yield replace(scenario, tables={**scenario.tables, table: fewer})
    for i, batch in enumerate(batches):
        for fewer in _without_parts(batch):
            yield replace(scenario, batches=[*batches[:i], fewer, *batches[i + 1 :]])
    if scenario.settings:
        yield replace(scenario, settings={})


def _without_parts(items: list) -> Iterator[list]:
    """``items`` without one run of consecutive items: the halves first, then quarters, down
    to single items (so a long list shrinks in few attempts, as in delta debugging).

    >>> list(_without_parts([1, 2, 3]))
    [[3], [1, 2], [2, 3], [1, 3]]
    """
    size, removed = max(1, len(items) // 2 + len(items) % 2), set()
    while True:
        for start in range(0, len(items), size):
            span = (start, min(start + size, len(items)))
            if span not in removed:
                removed.add(span)
                yield items[: span[0]] + items[span[1] :]
        if size == 1:
            return
        size = max(1, size // 2)


def _size(scenario: Scenario) -> str:
    """
    >>> _size(Scenario({"t": [(1,), (2,)]}, [["DELETE FROM t"]]))
    '2 initial rows and 1 statement'
    """
    rows = sum(len(r) for r in scenario.tables.values())
    statements = sum(len(b) for b in scenario.batches)
    return (
        f"{rows} initial row{'s' * (rows != 1)} and {statements} statement{'s' * (statements != 1)}"
    )


def _source_tables(
    spark: Session, query: str, schema: Mapping | None, database: str
) -> dict[str, tuple[tuple[str, str], ...]]:
    """``{canonical name: ((column, type), …)}`` of the tables ``query`` reads (those
    without a database in ``database``), from ``schema`` or the catalog."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    for table in referenced_tables(parse_query(query)):
        key = canonical_name(table, database)
        if key in found:
            continue
        if schema is not None:
            columns = _in_schema(schema, table.db, table.name)
        else:
            try:
                fields = spark.table(key).schema.fields
            except PySparkException:
                raise CatalogError(
                    f"table or view not found: {key}",
                    hint="create the source table first, or give its schema with --schema",
                ) from None
            columns = {
                f.name: f.dataType.simpleString() + ("" if f.nullable else " NOT NULL")
                for f in fields
            }
        found[key] = tuple(columns.items())
    return found


def _database(spark: Session, schema: Mapping | None) -> str:
    """Where names without a database are: ``default`` in a schema mapping, else the
    session's current database."""
    return "default" if schema is not None else current_database(spark)


def _in_schema(schema: Mapping, db: str, table: str) -> Mapping[str, str]:
    """The columns of ``db.table`` (``db`` empty: the default) in a flat or nested
    ``schema``, names compared in any case."""

    def get(mapping: Mapping, key: str):
        return next((v for k, v in mapping.items() if k.lower() == key.lower()), None)

    nested = all(
        isinstance(v, Mapping) and all(isinstance(c, Mapping) for c in v.values())
        for v in schema.values()
    )
    found = get(get(schema, db or "default") or {}, table) if nested else get(schema, table)
    if not found:
        raise CatalogError(
            f"table not found in the schema: {join([p for p in (db, table) if p])}",
            hint="add it to the schema's JSON: {table: {column: type}}",
        )
    return found


def _flat_names(tables: Mapping[str, object]) -> dict[str, str]:
    """A name without a database for each table: its own, or ``db_name`` where two
    databases hold a table of that name.

    >>> _flat_names({"shop.orders": (), "old.orders": (), "shop.`order`": ()})
    {'shop.orders': 'shop_orders', 'old.orders': 'old_orders', 'shop.`order`': '`order`'}
    """
    names = {key: split(key)[-1] for key in tables}
    clashing = {n for n in names.values() if list(names.values()).count(n) > 1}
    return {
        key: join(["_".join(split(key))]) if name in clashing else join([name])
        for key, name in names.items()
    }


def reproduction(
    name: str,
    view_sql: str,
    drawn,
    scenario: Scenario,
    failure,
    created: Mapping[str, str],
    seed: int,
) -> str:
    """A SQL script that replays ``scenario`` up to the ``failure`` and shows the rows the
    view and its query hold unequally often (``EXCEPT ALL`` both ways)."""
    lines = [
        f"-- {name} differs from its query {failure.when} (ivm check, seed {seed}).",
        "-- Run in an empty database: ivm sql -f FILE",
        "",
    ]
    lines += [f"SET {key} = {value};" for key, value in created.items()]
    for source in drawn:
        lines.append(create_table(source) + ";")
        if scenario.tables.get(source.name):
            lines.append(insert(source, scenario.tables[source.name]) + ";")
    lines.append(f"CREATE MATERIALIZED VIEW {name} AS\n{view_sql};")
    for i, batch in enumerate(scenario.batches[: failure.batches]):
        lines += ["", f"-- batch {i}"] + [f"{statement};" for statement in batch]
        lines.append(f"REFRESH MATERIALIZED VIEW {name};")
    if failure.full:
        lines.append(f"REFRESH MATERIALIZED VIEW {name} FULL;")
    lines += ["", "-- the query runs under the settings of the view's CREATE"]
    lines += [f"SET {key} = {value};" for key, value in created.items()]
    lines += [
        "",
        "-- rows in the view, not in its query:",
        f"SELECT * FROM {name} EXCEPT ALL ({view_sql});",
        "-- rows in its query, not in the view:",
        f"({view_sql}) EXCEPT ALL SELECT * FROM {name};",
    ]
    found = "\n".join(f"--   {line}" for line in failure.shown.splitlines())
    lines += ["", f"-- as found:\n{found}"]
    return "\n".join(lines) + "\n"
