"""Store layouts measured side by side: what writing a refresh's change to the store costs
as a MERGE (``merge``, ivm's default; with and without deletion vectors), as an append folded
on read (``log``, ivm's ``spark.ivm.storeLayout = log``) and as a replacement of the changed
keys' rows, and what reading the view costs in each.

    python -m benchmarks.layouts [--rows 1000000] [--groups 100000] [--refreshes 10]

One Delta source of ``--rows`` rows in ``--groups`` groups, and an aggregate view over it
(``SELECT g, COUNT(*), SUM(x) … GROUP BY g``): a store of one row per group, as large as a
TPC-H view's state table at a small scale. Each round updates one source row and refreshes
three views of that query: ``v`` with a merged store, ``d`` with a merged store whose table
has deletion vectors on (Delta's MERGE then marks the changed rows deleted in a deletion
vector and writes their new versions to a new file, instead of rewriting the file that held
them) and ``w`` with a logged one; each refresh's ``write`` phase is its MERGE or its
append. The same change, as its groups'
accumulator deltas (computed from the source's change data feed the way the refresh does),
is also written to two copies of the store that ivm does not offer:

* ``replaced``: a copy with deletion vectors on, written by ``INSERT … REPLACE WHERE`` the
  changed keys: their rows read, summed with the change and written back in one commit
  (:func:`replace_keys`);
* ``probed``: appends, each row marked ``_ivm_new`` where its key has no stored row (probed
  at the write), so that a read scans the stored rows once, joined with the appended rows'
  sums by key (:func:`fold_probed`);
* ``relogged``: a log that holds each key touched since the last fold once, as its row now
  stands (not as a change), replaced whole by each write (:func:`relog`), so that a read is
  the stored rows less the logged keys, plus the logged rows: no sum, one broadcast of the
  log (:func:`read_relogged`);
* ``apart``: the same log kept in a Delta table of its own beside a plain table of stored
  rows (:func:`relog_apart`, :func:`read_apart`), so that a read lists each table's files
  once and filters neither; folded by a MERGE into the stored table and then a commit that
  empties the log (:func:`fold_apart`) — between the two, a read still gives the view, as
  the logged rows are whole rows.

Read back: ``v``, ``d`` and ``w`` by their catalog names (``w`` folds its 1 to ``--refreshes``
appended changes on read), and the copies. Each is read twice after each write: the first
read after a commit pays Delta's reconstruction of the new version's file list, the second
finds it cached. At the end ``w``'s log is folded in once (upkeep's fold, timed; its cost
shared over the appends it folded gives a logged refresh's write cost in all) and ``w`` read
again.

Every read runs to the end (its rows counted in the JVM, none collected), and each is
checked to hold the view. Figures are medians over the rounds, seconds and Spark jobs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from sqlglot import exp

from ivm.codegen.store import LOGGED
from ivm.runtime.catalog.definition import compile_definition
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.commands.statements import sql as ivm_sql
from ivm.runtime.refresh.phases import PhaseClock
from ivm.runtime.refresh.upkeep import LOG_FOLD_AT, compact
from ivm.runtime.spark.session import spark_session
from ivm.runtime.spark.settings import STORE_LAYOUT, session_settings
from ivm.store import Store

VIEW = "SELECT g, COUNT(*) AS n, SUM(x) AS s FROM src GROUP BY g"
APPENDED = "_ivm_appended"
REPLACED = "replaced_store"
PROBED = "probed_store"
NEW = "_ivm_new"
RELOGGED = "relogged_store"
CURRENT = "_ivm_current"
APART_STORED, APART_LOG = "apart_stored", "apart_log"


def timed(spark, action) -> tuple[float, int]:
    """Run ``action()``; its seconds and the Spark jobs it ran, counted as a refresh counts
    its phases' (:class:`~ivm.runtime.refresh.phases.PhaseClock`), so that they compare with
    the refresh's ``write`` phase."""
    clock = PhaseClock(spark)
    with clock.running(), clock.phase("write"):
        action()
    clock.count_jobs()
    phase = clock.phases["write"]
    return phase.seconds, phase.jobs or 0


