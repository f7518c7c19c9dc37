"""Several processes on one ivm home, set up as a user sets up nothing: each starts Spark on
the home's catalog at the same time as the others, and each says what it did in a few
lines of its own, true ones. The catalog server they share stops once none of them runs;
a home another process holds alone is refused in a line; and the ``ivm`` commands that read
beside an ``ivm run`` are its Spark Connect clients, with no JVM of their own."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ivm.runtime.spark import catalog_server, processes
from tests.support.cdf import CDF

FOREIGN = re.compile(
    r"^\s*at [\w$.<>]+\(|\bat org\.|^\s*\.\.\. \d+ more$"  # a Java frame
    r"|^(Caused by: )?[a-z]\w*(\.[\w$]+)+(Exception|Error)\b"  # a Java exception's line
    r"| ERROR ",  # a log line
    re.MULTILINE,
)
"""A line of a Java stack trace or of a log, which a user should never read."""

QUERY = "SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM shop.orders GROUP BY region"


def home_environment(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process of ``home``, which sets up nothing else."""
    env = {k: v for k, v in os.environ.items() if k not in ("IVM_METASTORE", "SPARK_REMOTE")}
    return {**env, "IVM_HOME": str(home), **extra}


def ivm(env, *args: str) -> subprocess.Popen:
    """``ivm args`` started in a process of its own, its stderr after its stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "ivm.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def python(env, code: str, *args: str) -> subprocess.Popen:
    """The Python ``code`` started in a process of its own, its stderr after its stdout."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(process: subprocess.Popen, line: str) -> None:
    """Read what ``process`` prints until ``line``; fail with its output if it ends first."""
    assert process.stdout is not None
    printed = []
    for printed_line in process.stdout:
        if printed_line == f"{line}\n":
            return
        printed.append(printed_line)
    raise AssertionError("".join(printed)[-3000:])


def finished(process: subprocess.Popen) -> str:
    """All ``process`` printed once it ended, having succeeded."""
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-3000:]
    return output


def assert_short(output: str, most: int) -> None:
    """``output`` is at most ``most`` lines, none of a stack trace or a log."""
    assert not FOREIGN.findall(output), output[-3000:]
    assert len(output.splitlines()) <= most, output[-3000:]


def table_rows(output: str) -> list[list[str]]:
    """The rows of the tables ``ivm sql`` printed, headers included, each cell stripped."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in output.splitlines()
        if line.startswith("|")
    ]


def script(name: str) -> str:
    """An ``ivm sql`` script: a source ``name``, its view ``name_by_region`` created,
    refreshed after a change, and read."""
    return f"""
        CREATE TABLE {name} (id INT, region STRING, amount INT) USING DELTA {CDF};
        INSERT INTO {name} VALUES (1, 'EU', 10), (2, 'US', 5);
        CREATE MATERIALIZED VIEW {name}_by_region AS
          SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM {name} GROUP BY region;
        INSERT INTO {name} VALUES (3, 'EU', 7);
        REFRESH MATERIALIZED VIEW {name}_by_region;
        SELECT * FROM {name}_by_region ORDER BY region
    """


@pytest.mark.slow
def test_two_processes_start_on_a_fresh_home_at_once(tmp_path):
    """Two ``ivm sql`` scripts started together on a home nobody used: one of them starts the
    catalog server, both use it, and each view is its query's result."""
    env = home_environment(tmp_path / "home")
    started = {}
    for name in ("north", "south"):
        (tmp_path / f"{name}.sql").write_text(textwrap.dedent(script(name)))
        started[name] = ivm(env, "sql", "-f", str(tmp_path / f"{name}.sql"))
    for name, process in started.items():
        output = finished(process)
        assert_short(output, 30)
        assert f"incremental refresh of default.{name}_by_region in " in output, output
        assert table_rows(output)[-2:] == [["EU", "17", "2"], ["US", "5", "1"]], output
    log = (tmp_path / "home" / catalog_server.DIRECTORY / "server.log").read_text()
    assert log.count("serving the catalog of ") == 1, log


