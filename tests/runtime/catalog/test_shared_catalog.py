"""`ivm run` and another process share one catalog through the served metastore."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.support.servers import free_port, wait_for_port

SETUP = """
import ivm
spark = ivm.spark_session()
spark.sql("CREATE TABLE r (k INT, a INT) USING DELTA "
          "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
spark.sql("INSERT INTO r VALUES (1, 1)")
ivm.sql(spark, "CREATE MATERIALIZED VIEW totals FRESHNESS = INTERVAL '2' SECONDS AS "
               "SELECT k, SUM(a) AS total FROM r GROUP BY k")
"""

WRITER = """
import time, ivm
spark = ivm.spark_session()
for i in range(3):
    spark.sql(f"INSERT INTO r VALUES ({i}, 10)")
    time.sleep(1)
deadline = time.monotonic() + 240
query = "SELECT k, SUM(a) AS total FROM r GROUP BY k"
while time.monotonic() < deadline:
    view = spark.table("totals")
    if view.exceptAll(spark.sql(query)).count() == 0 and \\
            spark.sql(query).exceptAll(view).count() == 0:
        print("the view caught up")
        break
    time.sleep(2)
"""


def python(code: str, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_ivm_run_and_a_user_session_share_the_catalog(served):
    setup = python(SETUP, served)
    assert setup.returncode == 0, setup.stderr[-3000:]
    runner = subprocess.Popen(
        [sys.executable, "-m", "ivm.cli", "run", "--tick", "0.5"],
        env=served,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        writer = python(WRITER, served)  # while `ivm run` holds the catalog too
    finally:
        runner.send_signal(signal.SIGINT)
        output, errors = runner.communicate(timeout=120)
    assert writer.returncode == 0, writer.stderr[-3000:]
    assert "the view caught up" in writer.stdout, (output, errors[-3000:])
    assert "incremental refresh of default.totals" in output, errors[-3000:]
    assert output.rstrip().endswith("stopped") and runner.returncode == 0


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (exists and is no zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_metastore_stops_its_server_on_ctrl_c_or_sigterm(tmp_path, stop):
    """Ctrl-C, and SIGTERM (what a service manager sends), stop it and Derby's server, also
    when it was started as a shell's background job, whose Ctrl-C signal is ignored (as
    ``ivm run`` is)."""
    port = free_port()
    env = {**os.environ, "IVM_HOME": str(tmp_path / "home")}
    command = subprocess.Popen(
        [sys.executable, "-m", "ivm.cli", "metastore", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    wait_for_port(port)
    with open(f"/proc/{command.pid}/task/{command.pid}/children") as children:
        server = int(children.read().split()[0])
    try:
        command.send_signal(stop)
        assert command.wait(timeout=60) == 0
        assert not running(server)
    finally:
        if command.poll() is None:
            command.kill()
        if running(server):
            os.kill(server, signal.SIGKILL)