def appended_rows(store: Store, types: dict[str, str], version: int) -> str:
    """The change of the source's commit ``version`` as rows to append: each touched group's
    key and accumulator deltas, its view columns NULL (recomputed when folded)."""
    weight = "CASE WHEN _change_type IN ('insert', 'update_postimage') THEN 1 ELSE -1 END"

    def unqualified(argument: exp.Expr | None) -> exp.Expr | None:
        return (
            None
            if argument is None
            else argument.copy().transform(
                lambda node: exp.column(node.name) if isinstance(node, exp.Column) else node
            )
        )

    deltas = {
        a.name: a.change_call(unqualified(a.argument), exp.column("w")).to_sql()
        for a in store.accumulators
    }
    values = [
        k
        if store.is_key(k)
        else deltas[k].sql("spark")
        if k in deltas
        else f"CAST(NULL AS {types[k]})"
        for k in store.columns
    ]
    return f"""
        SELECT {", ".join(f"{v} AS {c}" for v, c in zip(values, store.columns, strict=True))},
               TRUE AS {APPENDED}
        FROM (SELECT *, {weight} AS w FROM table_changes('src', {version}, {version}))
        GROUP BY {", ".join(store.keys)}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--refreshes", type=int, default=10)
    args = parser.parse_args()
    spark = spark_session(home=tempfile.mkdtemp(prefix="ivm_layouts_"))
    spark.sql("CREATE DATABASE layouts")
    spark.sql("USE layouts")
    spark.sql(
        "CREATE TABLE src (k BIGINT, g BIGINT, x DECIMAL(12, 2)) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql(
        f"INSERT INTO src SELECT id, id % {args.groups}, CAST(id % 1000 AS DECIMAL(12, 2)) / 10 "
        f"FROM range({args.rows})"
    )
    ivm_sql(spark, f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    ivm_sql(spark, f"CREATE MATERIALIZED VIEW d AS {VIEW}")
    spark.sql(
        f"ALTER TABLE {store_name('layouts.d')} "
        "SET TBLPROPERTIES (delta.enableDeletionVectors = true)"
    )
    # folded only when this benchmark says so, at the end
    with session_settings(spark, {STORE_LAYOUT: "log", LOG_FOLD_AT: "1000000"}):
        ivm_sql(spark, f"CREATE MATERIALIZED VIEW w AS {VIEW}")
    store = compile_definition(spark, "layouts.v").store
    stored = spark.table(store_name("layouts.v"))
    types = {f.name: f.dataType.simpleString() for f in stored.schema}
    spark.sql(
        f"CREATE TABLE {PROBED} USING DELTA AS SELECT *, FALSE AS {APPENDED}, FALSE AS {NEW} "
        f"FROM {store_name('layouts.v')}"
    )
    spark.sql(
        f"CREATE TABLE {RELOGGED} USING DELTA PARTITIONED BY ({CURRENT}) AS "
        f"SELECT *, FALSE AS {CURRENT} FROM {store_name('layouts.v')}"
    )
    spark.sql(f"CREATE TABLE {APART_STORED} USING DELTA AS SELECT * FROM {store_name('layouts.v')}")
    spark.sql(f"CREATE TABLE {APART_LOG} USING DELTA AS SELECT * FROM {APART_STORED} WHERE FALSE")
    spark.sql(
        f"CREATE TABLE {REPLACED} USING DELTA "
        "TBLPROPERTIES (delta.enableDeletionVectors = true) "
        f"AS SELECT * FROM {store_name('layouts.v')}"
    )
    view_columns = ", ".join(store.view_columns)

    def noop(query: str):
        # every row computed, none collected (py4j: the JVM's plan, as an RDD, counted)
        return lambda: spark.sql(query)._jdf.queryExecution().toRdd().count()

    merge, append, merged, folded, merged_again, folded_again = [], [], [], [], [], []
    marked, marked_read, marked_again = [], [], []
    replace, replaced, replaced_again = [], [], []
    probe, probed, probed_again = [], [], []
    relogs, relogged, relogged_again = [], [], []
    aparts, apart, apart_again = [], [], []
    for i in range(args.refreshes):
        spark.sql(f"UPDATE src SET x = x + 1 WHERE k = {i * 7919 % args.rows}")
        version = spark.sql("DESCRIBE HISTORY src LIMIT 1").first().version
        for view, writes in (("v", merge), ("d", marked), ("w", append)):
            with session_settings(spark, {LOG_FOLD_AT: "1000000"}):
                write = ivm_sql(spark, f"REFRESH MATERIALIZED VIEW {view}").phases["write"]
            writes.append((write.seconds, write.jobs))
        rows = appended_rows(store, types, version)
        replace.append(timed(spark, lambda rows=rows: replace_keys(spark, store, rows)))
        probe.append(timed(spark, lambda rows=rows: append_probed(spark, store, rows)))
        relogs.append(timed(spark, lambda rows=rows: relog(spark, store, rows)))
        aparts.append(timed(spark, lambda rows=rows: relog_apart(spark, store, rows)))
        merged.append(timed(spark, noop("SELECT * FROM v")))
        marked_read.append(timed(spark, noop("SELECT * FROM d")))
        folded.append(timed(spark, noop("SELECT * FROM w")))
        replaced.append(timed(spark, noop(f"SELECT {view_columns} FROM {REPLACED}")))
        probed.append(timed(spark, noop(fold_probed(store, PROBED))))
        relogged.append(timed(spark, noop(read_relogged(store))))
        apart.append(timed(spark, noop(read_apart(store))))
        merged_again.append(timed(spark, noop("SELECT * FROM v")))
        marked_again.append(timed(spark, noop("SELECT * FROM d")))
        folded_again.append(timed(spark, noop("SELECT * FROM w")))
        replaced_again.append(timed(spark, noop(f"SELECT {view_columns} FROM {REPLACED}")))
        probed_again.append(timed(spark, noop(fold_probed(store, PROBED))))
        relogged_again.append(timed(spark, noop(read_relogged(store))))
        apart_again.append(timed(spark, noop(read_apart(store))))
    view = spark.sql("SELECT * FROM v")
    for name, query in (
        ("d", "SELECT * FROM d"),
        ("w", "SELECT * FROM w"),
        (REPLACED, f"SELECT {view_columns} FROM {REPLACED}"),
        (PROBED, fold_probed(store, PROBED)),
        (RELOGGED, read_relogged(store)),
        (APART_LOG, read_apart(store)),
    ):
        other = spark.sql(query)
        assert view.exceptAll(other).count() == 0 and other.exceptAll(view).count() == 0, (
            f"{name} does not hold the view"
        )
    metrics = spark.sql(f"DESCRIBE HISTORY {store_name('layouts.d')} LIMIT 1").first()
    assert int(metrics.operationMetrics.get("numTargetDeletionVectorsAdded", 0)) > 0, (
        f"d's last write marked no row deleted: {metrics.operation} {metrics.operationMetrics}"
    )
    with session_settings(spark, {LOG_FOLD_AT: str(args.refreshes)}):
        compaction = timed(spark, lambda: compact(spark, "layouts.w"))
    compacted = [timed(spark, noop("SELECT * FROM w")) for _ in range(3)]
    assert spark.table(store_name("layouts.w")).where(LOGGED).count() == 0, "w was not folded"
    apart_fold = timed(spark, lambda: fold_apart(spark, store))
    apart_folded = [timed(spark, noop(read_apart(store))) for _ in range(3)]
    other = spark.sql(read_apart(store))
    assert view.exceptAll(other).count() == 0 and other.exceptAll(view).count() == 0, (
        "apart does not hold the view once folded"
    )

    def median(pairs) -> str:
        return (
            f"{statistics.median(s for s, _ in pairs):.3f} s, "
            f"{statistics.median(j for _, j in pairs):.0f} jobs"
        )

    print(f"rows {args.rows}, groups {args.groups}, refreshes {args.refreshes}")
    print(f"write, MERGE (the refresh's write phase): {median(merge)}")
    print(f"write, MERGE with deletion vectors: {median(marked)}")
    print(f"write, append (logged store): {median(append)}")
    print(
        f"read, merged store, first after the write: {median(merged)}; "
        f"again: {median(merged_again)}"
    )
    print(
        f"read, merged store with deletion vectors, first after the write: "
        f"{median(marked_read)}; again: {median(marked_again)}"
    )
    print(
        f"read, logged store folded on read (1 to {args.refreshes} appends), first after "
        f"the write: "
        f"{median(folded)}; again: {median(folded_again)}"
    )
    print(f"write, REPLACE WHERE the changed keys (deletion vectors): {median(replace)}")
    print(
        f"read, replaced store, first after the write: {median(replaced)}; "
        f"again: {median(replaced_again)}"
    )
    print(f"write, append with the new keys probed: {median(probe)}")
    print(
        f"read, probed appends folded in one scan, first after the write: {median(probed)}; "
        f"again: {median(probed_again)}"
    )
    print(f"write, the log replaced with the changed keys' rows refolded: {median(relogs)}")
    print(
        f"read, relogged store (stored rows less the logged keys, plus the logged rows), "
        f"first after the write: {median(relogged)}; again: {median(relogged_again)}"
    )
    print(f"write, the log apart replaced with the changed keys' rows refolded: {median(aparts)}")
    print(
        f"read, stored rows apart less the logged keys, plus the logged rows, first after the "
        f"write: {median(apart)}; again: {median(apart_again)}"
    )
    print(
        f"fold of the log apart, once (a MERGE, then the log emptied): {apart_fold[0]:.3f} s, "
        f"{apart_fold[1]} jobs; read once folded: {median(apart_folded)}"
    )
    print(f"fold of the log, once: {compaction[0]:.3f} s, {compaction[1]} jobs")
    appended = statistics.median(s for s, _ in append)
    print(
        f"append + its share of the fold (one fold per {args.refreshes} appends): "
        f"{appended + compaction[0] / args.refreshes:.3f} s per refresh"
    )
    print(f"read, logged store folded: {median(compacted)}")


def changed_keys(spark, store: Store, rows: str, prefix: str = "") -> str:
    """A predicate true of the store rows whose key the change ``rows`` has (its keys
    collected as literals; none is NULL here), columns named with ``prefix``."""
    keys = spark.sql(f"SELECT DISTINCT {', '.join(store.keys)} FROM ({rows})").collect()
    return " OR ".join(
        "(" + " AND ".join(f"{prefix}{k} = {row[k]!r}" for k in store.keys) + ")" for row in keys
    )


def append_probed(spark, store: Store, rows: str) -> None:
    """Append the change ``rows`` to the probed copy, each row marked ``_ivm_new`` where its
    key has no stored (compacted) row: a read of the stored rows of the changed keys (the
    keys are literals, none NULL here), which Delta's file statistics narrow."""
    predicate = changed_keys(spark, store, rows, "b.")
    on = " AND ".join(f"b.{k} <=> c.{k}" for k in store.keys)
    spark.sql(
        f"INSERT INTO {PROBED} SELECT c.*, NOT EXISTS (SELECT 1 FROM {PROBED} b "
        f"WHERE NOT b.{APPENDED} AND ({predicate}) AND {on}) FROM ({rows}) c"
    )