LIBRARY = f"""
    import sys, pathlib, ivm
    spark = ivm.spark_session()
    spark.sql("CREATE DATABASE shop")
    spark.sql("CREATE TABLE shop.orders (id INT, region STRING, amount INT) USING DELTA {CDF}")
    spark.sql("INSERT INTO shop.orders VALUES (1, 'EU', 10), (2, 'US', 5)")
    ivm.sql(spark, "CREATE MATERIALIZED VIEW shop.by_region AS {QUERY}")
    print("created", flush=True)
    others_done, i = pathlib.Path(sys.argv[1]), 10
    while not others_done.exists():
        spark.sql(f"INSERT INTO shop.orders VALUES ({{i}}, 'US', {{i}})")
        spark.table("shop.by_region").collect()
        i += 1
    ivm.sql(spark, "REFRESH MATERIALIZED VIEW shop.by_region")
    view = sorted(map(tuple, spark.table("shop.by_region").collect()))
    query = sorted(map(tuple, spark.sql("{QUERY}").collect()))
    print("exact" if view == query else f"{{view}} differs from {{query}}", flush=True)
"""
"""A notebook: a source and a view; then changes of the source, each followed by a read of
the view, until the file ``argv[1]`` exists; then a refresh, and the view compared with its
query."""


@pytest.mark.slow
def test_three_processes_refresh_read_and_ask_the_status_at_once(tmp_path):
    """A notebook changing a source and reading its view, ``ivm sql`` refreshing the view and
    ``ivm status``, all at once, each with a JVM of its own on the home's one catalog."""
    env = home_environment(tmp_path / "home")
    others_done = tmp_path / "others_done"
    notebook = python(env, LIBRARY, str(others_done))
    try:
        wait_for(notebook, "created")
        refresh = ivm(env, "sql", "REFRESH MATERIALIZED VIEW shop.by_region")
        status = ivm(env, "status")
        refreshed, statuses = finished(refresh), finished(status)
    finally:
        others_done.touch()
    compared = finished(notebook)

    assert_short(refreshed, 3)
    assert re.search(r"^incremental refresh of shop\.by_region in ", refreshed, re.M), refreshed
    assert_short(statuses, 4)
    assert re.search(r"^view +freshness", statuses, re.M), statuses
    assert re.search(r"^shop\.by_region +- ", statuses, re.M), statuses
    assert_short(compared, 3)
    assert compared.splitlines()[-1] == "exact", compared


HOLDER = """
    import sys, ivm
    spark = ivm.spark_session()
    spark.sql("SHOW DATABASES").collect()
    print("holding", flush=True)
    sys.stdin.read()
"""
"""A process that opens the home's catalog and keeps it until its stdin closes."""


@pytest.mark.slow
def test_a_catalog_open_in_a_process_alone_is_refused_in_a_line(tmp_path):
    """A process that opened the catalog embedded (``IVM_METASTORE=embedded``, as an older ivm
    did by default) keeps every other out: a command there says so, and what to do, in a
    line and its hint, before it starts Spark."""
    home = tmp_path / "home"
    alone = python(home_environment(home, IVM_METASTORE="embedded"), HOLDER)
    try:
        wait_for(alone, "holding")
        refused = ivm(home_environment(home), "status")
        output, _ = refused.communicate(timeout=600)
    finally:
        alone.communicate("", timeout=600)
    assert refused.returncode == 1
    message, hint = output.splitlines()
    assert re.fullmatch(rf"ivm: the catalog of {home} is open in process \d+ alone", message)
    assert hint.startswith("Hint: that process opened it embedded"), hint


