"""A catalog that several processes share: the Hive metastore served by Derby's network server.

The embedded metastore of :func:`~ivm.runtime.spark.session.spark_session` admits one process at a
time. For ``ivm run`` next to a notebook, or next to deployed jobs, serve it instead::

    ivm metastore                          # in a terminal of its own; Ctrl-C stops it
    export IVM_METASTORE=localhost:1527    # then, in every process of that ivm home:
    ivm run                                # ... and spark_session() in the notebook

Every process must also use the same ivm home, where the warehouse is. The server keeps the
catalog in ``<home>/metastore_db``, the database the embedded mode uses, so a home can move
between the two modes. On a cluster, point ``spark.hadoop.javax.jdo.option.ConnectionURL``
at the metastore database the cluster already has (PostgreSQL, MySQL) instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from ivm.errors import IvmError
from ivm.runtime.spark import jars

ENVIRONMENT = "IVM_METASTORE"
DEFAULT_PORT = 1527
CLIENT_DRIVER = "org.apache.derby.jdbc.ClientDriver"
DATABASE = "metastore_db"


def _jars() -> list[Path]:
    found = jars.metastore_jars()
    if not all(j.is_file() for j in found):
        jars.ensure_jars()
        found = jars.metastore_jars()
    missing = [j.name for j in found if not j.is_file()]
    if missing:
        raise IvmError(
            f"the Derby network server's jars are missing: {', '.join(missing)}",
            hint="run `make jars` (it fetches them with mvn into ~/.m2)",
        )
    return found


def client_classpath() -> str:
    """The classpath of Derby's client driver, which a process of a served catalog needs."""
    return os.pathsep.join(str(j) for j in _jars() if j.name.startswith("derbyclient"))


def connection_conf(address: str) -> dict[str, str]:
    """Spark settings for a metastore served at ``address`` (``host:port``)."""
    return {
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby://{address}/{DATABASE};create=true",
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": CLIENT_DRIVER,
        "spark.driver.extraClassPath": client_classpath(),
    }


def server_command(home: Path, host: str = "localhost", port: int = DEFAULT_PORT) -> list[str]:
    """The command that serves the metastore of ``home`` on ``host:port``."""
    return [
        "java",
        f"-Dderby.system.home={home}",
        f"-Dderby.stream.error.file={home / 'derby-server.log'}",
        "-cp",
        os.pathsep.join(str(j) for j in _jars()),
        "org.apache.derby.drda.NetworkServerControl",
        "start",
        "-h",
        host,
        "-p",
        str(port),
        "-noSecurityManager",
    ]


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def serve(home: Path, host: str = "localhost", port: int = DEFAULT_PORT) -> int:
    """Serve the metastore of ``home`` until Ctrl-C or SIGTERM, which stop the server too.

    Both are handled here, also where the process was started with Ctrl-C's signal ignored
    (a shell's background job), as ``ivm run`` does."""
    home.mkdir(parents=True, exist_ok=True)
    print(
        f"serving the catalog of {home} on {host}:{port}; in other processes of this "
        f"home: export {ENVIRONMENT}={host}:{port}",
        flush=True,
    )
    previous = {stop: signal.signal(stop, _interrupt) for stop in (signal.SIGINT, signal.SIGTERM)}
    server = subprocess.Popen(server_command(home, host, port))
    try:
        return server.wait()
    except KeyboardInterrupt:
        server.terminate()
        server.wait()
        return 0
    finally:
        for stop, handler in previous.items():
            signal.signal(stop, handler)
