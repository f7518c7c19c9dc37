"""Run a scenario against materialized views and check each against its oracle.

A scenario (:class:`~ivm.testing.data.Scenario`) creates source tables with rows, then
applies batches of SQL to them; after each batch every view is refreshed and compared with
its oracle, and at the end refreshed FULL and compared again. The oracle of a view is Spark
running the view's own SQL on the current sources; the view is correct when it equals its
oracle: the same columns (names, in order, and Spark types) and, as a multiset, the same
rows, duplicates and NULLs included (:mod:`ivm.runtime.observation.compare`: one Spark job
asks that of all the views at once, and only a wrong view's rows are collected).

Two refinements make "equal" what a view promises:

* **Settings of the CREATE.** A view keeps the session settings that give its definition a
  meaning (:data:`PINNED`: the time zone of ``CAST(ts AS DATE)`` and ``hour(ts)``, ANSI
  mode) from its CREATE, whatever the session that refreshes it uses. So the oracle runs under
  the settings the session had when the views were created, even after a scenario changed them.
* **Float aggregates.** A SUM or AVG of doubles (and the sign of a MIN or MAX of -0.0 and
  0.0) depends on the order Spark visits the rows in; a view recomputing a group may add them
  in another order than the oracle. Only the columns a view declares approximate
  (:class:`Approximate`) are compared within :data:`FLOAT_TOLERANCE`, and only after the exact
  comparison failed. Every other column, and every row count, must match exactly.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from ivm.names import internal_database, quote
from ivm.runtime.commands.statements import sql as ivm_sql
from ivm.runtime.observation.compare import (
    Difference,
    column_difference,
    columns_of,
    difference,
    unequal,
)
from ivm.runtime.spark import settings as spark_settings
from ivm.runtime.spark.connect import Session
from ivm.testing.data import KEYWORDS_RESERVED, Scenario, Source, create_table, insert


@dataclass(frozen=True)
class Rewritten:
    """A view whose definition Spark cannot run as written (``QUALIFY``), with an equivalent
    query that Spark runs as its oracle."""

    definition: str
    oracle: str


@dataclass(frozen=True)
class Approximate:
    """A view whose ``columns`` (None: every float column) are float aggregates: compared
    within :data:`FLOAT_TOLERANCE` (see the module's docstring)."""

    definition: str
    columns: tuple[str, ...] | None = None


View = str | Rewritten | Approximate
"""A view definition: SQL, or SQL with an oracle of its own or with approximate columns."""

FLOAT_TOLERANCE = 1e-12
"""Relative tolerance of approximate columns. Summing n doubles in two orders differs by at
most about n·2⁻⁵³ times the sum of their magnitudes; the drawn doubles never cancel two large
terms (:data:`ivm.testing.data.DOUBLES`), so that is about n·2⁻⁵³ of the sum itself: 1e-12
leaves room for thousands of rows and none for a retraction gone wrong (1e16 + 1.0 − 1e16
giving 0.0)."""

PINNED = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")
"""Session settings a view keeps from its CREATE: its oracle runs under them."""


UNRESERVED = {key: "false" for key in KEYWORDS_RESERVED}
"""The setting of :data:`~ivm.testing.data.KEYWORDS_RESERVED` off."""


def definition(view: View) -> str:
    return view if isinstance(view, str) else view.definition


def oracle(view: View) -> str:
    return view.oracle if isinstance(view, Rewritten) else definition(view)


def pinned_settings(spark: Session) -> dict[str, str]:
    """The current values of the :data:`PINNED` settings."""
    return {key: value for key in PINNED if (value := spark.conf.get(key)) is not None}


@contextmanager
def session_settings(spark: Session, settings: Mapping[str, str]):
    """Run the block under ``settings``; the :data:`PINNED` settings, which the block may
    change too (``SET TIME ZONE``), are put back afterwards."""
    pinned = pinned_settings(spark)
    try:
        with spark_settings.session_settings(spark, dict(settings)):
            yield
    finally:
        for key, value in pinned.items():
            spark.conf.set(key, value)


@contextmanager
def scratch_database(spark: Session, prefix: str = "ivm_check"):
    """A new database, current for the block, dropped with everything in it afterwards, and
    so is its internal database (its views' stores and state tables)."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    before = spark.catalog.currentDatabase()
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    try:
        yield name
    finally:
        spark.sql(f"USE {quote(before)}")
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
        spark.sql(f"DROP DATABASE IF EXISTS {internal_database(name)} CASCADE")


def create_sources(
    spark: Session, sources: Sequence[Source], tables: Mapping[str, list[tuple]]
) -> None:
    """Each of ``sources`` as a Delta table, with its rows in ``tables``."""
    for source in sources:
        spark.sql(create_table(source))
        if tables.get(source.name):
            spark.sql(insert(source, tables[source.name]))


def mismatches(
    spark: Session,
    views: Mapping[str, View],
    created: Mapping[str, str] | None = None,
    few_rows: bool = True,
) -> dict[str, Difference | str]:
    """``{view: its difference from its oracle}`` for every wrong view: how its columns
    differ (names, order, Spark types:
    :func:`~ivm.runtime.observation.compare.column_difference`), or else its rows; the oracles
    run under the settings ``created`` (:func:`pinned_settings` at CREATE). ``few_rows``: the
    sources hold a few rows, so the check runs as ivm's statements over little data do
    (:data:`~ivm.runtime.spark.settings.LITTLE_DATA`): compiling Java code for every oracle and
    running each shuffle as a Spark job of its own took a third of its time.

    The view and the oracle are parsed under ``created`` and run with reserved keywords
    unenforced (:data:`UNRESERVED`), as ivm's statements run: Delta fails a filtered read of
    a column-mapped table with a keyword-named column where Spark enforces them."""
    run = (spark_settings.LITTLE_DATA if few_rows else {}) | UNRESERVED
    with session_settings(spark, created or {}):
        pairs = {}
        found: dict[str, Difference | str | None] = {}
        for name, view in views.items():
            got, want = spark.table(name), spark.sql(oracle(view))
            columns = column_difference(columns_of(got), columns_of(want))
            if columns is None:
                pairs[name] = (got, want)
            else:
                found[name] = columns
        for name in unequal(spark, pairs, run):
            view = views[name]
            tolerant = view.columns if isinstance(view, Approximate) else ()
            found[name] = difference(
                spark, *pairs[name], tolerance=FLOAT_TOLERANCE, tolerant=tolerant, settings=run
            )
    return {name: diff for name, diff in found.items() if diff is not None}


def describe(spark: Session, name: str, view: View, found: Difference | str) -> str:
    """A wrong view: its definition, and how its columns differ from its oracle's or the
    rows the two hold unequally often."""
    shown = found if isinstance(found, str) else found.table("in view", "in query")
    return f"view {name}: {definition(view)}\n    " + shown.replace("\n", "\n    ")


class ScenarioFailed(AssertionError):
    """A view differed from its oracle, or its CREATE or REFRESH failed where its query runs,
    ``when`` (after CREATE, after a batch's refresh, after REFRESH ... FULL): after
    ``batches`` batches, and a full refresh if ``full``; ``shown`` tells how."""

    def __init__(self, when: str, batches: int, full: bool, shown: str):
        super().__init__(f"{when}:\n{shown}")
        self.when, self.batches, self.full, self.shown = when, batches, full, shown


class InvalidScenario(Exception):
    """A statement of the scenario failed, or a view's query fails on its data: the scenario
    says nothing about the views."""


def check_views(
    spark: Session,
    views: Mapping[str, View],
    when: str,
    created: Mapping[str, str] | None = None,
    few_rows: bool = True,
    detail: Callable[[str, View], str] | None = None,
    batches: int = 0,
    full: bool = False,
) -> None:
    """Raise :class:`ScenarioFailed` unless every view equals its oracle (run under the
    settings ``created``), showing each wrong view's differing rows and
    ``detail(name, view)``; ``few_rows``: as for :func:`mismatches`; ``batches`` and
    ``full``: where in a scenario the check is."""
    wrong = mismatches(spark, views, created, few_rows)
    if wrong:
        with session_settings(spark, created or {}):
            message = "\n".join(
                describe(spark, name, views[name], wrong[name])
                + (detail(name, views[name]) if detail else "")
                for name in wrong
            )
        raise ScenarioFailed(
            when, batches, full, f"{len(wrong)} view(s) differ from recomputation:\n{message}"
        )


def create_views(spark: Session, views: Mapping[str, View]) -> list:
    return [
        ivm_sql(spark, f"CREATE MATERIALIZED VIEW {name} AS {definition(view)}")
        for name, view in views.items()
    ]


def refresh_views(
    spark: Session,
    views: Mapping[str, View],
    full: bool = False,
    spelled: Callable[[str], str] = str,
) -> list:
    """Refresh each view, by its name as ``spelled`` writes it."""
    suffix = " FULL" if full else ""
    return [ivm_sql(spark, f"REFRESH MATERIALIZED VIEW {spelled(name)}{suffix}") for name in views]


def run_scenario(
    spark: Session,
    scenario: Scenario,
    sources: Sequence[Source],
    views: Mapping[str, View],
    log: Callable[[str], None] = lambda line: None,
    spelled: Callable[[str], str] = str,
    detail: Callable[[str, View], str] | None = None,
    invalid: Callable[[], object] | None = None,
) -> None:
    """In a scratch database, create the ``sources`` with the scenario's rows and the
    ``views``; after each batch refresh (each view by its name as ``spelled`` writes it) and
    check every view; finally refresh every view FULL and check again. A batch may change
    session settings (``SET TIME ZONE``): the refreshes after it run under them, the oracles
    under those of the CREATE, and the session gets its own back at the end. The views are
    created under the scenario's ``settings``. ``log`` reports each batch's refreshes;
    ``detail`` adds to the description of a wrong view.

    A CREATE, REFRESH or comparison that fails where every view's query runs fails the
    scenario (:class:`ScenarioFailed`). ``invalid``, if given, is called (Hypothesis's
    ``reject``) where a statement of the scenario fails or a query fails on the scenario's
    data; without it, those errors are raised."""
    created = pinned_settings(spark) | scenario.settings

    def maintain(
        step: Callable[[], list | None], when: str, batches: int, full: bool = False
    ) -> list | None:
        try:
            return step()
        except ScenarioFailed:
            raise
        except Exception as error:
            with session_settings(spark, created):
                failing = _failing_query(spark, views)
            if failing is None:
                raise ScenarioFailed(
                    when, batches, full, f"it raised {type(error).__name__}: {error}"
                ) from error
            if invalid is None:
                raise
            invalid()
            raise InvalidScenario(failing) from error

    def apply(statement: str) -> None:
        """Run a change of the sources where Spark does not reserve keywords: under
        ``spark.sql.ansi.enforceReservedKeywords`` Delta fails a DELETE or UPDATE of a table
        with a column named by a reserved keyword, whoever runs it."""
        try:
            with spark_settings.session_settings(spark, UNRESERVED):
                spark.sql(statement)
        except Exception as error:
            if invalid is None:
                raise
            invalid()
            raise InvalidScenario(statement) from error

    with scratch_database(spark), session_settings(spark, created):
        create_sources(spark, sources, scenario.tables)
        maintain(lambda: create_views(spark, views), "at CREATE", 0)
        maintain(
            lambda: check_views(spark, views, "after CREATE", created, detail=detail),
            "after CREATE",
            0,
        )
        for i, batch in enumerate(scenario.batches):
            for statement in batch:
                apply(statement)
            when = f"after the refresh of batch {i} {batch}"
            results = maintain(partial(refresh_views, spark, views, spelled=spelled), when, i + 1)
            log(f"batch {i}: " + "; ".join(str(r) for r in results or ()))
            maintain(
                partial(check_views, spark, views, when, created, detail=detail, batches=i + 1),
                when,
                i + 1,
            )
        batches = len(scenario.batches)
        when = "after REFRESH ... FULL"
        maintain(
            lambda: refresh_views(spark, views, full=True, spelled=spelled), when, batches, True
        )
        maintain(
            lambda: check_views(
                spark, views, when, created, detail=detail, batches=batches, full=True
            ),
            when,
            batches,
            True,
        )


def _failing_query(spark: Session, views: Mapping[str, View]) -> str | None:
    """The first view whose query fails on the current sources, with its error; None if
    every query runs."""
    for name, view in views.items():
        try:
            query = spark.sql(oracle(view))
            with spark_settings.session_settings(spark, UNRESERVED):
                query.collect()
        except Exception as error:
            return f"the query of {name} fails: {str(error).splitlines()[0]}"
    return None
