"""What a definition means is fixed at CREATE: the tables it read (by Delta table id), the
database its names resolve in, and the session settings that give it its meaning."""

import json
import uuid
from contextlib import contextmanager

import pytest

import ivm
from ivm.names import internal_database
from ivm.runtime.catalog.history import RefreshRecord
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.observation.lag import lag_seconds
from tests.support.cdf import CDF

TIME_ZONE = "spark.sql.session.timeZone"
ANSI = "spark.sql.ansi.enabled"


def assert_equals_query(spark, view, query):
    got, want = spark.table(view), spark.sql(query)
    extra, missing = got.exceptAll(want).collect(), want.exceptAll(got).collect()
    assert not extra and not missing, f"extra rows {extra}, missing rows {missing}"


@contextmanager
def setting(spark, key, value):
    """``key`` set to ``value`` in the shared session for the block."""
    old = spark.conf.get(key)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.set(key, old)


def view_setting(spark, view, key):
    """The setting ``key`` Spark recorded when it created the catalog view ``view``."""
    jvm = spark._jvm
    db, name = view.split(".")
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some(db))
    configs = spark._jsparkSession.sessionState().catalog().getTableMetadata(ident).viewSQLConfigs()
    return configs.get(key).get()


@pytest.fixture
def other_db(spark):
    """A second database, dropped afterwards."""
    name = f"o_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
        spark.sql(f"DROP DATABASE IF EXISTS {internal_database(name)} CASCADE")


# Source identity --------------------------------------------------------------------------


@pytest.mark.parametrize("inserts", [1, 2], ids=["same_version", "higher_version"])
def test_a_source_dropped_and_recreated_is_recomputed(spark, fresh_db, inserts):
    """Re-created under its name, a source is another table: at the version the view
    consumed (one insert) its change would look empty, at a higher one (two) its change feed
    would be folded into the old table's state."""
    query = "SELECT k, COUNT(*) AS n FROM s GROUP BY k"
    spark.sql(f"CREATE TABLE s (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO s VALUES (1), (2)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {query}")
    spark.sql("DROP TABLE s")
    spark.sql(f"CREATE TABLE s (k INT) USING DELTA {CDF}")
    for k in range(2, 2 + inserts):
        spark.sql(f"INSERT INTO s VALUES ({k})")
    assert lag_seconds(spark, f"{fresh_db}.v") > 0, "ivm run would leave the view stale"
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW v")
    assert result.mode == "full" and "re-created" in result.reason
    assert_equals_query(spark, "v", query)
    last = ivm.sql(spark, "DESCRIBE HISTORY MATERIALIZED VIEW v").first()
    assert (last.mode, last.reason) == ("full", result.reason)
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "noop"


def test_an_upstream_view_whose_store_was_recreated_is_recomputed(spark, fresh_db):
    spark.sql(f"CREATE TABLE s (k INT) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE r (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO s VALUES (1), (2)")
    spark.sql("INSERT INTO r VALUES (5)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW up AS SELECT k FROM s")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW down AS SELECT k FROM up")
    spark.sql("DROP VIEW up")  # by hand: DROP MATERIALIZED VIEW refuses
    spark.sql(f"DROP TABLE {store_name(f'{fresh_db}.up')}")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW up AS SELECT k FROM r")
    result = ivm.sql(spark, "REFRESH MATERIALIZED VIEW down")
    assert result.mode == "full" and "re-created" in result.reason
    assert_equals_query(spark, "down", "SELECT k FROM r")


def test_records_keep_table_ids_and_records_of_other_versions_still_load(spark, fresh_db):
    spark.sql(f"CREATE TABLE s (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO s VALUES (1)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT k FROM s")
    table_id = spark.sql("DESCRIBE DETAIL s").first().id
    metadata = (
        spark.sql(f"DESCRIBE HISTORY {store_name(f'{fresh_db}.v')}")
        .where("version = 0")
        .first()
        .userMetadata
    )
    assert json.loads(metadata)["ivm"]["table_ids"] == {f"{fresh_db}.s": table_id}
    old = RefreshRecord.from_json(
        json.dumps(
            {
                "ivm": {
                    "mode": "create",
                    "sources": {"a.s": 1},
                    "reason": None,
                    "read_bytes": None,
                    "refresh": "x",
                    "started_ms": 0,
                }
            }
        )
    )
    assert old.sources == {"a.s": 1} and old.table_ids is None
    later = RefreshRecord.from_json(
        json.dumps({"ivm": {"mode": "incremental", "sources": {}, "written_by_a_later_ivm": 1}})
    )
    assert later is not None and later.mode == "incremental"


# Names resolve where the view was created -------------------------------------------------


def test_refresh_all_from_another_database_reads_the_views_own_sources(spark, fresh_db, other_db):
    spark.sql(f"CREATE TABLE sr (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO sr VALUES (1)")
    spark.sql(f"CREATE TABLE {other_db}.sr (k INT) USING DELTA {CDF}")  # a decoy
    spark.sql(f"INSERT INTO {other_db}.sr VALUES (99)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW up AS SELECT k FROM sr")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW down AS SELECT k, COUNT(*) AS n FROM up GROUP BY k")
    spark.sql("INSERT INTO sr VALUES (2)")
    spark.sql(f"USE {other_db}")
    results = ivm.sql(spark, "REFRESH ALL MATERIALIZED VIEWS")
    assert {r.view: r.mode for r in results} == {
        f"{fresh_db}.up": "incremental",
        f"{fresh_db}.down": "incremental",
    }
    ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {fresh_db}.up FULL")
    assert_equals_query(spark, f"{fresh_db}.up", f"SELECT k FROM {fresh_db}.sr")
    assert_equals_query(
        spark, f"{fresh_db}.down", f"SELECT k, COUNT(*) AS n FROM {fresh_db}.sr GROUP BY k"
    )
    facts = dict(ivm.sql(spark, f"DESCRIBE MATERIALIZED VIEW {fresh_db}.down").collect())
    assert facts["database"] == fresh_db
    with pytest.raises(ivm.IvmError, match="read by"):
        ivm.sql(spark, f"DROP MATERIALIZED VIEW {fresh_db}.up")


