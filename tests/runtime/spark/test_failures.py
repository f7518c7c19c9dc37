"""Spark's and Delta's failures as ivm tells them apart (:mod:`ivm.runtime.spark.failures`),
each produced for real, and what a refresh makes of them."""

import glob
import os
from urllib.parse import urlparse

import pytest
from pyspark.sql import functions as F

import ivm
from ivm.codegen.store import NEGATIVE_COUNT
from ivm.errors import CatalogError, SourceError, StateError
from ivm.runtime.catalog.tables import store_name
from ivm.runtime.log.delta_log import DeltaLogReader
from ivm.runtime.refresh.commit import spark_call, spark_errors
from ivm.runtime.refresh.execute import refresh_view
from ivm.runtime.spark.failures import Failure, classify, missing_file
from ivm.runtime.spark.settings import session_settings
from ivm.store import OVERFLOW
from tests.support.cdf import CDF, vacuum_everything

ANSI = {"spark.sql.ansi.enabled": "true"}


def failure_of(spark, sql: str, settings: dict[str, str] | None = None) -> Exception:
    """What running ``sql`` to the end raises."""
    with pytest.raises(Exception) as raised, session_settings(spark, settings or {}):
        spark.sql(sql).collect()
    return raised.value


def location(spark, table: str) -> str:
    return DeltaLogReader(spark, table).detail()["location"]


@pytest.fixture
def r(spark, fresh_db):
    """A source ``r`` with a version 2 whose change is in change data files."""
    spark.sql(f"CREATE TABLE r (k INT, a INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO r VALUES (1, 10), (2, 20)")
    spark.sql("UPDATE r SET a = a + 1 WHERE k = 2")
    return f"{fresh_db}.r"


@pytest.mark.parametrize(
    "type_, big", [("BIGINT", "9223372036854775807"), ("DECIMAL(38,0)", "9" * 38)]
)
def test_a_sum_overflowing_under_ansi_mode_is_an_overflow(spark, fresh_db, type_, big):
    spark.sql(f"CREATE TABLE big (k INT, a {type_}) USING DELTA")
    spark.sql(f"INSERT INTO big VALUES (1, {big}), (1, 1)")
    error = failure_of(spark, "SELECT k, SUM(a) FROM big GROUP BY k", ANSI)
    assert classify(error) is Failure.OVERFLOW


def test_a_cast_overflowing_under_ansi_mode_is_an_overflow(spark):
    error = failure_of(spark, "SELECT CAST(9223372036854775807 AS INT)", ANSI)
    assert classify(error) is Failure.OVERFLOW


def test_a_sum_the_fold_finds_overflowing_is_an_overflow(spark):
    """A fold raises :data:`~ivm.store.OVERFLOW` where Spark without ANSI mode gives NULL."""
    assert classify(failure_of(spark, f"SELECT raise_error('{OVERFLOW}')")) is Failure.OVERFLOW


def test_a_count_below_zero_is_a_store_that_disagrees(spark):
    with pytest.raises(Exception) as raised:
        spark.range(1).select(F.raise_error(F.lit(NEGATIVE_COUNT))).collect()
    error = raised.value
    assert classify(error) is Failure.STORE_DISAGREES


def test_another_raised_error_is_none_of_ivms(spark):
    assert classify(failure_of(spark, "SELECT raise_error('something else')")) is None


def test_a_change_data_file_removed_by_vacuum_is_lost_change_data(spark, r):
    vacuum_everything(spark, "r")
    error = failure_of(spark, "SELECT * FROM table_changes('r', 2, 2)")
    assert "/_change_data/" in (missing_file(error) or "")
    assert classify(error, [location(spark, r)]) is Failure.CHANGE_DATA_LOST
    with pytest.raises(SourceError, match="change data of a source is no longer available"):
        with spark_errors("v", spark, [r]):
            spark.sql("SELECT * FROM table_changes('r', 2, 2)").collect()


def test_a_snapshot_file_removed_by_vacuum_is_lost_change_data(spark, r):
    vacuum_everything(spark, "r")
    error = failure_of(spark, "SELECT * FROM r VERSION AS OF 1")
    assert classify(error, [location(spark, r)]) is Failure.CHANGE_DATA_LOST


