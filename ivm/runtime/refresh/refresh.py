"""Refreshes: bring a materialized view up to its sources' latest versions, or recompute one
partition of it.

An incremental refresh folds the change of every source since the versions the store records
into the store by one MERGE; a full one overwrites the store with the query's result. Either
is one committed write (:mod:`ivm.runtime.refresh.commit`), retried from a fresh read of the store
when another refresh of the view committed first.
"""

from __future__ import annotations

import time

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from sqlglot import exp

from ivm import codegen
from ivm.compiler import CompiledView
from ivm.errors import CatalogError, SourceError, StateError
from ivm.names import DIALECT
from ivm.rules import Kind
from ivm.runtime.catalog.catalog import qualified_name, store_name
from ivm.runtime.catalog.definition import compile_definition, named_view, view_properties
from ivm.runtime.catalog.graph import dependency_graph, materialized_views, refresh_order
from ivm.runtime.catalog.history import INSERTS_ONLY, RefreshRecord, RefreshResult, latest_record
from ivm.runtime.log.delta_log import DeltaLogReader, reading_each_log_once, rows_written
from ivm.runtime.refresh import faults
from ivm.runtime.refresh.commit import (
    LostRace,
    committed_write,
    repair_catalog_view,
    retrying,
    spark_errors,
)
from ivm.runtime.refresh.obstacles import DEFAULT_MIN_BYTES, MIN_BYTES, replaced_source
from ivm.runtime.refresh.phases import PhaseClock
from ivm.runtime.refresh.policy import CostModel, Obstacle
from ivm.runtime.refresh.pruning import prune
from ivm.runtime.refresh.refresh_plan import not_incremental, plan_refresh, verdict, what_is_known
from ivm.runtime.refresh.sources import (
    kept,
    latest_sources,
    release,
    total_source_bytes,
    total_source_files,
)
from ivm.runtime.refresh.upkeep import compact_after_refresh
from ivm.runtime.spark.connect import Session
from ivm.runtime.spark.failures import Failure, classify
from ivm.runtime.spark.settings import (
    apply_settings,
    evaluation_settings,
    merge_settings,
    number_setting,
    plan_settings,
    planned_read_bytes,
    planning_settings,
    session_settings,
)


class _Overflow(Exception):
    """A value overflowed its type while folding a change: the query alone can say whether
    it overflows too."""


class _Recompute(Exception):
    """The cost model predicts a full recompute cheaper than the planned incremental one,
    whose delta query reads ``planned``: (change bytes, bytes read)."""

    def __init__(self, obstacle: Obstacle, prediction: str, planned: tuple[int, int] | None):
        super().__init__(obstacle.reason)
        self.obstacle, self.prediction, self.planned = obstacle, prediction, planned


STORE_CHANGE = "_ivm_store_change"
"""The temporary view of the change to the store, which the MERGE reads."""
MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"

INSERTS_ONLY_RULES = "spark.ivm.refresh.insertsOnlyRules"
"""``false`` turns off the rules for changes that insert rows only (:mod:`ivm.rules.append`):
every refresh then takes the rules for any change (to compare them, or to rule them out)."""

OVERFLOW_REASON = "a sum overflowed its type while folding the change"
LOOKUP_RECOMPUTED = "; every fact row was enriched anew with the dimension as it is now"
"""What a recompute of a lookup join's state adds to its reason (see :mod:`ivm.rules.lookup`)."""


def refresh_view(spark: Session, name: str, *, full: bool = False) -> RefreshResult:
    """Bring the materialized view ``name`` up to its sources' latest versions.

    Incremental unless ``full``, or unless the view's refresh policy recomputes for what
    stands in the way (:mod:`ivm.runtime.refresh.policy`): the change of every source since the
    versions the store records is folded into the store by one MERGE. A full refresh
    overwrites the store with the query's result instead, which also repairs a store that
    disagrees with its sources.

    The view's state tables are refreshed first, each in a commit of its own (``full`` too),
    and the view then consumes their change as that of any other materialized view it
    reads: a refresh that dies between those commits leaves the view as it was, and the
    next one consumes what the state tables committed. Where a state table was recomputed,
    so is the view, from the state tables: their change would be all their rows twice.

    Each store the refresh wrote is then compacted if it is due (:mod:`ivm.runtime.refresh.upkeep`);
    a compaction that fails is reported in the result, not raised.
    """
    view = qualified_name(spark, name)
    forced = Obstacle("requested", f"REFRESH {view} FULL") if full else None
    with reading_each_log_once():
        named_view(spark, view, "REFRESH")
        tables = [state for state, _ in compile_definition(spark, view).states]
        # with nothing written first, the refresh plans from these reads
        result = None if tables else _refresh_one(spark, view, forced)
    result = result or _refresh_with_states(spark, view, tables, forced)
    result.upkeep = [
        step
        for written in [*result.states, result]
        if written.mode != "noop"
        if (step := compact_after_refresh(spark, written.view)) is not None
    ]
    return result


