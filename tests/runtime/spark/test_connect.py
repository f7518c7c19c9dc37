"""ivm through Spark Connect: a server started by ``ivm connect-server`` (Delta, and the
catalog of its home), and a client of it that creates views (one with a logged store),
refreshes them after inserts, deletes and updates, recomputes a partition, dies half-way
through refreshes and recovers, verifies, and asks for status (``tests/support/connect_client.py``,
each step checked against Spark's run of the view's query)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import support
from tests.support.servers import connect_server as served_by_connect

pytestmark = pytest.mark.slow

CLIENT = Path(support.__file__).with_name("connect_client.py")


@pytest.fixture
def connect_server(tmp_path):
    with served_by_connect(tmp_path / "home", tmp_path / "server.log") as remote:
        yield remote


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
