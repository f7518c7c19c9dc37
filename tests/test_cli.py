"""The ivm command: run as a user runs it, in its own process, or in the tests' session where
what it prints is what is tested."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ivm
from ivm import cli
from tests.support.cdf import CDF
from tests.support.helpers import assert_equals_query

IVM = str(Path(sys.executable).with_name("ivm"))
SCHEMA = {"orders": {"id": "INT", "status": "STRING", "amount": "INT"}}


def run(*args, cwd, env=None):
    return subprocess.run(
        [IVM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def test_compile_prints_explain_and_sql(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "view.sql").write_text(
        "CREATE MATERIALIZED VIEW totals AS\n"
        "SELECT status, SUM(amount) AS total FROM orders GROUP BY status"
    )
    result = run("compile", "view.sql", "--schema", "schema.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rule aggregate (invertible)" in result.stdout
    assert "FROM delta__orders AS orders" in result.stdout


def test_compile_error_is_a_message_not_a_traceback(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "view.sql").write_text(
        "SELECT status\nFROM orders\nWHERE RANK() OVER (ORDER BY amount) = 1"
    )
    result = run("compile", "view.sql", "--schema", "schema.json", cwd=tmp_path)
    assert result.returncode == 1
    assert "window function in WHERE is not supported" in result.stderr
    assert "line 3, column 7" in result.stderr and "Traceback" not in result.stderr


def test_missing_file(tmp_path):
    result = run("compile", "nope.sql", "--schema", "schema.json", cwd=tmp_path)
    assert result.returncode == 1 and "nope.sql" in result.stderr


@pytest.mark.slow
def test_views_survive_a_restart_and_refresh_from_the_shell(tmp_path):
    """Create sources and a view in one process; refresh and read it from two more."""
    setup = (
        "import ivm\n"
        "spark = ivm.spark_session()\n"
        "spark.sql('CREATE TABLE orders (id INT, status STRING, amount INT) USING DELTA "
        "TBLPROPERTIES (delta.enableChangeDataFeed = true)')\n"
        "spark.sql(\"INSERT INTO orders VALUES (1, 'paid', 10), (2, 'open', 5)\")\n"
        "ivm.sql(spark, 'CREATE MATERIALIZED VIEW totals AS SELECT status, SUM(amount) AS "
        "total FROM orders GROUP BY status')\n"
        "spark.sql(\"INSERT INTO orders VALUES (3, 'paid', 7)\")\n"
    )
    env = {"IVM_HOME": str(tmp_path / "home")}
    created = subprocess.run(
        [sys.executable, "-c", setup],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert created.returncode == 0, created.stderr[-2000:]

    (tmp_path / "totals.sql").write_text(
        "SELECT status, SUM(amount) AS total FROM orders GROUP BY status"
    )
    explained = run("explain", "totals.sql", cwd=tmp_path, env=env)
    assert explained.returncode == 0, explained.stderr[-2000:]
    assert "rule aggregate (invertible)" in explained.stdout
    assert "the next refresh of default.totals: incremental, a change of" in explained.stdout

    refreshed = run("sql", "REFRESH MATERIALIZED VIEW totals", cwd=tmp_path, env=env)
    assert refreshed.returncode == 0, refreshed.stderr[-2000:]
    assert "incremental refresh of default.totals" in refreshed.stdout
    assert "default.orders v1→v2" in refreshed.stdout

    shown = run("sql", "SELECT * FROM totals WHERE status = 'paid'", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "|paid  |17   |" in shown.stdout

    missing = run("sql", "REFRESH MATERIALIZED VIEW nope", cwd=tmp_path, env=env)
    assert missing.returncode == 1
    assert "materialized view default.nope does not exist" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize(
    "schema, messages",
    [
        ("{orders: [", ("--schema schema.json is not valid JSON", "line 1, column 2")),
        ('["orders"]', ("{table: {column: type}}",)),
    ],
    ids=["not_json", "wrong_shape"],
)
def test_compile_with_a_bad_schema_file_is_a_usage_error(tmp_path, schema, messages):
    (tmp_path / "schema.json").write_text(schema)
    (tmp_path / "view.sql").write_text("SELECT status FROM orders")
    result = run("compile", "view.sql", "--schema", "schema.json", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert all(message in result.stderr for message in messages), result.stderr


@pytest.mark.parametrize("tick", ["-5", "0", "nan", "soon"])
def test_run_refuses_a_tick_that_is_not_a_positive_number(tmp_path, tick):
    result = run("run", "--tick", tick, cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--tick" in result.stderr and "positive number of seconds" in result.stderr


def test_sql_says_what_each_statement_did(spark, fresh_db, tmp_path, monkeypatch, capsys):
    """OK for a statement without a result, the rows a DML statement affected, and a table
    only for what returns rows (a query naming its columns as DML metrics among them)."""
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    (tmp_path / "script.sql").write_text(
        "CREATE TABLE t (id INT, v STRING) USING DELTA;\n"
        "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');\n"
        "MERGE INTO t USING (SELECT 2 AS id, 'q' AS v UNION ALL SELECT 9, 'n') s\n"
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;\n"
        "ALTER TABLE t SET TBLPROPERTIES ('team' = 'shop');\n"
        f"USE {fresh_db};\n"
        "SELECT 1 AS num_affected_rows;\n"
        "SELECT * FROM t WHERE id = 9"
    )
    assert cli.main(["sql", "-f", str(tmp_path / "script.sql")]) == 0
    shown = [
        line for line in capsys.readouterr().out.splitlines() if not line.startswith(("> ", "  "))
    ]
    assert shown == [
        "OK",
        "OK",
        "2 rows affected (1 inserted, 1 updated, 0 deleted)",
        "OK",
        "OK",
        "+-----------------+",
        "|num_affected_rows|",
        "+-----------------+",
        "|1                |",
        "+-----------------+",
        "",
        "+---+---+",
        "|id |v  |",
        "+---+---+",
        "|9  |n  |",
        "+---+---+",
        "",
    ]


def test_a_statement_spark_rejects_is_one_message(tmp_path):
    """ivm's message alone, not also pyspark's log of the error with the Java stack trace."""
    result = run("sql", "SELECT nosuchcol", cwd=tmp_path, env={"IVM_HOME": str(tmp_path)})
    assert result.returncode == 1
    assert "ivm: Spark: [UNRESOLVED_COLUMN" in result.stderr, result.stderr
    assert result.stderr.count("nosuchcol") == 1, result.stderr
    assert "at org.apache.spark" not in result.stderr and "Traceback" not in result.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.fast
def test_progress_overwrites_its_line_on_a_terminal_only():
    terminal, log = _Terminal(), io.StringIO()
    for stream in terminal, log:
        with cli._Progress(stream) as progress:
            progress("example 1/2: batch 1/3 refreshed")
            progress("example 2/2: creating the sources and the view")
    assert terminal.getvalue() == (
        "\r\x1b[Kexample 1/2: batch 1/3 refreshed"
        "\r\x1b[Kexample 2/2: creating the sources and the view"
        "\r\x1b[K"
    )
    assert log.getvalue() == (
        "example 1/2: batch 1/3 refreshed\nexample 2/2: creating the sources and the view\n"
    )


@pytest.mark.fast
@pytest.mark.parametrize(
    "command, terminal, shown", [("sql", True, True), ("sql", False, False), ("check", True, False)]
)
def test_sparks_progress_bar_on_a_terminal_but_for_check(monkeypatch, command, terminal, shown):
    """ivm check shows its own progress; Spark's bar would overwrite it."""
    from ivm.runtime.spark import session

    started = {}
    monkeypatch.setattr(session, "spark_session", lambda *args, **kwargs: started.update(kwargs))
    monkeypatch.setattr(session, "quiet_query_error_logs", lambda: None)
    monkeypatch.setattr(sys, "stderr", _Terminal() if terminal else io.StringIO())
    cli._session(cli.parser().parse_args([command, "view.sql"]))
    assert started["console_progress"] is shown