def _refresh_with_states(
    spark: Session, view: str, tables: list[str], forced: Obstacle | None
) -> RefreshResult:
    """Refresh the state tables ``tables`` of ``view``, then ``view`` from them."""
    states = []
    for state in tables:
        states.append(_refresh_one(spark, state, forced))
        faults.reach("refresh.after_state")
    recomputed = [s.view for s in states if s.mode == "full"]
    if forced is None and recomputed:  # its change would be the state table twice over
        forced = Obstacle("reinitialize", f"its state table {recomputed[0]} was recomputed")
    result = _refresh_one(spark, view, forced)
    result.states = states
    return result


def _refresh_one(spark: Session, view: str, forced: Obstacle | None) -> RefreshResult:
    """Refresh the store of ``view`` (a view, or a state table) alone; ``forced``: what makes
    it recompute whatever else stands in the way."""
    clock = PhaseClock(spark)
    with clock.running():
        result = retrying(
            spark,
            view,
            lambda work, view, properties: _refresh(work, view, properties, forced, clock),
        )
    clock.count_jobs()
    result.phases = clock.phases
    return result


def refresh_all(spark: Session, views: list[str] | None = None) -> list[RefreshResult]:
    """Refresh ``views`` (default: every materialized view) and the materialized views they
    read, each after the views it reads."""
    targets = (
        materialized_views(spark) if views is None else [qualified_name(spark, v) for v in views]
    )
    return [refresh_view(spark, view) for view in refresh_order(dependency_graph(spark, targets))]


def refresh_partition(
    spark: Session, name: str, partition: dict[str, exp.Literal]
) -> RefreshResult:
    """Recompute the rows of the view ``name`` in one partition (``{column: value}``) from
    scratch, leaving every other partition as it is: a repair or backfill.

    The partition is computed from the source versions the store already reflects, so the
    store stays one consistent state; a later refresh applies newer changes as usual.
    """
    view = qualified_name(spark, name)
    named_view(spark, view, "REFRESH")
    return retrying(
        spark,
        view,
        lambda work, view, properties: _refresh_partition(work, view, properties, partition),
    )


def _refresh_partition(
    spark: Session, view: str, properties: dict[str, str], partition: dict[str, exp.Literal]
) -> RefreshResult:
    start = time.perf_counter()
    compiled = compile_definition(spark, view, properties)
    apply_settings(spark, plan_settings(compiled))
    store = store_name(view)
    log = DeltaLogReader(spark, store)
    partitioned_by = log.partition_columns()
    unknown = [c for c in partition if c not in partitioned_by]
    if unknown or not partition:
        raise CatalogError(
            f"{', '.join(unknown) or 'PARTITION ()'} is not a partition column of {view}",
            hint=f"{view} is partitioned by {', '.join(partitioned_by) or 'nothing'}",
        )
    repair_catalog_view(spark, view, compiled, properties, spark.table(store).schema)
    store_version = log.version()
    last = latest_record(log)[1]
    consumed = last.sources
    _, ids = latest_sources(spark, compiled.sources)
    if replaced := replaced_source(last.table_ids, ids):
        raise SourceError(
            f"{view} cannot recompute a partition: {replaced}",
            hint=f"run REFRESH MATERIALIZED VIEW {view}",
        )
    spec = ", ".join(f"{c} = {v.sql(DIALECT)}" for c, v in partition.items())
    predicate = exp.and_(*(exp.column(c).eq(v) for c, v in partition.items()))
    record = RefreshRecord(
        "partition",
        consumed,
        reason=f"PARTITION ({spec})",
        table_ids=last.table_ids,
        cost=last.cost,
    )  # the model carries on
    evaluation = evaluation_settings(spark, total_source_bytes(spark, compiled.sources))
    with (
        session_settings(spark, evaluation),
        committed_write(
            spark, view, compiled, record, stage="refresh", read_version=store_version
        ) as commit,
    ):
        commit(codegen.replace_where_statement(store, compiled.full_query, predicate))
    rows = rows_written(spark, store)
    return RefreshResult(
        view,
        "partition",
        consumed,
        consumed,
        rows_inserted=rows,
        reason=record.reason,
        seconds=time.perf_counter() - start,
    )


