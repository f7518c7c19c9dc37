"""What a refresh costs, and how it says so: its phases in its result and its history, the
plan kept between refreshes, the change's key sets read in one query, and a change that
leaves the view as it is committed without writing a file."""

import datetime
import itertools
import json
import re
from decimal import Decimal

import pytest
from pyspark.sql import functions as F
from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame
from sqlglot import exp

import ivm
from benchmarks.measure import Meter
from ivm.ir import Filter, Scan
from ivm.runtime.catalog import definition
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.log import file_lists
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh import pruning
from ivm.runtime.refresh.phases import PHASES
from ivm.runtime.refresh.sources import kept, release
from ivm.runtime.refresh.techniques import append as append_technique
from ivm.runtime.refresh.techniques import merge as merge_technique
from ivm.runtime.refresh.techniques import rewrite as rewrite_technique
from ivm.runtime.spark import settings
from ivm.runtime.spark.settings import session_settings
from ivm.testing.data import MERGES
from tests.support.cdf import CDF
from tests.support.helpers import SALES, assert_equals_query, history


def test_a_refresh_records_where_its_time_went(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.25, 'ok')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")

    # the small store is rewritten through Delta's transaction API, checked as it commits:
    # no phase "check" follows
    assert list(result.phases) == [p for p in PHASES if p != "check"]
    assert result.phases["change"].jobs >= 1 and result.phases["write"].jobs >= 1
    assert sum(p.seconds for p in result.phases.values()) <= result.seconds
    latest = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW sales").first()
    recorded = latest.phases
    assert set(recorded) == set(PHASES) - {"check"}
    assert recorded["write"].jobs is None and recorded["write"].seconds > 0
    for name in ("plan", "versions", "change", "prune", "delta"):
        assert recorded[name].seconds == pytest.approx(result.phases[name].seconds, abs=2e-3)
        assert recorded[name].jobs == result.phases[name].jobs
    assert sum(p.seconds for p in recorded.values()) == pytest.approx(latest.seconds, abs=2e-3)


def test_a_refresh_without_change_runs_no_spark_job(spark, shop):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "noop"
    assert set(result.phases) == {"plan", "versions"}
    assert sum(p.jobs for p in result.phases.values()) == 0


def _metastore_calls(spark) -> int:
    """How many calls this JVM's Hive client has made to the metastore so far."""
    metrics = spark._jvm.org.apache.spark.metrics.source.HiveCatalogMetrics
    return metrics.METRIC_HIVE_CLIENT_CALLS().getCount()


def test_a_refresh_without_change_asks_the_metastore_once_per_table_it_reads(spark, shop):
    """Each metastore call costs 20-60 ms over a served catalog. A no-op refresh of a view
    over one table makes 8: two listings of stores' names (each with Spark's check that the
    database exists), the log of the store and of the source each found with one call, the
    catalog view read with one, the current database checked once. A second source costs one
    more. (SHOW TABLES, Delta's forTable by name, and tableExists before getTable made it 18.)
    A view with a state table plans from the same reads as its state table's refresh, which
    wrote nothing: its state table costs the log of its store and its catalog view, and a
    check of the database (27 calls, when each of the three refreshes read anew)."""
    paid = "SELECT status, SUM(amount) AS s FROM orders GROUP BY status"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW paid AS {paid}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top_sales AS {SALES} ORDER BY total DESC LIMIT 1")
    calls = {}
    for view in ("paid", "sales", "top_sales") * 2:  # the second time, the plans are kept
        before = _metastore_calls(spark)
        result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
        assert result.mode == "noop" and len(result.states) == (view == "top_sales")
        calls[view] = _metastore_calls(spark) - before
    assert calls["paid"] <= 8, calls
    assert calls["sales"] == calls["paid"] + 1, calls
    assert calls["top_sales"] <= calls["sales"] + 3, calls