def test_a_view_named_in_another_database_reads_the_current_ones(spark, fresh_db, other_db):
    spark.sql(f"CREATE TABLE sr (k INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO sr VALUES (1)")
    ivm.sql(spark, f"CREATE MATERIALIZED VIEW {other_db}.v PARTITIONED BY (k) AS SELECT k FROM sr")
    spark.sql("INSERT INTO sr VALUES (2)")
    spark.sql(f"USE {other_db}")
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
    assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v PARTITION (k = 1)").mode == "partition"
    assert_equals_query(spark, "v", f"SELECT k FROM {fresh_db}.sr")


def test_a_view_without_a_recorded_database_resolves_in_its_own(spark, fresh_db, other_db):
    spark.sql(f"CREATE TABLE sr (k INT) USING DELTA {CDF}")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT k FROM sr")
    spark.sql(f"ALTER TABLE {store_name(f'{fresh_db}.v')} UNSET TBLPROPERTIES ('ivm.database')")
    spark.sql("INSERT INTO sr VALUES (3)")
    spark.sql(f"USE {other_db}")
    assert ivm.sql(spark, f"REFRESH MATERIALIZED VIEW {fresh_db}.v").mode == "incremental"
    assert_equals_query(spark, f"{fresh_db}.v", f"SELECT k FROM {fresh_db}.sr")


# Settings are pinned at CREATE ------------------------------------------------------------

TIMES = (
    "SELECT CAST(ts AS DATE) AS d, hour(ts) AS h, COUNT(*) AS n FROM t "
    "GROUP BY CAST(ts AS DATE), hour(ts)"
)


def test_a_refresh_under_another_time_zone_keeps_the_create_zone(spark, fresh_db):
    with setting(spark, TIME_ZONE, "UTC"):
        spark.sql(f"CREATE TABLE t (ts TIMESTAMP) USING DELTA {CDF}")
        spark.sql("INSERT INTO t VALUES (TIMESTAMP'2024-01-01 23:30:00Z')")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v PARTITIONED BY (d) AS {TIMES}")
        spark.sql("INSERT INTO t VALUES (TIMESTAMP'2024-01-02 05:00:00Z')")
    with setting(spark, TIME_ZONE, "Asia/Tokyo"):
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
        facts = dict(ivm.sql(spark, "DESCRIBE MATERIALIZED VIEW v").collect())
        assert facts[f"setting {TIME_ZONE}"] == "UTC"
    with setting(spark, TIME_ZONE, "UTC"):
        assert_equals_query(spark, "v", TIMES)
    for statement in (
        "REFRESH MATERIALIZED VIEW v FULL",
        "REFRESH MATERIALIZED VIEW v PARTITION (d = '2024-01-02')",
    ):
        with setting(spark, TIME_ZONE, "America/Los_Angeles"):
            ivm.sql(spark, statement)
        with setting(spark, TIME_ZONE, "UTC"):
            assert_equals_query(spark, "v", TIMES)


def test_create_or_replace_pins_the_settings_anew(spark, fresh_db):
    spark.sql(f"CREATE TABLE t (ts TIMESTAMP) USING DELTA {CDF}")
    spark.sql("INSERT INTO t VALUES (TIMESTAMP'2024-01-01 23:30:00Z')")
    with setting(spark, TIME_ZONE, "UTC"):
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW v AS {TIMES}")
    with setting(spark, TIME_ZONE, "Asia/Tokyo"):
        ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW v AS {TIMES}")
        spark.sql("INSERT INTO t VALUES (TIMESTAMP'2024-01-02 05:00:00Z')")
    with setting(spark, TIME_ZONE, "UTC"):
        spark.sql("DROP VIEW v")  # the catalog view is made again under the pinned settings
        ivm.sql(spark, "REFRESH MATERIALIZED VIEW v")
        assert view_setting(spark, f"{fresh_db}.v", TIME_ZONE) == "Asia/Tokyo"
    with setting(spark, TIME_ZONE, "Asia/Tokyo"):
        assert_equals_query(spark, "v", TIMES)


def test_a_refresh_under_ansi_mode_keeps_the_create_mode(spark, fresh_db):
    spark.sql(f"CREATE TABLE t (s STRING) USING DELTA {CDF}")
    with setting(spark, ANSI, "false"):
        ivm.sql(spark, "CREATE MATERIALIZED VIEW v AS SELECT CAST(s AS INT) AS i FROM t")
    spark.sql("INSERT INTO t VALUES ('1'), ('x')")
    with setting(spark, ANSI, "true"):
        assert ivm.sql(spark, "REFRESH MATERIALIZED VIEW v").mode == "incremental"
    with setting(spark, ANSI, "false"):
        assert_equals_query(spark, "v", "SELECT CAST(s AS INT) AS i FROM t")