def fold_probed(store: Store, relation: str) -> str:
    """The view's rows from ``relation``, a store whose appended rows say whether their key
    is new, folded in one scan of the stored rows:

        visible(stored ⟕ Σ appended by key)  ∪  visible(Σ appended of new keys)

    the appended rows' sums small enough to broadcast; a group whose count is 0 is gone."""
    keys = ", ".join(store.keys)
    on = " AND ".join(f"b.{k} <=> d.{k}" for k in store.keys)
    accumulators = [a.name for a in store.accumulators]
    sums = ", ".join(f"SUM({a}) AS {a}" for a in accumulators)
    added = ", ".join(f"b.{a} + COALESCE(d.{a}, 0) AS {a}" for a in accumulators)
    visible = ", ".join(f"{e.sql('spark')} AS {name}" for name, e in store.visible)
    return f"""
        WITH d AS (
            SELECT {keys}, {sums}, MAX({NEW}) AS {NEW} FROM {relation} WHERE {APPENDED}
            GROUP BY {keys}
        )
        SELECT {visible} FROM (
            SELECT {", ".join(f"b.{k}" for k in store.keys)}, {added}
            FROM {relation} b LEFT JOIN d ON {on} WHERE NOT b.{APPENDED}
            UNION ALL
            SELECT {keys}, {", ".join(accumulators)} FROM d WHERE {NEW}
        ) WHERE _ivm_count > 0"""


