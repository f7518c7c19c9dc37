"""Generated refresh jobs: their text, and real spark-submit runs of them in fresh processes
against Delta sources that change between runs."""

import ast
import contextlib
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

import ivm
from ivm.circuit import circuit
from ivm.job import STANDALONE_MASTER, build_archive, job_program
from ivm.runtime.spark.jars import delta_packages
from ivm.runtime.spark.metastore import client_classpath
from tests.support.servers import free_port, wait_for_port

pytestmark = pytest.mark.long

BIN = Path(sys.executable).parent
IVM, SPARK_SUBMIT = str(BIN / "ivm"), str(BIN / "spark-submit")
SCHEMA = {
    "orders": {"id": "INT", "cust": "INT", "status": "STRING", "amount": "INT"},
    "customers": {"id": "INT", "region": "STRING"},
}
VIEWS = {
    "totals": (
        "CREATE MATERIALIZED VIEW totals PARTITIONED BY (status) AS\n",
        "SELECT status, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY status",
    ),
    "by_region": (
        "CREATE MATERIALIZED VIEW by_region AS\n",
        "SELECT c.region, COUNT(*) AS n, SUM(o.amount) AS total\n"
        "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region",
    ),
    "latest": (
        "CREATE MATERIALIZED VIEW latest FRESHNESS = INTERVAL '2' SECONDS AS\n",
        "SELECT cust, id, amount FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cust "
        "ORDER BY id DESC) AS r FROM orders) WHERE r = 1",
    ),
    # its groups are a state table, created and refreshed by the job
    "top_regions": (
        "CREATE MATERIALIZED VIEW top_regions AS\n",
        "SELECT c.region, SUM(o.amount) AS total FROM orders o JOIN customers c "
        "ON o.cust = c.id GROUP BY c.region ORDER BY total DESC, c.region LIMIT 2",
    ),
}


def literal_assignments(program: str) -> dict[str, str]:
    """The module-level ``NAME = "literal"`` assignments of a program."""
    return {
        node.targets[0].id: node.value.value
        for node in ast.parse(program).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
    }


def test_a_job_shows_the_sql_it_runs_and_how_to_submit_it():
    head, query = VIEWS["by_region"]
    compiled = ivm.compile(query, SCHEMA)
    program = job_program(
        "by_region", head + query, compiled, "refresh_by_region.py", packages=delta_packages()
    )
    values = literal_assignments(program)
    assert values["VIEW"] == "by_region"
    assert values["DEFINITION"] == (head + query).strip()
    assert (values["DELTA"], values["FULL"]) == (compiled.delta_sql, compiled.full_sql)
    docstring = ast.get_docstring(ast.parse(program))
    assert (
        f"spark-submit --packages {','.join(delta_packages())} --py-files "
        f"ivm_runtime.zip refresh_by_region.py"
    ) in docstring
    assert "--master yarn --deploy-mode cluster" in docstring
    # every operator of the circuit is cited, with its rule, in the comments
    operators = re.findall(r"^#   \[(\d+)\] ", program, re.MULTILINE)
    assert [int(n) for n in operators] == list(range(1, len(circuit(compiled.plan)) + 1))
    assert re.search(r"^# Rule aggregate \(invertible\): ", program, re.MULTILINE)


def test_a_job_shows_the_sql_of_each_state_table():
    head, query = VIEWS["top_regions"]
    compiled = ivm.compile(query, {"default": SCHEMA}, default_db="default", name="top_regions")
    ((table, state),) = compiled.states
    program = job_program("top_regions", head + query, compiled, packages=delta_packages())
    values = literal_assignments(program)
    assert (values["STATE1_DELTA"], values["STATE1_FULL"]) == (state.delta_sql, state.full_sql)
    assert f"# State table {table}:" in program
    assert f"{table + ' delta'!r}: STATE1_DELTA" in program


