"""The SparkSession: Delta features ivm relies on, and the persistent catalog under the home."""

import os
from pathlib import Path

import pytest

from ivm.runtime.spark.session import resolve_home, session_conf
from tests.support.helpers import run_python

REPO = Path(__file__).resolve().parents[3]


# --- configuration (no JVM) -------------------------------------------------------------


def test_home_defaults_to_env_then_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IVM_HOME", raising=False)
    assert resolve_home() == tmp_path / "ivm_home"
    monkeypatch.setenv("IVM_HOME", "elsewhere")
    assert resolve_home() == tmp_path / "elsewhere"
    assert resolve_home(tmp_path / "a" / ".." / "b") == tmp_path / "b"


def test_user_settings_win_and_lists_merge():
    home = Path("/h")
    ambient = {
        "spark.sql.shuffle.partitions": "16",
        "spark.jars.packages": "org.example:thing_2.13:1.0,io.delta:delta-spark_2.13:9.9",
        "spark.sql.extensions": "org.example.Ext",
        "spark.driver.extraJavaOptions": "-Xss4m",
    }
    defaults, final = session_conf(home, ambient=ambient, conf={"spark.sql.warehouse.dir": "/w"})
    assert "spark.sql.shuffle.partitions" not in final  # the user's value stays in force
    assert final["spark.sql.warehouse.dir"] == "/w"  # explicit conf beats our default
    assert defaults["spark.sql.warehouse.dir"] == "/h/warehouse"
    # the user's delta version is kept, nothing is added twice
    assert final["spark.jars.packages"] == ambient["spark.jars.packages"]
    assert final["spark.sql.extensions"] == (
        "org.example.Ext,io.delta.sql.DeltaSparkSessionExtension"
    )
    assert final["spark.driver.extraJavaOptions"].startswith(
        # then the log's (tests/runtime/spark/test_console.py)
        "-Xss4m -Dderby.stream.error.file=/h/derby.log "
    )
    assert final["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
        "jdbc:derby:;databaseName=/h/metastore_db;create=true"
    )


def test_delta_jars_from_ivy_cache_or_packages(monkeypatch):
    import ivm.runtime.spark.jars as ivm_jars

    jars = [Path("/ivy/jars/a.jar"), Path("/ivy/jars/b.jar")]
    monkeypatch.setattr(ivm_jars, "cached_jars", lambda: jars)
    _, final = session_conf(Path("/h"), ambient={"spark.jars": "/x.jar"})
    assert final["spark.jars"] == "/x.jar,/ivy/jars/a.jar,/ivy/jars/b.jar"
    assert "spark.jars.packages" not in final
    # packages of the user's own (or a custom Ivy directory) go through Ivy, with Delta added
    _, final = session_conf(Path("/h"), conf={"spark.jars.packages": "org.example:x:1"})
    packages = final["spark.jars.packages"].split(",")
    assert packages == ["org.example:x:1", *ivm_jars.delta_packages()]
    assert "spark.jars" not in final
    monkeypatch.setattr(ivm_jars, "cached_jars", lambda: None)  # not fetched yet
    _, final = session_conf(Path("/h"))
    assert final["spark.jars.packages"].split(",") == ivm_jars.delta_packages()


def test_ambient_conf_reads_spark_defaults_and_submit_args(tmp_path, monkeypatch):
    from ivm.runtime.spark.session import ambient_conf, launch_conf

    (tmp_path / "spark-defaults.conf").write_text(
        "# comment\nspark.ivmtest.a   1\nspark.ivmtest.b=2\n"
        "spark.ivmtest.c -Dx=1 -Dy=2\nspark.ivmtest.d : a b\nspark.ivmtest.e = f=g\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.ivmtest.b=3 pyspark-shell")
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "2g")
    found = ambient_conf()
    assert (found["spark.ivmtest.a"], found["spark.ivmtest.b"]) == ("1", "3")
    # as java.util.Properties reads it: the key ends at the first blank, '=' or ':'
    assert (found["spark.ivmtest.c"], found["spark.ivmtest.d"], found["spark.ivmtest.e"]) == (
        "-Dx=1 -Dy=2",
        "a b",
        "f=g",
    )
    assert launch_conf()["spark.driver.memory"] == "2g"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 3g pyspark-shell")
    assert launch_conf()["spark.driver.memory"] == "3g"  # as spark-submit: the option wins