def relog(spark, store: Store, rows: str) -> None:
    """Write the change ``rows`` (as appended rows) to the relogged copy, in one commit that
    removes only the log's files: the log (``_ivm_current``) replaced by its rows of other
    keys as they are and each changed key's row as it now stands — its logged row, or else
    its stored row, plus the change. A key whose count falls to 0 stays in the log, as a
    tombstone that hides its stored row (the keys are literals, none NULL here)."""
    changed = changed_keys(spark, store, rows)
    keys = ", ".join(store.keys)
    on = " AND ".join(f"b.{k} <=> l.{k}" for k in store.keys)
    accumulators = ", ".join(a.name for a in store.accumulators)
    sums = ", ".join(f"SUM({a.name}) AS {a.name}" for a in store.accumulators)
    columns = refolded_columns(store)
    now = f"""
        SELECT {keys}, {sums} FROM (
            SELECT {keys}, {accumulators} FROM ({rows})
            UNION ALL
            SELECT {keys}, {accumulators} FROM {RELOGGED} WHERE {CURRENT} AND ({changed})
            UNION ALL
            SELECT {keys}, {accumulators} FROM {RELOGGED} b
            WHERE NOT {CURRENT} AND ({changed}) AND NOT EXISTS (
                SELECT 1 FROM {RELOGGED} l WHERE l.{CURRENT} AND {on})
        ) GROUP BY {keys}"""
    spark.sql(
        f"INSERT INTO {RELOGGED} REPLACE WHERE {CURRENT} "
        f"SELECT {columns}, TRUE FROM ({now}) "
        f"UNION ALL SELECT {', '.join(store.columns)}, TRUE FROM {RELOGGED} "
        f"WHERE {CURRENT} AND NOT ({changed})"
    )


