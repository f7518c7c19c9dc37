"""What a view's definition means, fixed at CREATE: where its names resolve, and the session
settings that give it its meaning.

Spark does this for a persistent view: CREATE VIEW records the current database and the
session's SQL settings (the time zone and ANSI mode always, others when the session set
them), and the view's text is analysed under them ever after. A materialized view keeps the
same in its store's properties: the database current at CREATE (``ivm.database``), in which
every later compile of the definition resolves names without a database — a refresh from a
session using another database, ``REFRESH ALL``, a view that reads this one, ``DESCRIBE``, a
generated job — and the settings of :data:`PINNED` (``ivm.settings``), under which every
refresh runs. CREATE OR REPLACE records them anew.

>>> is_pinned("spark.sql.session.timeZone"), is_pinned("spark.sql.legacy.sizeOfNull")
(True, True)
>>> is_pinned("spark.sql.shuffle.partitions")
False
>>> resolution_database("a.v", {}), resolution_database("a.v", {DATABASE: "b"})
('a', 'b')
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from pyspark.errors import PySparkException
from sqlglot import exp

from ivm.compiler import CompiledView, compile
from ivm.errors import CatalogError, ViewNotFound
from ivm.names import DIALECT
from ivm.runtime.catalog.properties import COLUMNS, DATABASE, DEFINITION, SETTINGS, STATE_OF
from ivm.runtime.catalog.tables import (
    catalog_kind,
    catalog_schema,
    catalog_view,
    current_database,
    has_legacy_layout,
    qualified_name,
    store_name,
    store_properties,
)
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.spark.connect import Session, settings_of

PINNED = (
    "spark.sql.session.timeZone",
    "spark.sql.ansi.enabled",
    "spark.sql.decimalOperations.allowPrecisionLoss",
    "spark.sql.legacy.timeParserPolicy",
    "spark.sql.parser.escapedStringLiterals",
    "spark.sql.storeAssignmentPolicy",
    "spark.sql.timestampType",
    "spark.sql.caseSensitive",
    "spark.sql.mapKeyDedupPolicy",
)
"""Settings that change what a query returns; their effective values are pinned."""

PINNED_PREFIXES = ("spark.sql.legacy.",)
"""Settings pinned when the session set them: Spark's legacy behaviours, each of which
changes a query's result."""


def is_pinned(key: str) -> bool:
    return key in PINNED or key.startswith(PINNED_PREFIXES)


def pinned_settings(spark: Session) -> dict[str, str]:
    """The settings of ``spark`` that give a definition its meaning: the effective value of
    each of :data:`PINNED` this Spark knows, and every setting of :data:`PINNED_PREFIXES`
    the session set."""
    settings = {}
    for key in PINNED:
        try:
            settings[key] = spark.conf.get(key)
        except PySparkException:  # a setting this version of Spark does not have
            pass
    settings |= {k: v for k, v in settings_of(spark).items() if k.startswith(PINNED_PREFIXES)}
    return dict(sorted(settings.items()))


def pin(spark: Session) -> dict[str, str]:
    """The store properties that fix the meaning of a definition created in ``spark``."""
    return {
        DATABASE: current_database(spark),
        SETTINGS: json.dumps(pinned_settings(spark), sort_keys=True),
    }


def view_properties(spark: Session, view: str, statement: str | None = None) -> dict[str, str]:
    """The store properties of the materialized view ``view``; raises ViewNotFound (see
    :func:`not_a_view`) for ``statement`` of it (None: any)."""
    properties = store_properties(spark, view)
    if properties is None:
        raise not_a_view(spark, view, statement)
    return properties


def not_a_view(spark: Session, name: str, statement: str | None = None) -> ViewNotFound:
    """The error for ``statement`` (``DROP``, ``ALTER``, ``DESCRIBE``, ``DESCRIBE HISTORY``,
    ``REFRESH``, ``VERIFY``; None: any) of ``name``, which is no materialized view: that
    nothing has that name, or what has it: a table or a Spark view, with the statement that
    does the same to it, or the store of a view, with the statement on that view."""
    kind, view = catalog_kind(spark, name) or (None, None)
    if kind is None:
        return ViewNotFound(
            f"materialized view {name} does not exist",
            hint=None if statement == "DROP" else "create it with CREATE MATERIALIZED VIEW",
        )
    if kind == "store":
        return ViewNotFound(
            f"{name} is the store of the materialized view {view}, not a materialized view",
            hint=f"{statement or 'name'} MATERIALIZED VIEW {view}",
        )
    if kind == "view" and (found := catalog_view(spark, name)) is not None and found.store:
        return ViewNotFound(
            f"the store of the materialized view {name}, {found.store}, is gone (dropped "
            f"outside ivm, by Spark's DROP TABLE?): its catalog view reads nothing",
            hint=f"DROP MATERIALIZED VIEW {name} drops what is left of it, CREATE OR REPLACE "
            f"MATERIALIZED VIEW {name} AS ... creates it anew",
        )
    keyword = "TABLE" if kind == "table" else "VIEW"
    instead = {
        "DROP": f"DROP {keyword} {name} drops it",
        "ALTER": f"ALTER {keyword} {name} changes it",
        "DESCRIBE": f"DESCRIBE TABLE {name} describes it",
    }
    if kind == "table":
        instead["DESCRIBE HISTORY"] = f"DESCRIBE HISTORY {name} shows a Delta table's commits"
    return ViewNotFound(
        f"{name} is a {'table' if kind == 'table' else 'Spark view'}, not a materialized view",
        hint=instead.get(statement or "")
        or f"to keep a query over it fresh, CREATE "
        f"MATERIALIZED VIEW name AS SELECT ... FROM {name}",
    )


