"""Shared fixtures: one SparkSession for the whole run, a fresh database per test, and the
Hypothesis profiles (chosen with ``HYPOTHESIS_PROFILE``: ``ci`` by default, ``deep``, ``dev``)."""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest
from hypothesis import HealthCheck, settings

from cdf import CDF

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Read by every Spark process the tests start; see the file for why.
SUBPROCESS_CONF_DIR = os.path.join(os.path.dirname(__file__), "spark_conf")
os.environ.setdefault("SPARK_CONF_DIR", SUBPROCESS_CONF_DIR)

_common = dict(
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
    derandomize=False,
    print_blob=True,
)
# Every profile draws new examples each run. The Makefile's targets draw them from a seed
# they print (--hypothesis-seed): `make test SEED=<it>` draws a failing run's examples again.
settings.register_profile("ci", max_examples=15, **_common)
# Each property test runs a share of max_examples (see the tests); `deep` (make test-deep)
# also draws 2 scenarios per view family, and about 3x the drawn queries and state-machine
# runs.
settings.register_profile("deep", max_examples=40, **_common)
settings.register_profile("dev", max_examples=5, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory):
    """The ivm home (catalog + warehouse) of the test session's SparkSession."""
    return tmp_path_factory.mktemp("ivm_home")


@pytest.fixture(scope="session")
def spark(spark_home):
    from ivm.runtime.session import spark_session

    # The tests' own session lives for the whole run: C2's compilations pay off there.
    own = os.environ.pop("SPARK_CONF_DIR") if os.environ.get("SPARK_CONF_DIR") == \
        SUBPROCESS_CONF_DIR else None
    try:
        session = spark_session(home=spark_home)
    finally:
        if own is not None:
            os.environ["SPARK_CONF_DIR"] = own
    yield session
    session.stop()


@pytest.fixture
def fresh_db(spark):
    """A new, empty database made current for the test; dropped afterwards with its internal
    database (its views' stores and state tables), lest they pile up and slow every listing
    of the catalog."""
    from ivm.names import internal_database

    name = f"t_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    spark.sql(f"USE {name}")
    try:
        yield name
    finally:
        spark.sql("USE default")
        spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")
        spark.sql(f"DROP DATABASE IF EXISTS {internal_database(name)} CASCADE")


def pytest_collection_modifyitems(items):
    """Put the modules marked ``long`` first. The Makefile's parallel workers take whole
    modules in this order (``--dist loadfile --no-loadscope-reorder``; xdist's own order puts
    the modules with most tests first), so each long module starts early and the short ones
    fill the other workers meanwhile; a long module started last left one worker busy alone
    for minutes at the end."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("localhost", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on port {port}")


@pytest.fixture
def served(tmp_path):
    """The environment of processes sharing one ivm home's catalog through `ivm metastore`."""
    from ivm.runtime.metastore import ENVIRONMENT

    port = free_port()
    env = {**os.environ, "IVM_HOME": str(tmp_path / "home"), ENVIRONMENT: f"localhost:{port}"}
    server = subprocess.Popen([sys.executable, "-m", "ivm.cli", "metastore", "--port",
                               str(port)], env=env, stdout=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield env
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


@pytest.fixture
def shop(spark, fresh_db):
    spark.sql(f"CREATE TABLE orders (id INT, cust_id INT, amount DECIMAL(10,2), "
              f"status STRING) USING DELTA {CDF}")
    spark.sql(f"CREATE TABLE customers (id INT, region STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO customers VALUES (1, 'EU'), (2, 'US'), (3, NULL)")
    spark.sql("INSERT INTO orders VALUES (1, 1, 10.00, 'ok'), (2, 2, NULL, 'ok'), "
              "(3, 3, 2.50, 'void'), (4, 3, 4.00, 'ok')")
    return fresh_db