def test_change_data_not_recorded_is_lost_change_data(spark, fresh_db):
    spark.sql("CREATE TABLE late (k INT) USING DELTA")
    spark.sql("INSERT INTO late VALUES (1)")
    spark.sql("ALTER TABLE late SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    error = failure_of(spark, "SELECT * FROM table_changes('late', 0, 2)")
    assert classify(error) is Failure.CHANGE_DATA_LOST


def test_a_version_not_in_the_log_is_lost_change_data(spark, r):
    assert classify(failure_of(spark, "SELECT * FROM r VERSION AS OF 99")) is (
        Failure.CHANGE_DATA_LOST
    )


def test_a_change_across_a_renamed_column_is_lost_change_data(spark, fresh_db):
    spark.sql(
        "CREATE TABLE m (k INT, a INT) USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed "
        "= true, delta.columnMapping.mode = 'name', delta.minReaderVersion = 2, "
        "delta.minWriterVersion = 5)"
    )
    spark.sql("INSERT INTO m VALUES (1, 1)")
    spark.sql("ALTER TABLE m RENAME COLUMN a TO b")
    error = failure_of(spark, "SELECT * FROM table_changes('m', 0, 2)")
    assert classify(error) is Failure.CHANGE_DATA_LOST


def test_a_missing_table_is_an_unresolved_name(spark, fresh_db):
    assert classify(failure_of(spark, "SELECT * FROM nowhere")) is Failure.UNRESOLVED_NAME
    with pytest.raises(CatalogError, match="nowhere"):
        ivm.compile("SELECT k FROM nowhere", spark=spark)


def test_a_commit_that_another_commit_beat_is_a_lost_race(spark, fresh_db):
    """A transaction read a file that another one deleted before it committed: Delta
    refuses its commit, which a refresh's write takes for a lost race (a value) and starts
    again from a fresh read."""
    spark.sql("CREATE TABLE c (k INT) USING DELTA")
    spark.sql("INSERT INTO c VALUES (1)")
    transaction = _reading_every_file(spark, location(spark, "c"))
    spark.sql("DELETE FROM c")
    with pytest.raises(Exception) as raised:
        _commit_nothing(spark, transaction)
    assert classify(raised.value) is Failure.LOST_RACE

    spark.sql("INSERT INTO c VALUES (2)")
    transaction = _reading_every_file(spark, location(spark, "c"))
    spark.sql("DELETE FROM c")
    lost = [Failure.LOST_RACE]
    assert spark_call("v", spark, [], lambda: _commit_nothing(spark, transaction), lost) in lost


def _reading_every_file(spark, path: str):
    """A Delta transaction of the table at ``path`` that has read all its files."""
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    transaction = log.startTransaction()
    transaction.filterFiles()
    return transaction


def _commit_nothing(spark, transaction) -> None:
    delta, scala = spark._jvm.org.apache.spark.sql.delta, spark._jvm.scala.collection.immutable
    no_actions = getattr(getattr(scala, "Nil$"), "MODULE$")
    manual_update = getattr(getattr(delta, "DeltaOperations$ManualUpdate$"), "MODULE$")
    transaction.commit(no_actions, manual_update)


def test_a_missing_file_of_no_source_is_not_lost_change_data(spark, r, fresh_db):
    spark.sql("CREATE TABLE other (k INT) USING DELTA")
    spark.sql("INSERT INTO other VALUES (1)")
    for file in glob.glob(os.path.join(urlparse(location(spark, "other")).path, "*.parquet")):
        os.remove(file)
    error = failure_of(spark, "SELECT * FROM other")
    assert classify(error, [location(spark, r)]) is Failure.FILE_MISSING


def test_a_refresh_missing_a_file_of_its_store_fails_naming_it(spark, r):
    """Not a recompute: that would hide a table damaged outside Delta."""
    ivm.sql(spark, "CREATE MATERIALIZED VIEW totals AS SELECT k, SUM(a) AS s FROM r GROUP BY k")
    spark.sql("INSERT INTO r VALUES (1, 1)")
    store = store_name(f"{r.split('.')[0]}.totals")
    [removed] = glob.glob(os.path.join(urlparse(location(spark, store)).path, "*.parquet"))
    os.remove(removed)
    version = DeltaLogReader(spark, store).version()
    with pytest.raises(StateError) as raised:
        refresh_view(spark, "totals")
    assert os.path.basename(removed) in raised.value.message
    assert f"FSCK REPAIR TABLE {store}" in (raised.value.hint or "")
    assert DeltaLogReader(spark, store).version() == version, "the store was written"