def test_a_refresh_plans_from_the_logs_without_a_spark_job(spark, shop):
    """The versions, table ids and sizes a refresh plans from are read from the Delta logs
    and their checksum files, not computed by Spark jobs over the logs' state."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.25, 'ok')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental"
    assert result.phases["plan"].jobs == 0 and result.phases["versions"].jobs == 0


def test_the_changes_of_all_sources_are_read_in_one_spark_job(spark, shop):
    """Both sources of a join changed, one row a NULL in each: the refresh reads both
    changes by one Spark job (a little change is collected whole), where changes too large
    to collect are each kept by a job of their own; either way the view equals its query."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    change_jobs = []
    for round_, limit in enumerate((None, "0")):
        spark.sql(f"INSERT INTO customers VALUES ({10 + round_}, NULL), ({20 + round_}, 'APAC')")
        spark.sql(
            f"INSERT INTO orders VALUES ({30 + round_}, {10 + round_}, NULL, 'ok'), "
            f"({40 + round_}, {20 + round_}, 3.75, 'ok')"
        )
        spark.sql(f"DELETE FROM orders WHERE id = {1 + round_}")
        with session_settings(
            spark, {} if limit is None else {settings.INTERPRETED_MAX_BYTES: limit}
        ):
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
        assert result.mode == "incremental"
        assert_equals_query(spark, "sales", SALES)
        change_jobs.append(result.phases["change"].jobs)
    assert change_jobs[0] == 1 and change_jobs[1] >= 2, change_jobs


def test_a_change_the_view_does_not_see_commits_no_file(spark, shop):
    """The change to the store is empty (a void order): the refresh's commit records the
    source versions and adds no file."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("INSERT INTO orders VALUES (9, 1, 7.00, 'void')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental"
    last = history(spark, store_name(f"{shop}.sales"))[-1]
    assert json.loads(last.userMetadata)["ivm"]["mode"] == "incremental"
    [(_, actions)] = DeltaLogReader(spark, store_name(f"{shop}.sales")).actions(
        last.version, last.version
    )
    kinds = {action.getClass().getSimpleName() for action in actions}
    assert "AddFile" not in kinds and "SetTransaction" in kinds, kinds
    assert (result.rows_inserted, result.rows_updated, result.rows_deleted) == (0, 0, 0)
    recorded = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW sales").first()
    assert (recorded.rows_inserted, recorded.rows_updated, recorded.rows_deleted) == (0, 0, 0)
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "noop"
    assert_equals_query(spark, "sales", SALES)


def test_commits_that_change_no_row_are_recorded_without_reading_a_change(spark, shop):
    """Commits whose change data is empty (a property set; as a state table's commit of a
    refresh that changed none of its rows) need no delta query: the view cannot change."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("ALTER TABLE orders SET TBLPROPERTIES ('team' = 'sales')")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental" and result.rows_inserted == 0
    assert "delta" not in result.phases and result.phases["change"].jobs == 0
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.25, 'ok')")
    with session_settings(spark, MERGES):
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").rows_updated == 1
    assert_equals_query(spark, "sales", SALES)


def test_a_small_store_is_merged_into_in_fewer_jobs(spark, shop, monkeypatch):
    """The same change merged into the store as into a small one and as into a large one:
    the same rows, and the small store's MERGE runs its stages in fewer Spark jobs. (As for
    a change of more than ``spark.ivm.interpretedMaxBytes``: a smaller one runs in few jobs
    whatever the store's size.)"""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    write_jobs = {}
    for small, amount in ((1 << 40, "1.25"), (0, "2.50")):
        monkeypatch.setattr(settings, "SMALL_STORE_BYTES", small)
        spark.sql(f"INSERT INTO orders VALUES (5, 1, {amount}, 'ok')")
        with session_settings(spark, {settings.INTERPRETED_MAX_BYTES: "0"} | MERGES):
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
        assert result.mode == "incremental" and result.rows_updated == 1
        assert_equals_query(spark, "sales", SALES)
        write_jobs[small > 0] = result.phases["write"].jobs
    assert write_jobs[True] < write_jobs[False], write_jobs
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true", "the session keeps its own"


def refresh_compiling(spark, view: str, limit: str | None):
    """An incremental refresh of ``view`` with ``spark.ivm.interpretedMaxBytes`` ``limit``
    (None: the session's), and how many classes Spark compiled meanwhile (Spark counts them
    in ``CodegenMetrics``)."""
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source
    compilations = metrics.CodegenMetrics.METRIC_COMPILATION_TIME()
    before = compilations.getCount()
    with session_settings(spark, {} if limit is None else {settings.INTERPRETED_MAX_BYTES: limit}):
        result = ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {view}")
    assert result.mode == "incremental"
    return result, compilations.getCount() - before


