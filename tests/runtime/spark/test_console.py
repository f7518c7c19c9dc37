"""What reaches a user's console: ivm's own lines, never Spark's log or a Java stack trace.
Spark's log goes to ``<home>/logs/spark.log``."""

import os
import re
import shlex
import signal
import subprocess
import sys
import threading

import pytest

from ivm.runtime.spark import logs
from ivm.runtime.spark.session import connect_server_command, session_conf

FOREIGN = re.compile(
    r"^\s*at [\w$.<>]+\(.*\)$|at org\.apache\."  # a Java frame
    r"|^\s*\.\.\. \d+ more$"
    r"|^(Caused by: )?[a-z]\w*(\.[\w$]+)+(Exception|Error)\b"  # a Java exception's line
    r"| (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) [\w$.]+: "  # a log4j line in Spark's layout
    r"|log4j|[Ll]og level"  # Spark's notes of its logging at start-up
    r'|^\{"ts": ',  # pyspark's log of an error (in JSON)
    re.MULTILINE,
)
"""A line of Spark's or a JVM's on the console, not ivm's."""


LOGGER = re.compile(r" (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ([\w$.]+): ")
"""The logger of a log4j line in Spark's layout."""


def foreign_lines(output: str) -> list[str]:
    """The lines of ``output`` that are not ivm's (:data:`FOREIGN`)."""
    return [line for line in output.splitlines() if FOREIGN.search(line)]


def summary(lines: list[str]) -> str:
    """How many ``lines`` there are, the loggers that wrote them, and the first few."""
    loggers = sorted({logger for line in lines for logger in LOGGER.findall(line)})
    return f"{len(lines)} lines not ivm's, from {loggers}, as {lines[:4]}"


def test_foreign_lines_are_those_of_spark_and_the_jvm():
    output = (
        "> REFRESH MATERIALIZED VIEW v\n"
        "26/12/06 17:15:21 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)\n"
        "org.apache.spark.SparkException: [FAILED_READ_FILE.FILE_NOT_EXIST] Encountered error\n"
        "\tat org.apache.spark.rdd.RDD.iterator(RDD.scala:340)\n"
        "Caused by: java.io.FileNotFoundException: File file:/x does not exist\n"
        "\t... 28 more\n"
        "26/12/06 17:10:25 WARN NativeCodeLoader: Unable to load native-hadoop library\n"
        "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
        'Setting default log level to "WARN".\n'
        '{"ts": "2026-12-06 17:45:01.154", "level": "ERROR", "logger": "SQLQueryContextLogger"}\n'
        "full refresh of d.v in 1.2s (the change of d.r after version 1 can no longer be read)\n"
        "ivm: Spark: [DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES] Found invalid character(s)\n"
        "ivm: column name `my k` cannot be stored: Delta refuses spaces in column names\n"
    )
    assert foreign_lines(output) == output.splitlines()[1:10]


CDF = "delta.enableChangeDataFeed = true"

LIBRARY_USE = f"""
import sys
import ivm

spark = ivm.spark_session(sys.argv[1])
spark.sql("CREATE TABLE r (k INT, a INT) USING DELTA TBLPROPERTIES ({CDF})")
spark.sql("INSERT INTO r VALUES (1, 10), (2, 20)")
try:
    ivm.sql(spark, "SELECT stat FROM r")  # refused by Spark: its caller gets the error alone
except Exception as error:
    print(type(error).__name__)
totals = "FRESHNESS = INTERVAL '1' SECOND AS SELECT k, SUM(a) AS total FROM r GROUP BY k"
ivm.sql(spark, f"CREATE MATERIALIZED VIEW totals {{totals}}")
spark.sparkContext.setLogLevel("INFO")  # a user's: Spark's log still goes to its file
ivm.sql(spark, f"CREATE OR REPLACE MATERIALIZED VIEW totals {{totals}}")

spark.sql(
    "CREATE TABLE w (k INT, a SMALLINT) USING DELTA "
    "TBLPROPERTIES ({CDF}, delta.enableTypeWidening = true)"
)
spark.sql("INSERT INTO w VALUES (1, 1)")
ivm.sql(spark, "CREATE MATERIALIZED VIEW wide AS SELECT k, a FROM w")
spark.sql("ALTER TABLE w ALTER COLUMN a TYPE INT")
spark.sql("INSERT INTO w VALUES (2, 70000)")
print(ivm.sql(spark, "REFRESH MATERIALIZED VIEW wide").mode)

spark.sql("CREATE DATABASE d")
ivm.sql(spark, "CREATE MATERIALIZED VIEW d.v AS SELECT k FROM default.r")
spark.sql("DROP DATABASE d CASCADE")  # Spark's own: the view's store is left behind
spark.sql("CREATE DATABASE d")
print(ivm.sql(spark, "CREATE MATERIALIZED VIEW d.v AS SELECT k FROM default.r").mode)

spark.sql("UPDATE r SET a = a + 1 WHERE k = 2")  # change data files, then vacuumed
spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
spark.sql("VACUUM r RETAIN 0 HOURS").collect()
"""
"""A notebook's use of ivm: a statement Spark refuses, a view replaced, a full refresh after a
source's type widened, a CREATE over a dropped database's leftovers, and a source vacuumed
under a view."""

SCRIPT = """\
DESCRIBE HISTORY MATERIALIZED VIEW totals;
CREATE MATERIALIZED VIEW spaced AS SELECT k AS `my k`, COUNT(*) AS n FROM r GROUP BY k;
SELECT 1
"""