# Arguments are checked as they are parsed, before any work ---------------------------------


@pytest.mark.fast
@pytest.mark.parametrize(
    "argv, refused",
    [
        (
            ["check", "view.sql", "--examples", "0"],
            "argument --examples: '0' is not a whole number of at least 1",
        ),
        (["check", "view.sql", "--examples", "-3"], "argument --examples: '-3'"),
        (["check", "view.sql", "--examples", "many"], "argument --examples: 'many'"),
        (
            ["verify", "v", "--rows", "-1"],
            "argument --rows: '-1' is not a whole number of at least 0",
        ),
        (
            ["verify", "v", "--float-tolerance", "-0.1"],
            "argument --float-tolerance: '-0.1' is not a relative tolerance",
        ),
        (["verify", "v", "--float-tolerance", "nan"], "argument --float-tolerance: 'nan'"),
        (["sql", "SELECT 1", "--limit", "-5"], "argument --limit: '-5'"),
        (
            ["metastore", "--port", "0"],
            "argument --port: '0' is not a whole number from 1 to 65535",
        ),
        (["connect-server", "--port", "70000"], "argument --port: '70000'"),
    ],
)
def test_a_numeric_argument_out_of_range_is_refused_by_the_parser(argv, refused, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.parser().parse_args(argv)
    assert exited.value.code == 2
    assert refused in capsys.readouterr().err


# A command on views checks every name first, and answers for each view ----------------------


def no_session(args):
    raise AssertionError("a wrong argument must be refused before Spark starts")


@pytest.mark.fast
@pytest.mark.parametrize("command, verb", [("verify", "verify"), ("upkeep", "keep up")])
def test_a_command_on_views_says_whether_none_or_both_were_given(
    command, verb, monkeypatch, capsys
):
    monkeypatch.setattr(cli, "_session", no_session)
    assert cli.main([command]) == 2
    assert (
        f"ivm: no view named: name the views to {verb}, or --all for every one"
        in capsys.readouterr().err
    )
    assert cli.main([command, "v", "--all"]) == 2
    assert f"ivm: name the views to {verb} or give --all, not both" in capsys.readouterr().err


@pytest.fixture
def views(spark, fresh_db, monkeypatch):
    """Views ``a_view`` and ``b_view`` over the sources ``a`` and ``b``, and the ivm command
    run in this process, in the tests' session."""
    for table in "ab":
        spark.sql(f"CREATE TABLE {table} (k INT) USING DELTA {CDF}")
        spark.sql(f"INSERT INTO {table} VALUES (1), (2)")
        ivm.sql(spark, f"CREATE MATERIALIZED VIEW {table}_view AS SELECT k FROM {table}")
    monkeypatch.setattr(cli, "_session", lambda args: spark)
    return fresh_db


def test_every_view_named_is_checked_before_any_work(views, monkeypatch, capsys):
    import ivm.runtime.observation.verify
    import ivm.runtime.refresh.upkeep

    def work(spark, view, **options):
        raise AssertionError(f"{view} was worked on before every name was checked")

    monkeypatch.setattr(ivm.runtime.observation.verify, "verify", work)
    monkeypatch.setattr(ivm.runtime.refresh.upkeep, "upkeep", work)
    assert cli.main(["verify", "a_view", "nosuch", "a", "b_view"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "ivm: 2 of the views named are not materialized views; nothing "
        f"was done:\n  materialized view {views}.nosuch does not exist\n"
        f"  {views}.a is a table, not a materialized view\n"
    ), err
    assert cli.main(["upkeep", "b_view", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"ivm: materialized view {views}.nosuch does not exist; nothing was done"
    ), err
    assert cli.main(["status", f"{views}__ivm.a_view__ivm_store"]) == 2
    err = capsys.readouterr().err
    assert (
        f"ivm: {views}__ivm.a_view__ivm_store is the store of the materialized view "
        f"{views}.a_view" in err
    )
    assert "Traceback" not in err and "TABLE_OR_VIEW_NOT_FOUND" not in err


def test_a_view_that_fails_is_reported_and_the_others_get_their_results(spark, views, capsys):
    spark.sql("DROP TABLE a")
    spark.sql(f"CREATE TABLE a (k INT) USING DELTA {CDF}")
    assert cli.main(["verify", "a_view", "b_view"]) == 1
    out, err = capsys.readouterr()
    assert f"ok: {views}.b_view equals its query" in out
    assert f"ivm: {views}.a_view: {views}.a was dropped and created again" in err
    spark.sql("DROP TABLE a")
    assert cli.main(["status", "--verbose"]) == 1
    out, err = capsys.readouterr()
    assert f"ivm: {views}.a_view: table or view not found: {views}.a" in err
    assert f"{views}.b_view\n  freshness seconds: " in out


def test_refresh_all_prints_each_view_as_it_goes_and_fails_naming_those_not_refreshed(
    spark, views, capsys
):
    spark.sql("DROP TABLE a")
    spark.sql("INSERT INTO b VALUES (3)")
    assert cli.main(["sql", "REFRESH ALL MATERIALIZED VIEWS"]) == 1
    out, err = capsys.readouterr()
    failed, refreshed = out.splitlines()
    assert failed.startswith(f"refresh of {views}.a_view failed: ") and f"{views}.a" in failed
    assert refreshed.startswith(f"incremental refresh of {views}.b_view in "), out
    assert err.startswith(
        f"ivm: 1 of 2 materialized views were not refreshed:\n  {views}.a_view: "
    ), err
    assert "Traceback" not in err and "at org.apache.spark" not in err
    assert_equals_query(spark, "b_view", "SELECT k FROM b")