def read_relogged(store: Store) -> str:
    """The view's rows from the relogged copy: the stored rows whose key the log does not
    hold, and the logged rows but the tombstones; the log, small, broadcast."""
    view_columns = ", ".join(store.view_columns)
    on = " AND ".join(f"b.{k} <=> l.{k}" for k in store.keys)
    return f"""
        SELECT /*+ BROADCAST(l) */ {", ".join(f"b.{c}" for c in store.view_columns)}
        FROM {RELOGGED} b LEFT ANTI JOIN (
            SELECT {", ".join(store.keys)} FROM {RELOGGED} WHERE {CURRENT}) l ON {on}
        WHERE NOT b.{CURRENT}
        UNION ALL
        SELECT {view_columns} FROM {RELOGGED} WHERE {CURRENT} AND _ivm_count > 0"""


def relog_apart(spark, store: Store, rows: str) -> None:
    """Write the change ``rows`` (as appended rows) to the log apart: the log replaced, in
    one commit of its own table, by each logged key's row as it stands plus the change, and
    each changed key's row that the log lacks, read from the stored table (by the changed
    keys, which Delta's file statistics narrow) plus the change. A key whose count falls to
    0 stays logged, as a tombstone (the keys are literals, none NULL here)."""
    changed = changed_keys(spark, store, rows, "b.")
    keys = ", ".join(store.keys)
    on = " AND ".join(f"b.{k} <=> l.{k}" for k in store.keys)
    accumulators = ", ".join(a.name for a in store.accumulators)
    sums = ", ".join(f"SUM({a.name}) AS {a.name}" for a in store.accumulators)
    spark.sql(
        f"""INSERT OVERWRITE {APART_LOG} SELECT {refolded_columns(store)} FROM (
            SELECT {keys}, {sums} FROM (
                SELECT {keys}, {accumulators} FROM ({rows})
                UNION ALL
                SELECT {keys}, {accumulators} FROM {APART_LOG}
                UNION ALL
                SELECT {", ".join(f"b.{k}" for k in store.keys)},
                       {", ".join(f"b.{a.name}" for a in store.accumulators)}
                FROM {APART_STORED} b LEFT ANTI JOIN {APART_LOG} l ON {on}
                WHERE {changed}
            ) GROUP BY {keys})"""
    )