def ivm(home, *args: str, **options) -> subprocess.CompletedProcess:
    """``ivm --home home args``, run as a user runs it, its stderr after its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "ivm.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=600,
        **options,
    )
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout + done.stderr)


def ivm_run_until(home, seen: str) -> str:
    """What ``ivm run`` printed (stdout and stderr) until a line with ``seen``, and as the
    Ctrl-C sent then stopped it (killed after ten minutes without one)."""
    runner = subprocess.Popen(
        [sys.executable, "-m", "ivm.cli", "--home", str(home), "run", "--tick", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    watchdog = threading.Timer(600, runner.kill)
    watchdog.start()
    try:
        assert runner.stdout is not None
        lines = []
        for line in runner.stdout:
            lines.append(line)
            if seen in line:
                break
        runner.send_signal(signal.SIGINT)
        rest, _ = runner.communicate(timeout=120)
    finally:
        watchdog.cancel()
        if runner.poll() is None:
            runner.kill()
    return "".join(lines) + rest


@pytest.mark.slow
def test_the_console_shows_ivms_lines_only_and_sparks_log_goes_to_the_home(tmp_path):
    """Library use, ``ivm status``, ``ivm run`` and ``ivm sql`` over what used to print
    Spark's log and stack traces: Hive's failed ALTER of a replaced store, task failures
    reading vacuumed change data, Delta refusing a column name, Spark's start-up notes. The
    refresh after the VACUUM records what ``ivm status`` predicted of it, and Spark's log
    is in the home."""
    home = tmp_path / "home"
    library = subprocess.run(
        [sys.executable, "-c", LIBRARY_USE, str(home)],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ,
    )
    assert library.returncode == 0, library.stderr[-3000:]
    assert library.stdout.splitlines()[:3] == ["AnalysisException", "full", "create"]
    status = ivm(home, "status", "totals")
    assert status.returncode == 0, status.stdout[-3000:]
    ran = ivm_run_until(home, "refresh of default.totals")
    script = tmp_path / "script.sql"
    script.write_text(SCRIPT)
    scripted = ivm(home, "sql", "-f", str(script))
    assert scripted.returncode == 1, scripted.stdout[-3000:]

    consoles = {
        "library use": library.stdout + library.stderr,
        "ivm status": status.stdout,
        "ivm run": ran,
        "ivm sql": scripted.stdout,
    }
    foreign = {name: foreign_lines(output) for name, output in consoles.items()}
    assert not any(foreign.values()), "\n".join(
        f"{name}: {summary(lines)}" for name, lines in foreign.items() if lines
    )
    log = (home / "logs" / "spark.log").read_text()
    assert "HiveAlterHandler" in log and "FileNotFoundException" in log

    found = re.search(r"^default\.totals .*  a full recompute: (.*)$", status.stdout, re.M)
    assert found, status.stdout
    predicted = found.group(1)
    assert "files of version" in predicted and "default.r" in predicted, predicted
    assert "full refresh of default.totals in " in ran and f"({predicted})" in ran, ran
    history = scripted.stdout.split("> CREATE")[0]
    assert re.search(rf"\|full +\|{re.escape(predicted)} *\|", history), history

    refused = "ivm: column name `my k` cannot be stored: Delta refuses spaces in column names"
    assert refused in scripted.stdout, scripted.stdout[-3000:]
    assert "(line 1, column 43)" in scripted.stdout and "Hint: " in scripted.stdout


# --- the driver's JVM options (no JVM) --------------------------------------------------


def java_options(final: dict[str, str]) -> list[str]:
    return shlex.split(final["spark.driver.extraJavaOptions"])


def test_the_driver_logs_to_the_home_beside_the_users_java_options(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    ambient = {"spark.driver.extraJavaOptions": "-Xss4m"}
    _, final = session_conf(tmp_path / "my home", ambient=ambient)
    assert java_options(final) == [
        "-Xss4m",
        f"-Dderby.stream.error.file={tmp_path / 'my home' / 'derby.log'}",
        f"-Dlog4j2.configurationFile={logs.CONFIGURATION}",
        f"-Divm.log.dir={tmp_path / 'my home' / 'logs'}",
    ]
    assert logs.CONFIGURATION.is_file()
    server = connect_server_command(tmp_path / "my home")
    served = next(o for o in server if o.startswith("spark.driver.extraJavaOptions="))
    assert shlex.split(served.split("=", 1)[1]) == java_options(final)[1:]


@pytest.mark.parametrize(
    "where",
    ["java options", "SPARK_SUBMIT_OPTS", "LOG4J_CONFIGURATION_FILE", "conf directory"],
)
def test_a_log4j_configuration_of_the_users_wins(tmp_path, monkeypatch, where):
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    own = f"-Dlog4j2.configurationFile={tmp_path / 'mine.xml'}"
    ambient = {"spark.driver.extraJavaOptions": own} if where == "java options" else {}
    if where == "SPARK_SUBMIT_OPTS":
        monkeypatch.setenv("SPARK_SUBMIT_OPTS", own)
    elif where == "LOG4J_CONFIGURATION_FILE":
        monkeypatch.setenv(where, str(tmp_path / "mine.xml"))
    elif where == "conf directory":
        (tmp_path / "conf").mkdir()
        (tmp_path / "conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
    _, final = session_conf(tmp_path, ambient=ambient)
    assert not any(o.startswith(f"-D{logs.DIRECTORY_PROPERTY}=") for o in java_options(final))
    assert [o for o in java_options(final) if o.startswith("-Dlog4j")] == ([own] if ambient else [])