def _refresh(
    spark: Session,
    view: str,
    properties: dict[str, str],
    forced: Obstacle | None,
    clock: PhaseClock,
) -> RefreshResult:
    """Carry out the plan of a refresh (:mod:`ivm.runtime.refresh.refresh_plan`), made once the
    store's and the sources' logs are read: nothing, apply the change, recompute, or fail. An
    incremental refresh that finds, once reading the change, that it cannot apply it (a
    change data file removed, a sum that overflows, a delta query predicted dearer than a
    recompute) recomputes or fails as the policy says."""
    start = time.perf_counter()
    with clock.phase("plan"):
        compiled = compile_definition(spark, view, properties)
        apply_settings(spark, plan_settings(compiled))
        store = store_name(view)
        schema = spark.table(store).schema
        if tuple(schema.names) != compiled.store.columns:
            raise StateError(
                f"the definition of {view} no longer matches its store (did a "
                f"source's schema change?)",
                hint=f"recreate it: CREATE OR REPLACE MATERIALIZED VIEW {view} AS ...",
            )
        repair_catalog_view(spark, view, compiled, properties, schema)
    with clock.phase("versions"), spark_errors(view, spark, compiled.sources):
        known = what_is_known(spark, view, compiled, properties, schema, forced)
        plan = plan_refresh(known)
        if plan.mode == "noop":
            return RefreshResult(
                view, "noop", known.current, known.previous, seconds=time.perf_counter() - start
            )
        if plan.mode == "fails":
            raise plan.error(view)
        store_version = DeltaLogReader.of(spark, store).version()
    lookup = compiled.maintenance.rule.kind is Kind.LOOKUP
    obstacle, prediction, model = plan.obstacle, plan.prediction, known.model
    result = None
    if plan.mode == "incremental":
        inserting = (
            compiled.inserting()
            if plan.inserts_only
            and (spark.conf.get(INSERTS_ONLY_RULES, "true") or "true").lower() != "false"
            else None
        )
        try:
            result = _write(
                spark,
                view,
                inserting or compiled,
                store_version,
                known.previous,
                known.current,
                known.ids,
                None,
                plan.change_bytes,
                schema,
                clock,
                model,
                choose_against=known.full_bytes if known.policy == "AUTO" else None,
                rules=None if inserting is None else INSERTS_ONLY,
            )
        except SourceError as error:  # a change data file was VACUUMed
            obstacle = Obstacle("unavailable", error.message)
        except _Overflow:
            obstacle = Obstacle("unavailable", OVERFLOW_REASON)
        except _Recompute as cheaper:
            obstacle, prediction = cheaper.obstacle, cheaper.prediction
            model = model.after("incremental", False, cheaper.planned)
        if result is None:
            assert obstacle is not None
            if verdict(known.policy, obstacle) == "fails":
                raise not_incremental(view, obstacle)
    if result is None:  # not incremental, for ``obstacle``
        assert obstacle is not None
        reason = obstacle.reason + (LOOKUP_RECOMPUTED if lookup else "")
        with session_settings(spark, evaluation_settings(spark, known.full_bytes)):
            result = _write(
                spark,
                view,
                compiled,
                store_version,
                known.previous,
                known.current,
                known.ids,
                reason,
                known.full_bytes,
                schema,
                clock,
                model.after("full", prediction is not None),
                prediction=prediction,
            )
    result.seconds = time.perf_counter() - start
    return result


def _min_bytes(spark: Session) -> float:
    """The sources' size below which the cost model predicts nothing."""
    return number_setting(spark, MIN_BYTES, DEFAULT_MIN_BYTES)


def _types_changed(spark: Session, query: exp.Query, store_schema) -> bool:
    """Whether the columns of ``query`` (the store's full query, its sources bound) have
    other types than the store's ``store_schema``: a source's column changed its type (Delta's
    type widening), and an overwrite would cast the new values to the old types."""
    wanted = spark.sql(query.sql(DIALECT)).schema
    return [f.dataType for f in wanted] != [f.dataType for f in store_schema]


def _merge_settings(spark: Session, store: str, change_bytes: int | None) -> dict[str, str]:
    """Settings for the MERGE into ``store`` of a change computed from ``change_bytes`` (at
    most its size): its source, the change to the store, is kept already, so Delta need not
    materialize it again; those for the store's size
    (:func:`~ivm.runtime.spark.settings.merge_settings`); and those for the little data of a
    small store and change (:func:`~ivm.runtime.spark.settings.evaluation_settings`)."""
    store_bytes = DeltaLogReader.of(spark, store).size_in_bytes()
    both = None if store_bytes is None or change_bytes is None else store_bytes + change_bytes
    return (
        {MATERIALIZE_SOURCE: "none"}
        | merge_settings(store_bytes)
        | evaluation_settings(spark, both)
    )