def named_view(spark: Session, name: str, statement: str) -> str:
    """The qualified name (:func:`~ivm.runtime.catalog.tables.qualified_name`) of the
    materialized view ``name`` that ``statement`` (``REFRESH``, ``ALTER``) names: ViewNotFound
    where it is none (:func:`not_a_view`), CatalogError where it is a state table, a part of
    its view that the statement of that view acts on too."""
    view = qualified_name(spark, name)
    properties = view_properties(spark, view, statement)
    if STATE_OF in properties:
        owner = properties[STATE_OF]
        raise CatalogError(
            f"{view} is a state table of the materialized view {owner}, not a view of its own",
            hint=f"{statement} MATERIALIZED VIEW {owner}, which takes its state tables with it",
        )
    return view


def resolution_database(view: str, properties: dict[str, str]) -> str:
    """The database in which the definition of ``view`` resolves names without one: the one
    current at its CREATE, else (a view created before it was recorded) the view's own."""
    return properties.get(DATABASE) or exp.to_table(view, dialect=DIALECT).db


def settings(properties: dict[str, str]) -> dict[str, str] | None:
    """The settings pinned at the view's CREATE; None for a view created before they were
    recorded."""
    text = properties.get(SETTINGS)
    return None if text is None else json.loads(text)


def spelled_columns(compiled: CompiledView, properties: dict[str, str]) -> tuple[str, ...]:
    """The view's column names as the query spells them (recorded at CREATE), else the
    store's."""
    recorded = json.loads(properties.get(COLUMNS, "null"))
    columns = compiled.store.view_columns
    if recorded and [n.lower() for n in recorded] == [c.lower() for c in columns]:
        return tuple(recorded)
    return columns


KEPT_PLANS = 256
"""How many views' compiled plans a process keeps (the least recently used go first)."""

_plans: OrderedDict[tuple, tuple[tuple, CompiledView]] = OrderedDict()
_plans_lock = threading.Lock()


def compile_definition(
    spark: Session, view: str, properties: dict[str, str] | None = None
) -> CompiledView:
    """The stored definition of the materialized view ``view`` compiled as at its CREATE,
    its names resolved in :func:`resolution_database`, its state tables named in the layout
    its store has (:func:`~ivm.runtime.catalog.tables.has_legacy_layout`). ``properties``: the
    store's, if read already. A state table's definition is its view's, compiled as that
    view (whose store need not exist yet), and the state taken from it.

    A compiled plan depends on the definition, the database it resolves names in, the
    layout and the schemas of the tables it reads, nothing else; it is kept, and compiled
    again only when one of them changed, which the sources' Delta logs tell
    (:func:`_sources_fingerprint`) without asking the catalog for each schema."""
    properties = properties or view_properties(spark, view)
    owner = properties.get(STATE_OF, view)  # a state table is compiled as part of its view
    # a state table has the layout of its view, and was resolved with its properties
    key = (
        owner,
        properties[DEFINITION],
        resolution_database(owner, properties),
        has_legacy_layout(view),
    )
    with _plans_lock:
        kept = _plans.get(key)
    if kept is not None and kept[0] == _sources_fingerprint(spark, kept[1].tables_read):
        with _plans_lock:
            _plans.move_to_end(key)
        return kept[1] if owner == view else kept[1].state(view)
    compiled = compile(
        properties[DEFINITION],
        catalog_schema(spark),
        default_db=key[2],
        name=owner,
        legacy_layout=key[3],
    )
    fingerprint = _sources_fingerprint(spark, compiled.tables_read)
    with _plans_lock:
        _plans[key] = (fingerprint, compiled)
        while len(_plans) > KEPT_PLANS:
            _plans.popitem(last=False)
    return compiled if owner == view else compiled.state(view)


def _sources_fingerprint(spark: Session, sources) -> tuple:
    """What a compiled plan depends on in each of its ``sources``: its Delta table's id and
    schema (a materialized view's store's, and the view's columns' spelling). Unequal to
    every other when a log cannot tell."""
    found = []
    for table in sources:
        properties = store_properties(spark, table)
        delta_table = table if properties is None else store_name(table)
        schema = DeltaLogReader.of(spark, delta_table).schema_fingerprint()
        if schema is None:
            return (object(),)
        found.append((table, schema, (properties or {}).get(COLUMNS)))
    return tuple(found)