def file_key_ranges(spark, table: str, key: str) -> list[tuple]:
    """The least and greatest ``key`` of each data file of the Delta table ``table``, in
    order."""
    per_file = spark.table(table).groupBy(F.col("_metadata.file_path")).agg(F.min(key), F.max(key))
    return sorted((low, high) for _, low, high in per_file.collect())


def test_a_keyed_store_is_written_in_key_order_and_a_change_is_merged_into_the_file_of_its_keys(
    spark, fresh_db, monkeypatch
):
    """Each file of a store written in key order holds a range of keys, which its statistics
    give. A change at a few neighbouring keys (a new key and NULL among them) is merged into
    the one file holding them: a shuffle by group put keys of every range in every file, and
    the MERGE rewrote them all. A large store's MERGE also says which ranges of keys it can
    touch, for Delta to skip the files of others (here every store counts as large), and a
    full refresh writes the ranges anew."""
    monkeypatch.setattr(merge_technique, "SMALL_STORE_BYTES", 0)
    within = []  # the MERGE's predicate on the stored rows' keys
    ranges_of = merge_technique.stored_key_ranges

    def recorded(*args):
        within.append(ranges_of(*args))
        return within[-1]

    monkeypatch.setattr(merge_technique, "stored_key_ranges", recorded)
    monkeypatch.setattr(settings, "STORE_FILE_ROWS", 100)  # files as a larger store's are
    spark.sql(f"CREATE TABLE events (k INT, x INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO events SELECT id % 400, id FROM range(4000)")
    view = "SELECT k, SUM(x) AS s, COUNT(*) AS n FROM events GROUP BY k"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals AS {view}")
    store = store_name(f"{fresh_db}.totals")
    ranges = file_key_ranges(spark, store, "k")
    assert len(ranges) == 4
    assert all(high < low for (_, high), (low, _) in itertools.pairwise(ranges)), ranges
    spark.sql("UPDATE events SET x = x + 1 WHERE k BETWEEN 10 AND 14")
    spark.sql("INSERT INTO events VALUES (NULL, 5), (1000, 7)")
    with session_settings(spark, MERGES):
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals").mode == "incremental"
    merge = history(spark, store)[-1]
    assert merge.operation == "MERGE"
    assert merge.operationMetrics["numTargetFilesRemoved"] == "1"
    assert [w.sql("spark") for w in within] == [
        " OR ".join(f"stored.k = {k}" for k in (10, 11, 12, 13, 14, 1000)) + " OR stored.k IS NULL"
    ]  # up to 32 ranges, here one per key
    assert_equals_query(spark, "totals", view)
    spark.sql("DELETE FROM events WHERE k < 100")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW totals FULL")
    ranges = file_key_ranges(spark, store, "k")
    assert ranges[0][0] == 100 and len(ranges) == 4  # NULL sorts first, beside 100
    assert all(high < low for (_, high), (low, _) in itertools.pairwise(ranges)), ranges
    assert_equals_query(spark, "totals", view)