def _write(
    spark: Session,
    view: str,
    compiled: CompiledView,
    store_version: int,
    previous: dict[str, int],
    current: dict[str, int],
    ids: dict[str, str],
    reason: str | None,
    read_bytes: int | None,
    schema,
    clock: PhaseClock,
    model: CostModel,
    *,
    choose_against: int | None = None,
    prediction: str | None = None,
    rules: str | None = None,
) -> RefreshResult:
    """Fold the change from ``previous`` to ``current`` into the store in one commit, or,
    with a ``reason`` to, overwrite the store with the query's result at ``current``;
    ``ids``: the sources' Delta table ids. The cost ``model`` goes into the record, and, with
    ``choose_against`` (the bytes a recompute reads), an incremental write raises
    :class:`_Recompute` once the delta query is planned if recomputing is predicted cheaper;
    ``prediction``: why a full one was; ``rules``: :data:`INSERTS_ONLY` where ``compiled``
    is the view as refreshed from changes that insert rows only.

    The change to the store is computed once, before the MERGE, which then reads it as it
    is (Delta need not materialize the MERGE's source again); an empty change commits the
    record alone, and writes no file. A change of 0 bytes (the sources' commits since
    changed no row, as a state table's that recorded a refresh alone) is not read at all."""
    store = store_name(view)
    full = reason is not None
    unchanged = not full and read_bytes == 0  # the commits since changed no row
    record = RefreshRecord(
        "full" if full else "incremental",
        current,
        reason,
        read_bytes,
        table_ids=ids,
        started_ms=clock.started_ms,
        planned_bytes=read_bytes if full else None,
        cost=model.to_record(),
        prediction=prediction,
        rules=rules,
    )
    with committed_write(
        spark,
        view,
        compiled,
        record,
        stage="refresh",
        before=None if full or unchanged else previous,
        read_version=store_version,
        clock=clock,
    ) as commit:
        if full:
            if _types_changed(spark, compiled.full_query, schema):
                log = DeltaLogReader.of(spark, store)
                commit(
                    codegen.create_table_statement(
                        store,
                        compiled.full_query,
                        log.properties(),
                        replace=True,
                        partitioned_by=tuple(log.partition_columns()),
                    )
                )
                repair_catalog_view(
                    spark, view, compiled, view_properties(spark, view), spark.table(store).schema
                )
            else:
                commit(codegen.overwrite_statement(store, compiled.full_query))
            return RefreshResult(
                view,
                "full",
                current,
                previous,
                reason=reason,
                rows_inserted=rows_written(spark, store),
            )
        if unchanged:  # nor does the view: the commit carries the record
            commit(codegen.record_only_statement(store))
            return RefreshResult(view, "incremental", current, previous, rules=rules)
        with clock.phase("prune"), spark_errors(view, spark, compiled.sources):
            delta = codegen.to_select(prune(spark, compiled.maintenance.delta, read_bytes))
        types = {f.name: f.dataType.simpleString() for f in schema}
        change = None
        try:
            with clock.phase("delta"), spark_errors(view, spark, compiled.sources):
                with session_settings(
                    spark, planning_settings(spark, total_source_files(spark, current))
                ):
                    query = spark.sql(delta.sql(DIALECT))
                    query_bytes = planned_read_bytes(query, read_bytes)
                plan = (
                    None if read_bytes is None or query_bytes is None else (read_bytes, query_bytes)
                )
                planned = {
                    "planned_bytes": query_bytes,
                    "cost": model.after("incremental", False, plan).to_record(),
                }
                if choose_against is not None:
                    cheaper, planned["prediction"] = model.after_planning(
                        query_bytes, choose_against, _min_bytes(spark)
                    )
                    if cheaper is not None:
                        raise _Recompute(cheaper, planned["prediction"], plan)
                change = kept(spark, query, query_bytes)
                settings = _merge_settings(spark, store, query_bytes) if change.rows else {}
            if not change.rows:  # no stored row changes: the commit carries the record
                commit(codegen.record_only_statement(store), **planned)
                return RefreshResult(view, "incremental", current, previous, rules=rules)
            change.frame.createOrReplaceTempView(STORE_CHANGE)
            with session_settings(spark, settings):
                merged = commit(
                    codegen.merge_statement(
                        compiled.store, store, exp.select("*").from_(STORE_CHANGE), types
                    ),
                    **planned,
                )
        except (PySparkException, Py4JJavaError) as error:
            if classify(error) is Failure.OVERFLOW:
                raise _Overflow() from error
            raise
        finally:
            spark.catalog.dropTempView(STORE_CHANGE)
            if change is not None and change.checkpoint is not None:
                release(change.checkpoint)
        if not merged:  # Delta skipped it: the transaction was committed already
            raise LostRace()
        metrics = merged[0]
        return RefreshResult(
            view,
            "incremental",
            current,
            previous,
            rules=rules,
            rows_inserted=metrics.num_inserted_rows,
            rows_updated=metrics.num_updated_rows,
            rows_deleted=metrics.num_deleted_rows,
        )
