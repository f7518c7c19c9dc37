"""The Hive metastore served by Derby's network server, for catalogs several processes share.

Each ivm home has a catalog server that its processes start and share on their own
(:mod:`ivm.runtime.spark.catalog_server`); these are its parts: the server's command and
jars, and the settings of a client of it. ``ivm metastore`` serves a home's catalog on a
port of the user's choosing instead, for processes that set ``IVM_METASTORE`` to it::

    ivm metastore --port 1527              # in a terminal of its own; Ctrl-C stops it
    export IVM_METASTORE=localhost:1527    # then, in every process of that ivm home

Every process must also use the same ivm home, where the warehouse is. The server keeps the
catalog in ``<home>/metastore_db``, the database embedded Derby opens
(``IVM_METASTORE=embedded``), so a home can move between the two. On a cluster, point
``spark.hadoop.javax.jdo.option.ConnectionURL`` at the metastore database the cluster already
has (PostgreSQL, MySQL) instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from ivm.errors import IvmError
from ivm.runtime.spark import jars

ENVIRONMENT = "IVM_METASTORE"
EMBEDDED = "embedded"
"""The value of :data:`ENVIRONMENT` for a catalog opened by one process alone (embedded Derby)."""
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


def server_jars_at_hand() -> bool:
    """Whether the jars of Derby's network server and client are at hand (fetched with ``mvn``
    where they are missing and it can)."""
    try:
        _jars()
    except IvmError:
        return False
    return True


def client_classpath() -> str:
    """The classpath of Derby's client driver, which a process of a served catalog needs."""
    return os.pathsep.join(str(j) for j in _jars() if j.name.startswith("derbyclient"))


CLASSPATH_ENVIRONMENT = "SPARK_DIST_CLASSPATH"
"""What Spark's launcher appends to a driver's classpath."""


def client_environment() -> dict[str, str]:
    """The environment to launch a Spark driver in that is a client of a served catalog:
    Derby's client driver at the end of its classpath, where ``spark.driver.extraClassPath``
    would put it first, and a class data sharing archive of the classpath without it would
    no longer apply (the JVM maps one only for a classpath that starts as the archive's)."""
    classpath = [os.environ.get(CLASSPATH_ENVIRONMENT), client_classpath()]
    return {CLASSPATH_ENVIRONMENT: os.pathsep.join(filter(None, classpath))}


def connection_conf(address: str) -> dict[str, str]:
    """Spark settings for a metastore served at ``address`` (``host:port``)."""
    return {
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby://{address}/{DATABASE};create=true",
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": CLIENT_DRIVER,
    }


def server_command(
    home: Path, host: str = "localhost", port: int = DEFAULT_PORT, log: Path | None = None
) -> list[str]:
    """The command that serves the metastore of ``home`` on ``host:port``, Derby's log in
    ``log`` (default ``<home>/derby-server.log``)."""
    java_home = os.environ.get("JAVA_HOME")
    return [
        os.path.join(java_home, "bin", "java") if java_home else "java",
        f"-Dderby.system.home={home}",
        f"-Dderby.stream.error.file={log or home / 'derby-server.log'}",
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