def test_the_catalog_server_stops_once_no_process_of_its_home_runs(tmp_path):
    """The server serves while a process that registered with it runs, and stops Derby and
    goes once none has for its idle time."""
    home = tmp_path / "home"
    (home / catalog_server.DIRECTORY / "clients").mkdir(parents=True)
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "ivm.runtime.spark.catalog_server", str(home), "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while (address := catalog_server.running(home)) is None:
            assert supervisor.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        with open(f"/proc/{supervisor.pid}/task/{supervisor.pid}/children") as children:
            derby = int(children.read().split()[0])
        client = python(
            {**os.environ},
            """
            import sys
            from pathlib import Path
            from ivm.runtime.spark import catalog_server
            print(catalog_server.ensure(Path(sys.argv[1])), flush=True)
            sys.stdin.read()
            """,
            str(home),
        )
        wait_for(client, address)
        time.sleep(3)  # longer than the idle time: the client keeps the server
        assert supervisor.poll() is None and catalog_server.running(home) == address
        client.communicate("", timeout=60)
        output, _ = supervisor.communicate(timeout=60)
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
    assert supervisor.returncode == 0, output
    assert output.splitlines()[-1] == "no process used the catalog for 1 s: stopped", output
    assert not processes.alive(derby, "")
    assert not (home / catalog_server.DIRECTORY / "address").exists()


STATEMENTS = f"""
    CREATE TABLE orders (id INT, region STRING, amount INT) USING DELTA {CDF};
    INSERT INTO orders VALUES (1, 'EU', 10), (2, 'US', 5);
    CREATE MATERIALIZED VIEW by_region FRESHNESS = INTERVAL '1' SECOND AS
      SELECT region, SUM(amount) AS total, COUNT(*) AS n FROM orders GROUP BY region;
    INSERT INTO orders VALUES (3, 'EU', 7)
"""


@pytest.mark.slow
def test_the_commands_that_read_beside_ivm_run_are_its_clients(tmp_path):
    """Beside ``ivm run``, ``ivm status`` and ``ivm verify`` run in its JVM: ``ivm verify``
    through the Spark Connect service it records in the home, ``ivm status`` answered by
    ``ivm run`` itself: with no Spark to start a JVM from (``SPARK_HOME`` names none), each
    does its work. When ``ivm run`` stops, so do both services, and their records go."""
    home = tmp_path / "home"
    env = home_environment(home)
    runner = ivm(env, "run", "--tick", "0.5")
    record = home / "connect_server"
    try:
        deadline = time.monotonic() + 300
        while not record.exists():
            assert runner.poll() is None, runner.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "ivm run recorded no Spark Connect service"
            time.sleep(0.5)
        assert oct(record.stat().st_mode & 0o777) == "0o600"  # it holds the token
        assert json.loads(record.read_text())["url"].startswith("sc://localhost:")
        (tmp_path / "script.sql").write_text(textwrap.dedent(STATEMENTS))
        scripted = finished(ivm(env, "sql", "-f", str(tmp_path / "script.sql")))
        assert_short(scripted, 20)

        no_jvm = {**env, "SPARK_HOME": str(tmp_path / "no_spark")}
        statuses = finished(ivm(no_jvm, "status"))
        assert_short(statuses, 2)
        assert re.search(r"^default\.by_region +1 s ", statuses, re.M), statuses
        # ivm status is answered by ivm run itself, even without its Connect service, for
        # every view and for the views named; a name that is no view is refused as ever
        answers = home / "status_server"
        assert oct(answers.stat().st_mode & 0o777) == "0o600"  # it holds the key
        record.rename(tmp_path / "connect_server")
        try:
            answered = finished(ivm(no_jvm, "status"))
            assert re.search(r"^default\.by_region +1 s ", answered, re.M), answered
            named = finished(ivm(no_jvm, "status", "by_region"))
            assert re.fullmatch(r"view .*\ndefault\.by_region +1 s .*\n", named), named
        finally:
            (tmp_path / "connect_server").rename(record)
        refused = ivm(no_jvm, "status", "nosuch")
        output, _ = refused.communicate(timeout=600)
        assert refused.returncode == 2 and "nosuch" in output, output
        assert_short(output, 2)
        verified = finished(ivm(no_jvm, "verify", "by_region"))
        assert_short(verified, 1)
        assert verified.startswith("ok: default.by_region equals its query"), verified
    finally:
        runner.send_signal(signal.SIGINT)
        ran, _ = runner.communicate(timeout=120)
    assert runner.returncode == 0 and ran.rstrip().endswith("stopped"), ran[-3000:]
    assert_short(ran, 40)
    assert not record.exists() and not answers.exists()