def test_local_defaults_only_on_local_master():
    _, local = session_conf(Path("/h"))
    assert local["spark.master"] == "local[*]"
    assert local["spark.ui.enabled"] == "false"
    _, remote = session_conf(Path("/h"), ambient={"spark.master": "spark://host:7077"})
    assert "spark.master" not in remote and "spark.ui.enabled" not in remote


def test_console_progress_is_a_default_the_users_setting_wins_over():
    _, final = session_conf(Path("/h"), console_progress=True)
    assert final["spark.ui.showConsoleProgress"] == "true"
    _, final = session_conf(
        Path("/h"), console_progress=True, ambient={"spark.ui.showConsoleProgress": "false"}
    )
    assert "spark.ui.showConsoleProgress" not in final  # the user's value stays in force
    _, final = session_conf(Path("/h"))
    assert final["spark.ui.showConsoleProgress"] == "false"


# --- the shared session -----------------------------------------------------------------


def test_local_driver_heap_is_the_default_not_sparks_1g(spark):
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    assert runtime.maxMemory() > 3 * 2**30


def test_the_settings_fetched_at_once_are_the_sessions_own(spark):
    """:func:`settings_of` reads a classic session's settings as one JSON text: the same as
    PySpark's ``getAll``, values with quotes, backslashes, newlines and other scripts too."""
    from ivm.runtime.spark.connect import settings_of

    odd = 'a "quoted" \\ back\nslash, größe, 日本'
    spark.conf.set("spark.ivm.test.odd", odd)
    try:
        fetched = settings_of(spark)
        assert fetched == spark.conf.getAll
        assert fetched["spark.ivm.test.odd"] == odd
    finally:
        spark.conf.unset("spark.ivm.test.odd")


def test_delta_cdf_and_time_travel(spark, fresh_db):
    spark.sql(
        "CREATE TABLE t (id INT, v STRING) USING delta "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    )
    spark.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')")  # version 1
    spark.sql("UPDATE t SET v = 'c' WHERE id = 2")  # version 2

    changes = spark.sql(
        "SELECT id, v, _change_type, _commit_version FROM table_changes('t', 1, 2)"
    ).collect()
    assert sorted(tuple(r) for r in changes) == [
        (1, "a", "insert", 1),
        (2, "b", "insert", 1),
        (2, "b", "update_preimage", 2),
        (2, "c", "update_postimage", 2),
    ]
    old = spark.sql("SELECT id, v FROM t VERSION AS OF 1 ORDER BY id").collect()
    assert [tuple(r) for r in old] == [(1, "a"), (2, "b")]
    assert spark.table(f"{fresh_db}.t").where("v = 'c'").count() == 1


def test_catalog_and_warehouse_under_home(spark, spark_home, fresh_db):
    assert spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:") == str(
        spark_home / "warehouse"
    )
    assert spark.conf.get("spark.sql.catalogImplementation") == "hive"
    spark.sql("CREATE TABLE w (x INT) USING delta")
    location = spark.sql("DESCRIBE DETAIL w").first()["location"]
    assert location.removeprefix("file:").startswith(str(spark_home / "warehouse") + "/")
    assert (spark_home / "metastore_db").is_dir()
    assert (spark_home / "derby.log").is_file()


# --- persistence across JVMs (each subprocess starts its own JVM: ~10 s) -------------------


@pytest.mark.slow
def test_tables_persist_across_restarts(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    cwd.mkdir()
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("IVM_HOME", None)
    run_python(
        f"""
        from ivm.runtime.spark.session import spark_session
        spark = spark_session(home={str(home)!r})
        spark.sql("CREATE DATABASE d")
        spark.sql("CREATE TABLE d.p (x INT) USING delta")
        spark.sql("INSERT INTO d.p VALUES (42)")
        spark.stop()
        """,
        env,
        cwd=cwd,
        timeout=300,
    )
    # The second run finds the home through IVM_HOME, the default when no argument is given.
    out = run_python(
        """
        from ivm.runtime.spark.session import spark_session
        spark = spark_session()
        print("count", spark.table("d.p").count(), spark.table("d.p").first()["x"])
        spark.stop()
        """,
        {**env, "IVM_HOME": str(home)},
        cwd=cwd,
        timeout=300,
    )
    assert "count 1 42" in out.splitlines()
    assert list(cwd.iterdir()) == []  # no metastore_db, derby.log or spark-warehouse litter