def test_a_refresh_of_little_data_compiles_no_code_in_fewer_jobs(spark, shop):
    """Refreshes reading less than ``spark.ivm.interpretedMaxBytes`` evaluate their
    expressions without compiling Java code, in fewer Spark jobs; others compile it. Each
    gives the query's rows. (How many classes a later refresh of the view finds in Spark's
    cache is measured by the benchmarks, ``classes_compiled``: adaptive execution may number
    the classes of two query stages the other way round.)"""
    # a query of its own, so that no earlier test compiled its code
    query = (
        "SELECT c.region, MAX(o.amount) AS top, COUNT(*) AS n FROM orders o "
        "JOIN customers c ON o.cust_id = c.id WHERE o.id < 1000 GROUP BY c.region"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW top_amounts AS {query}")
    compiled, jobs = [], []
    for round_, limit in enumerate((None, None, "0")):  # the first warms Delta's code
        spark.sql(f"INSERT INTO orders VALUES ({20 + round_}, 2, {round_}.5, 'ok')")
        result, classes = refresh_compiling(spark, "top_amounts", limit)
        compiled.append(classes)
        jobs.append(sum(phase.jobs for phase in result.phases.values()))
        assert_equals_query(spark, "top_amounts", query)
    assert compiled[1] == 0 and compiled[2] > 0, compiled
    assert jobs[1] < jobs[2], jobs
    assert spark.conf.get(settings.FACTORY_MODE) == "FALLBACK", "the session keeps its own"


@pytest.mark.parametrize("layout", ["LOG", "MERGE"])
def test_a_small_change_is_written_as_little_data_whatever_computing_it_read(
    spark, shop, monkeypatch, layout
):
    """The write of a kept change reads the change (and a small store's rows), not what
    computing the change read: a change of a row or two, computed by a delta query that
    read more than ``spark.ivm.interpretedMaxBytes``, is appended to a logged store, or
    rewritten into a small merged one, under the settings of little data."""
    module = append_technique if layout == "LOG" else rewrite_technique
    used, plain = [], module.session_settings

    def recorded(session, conf):
        used.append(dict(conf))
        return plain(session, conf)

    monkeypatch.setattr(module, "session_settings", recorded)
    # customers without orders, in a file whose keys span those of the orders: a read of
    # the changed orders' customers reads it whole
    spark.sql(
        "INSERT INTO customers SELECT IF(id = 0, 0, id + 100), sha2(STRING(id), 256) "
        "FROM range(5000)"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales STORE LAYOUT {layout} AS {SALES}")
    store = store_name(f"{shop}.sales")
    # above the store and a change of two rows, below what the delta query reads
    limit = DeltaLogReader(spark, store).size_in_bytes() + 1000
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.25, 'ok'), (6, 2, 3.00, 'ok')")
    with session_settings(spark, {settings.INTERPRETED_MAX_BYTES: str(limit)}):
        result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert result.mode == "incremental"
    written = history(spark, store)[-1]
    assert written.operation == "WRITE", written.operation  # appended, or rewritten
    planned = json.loads(written.userMetadata)["ivm"]["planned_bytes"]
    assert planned > limit, planned
    assert used and all(conf.items() >= settings.LITTLE_DATA.items() for conf in used), used
    assert_equals_query(spark, "sales", SALES)


def test_a_delta_query_is_judged_by_the_files_it_reads_after_pruning(spark, fresh_db):
    """A one-row change of a small table joined with a large one, written in key order:
    the delta query reads the large table's files around the change's key, not all of
    them, and the plan says so before it runs. With ``spark.ivm.interpretedMaxBytes``
    between those files' size and the large table's, the delta query runs as little data
    (fewer Spark jobs); between the change's size and those files' it does not, while the
    change is read as little data both times. Either way the view equals its query."""
    spark.sql(f"CREATE TABLE facts (k BIGINT, v BIGINT) USING DELTA {CDF}")
    for part in range(8):  # eight files, each a range of keys
        spark.sql(
            f"INSERT INTO facts SELECT id, id % 7 FROM range({part * 5000}, {(part + 1) * 5000})"
        )
    detail = spark.sql("DESCRIBE DETAIL facts").first()
    one_file = detail.sizeInBytes // detail.numFiles
    assert settings.planned_read_bytes(spark.table("facts"), None) == detail.sizeInBytes
    assert (
        settings.planned_read_bytes(spark.table("facts").where("k BETWEEN 100 AND 200"), None)
        < 2 * one_file
    )

    spark.sql(f"CREATE TABLE picks (k BIGINT, tag STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO picks VALUES (1, 'a')")
    query = "SELECT p.tag, SUM(f.v) AS total FROM picks p JOIN facts f ON p.k = f.k GROUP BY p.tag"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW picked AS {query}")
    jobs = []
    for key, limit in ((12_345, 4 * one_file), (23_456, 4 * one_file), (34_567, one_file // 2)):
        spark.sql(f"INSERT INTO picks VALUES ({key}, 'b')")
        with session_settings(spark, {settings.INTERPRETED_MAX_BYTES: str(limit)}):
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW picked")
        assert result.mode == "incremental"
        jobs.append((result.phases["change"].jobs, result.phases["delta"].jobs))
        assert_equals_query(spark, "picked", query)
    assert jobs[1][0] == jobs[2][0] == 1 and jobs[1][1] < jobs[2][1], jobs


def test_scans_pruned_by_the_change_keys_are_planned_without_compiling(spark, fresh_db):
    """Delta skips files while Spark plans a statement, by a Spark job per filtered scan over
    the files' statistics. A delta query's filters hold the change's keys, new at every
    refresh: over sources of few files that job runs without compiled code, so a refresh
    compiles none; with ``spark.ivm.interpretedMaxBytes`` 0 it compiles anew for every new
    key. Either way the view equals its query."""
    spark.sql(f"CREATE TABLE facts (k BIGINT, v BIGINT) USING DELTA {CDF}")
    for part in range(4):  # files of key ranges, which the change's keys prune
        spark.sql(
            f"INSERT INTO facts SELECT id, id % 5 FROM range({part * 1000}, {(part + 1) * 1000})"
        )
    spark.sql(f"CREATE TABLE picks (k BIGINT, tag STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO picks VALUES (1, 'a')")
    query = (
        "SELECT p.tag, COUNT(*) AS n, SUM(f.v) AS total FROM picks p "
        "JOIN facts f ON p.k = f.k GROUP BY p.tag"
    )
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW picked_keys AS {query}")
    compiled = []
    # the first two refreshes insert the group 'b', then update it: what a MERGE compiles
    # once whatever the keys (as earlier tests do in the suite's order)
    keys = ((101, None), (102, None), (1202, None), (2303, None), (3404, "0"), (505, "0"))
    for key, limit in keys:
        spark.sql(f"INSERT INTO picks VALUES ({key}, 'b')")
        compiled.append(refresh_compiling(spark, "picked_keys", limit)[1])
        assert_equals_query(spark, "picked_keys", query)
    assert compiled[2] == compiled[3] == 0 and compiled[5] > 0, compiled


def test_the_plan_is_kept_until_a_source_schema_changes(spark, shop, monkeypatch):
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    compiled, original = [], definition.compile
    monkeypatch.setattr(
        definition,
        "compile",
        lambda *args, **kwargs: compiled.append(1) or original(*args, **kwargs),
    )
    for amount in ("1.00", "2.00"):
        spark.sql(f"INSERT INTO orders VALUES (7, 2, {amount}, 'ok')")
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "incremental"
    assert compiled == [1], "compiled once, then kept"

    spark.sql("ALTER TABLE customers ADD COLUMNS (segment STRING)")
    spark.sql("INSERT INTO customers VALUES (4, 'EU', 'retail')")
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales")
    assert compiled == [1, 1], "a source's schema changed: compiled again"
    assert_equals_query(spark, "sales", SALES)


def test_every_key_set_is_read_in_one_query(spark, fresh_db, monkeypatch):
    """Key sets of several types, with NULLs, and one with more keys than MAX_KEYS, read
    together: each comes back sorted in its column's order, as if read alone."""
    monkeypatch.setattr(pruning, "MAX_KEYS", 5)
    spark.sql("CREATE TABLE r (i INT, s STRING, d DATE, m DECIMAL(20, 4)) USING DELTA")
    spark.sql(
        "INSERT INTO r VALUES (3, 'b', DATE'2024-02-29', 1.5), (1, NULL, NULL, -2), "
        "(3, 'a', DATE'2023-01-01', NULL), (2, 'B', DATE'2024-02-29', 1.5)"
    )
    spark.sql("INSERT INTO r SELECT id, 'z', NULL, id FROM range(10, 20)")
    table = Scan(f"{fresh_db}.r", "r", ("i", "s", "d", "m"))
    small = Filter(table, exp.condition("r.i < 10"))
    wanted = [(small, "i"), (small, "s"), (small, "d"), (small, "m"), (table, "m")]
    actions = []
    collect = ClassicFrame.collect
    monkeypatch.setattr(
        ClassicFrame, "collect", lambda frame: actions.append(frame) or collect(frame)
    )
    found = pruning._distinct_keys(spark, wanted, None)
    assert len(actions) == 1
    assert found[wanted[0]] == ([1, 2, 3], False)
    assert found[wanted[1]] == (["B", "a", "b"], True)
    assert found[wanted[2]] == ([datetime.date(2023, 1, 1), datetime.date(2024, 2, 29)], True)
    assert found[wanted[3]] == ([Decimal("-2.0000"), Decimal("1.5000")], True)
    assert found[wanted[4]] is None, "13 keys: more than MAX_KEYS"


def test_a_refresh_keeps_nothing_after_it(spark, shop):
    """The changes a refresh kept (the sources', the store's) are released when it ends;
    Delta's own cached table states may stay."""
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW sales AS {SALES}")
    spark.sql("INSERT INTO orders VALUES (5, 1, 1.25, 'ok')")
    spark.sql("UPDATE customers SET region = 'APAC' WHERE id = 3")
    before = set(_persisted(spark))
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW sales").mode == "incremental"
    kept = {
        rdd: name
        for rdd, name in _persisted(spark).items()
        if rdd not in before and not name.startswith("Delta")
    }
    assert not kept, kept
    assert_equals_query(spark, "sales", SALES)


def test_rows_kept_by_the_executors_are_computed_and_counted_by_one_job(spark):
    """A change too large to collect is kept as a local checkpoint: the job that computes
    its rows counts them where they are (a DataFrame's count is a second job, adaptive),
    and later reads take them from the checkpoint, without a job to compute them again."""
    frame = spark.range(1000).selectExpr("id", "id % 7 AS k").where("k = 3")
    with session_settings(spark, {settings.ADAPTIVE: "true"}):
        cost, rows = Meter(spark).cost(lambda: kept(spark, frame, None))
    try:
        assert rows.rows == 143 and cost.jobs == 1, (rows.rows, cost.jobs)
        assert sorted(r.id for r in rows.frame.collect()) == list(range(3, 1000, 7))
    finally:
        assert rows.checkpoint is not None
        release(rows.checkpoint)


def _persisted(spark) -> dict[int, str]:
    """The persisted RDDs of the Spark application: id → name."""
    found = spark.sparkContext._jsc.getPersistentRDDs()
    return {int(rdd): str(found[rdd].name()) for rdd in found}


def test_a_snapshot_read_from_its_files_reads_those_of_the_change_keys(
    spark, fresh_db, monkeypatch
):
    """``spark.ivm.snapshotReads=files``: a version's files listed from the log, kept from
    refresh to refresh (Delta lists a table once per session), and a snapshot restricted to
    the change's keys bound over the files whose statistics admit them. The fact table
    changes too (a row updated and one deleted: files removed and added), so later listings
    come from its commits; the view equals its query after each refresh, and the delta
    query runs fewer Spark jobs than when Delta plans the same reads."""
    spark.sql(f"CREATE TABLE facts (k BIGINT, v BIGINT) USING DELTA {CDF}")
    for part in range(6):  # six files, each a range of keys
        spark.sql(
            f"INSERT INTO facts SELECT id, id % 7 FROM range({part * 1000}, {(part + 1) * 1000})"
        )
    spark.sql(f"CREATE TABLE picks (k BIGINT, tag STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO picks VALUES (1, 'a'), (NULL, 'n')")
    query = "SELECT p.tag, SUM(f.v) AS total FROM picks p JOIN facts f ON p.k = f.k GROUP BY p.tag"
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW picked_files AS {query}")
    from_delta = []
    listed_by_delta = file_lists._from_delta
    monkeypatch.setattr(
        file_lists,
        "_from_delta",
        lambda *args: from_delta.append(args[2]) or listed_by_delta(*args),
    )
    delta_jobs = {}
    for round_, reads in enumerate(("files", "files", "delta", "files")):
        key = 1234 + 1000 * round_
        spark.sql(f"INSERT INTO picks VALUES ({key}, 'b'), ({key + 1}, NULL)")
        spark.sql(f"UPDATE facts SET v = v + 10 WHERE k = {key + 1}")
        spark.sql(f"DELETE FROM facts WHERE k = {key + 2}")
        before = len(from_delta)
        with session_settings(spark, {settings.SNAPSHOT_READS: reads}):
            result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW picked_files")
        assert result.mode == "incremental"
        assert_equals_query(spark, "picked_files", query)
        delta_jobs.setdefault(reads, []).append(result.phases["delta"].jobs)
        recorded = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW picked_files").first()
        if reads == "delta":
            assert recorded.snapshot_reads is None
        else:  # facts' files read where they hold a changed key: few of those listed
            assert set(recorded.snapshot_reads) == {f"{fresh_db}.facts", f"{fresh_db}.picks"}
            read, of = map(int, re.findall(r"\d+", recorded.snapshot_reads[f"{fresh_db}.facts"]))
            assert recorded.snapshot_reads[f"{fresh_db}.facts"].startswith("files: ")
            assert 0 < read and 3 * read <= of, recorded.snapshot_reads
        if round_ == 1:  # both tables listed the round before: listed from their commits
            assert len(from_delta) == before, from_delta
    assert max(delta_jobs["files"][1:]) < delta_jobs["delta"][0], delta_jobs
