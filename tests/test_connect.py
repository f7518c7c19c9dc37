"""ivm through Spark Connect: a server started by ``ivm connect-server`` (Delta, and the
catalog of its home), and a client of it that creates views (one with a logged store),
refreshes them after inserts, deletes and updates, recomputes a partition, dies half-way
through refreshes and recovers, verifies, and asks for status (``tests/connect_client.py``,
each step checked against Spark's run of the view's query)."""

import os
import subprocess
import sys

import pytest
from conftest import free_port, wait_for_port

pytestmark = pytest.mark.slow

CLIENT = os.path.join(os.path.dirname(__file__), "connect_client.py")


@pytest.fixture
def connect_server(tmp_path):
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ivm.cli",
            "--home",
            str(tmp_path / "home"),
            "connect-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=open(tmp_path / "server.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def test_the_view_lifecycle_through_a_spark_connect_client(connect_server):
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    done = subprocess.run(
        [sys.executable, CLIENT, connect_server],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stderr[-5000:]
