"""``verify``: is a materialized view equal to its query, exactly at the source versions it
reflects?

A view's store records, with every write, the version of each source it reflects (see
:mod:`ivm.runtime.catalog.history`). Delta keeps old versions readable, so the view's own SQL can be
run on each source as of that version, by time travel, while the sources move on:

    view at store version s   =   query(source₁ @ v₁, …, sourceₙ @ vₙ)

where ``v₁ … vₙ`` is the record of the store's latest refresh. The left side is what users
read (the catalog view over the store, each row repeated as counted: the catalog view must be
the one ivm wrote, or the view differs, whatever its store holds); the right side is Spark
running the definition as written, each table reference replaced by that table's snapshot,
under the session settings pinned at CREATE (time zone, ANSI mode). Nothing of ivm's
compiled circuit takes part in the right side. Equal means the same columns (names, in
order, and Spark types) and the same rows as multisets. Cost: one full evaluation of the
query, and a shuffle of the view and the query's result together
(:mod:`ivm.runtime.observation.compare`).

A view that reads a state table of its own (:mod:`ivm.passes.states`) reflects the versions
the state table reflected at the version it read; the state table is not verified apart from
the view (a wrong one makes the view wrong). A view refreshed partition by partition reflects
the same versions in every partition.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from ivm.compiler import CompiledView
from ivm.errors import StateError
from ivm.frontend.parse import canonical_name, parse_query, referenced_tables, replace_tables
from ivm.names import DIALECT
from ivm.runtime.catalog.definition import (
    compile_definition,
    resolution_database,
    settings,
    view_properties,
)
from ivm.runtime.catalog.history import RefreshRecord, latest_record
from ivm.runtime.catalog.properties import DEFINITION, STATE_OF
from ivm.runtime.catalog.tables import qualified_name, store_name, store_properties
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.observation.compare import Difference, column_difference, columns_of, difference
from ivm.runtime.refresh.commit import catalog_view_problem, store_view_query
from ivm.runtime.refresh.gather import reshaped
from ivm.runtime.refresh.sources import latest_sources, snapshot, upstream
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.settings import session_settings

FLOAT_TOLERANCE = 1e-9
"""The default relative tolerance of float columns (see :mod:`ivm.runtime.observation.compare`;
``ivm verify --help`` states it)."""

SNAPSHOT = "_ivm_verify_{}_{}"
"""Temporary views of the sources and the store at the versions compared, by a verification's
id (two may run at once in one session) and what they hold."""


@dataclass(frozen=True)
class Verification:
    """The verdict of :func:`verify` on one view."""

    view: str
    sources: dict[str, int]  # the source versions the view reflects
    store_version: int
    rows: int  # the view's rows
    difference: Difference | None  # None: equal
    schema_difference: str | None = None  # how the columns differ; None: they do not
    catalog_view: str | None = None  # what is wrong with what users read; None: nothing

    @property
    def equal(self) -> bool:
        return self.difference is None and self.schema_difference is None and not self.catalog_view

    def __str__(self) -> str:
        at = ", ".join(f"{t} v{v}" for t, v in self.sources.items())
        where = f"its query at sources {at} (store version {self.store_version})"
        if self.catalog_view is not None:
            return (
                f"DIFFERENT: users do not read {self.view} as refreshed: {self.catalog_view} "
                f"(REFRESH MATERIALIZED VIEW {self.view} writes it anew)"
            )
        if self.schema_difference is not None:
            return f"DIFFERENT: {self.view} differs from {where}: {self.schema_difference}"
        if self.difference is None:
            return f"ok: {self.view} equals {where}; {self.rows} rows"
        total = self.difference.total
        return (
            f"DIFFERENT: {self.view} differs from {where}: {total} distinct row"
            f"{'s' * (total > 1)} occur a different number of times\n"
            + _indent(self.difference.table("in view", "in query"))
        )


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def verify(
    spark: Session, view: str, *, shown: int = 10, float_tolerance: float = FLOAT_TOLERANCE
) -> Verification:
    """Compare the materialized view ``view`` with its query run on its sources as of the
    versions the view reflects (see the module's docstring); ``shown``: how many differing
    rows the verdict holds; ``float_tolerance``: the relative difference allowed in float
    columns where the exact comparison fails (0: none)."""
    name = qualified_name(spark, view)
    properties = view_properties(spark, name, "VERIFY")
    compiled = _verifiable_definition(spark, name, properties)
    log = DeltaLogReader(spark, store_name(name))
    store_version = log.version()
    store_schema = spark.table(store_name(name)).schema
    if (other_columns := reshaped(compiled, properties, store_schema)) is not None:
        raise StateError(  # the definition's columns are not in the versions it reflects
            f"{name} cannot be verified against its query: {other_columns}",
            hint=f"REFRESH MATERIALIZED VIEW {name} recomputes it with its definition's "
            "columns; then verify it",
        )
    catalog_view = catalog_view_problem(spark, name, compiled, properties, store_schema)
    sources, table_ids = _reflected(spark, latest_record(log)[1])
    database = resolution_database(name, properties)
    _check_sources(spark, name, _read_by(properties[DEFINITION], database), sources, table_ids)
    rows, found, schema_difference = _compare_at_versions(
        spark,
        name,
        compiled,
        properties,
        database,
        sources,
        store_version,
        shown=shown,
        float_tolerance=float_tolerance,
    )
    return Verification(name, sources, store_version, rows, found, schema_difference, catalog_view)


def _verifiable_definition(spark: Session, name: str, properties: dict[str, str]) -> CompiledView:
    """The compiled definition of the view ``name`` (its store's ``properties``); raises
    :class:`StateError` for a state table, or a view whose semantics its query alone does
    not give."""
    if STATE_OF in properties:
        raise StateError(
            f"{name} is a state table of the materialized view {properties[STATE_OF]}",
            hint=f"verify {properties[STATE_OF]}",
        )
    compiled = compile_definition(spark, name, properties)
    if compiled.semantics is not None:
        raise StateError(
            f"{name} cannot be verified against its query: {compiled.semantics}",
            hint="check it against the definition of its semantics (docs/sql.md, "
            "Lookup joins), or refresh it FULL to enrich every row anew",
        )
    return compiled


def _compare_at_versions(
    spark: Session,
    name: str,
    compiled: CompiledView,
    properties: dict[str, str],
    database: str,
    sources: dict[str, int],
    store_version: int,
    *,
    shown: int,
    float_tolerance: float,
) -> tuple[int, Difference | None, str | None]:
    """Compare the view ``name`` at ``store_version`` with its query (its definition, names
    resolved in ``database``) on its ``sources`` as of their versions, each read through a
    temporary view: the view's rows, how they differ and how the columns differ (see
    :func:`_compare`)."""
    views, run = [], uuid.uuid4().hex[:8]
    snapshots = {table: SNAPSHOT.format(run, i) for i, table in enumerate(sources)}
    try:
        for table, version in sources.items():
            columns = spark.table(table).columns
            (
                snapshot(
                    spark, table, columns, version, upstream(spark, table)
                ).createOrReplaceTempView(snapshots[table])
            )
            views.append(snapshots[table])
        store = SNAPSHOT.format(run, "store")
        (
            spark.read.format("delta")
            .option("versionAsOf", store_version)
            .table(store_name(name))
            .createOrReplaceTempView(store)
        )
        views.append(store)
        got = spark.sql(store_view_query(spark, name, compiled, properties, store).sql(DIALECT))
        query = replace_tables(properties[DEFINITION], database, snapshots)
        return _compare(spark, got, query, properties, shown, float_tolerance)
    except PySparkException as error:
        raise StateError(
            f"cannot read {name} or its sources as of the versions it reflects "
            f"({', '.join(f'{t} v{v}' for t, v in sources.items())}): "
            f"{str(error).splitlines()[0]}",
            hint="a VACUUM may have removed them: refresh the view, then verify it",
        ) from None
    finally:
        for temporary in views:
            spark.catalog.dropTempView(temporary)


def _compare(
    spark: Session,
    got: DataFrame,
    query: str,
    properties: dict[str, str],
    shown: int,
    float_tolerance: float,
) -> tuple[int, Difference | None, str | None]:
    """Run ``query`` under the settings the view's ``properties`` pin and compare the view's
    rows (``got``) with its result: how many rows the view has, how they differ (None:
    equal, or not compared) and how the columns differ (None: they do not)."""
    with session_settings(spark, settings(properties) or {}):
        want = spark.sql(query)
        schema_difference = column_difference(columns_of(got), columns_of(want))
        found = (
            None
            if schema_difference
            else difference(
                spark,
                got,
                want,
                shown=shown,
                tolerance=float_tolerance,
                settings=settings(properties),
            )
        )
        rows = got.count()
    return rows, found, schema_difference


def _reflected(spark: Session, record: RefreshRecord) -> tuple[dict[str, int], dict[str, str]]:
    """The source versions and Delta table ids a store reflects by its ``record``; where it
    read a state table of its view, those the state table reflects at the version read."""
    versions, ids = {}, {}
    recorded_ids = record.table_ids or {}
    for table, version in record.sources.items():
        if STATE_OF in (store_properties(spark, table) or {}):
            state = latest_record(DeltaLogReader(spark, store_name(table)), upto=version)[1]
            more_versions, more_ids = _reflected(spark, state)
            versions |= more_versions
            ids |= more_ids
        else:
            versions[table] = version
            ids |= {table: recorded_ids[table]} if table in recorded_ids else {}
    return versions, ids


def _read_by(definition: str, database: str) -> list[str]:
    """The canonical names of the tables ``definition`` reads (not its CTEs)."""
    return list(
        dict.fromkeys(
            canonical_name(t, database) for t in referenced_tables(parse_query(definition))
        )
    )


def _check_sources(
    spark: Session,
    view: str,
    tables: list[str],
    reflected: dict[str, int],
    table_ids: dict[str, str],
) -> None:
    """Raise :class:`StateError` unless the store records a version of every table its
    definition reads, and each is still the table it recorded."""
    missing = [t for t in tables if t not in reflected]
    if missing:
        raise StateError(
            f"the store of {view} records no version of {', '.join(missing)}",
            hint=f"refresh it: REFRESH MATERIALIZED VIEW {view} FULL",
        )
    ids = latest_sources(spark, tables)[1]
    replaced = [t for t in tables if table_ids.get(t) not in (None, ids[t])]
    if replaced:
        raise StateError(
            f"{', '.join(replaced)} was dropped and created again since {view} "
            f"was last refreshed: the versions the view reflects are gone with "
            f"the table",
            hint=f"refresh it (REFRESH MATERIALIZED VIEW {view}), then verify it",
        )