def read_apart(store: Store) -> str:
    """The view's rows from the log apart: the stored rows whose key the log does not hold,
    and the logged rows but the tombstones; the log, small, broadcast. Delta lists a table's
    files once per distinct set of filters on its scans in a query, so the tombstones are
    left out by a generator (each logged row exploded into one copy, or none), not by a
    filter that would give the log's second scan a listing of its own: 4 Spark jobs, not 5."""
    view_columns = ", ".join(store.view_columns)
    on = " AND ".join(f"b.{k} <=> l.{k}" for k in store.keys)
    return f"""
        SELECT /*+ BROADCAST(l) */ {", ".join(f"b.{c}" for c in store.view_columns)}
        FROM {APART_STORED} b LEFT ANTI JOIN {APART_LOG} l ON {on}
        UNION ALL
        SELECT {view_columns} FROM {APART_LOG}
        LATERAL VIEW EXPLODE(IF(_ivm_count > 0, ARRAY(1), ARRAY())) live AS one"""


def fold_apart(spark, store: Store) -> None:
    """Fold the log apart into the stored table (a MERGE: each logged key's row replaces the
    stored one, a tombstone deletes it), then empty the log, in a commit of its own."""
    on = " AND ".join(f"b.{k} <=> l.{k}" for k in store.keys)
    columns = ", ".join(store.columns)
    spark.sql(
        f"MERGE INTO {APART_STORED} b USING {APART_LOG} l ON {on} "
        "WHEN MATCHED AND l._ivm_count = 0 THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET * "
        f"WHEN NOT MATCHED AND l._ivm_count > 0 THEN INSERT ({columns}) "
        f"VALUES ({', '.join(f'l.{c}' for c in store.columns)})"
    )
    spark.sql(f"DELETE FROM {APART_LOG}")


def replace_keys(spark, store: Store, rows: str) -> None:
    """Write the change ``rows`` (as appended rows) to the replaced copy: the changed keys'
    rows read, summed with the change, and written back in place of the old ones, in one
    commit (``INSERT … REPLACE WHERE``; the keys are literals, none NULL here)."""
    predicate = changed_keys(spark, store, rows)
    columns = ", ".join(store.columns)
    both = (
        f"(SELECT {columns} FROM {REPLACED} WHERE {predicate} "
        f"UNION ALL SELECT {columns} FROM ({rows})) AS both"
    )
    spark.sql(f"INSERT INTO {REPLACED} REPLACE WHERE {predicate} {fold_store(store, both)}")


def refolded_columns(store: Store) -> str:
    """The store's columns, in order, over a relation of its keys and accumulators: each
    view column that is not a key computed from the accumulators."""
    visible = dict(store.visible)
    return ", ".join(
        name
        if store.is_key(name) or name not in visible
        else f"{visible[name].sql('spark')} AS {name}"
        for name in store.columns
    )


def fold_store(store: Store, relation: str) -> str:
    """The store's own rows (its columns, in order) from ``relation``, stored and appended
    rows alike, every key's rows summed; a group whose count is 0 is gone."""
    keys = ", ".join(store.keys)
    sums = ", ".join(f"SUM({a.name}) AS {a.name}" for a in store.accumulators)
    columns = refolded_columns(store)
    return f"""
        SELECT {columns} FROM (SELECT {keys}, {sums} FROM {relation} GROUP BY {keys})
        WHERE _ivm_count > 0"""


if __name__ == "__main__":
    main()