def test_a_job_shows_the_sql_it_runs_where_rows_are_only_inserted():
    query = "SELECT cust, MAX(amount) AS top, COUNT(*) AS n FROM orders GROUP BY cust"
    compiled = ivm.compile(query, SCHEMA, name="top")
    inserting = compiled.inserting()
    assert inserting is not None
    program = job_program(
        "top", f"CREATE MATERIALIZED VIEW top AS {query}", compiled, packages=delta_packages()
    )
    assert literal_assignments(program)["DELTA_INSERTS_ONLY"] == inserting.delta_sql
    assert '"delta inserts only": DELTA_INSERTS_ONLY' in program


def test_dot_has_a_node_per_operator_and_an_edge_per_input(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "view.sql").write_text("".join(VIEWS["by_region"]))
    result = subprocess.run(
        [IVM, "explain", "view.sql", "--schema", "schema.json", "--format", "dot"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    graph = circuit(ivm.compile(VIEWS["by_region"][1], SCHEMA).plan)
    nodes = re.findall(r"^  n(\d+) \[label=\"\[\1\] ", result.stdout, re.MULTILINE)
    edges = re.findall(r"^  n(\d+) -> n(\d+);", result.stdout, re.MULTILINE)
    assert len(nodes) == graph.number_of_nodes() and len(edges) == graph.number_of_edges()
    assert all(int(a) < int(b) for a, b in edges), "inputs are numbered before their readers"


def test_the_runtime_archive_imports_from_itself(tmp_path):
    archive = build_archive(tmp_path / "ivm_runtime.zip")
    names = set(zipfile.ZipFile(archive).namelist())
    assert {"ivm/runtime/job.py", "sqlglot/__init__.py", "networkx/__init__.py"} <= names
    assert {name + "c" for name in names if name.endswith(".py")} <= names
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ivm.runtime.job, sqlglot, networkx; "
        "print(ivm.runtime.job.__file__, sqlglot.__file__, networkx.__file__)"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(archive)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # loaded from the archive, and from the bytecode in it (the zip importer names the file
    # it loaded), not compiled again as the job starts
    assert all(
        path.startswith(str(archive)) and path.endswith(".pyc") for path in result.stdout.split()
    ), result.stdout


def test_bad_arguments_exit_2_with_usage(tmp_path):
    head, query = VIEWS["totals"]
    job = tmp_path / "job.py"
    job.write_text(
        job_program("totals", head + query, ivm.compile(query, SCHEMA), packages=delta_packages())
    )
    result = subprocess.run(
        [sys.executable, str(job), "--full", "--partition", "status = 'a'"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr and "Traceback" not in result.stderr


# --- spark-submit --------------------------------------------------------------------------

CHECK = """
import json, sys
import ivm
spark = ivm.spark_session()
wrong = {}
for view, query in json.loads(sys.argv[2]).items():
    extra = spark.sql(f"SELECT * FROM {view} EXCEPT ALL ({query})").count()
    missing = spark.sql(f"({query}) EXCEPT ALL SELECT * FROM {view}").count()
    if extra or missing:
        wrong[view] = (extra, missing)
for statement in json.loads(sys.argv[1]):
    spark.sql(statement)
print(json.dumps(wrong))
"""
"""Compares views with their queries (Spark running the query's text is the oracle), then
changes the sources. Run with plain Python in the work directory: ``./ivm_home`` is shared."""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with the view files, their generated jobs and the runtime archive."""
    work = tmp_path_factory.mktemp("jobs")
    (work / "schema.json").write_text(json.dumps(SCHEMA))
    for name, (head, query) in VIEWS.items():
        (work / f"{name}.sql").write_text(head + query)
        result = subprocess.run(
            [
                IVM,
                "compile",
                f"{name}.sql",
                "--schema",
                "schema.json",
                "--emit",
                "job",
                "-o",
                f"refresh_{name}.py",
            ],
            cwd=work,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
    subprocess.run([IVM, "package"], cwd=work, check=True, capture_output=True)
    return work


def env(base=None):
    return {
        **(base or os.environ),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def check(work, statements=(), views=tuple(VIEWS), environment=None) -> None:
    """Every view of ``views`` equals its query; then ``statements`` change the sources."""
    queries = {name: VIEWS[name][1] for name in views}
    result = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(list(statements)), json.dumps(queries)],
        cwd=work,
        capture_output=True,
        text=True,
        env=env(environment),
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {}, (
        "views that differ from their query (rows extra, rows missing)"
    )


PAUSED = """
import runpy, sys, time
from ivm.runtime.refresh import faults

point, job = sys.argv[1], sys.argv[2]


def pause():
    print(f"paused at {point}", flush=True)
    time.sleep(600)


sys.argv = sys.argv[2:]     # the job's own: its file, then its arguments
with faults.inject(point, pause):
    runpy.run_path(job, run_name="__main__")
"""
"""Runs a job, ``paused_job.py POINT refresh_<view>.py ARGS``, with its refresh stopped at
the write point POINT, having printed ``paused at POINT``: spark-submit runs it as a job's
driver, with the job's ``ivm`` (the runtime archive)."""


def submit(work, name, *args, environment=None, classpath=(), paused_at=None, **popen):
    """spark-submit the job of the view ``name``; with ``paused_at``, its refresh waits at
    that write point, having printed ``paused at <point>``, to be killed there."""
    program = [f"refresh_{name}.py"]
    if paused_at is not None:
        (work / "paused_job.py").write_text(PAUSED)
        program = ["paused_job.py", paused_at, *program]
    command = [
        SPARK_SUBMIT,
        "--packages",
        ",".join(delta_packages()),
        *classpath,
        "--py-files",
        "ivm_runtime.zip",
        *program,
        *args,
    ]
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **popen}
    return subprocess.Popen(
        command, cwd=work, env=env(environment), text=True, start_new_session=True, **streams
    )


def job(work, name, *args) -> str:
    process = submit(work, name, *args)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return out


def commits(work, table: str) -> int:
    """How many commits the log of ivm's table ``table`` (a store) in ``work``'s home holds."""
    (log,) = work.glob(f"ivm_home/**/{table}/_delta_log")
    return len(list(log.glob("*.json")))


def kill_when_paused(process, point: str) -> None:
    """Kill ``process`` (a job submitted ``paused_at`` ``point``, its stderr into its
    stdout) once it printed that it waits there; fail if it ends first."""
    watchdog = threading.Timer(600, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    printed = []
    try:
        for line in process.stdout:
            if f"paused at {point}" in line:
                break
            printed.append(line)
        else:
            raise AssertionError(f"the job ended before {point}: {''.join(printed)[-3000:]}")
    finally:
        watchdog.cancel()
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()


@pytest.mark.slow
def test_jobs_create_refresh_survive_a_kill_and_recompute(work):
    """Jobs create their views, refresh them incrementally (one killed between the commit of
    its state table and its view's, and run again), recompute a partition and in full;
    ``latest`` runs as a job in the loop test."""
    views = ("totals", "by_region", "top_regions")
    check(
        work,
        [
            "CREATE TABLE orders (id INT, cust INT, status STRING, amount INT) USING DELTA "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
            "CREATE TABLE customers (id INT, region STRING) USING DELTA "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
            "INSERT INTO customers VALUES (1, 'north'), (2, 'south'), (3, NULL)",
            "INSERT INTO orders VALUES (1, 1, 'open', 10), (2, 1, 'paid', 20), (3, 2, 'open', 5), "
            "(4, 3, NULL, 7)",
        ],
        views=(),
    )
    for name in views:
        assert "create refresh of" in job(work, name)
    check(
        work,
        [
            "INSERT INTO orders VALUES (5, 2, 'paid', 8), (6, 4, 'open', 1)",
            "UPDATE orders SET amount = amount + 1 WHERE cust = 1",
            "DELETE FROM orders WHERE id = 3",
            "UPDATE customers SET region = 'south' WHERE id = 1",
        ],
        views,
    )
    assert "incremental refresh of" in job(work, "totals")
    stores = ["top_regions__ivm_state1__ivm_store", "top_regions__ivm_store"]
    before = [commits(work, store) for store in stores]
    kill_when_paused(
        submit(work, "top_regions", paused_at="refresh.after_state", stderr=subprocess.STDOUT),
        "refresh.after_state",
    )
    assert [commits(work, store) for store in stores] == [before[0] + 1, before[1]], (
        "killed after the state table's commit, before the view's"
    )
    assert "incremental refresh of" in job(work, "top_regions")
    assert "incremental refresh of" in job(work, "by_region")
    check(
        work,
        [
            "INSERT INTO orders VALUES (7, 1, 'open', 100)",
            "DELETE FROM orders WHERE status = 'paid'",
        ],
        views,
    )
    assert "partition refresh of" in job(work, "totals", "--partition", "status = 'open'")
    assert "full refresh of" in job(work, "by_region", "--full")
    assert "full refresh of" in job(work, "top_regions", "--full")
    # totals' 'paid' partition is not recomputed by the partition refresh: the next refresh
    # applies its change
    job(work, "totals")
    check(work, views=views)


@pytest.fixture
def standalone_cluster(tmp_path):
    """A Spark standalone cluster on loopback: a master and two workers of one core each,
    started from the ``spark-class`` pyspark ships; its master's URL."""
    port, ui = free_port(), free_port()
    spark_class = str(BIN / "spark-class")
    environment = {
        **env(),
        "SPARK_WORKER_DIR": str(tmp_path / "workers"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    log = open(tmp_path / "cluster.log", "w")
    processes = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        wait_for_port(port)
        master = f"spark://127.0.0.1:{port}"
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        "1",
                        "--memory",
                        "2g",
                        master,
                    ],
                    env=environment,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + 120
        while alive_workers(ui) < 2:
            assert time.monotonic() < deadline, (tmp_path / "cluster.log").read_text()[-3000:]
            time.sleep(1)
        yield master
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def alive_workers(ui_port: int) -> int:
    """How many workers the master whose web UI is at ``ui_port`` has registered."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as page:
            return int(json.load(page).get("aliveworkers", 0))
    except OSError:
        return 0


@pytest.mark.slow
def test_jobs_run_on_a_standalone_cluster_as_their_header_says(work, tmp_path, standalone_cluster):
    """The command line a job's header gives for a standalone cluster, with this cluster's
    master, creates and refreshes views whose executors are JVMs of their own: what works
    only inside one JVM (driver-side files, objects captured in closures) fails here."""
    names = ("by_region",)
    for name in ("ivm_runtime.zip", *(f"refresh_{view}.py" for view in names)):
        (tmp_path / name).write_bytes((work / name).read_bytes())
    check(
        tmp_path,
        [
            "CREATE TABLE orders (id INT, cust INT, status STRING, amount INT) USING DELTA "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
            "CREATE TABLE customers (id INT, region STRING) USING DELTA "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)",
            "INSERT INTO customers VALUES (1, 'north'), (2, 'south')",
            "INSERT INTO orders VALUES (1, 1, 'open', 10), (2, 2, 'paid', 20), (3, 2, 'open', 5)",
        ],
        views=(),
    )
    lines = {}
    for name in names:
        header = ast.get_docstring(ast.parse((tmp_path / f"refresh_{name}.py").read_text()))
        line = next(line.strip() for line in header.splitlines() if STANDALONE_MASTER in line)
        lines[name] = shlex.split(
            line.replace(STANDALONE_MASTER, standalone_cluster.split("//")[1])
        )
    assert lines["by_region"][:3] == ["spark-submit", "--master", standalone_cluster]

    def run(name: str) -> str:
        command = [SPARK_SUBMIT, *lines[name][1:]]
        done = subprocess.run(
            command, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    for name in names:
        assert "create refresh of" in run(name)
    check(
        tmp_path,
        [
            "INSERT INTO orders VALUES (4, 1, 'paid', 8), (5, 3, 'open', 1)",
            "UPDATE orders SET amount = amount + 1 WHERE cust = 2",
            "UPDATE customers SET region = 'east' WHERE id = 1",
            "DELETE FROM orders WHERE status = 'open' AND id < 4",
            "INSERT INTO customers VALUES (3, 'west')",
        ],
        views=names,
    )
    for name in names:
        assert "incremental refresh of" in run(name)
    check(tmp_path, views=names)


def python_driver(session: int) -> int:
    """The Python process spark-submit started in process session ``session``."""
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and os.getsid(int(entry.name)) == session
                and (entry / "cmdline").read_bytes().split(b"\0")[0] == sys.executable.encode()
            ):
                return int(entry.name)
        except OSError:  # the process ended meanwhile
            continue
    raise AssertionError("spark-submit started no Python driver")


@pytest.mark.slow
def test_a_loop_job_keeps_its_view_fresh_until_sigterm(work, tmp_path, served):
    """``--loop`` creates ``latest`` (FRESHNESS 2 s), refreshes it when its source changes,
    and stops cleanly with status 0 on SIGTERM to the driver. The job and the processes that
    change the sources share the catalog through ``ivm metastore``."""
    for name in ("ivm_runtime.zip", "refresh_latest.py"):
        (tmp_path / name).write_bytes((work / name).read_bytes())
    check(
        tmp_path,
        [
            "CREATE TABLE orders (id INT, cust INT, status STRING, amount INT) "
            "USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true)",
            "INSERT INTO orders VALUES (1, 1, 'open', 10), (2, 1, 'paid', 20)",
        ],
        views=(),
        environment=served,
    )
    unserved = submit(tmp_path, "latest", environment=served)
    out, err = unserved.communicate(timeout=600)
    assert unserved.returncode == 1, err[-3000:]
    assert (
        "error: the catalog is served ($IVM_METASTORE) but Derby's client driver is not "
        f"on the driver's classpath\nHint: spark-submit --driver-class-path "
        f"{client_classpath()} ..." in out + err
    )
    with open(tmp_path / "loop.err", "w") as err:
        loop = submit(
            tmp_path,
            "latest",
            "--loop",
            "--tick",
            "0.5",
            stderr=err,
            environment=served,
            classpath=("--driver-class-path", client_classpath()),
        )
    printed: queue.Queue = queue.Queue()
    threading.Thread(
        target=lambda: [printed.put(line) for line in loop.stdout], daemon=True
    ).start()

    def wait_for(text: str) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and (loop.poll() is None or not printed.empty()):
            with contextlib.suppress(queue.Empty):
                if text in printed.get(timeout=1):
                    return
        raise AssertionError(
            f"the loop job never printed {text!r}: {(tmp_path / 'loop.err').read_text()[-3000:]}"
        )

    try:
        wait_for("keeping 1 of 1 materialized views fresh: default.latest")
        check(
            tmp_path,
            ["INSERT INTO orders VALUES (8, 3, 'open', 2), (9, 1, 'paid', 4)"],
            views=("latest",),
            environment=served,
        )
        wait_for("incremental refresh of default.latest")
        os.kill(python_driver(loop.pid), signal.SIGTERM)
        wait_for("stopped")
        assert loop.wait(timeout=120) == 0
    finally:
        if loop.poll() is None:
            os.killpg(loop.pid, signal.SIGKILL)
    check(tmp_path, views=("latest",), environment=served)


@pytest.mark.slow
def test_a_job_over_a_missing_source_fails_with_a_message(work, tmp_path):
    (tmp_path / "ivm_runtime.zip").write_bytes((work / "ivm_runtime.zip").read_bytes())
    (tmp_path / "refresh_latest.py").write_text((work / "refresh_latest.py").read_text())
    process = submit(tmp_path, "latest")
    out, err = process.communicate(timeout=600)
    assert process.returncode == 1, err[-3000:]
    printed = out + err  # spark-submit passes a Python driver's stderr to its stdout
    assert "error: table or view not found: default.orders" in printed
    assert "Traceback" not in printed and "\tat org.apache" not in printed
