"""Shared fixtures: one SparkSession for the whole run, a fresh database per test, the
Hypothesis profiles (chosen with ``HYPOTHESIS_PROFILE``: ``ci`` by default, ``deep``, ``dev``),
and the fast tier's tally: each of its tests counts its checks by outcome, the counts are
printed at the end of the run, and a test fails if fewer than :data:`FLOOR` of its checks
compared the view with its own SQL."""

import os
import signal
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.cdf import CDF
from tests.support.class_archive import QUIET
from tests.support.servers import free_port, wait_for_port

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

CLASS_ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"
"""The class archive of the Spark processes the tests start (``tests/support/class_archive.py``),
which ``make`` builds into the virtual environment."""

SUBPROCESS_JAVA_OPTIONS = " ".join(
    ["-XX:TieredStopAtLevel=1"]
    + ([f"-XX:SharedArchiveFile={CLASS_ARCHIVE}", QUIET] if CLASS_ARCHIVE.is_file() else [])
)
"""The JVM options of every Spark process the tests start (spark-submit and pyspark read
``SPARK_SUBMIT_OPTS``); the tests' own session starts without them. A process that lives for a
few statements spends more on C2's compilations than it gains from them (C1 alone halves its
time), and maps its classes from the archive rather than loading them again."""
os.environ.setdefault("SPARK_SUBMIT_OPTS", SUBPROCESS_JAVA_OPTIONS)

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
    from ivm.runtime.spark.session import spark_session

    # The tests' own session lives for the whole run: C2's compilations pay off there.
    own = (
        os.environ.pop("SPARK_SUBMIT_OPTS")
        if os.environ.get("SPARK_SUBMIT_OPTS") == SUBPROCESS_JAVA_OPTIONS
        else None
    )
    try:
        # No other process uses its home: embedded Derby, where the catalog server a home's
        # processes share would add a loopback round trip to each catalog call (a no-op
        # refresh 0.12 s, not 0.14 s)
        session = spark_session(home=spark_home, metastore="embedded")
    finally:
        if own is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = own
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


SHARED_MODULES = frozenset(
    {"tests/property/test_refresh_equals_recompute.py", "tests/test_jobs.py"}
)
"""Modules whose tests the parallel workers share out one by one rather than take whole: each
runs for minutes over sources of its own, needing nothing of the module's other tests (but a
module-scoped fixture, which each worker then builds for itself)."""


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadfile`` (the Makefile's), a worker takes a whole module at a time, but
    the tests of :data:`SHARED_MODULES` one at a time: the module was a third of ``make test``
    on one worker while the other had finished."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharingLongModules(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module in SHARED_MODULES else super()._split_scope(nodeid)

    return SharingLongModules(config, log)


FLOOR = 0.9
"""The least share of a fast-tier test's checks that must compare the view with its own SQL."""


class Tally:
    """A fast-tier test's checks (a view over one example), counted by how the store was kept
    and whether the view was compared with its own SQL (``tests/property/reference.py``'s
    ``Outcome``)."""

    def __init__(self):
        self.how: Counter[str] = Counter()
        self.comparisons: Counter[str] = Counter()
        self.compared = 0

    def record(self, outcome) -> None:
        self.how[outcome.how] += 1
        self.comparisons[outcome.comparison] += 1
        self.compared += outcome.compared

    @property
    def share(self) -> float:
        """The share of the checks that compared the view with its own SQL."""
        return self.compared / max(1, self.comparisons.total())

    def __str__(self) -> str:
        """The counts in a line: how many checks compared the view with its SQL; how the
        stores were kept; why the others were not compared.

        >>> from types import SimpleNamespace as Outcome
        >>> tally = Tally()
        >>> for how, comparison in [("folded", "compared with the SQL")] * 2 + [
        ...         ("folded", "not comparable: why")]:
        ...     tally.record(Outcome(how=how, comparison=comparison,
        ...                          compared=comparison.startswith("compared")))
        >>> print(tally)
        compared 2 of 3 checks with the SQL; folded 3; not comparable: why 1
        """
        compared = f"compared {self.compared} of {self.comparisons.total()} checks with the SQL"
        return "; ".join(
            part
            for part in (
                compared,
                ", ".join(f"{how} {n}" for how, n in sorted(self.how.items())),
                ", ".join(
                    f"{why} {n}"
                    for why, n in sorted(self.comparisons.items())
                    if why.startswith("not comparable")
                ),
            )
            if part
        )


_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


@pytest.fixture
def tally(request):
    """A fast-tier test's :class:`Tally`, shared by all its examples; after the test, reported
    (a user property, printed at the end of the run) and, unless the test failed already,
    held to :data:`FLOOR`."""
    counts = Tally()
    yield counts
    request.node.user_properties.append(("tally", str(counts)))
    if request.node.stash.get(_CALL_PASSED, False) and counts.share < FLOOR:
        pytest.fail(
            f"{counts}: fewer than {FLOOR:.0%} of the checks compared the view with its own SQL",
            pytrace=False,
        )


_tallies: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    """Keep the counts a fast-tier test reported; under xdist, this runs in the process that
    prints the summary."""
    if report.when == "teardown":
        _tallies.extend(
            (report.nodeid, text) for name, text in report.user_properties if name == "tally"
        )


def pytest_terminal_summary(terminalreporter):
    """Print each fast-tier test's counts."""
    if _tallies:
        terminalreporter.write_sep("=", "checks of the views against their own SQL")
        for nodeid, text in sorted(_tallies):
            terminalreporter.write_line(f"{nodeid}: {text}")


@pytest.fixture
def served(tmp_path):
    """The environment of processes sharing one ivm home's catalog through `ivm metastore`."""
    from ivm.runtime.spark.metastore import ENVIRONMENT

    port = free_port()
    env = {**os.environ, "IVM_HOME": str(tmp_path / "home"), ENVIRONMENT: f"localhost:{port}"}
    server = subprocess.Popen(
        [sys.executable, "-m", "ivm.cli", "metastore", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port)
        yield env
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


@pytest.fixture
def shop(spark, fresh_db):
    spark.sql(
        f"CREATE TABLE orders (id INT, cust_id INT, amount DECIMAL(10,2), "
        f"status STRING) USING DELTA {CDF}"
    )
    spark.sql(f"CREATE TABLE customers (id INT, region STRING) USING DELTA {CDF}")
    spark.sql("INSERT INTO customers VALUES (1, 'EU'), (2, 'US'), (3, NULL)")
    spark.sql(
        "INSERT INTO orders VALUES (1, 1, 10.00, 'ok'), (2, 2, NULL, 'ok'), "
        "(3, 3, 2.50, 'void'), (4, 3, 4.00, 'ok')"
    )
    return fresh_db
