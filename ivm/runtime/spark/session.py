"""A SparkSession with Delta Lake and a persistent catalog.

``spark_session(home)`` keeps everything that must survive a restart under one directory:

* ``<home>/metastore_db``: the Derby database of the Hive metastore (table names, schemas,
  locations), which the home's catalog server serves to every process of the home
  (``<home>/metastore_server``, :mod:`ivm.runtime.spark.catalog_server`),
* ``<home>/warehouse``: the data of managed tables (Delta tables created with ``CREATE TABLE``),
* ``<home>/derby.log``: Derby's log, so that nothing is written into the working directory,
* ``<home>/logs/spark.log``: Spark's log, so that none of it reaches the console
  (:mod:`ivm.runtime.spark.logs`).

Settings the user already gave win over our defaults: ``spark-submit --conf``/``--master``,
``spark-defaults.conf`` (in ``$SPARK_CONF_DIR`` or ``$SPARK_HOME/conf``), ``--conf`` in
``PYSPARK_SUBMIT_ARGS``, or the configuration of an already running SparkContext.  The explicit
``conf`` argument wins over all of them.  List-valued settings are merged instead of replaced:
Delta's packages are added to ``spark.jars.packages``, Delta's extension to
``spark.sql.extensions``, and the settings of Derby's and Spark's logs to
``spark.driver.extraJavaOptions``.

Delta's jars come from Maven through Spark's Ivy (``spark.jars.packages``).  Once Ivy has
fetched them into ``~/.ivy2.5.2/jars``, and unless the user asked for packages or an Ivy
directory of their own, the cached jars go straight into ``spark.jars`` instead: same
classpath, but no Ivy resolution (and its report on stderr) at every start.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

from pyspark import SparkConf
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

from ivm.runtime.spark import catalog_server, logs
from ivm.runtime.spark.connect import driver_jvm, is_connect
from ivm.runtime.spark.metastore import ENVIRONMENT as METASTORE_ENVIRONMENT
from ivm.runtime.spark.metastore import client_environment, connection_conf

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DERBY_LOG_FLAG = "derby.stream.error.file"
CONNECTION_URL = "spark.hadoop.javax.jdo.option.ConnectionURL"
"""The JDBC address of the metastore's database."""

# Applied only when the master is local; sized for a small (2-core) machine.
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.databricks.delta.snapshotPartitions": "2",
    # Spark's 1g heap runs out in a long session that keeps many Delta logs and plans
    # cached; it is a ceiling, not an allocation.
    "spark.driver.memory": "4g",
}

CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries"
CODEGEN_CACHE_ENTRIES = "2000"
"""Spark keeps the classes it compiled for the last 100 generated sources by default; one
refresh of a view with a join and an aggregate compiles about 190, so every refresh evicted
its own and compiled them all again (a second of a one-row refresh here). With room for a
few views' worth, a view's next refresh, whose generated code is the same, compiles none."""

REMOTE_ENVIRONMENT = "SPARK_REMOTE"
"""Spark's variable for the Spark Connect server a session is a client of."""
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_CONNECT_PORT = 15002

# spark-submit options that are shorthands for Spark properties.
_SUBMIT_OPTIONS = {
    "--master": "spark.master",
    "--name": "spark.app.name",
    "--packages": "spark.jars.packages",
    "--driver-java-options": "spark.driver.extraJavaOptions",
    "--driver-memory": "spark.driver.memory",
}

# Defaults this module handed to a previous session in this process.  When the JVM outlives a
# stopped session, its system properties still hold them; they are ours, not the user's.
_applied: dict[str, str] = {}


def resolve_home(home: str | os.PathLike | None = None) -> Path:
    """The absolute ivm home: ``home``, else ``$IVM_HOME``, else ``./ivm_home``.

    >>> resolve_home("/tmp/x/../y")
    PosixPath('/tmp/y')
    """
    if home is None:
        home = os.environ.get("IVM_HOME") or "ivm_home"
    return Path(os.path.abspath(os.path.expanduser(os.fspath(home))))


def _merge_list(
    current: str | None, extra: list[str], key=lambda item: item, separator: str = ","
) -> str:
    """``current`` plus the ``extra`` items it lacks (compared by ``key``).

    >>> _merge_list("a:b:1, c:d:2", ["c:d:3", "e:f:1"], key=lambda c: c.rsplit(":", 1)[0])
    'a:b:1,c:d:2,e:f:1'
    """
    items = [item.strip() for item in (current or "").split(separator) if item.strip()]
    seen = {key(item) for item in items}
    return separator.join(items + [item for item in extra if key(item) not in seen])


def _package_key(coordinate: str) -> str:
    return coordinate.rsplit(":", 1)[0]  # group:artifact, any version


_PROPERTY = re.compile(r"([^\s=:]+)\s*[=:\s]?\s*(.*)")
"""A line of a properties file as ``java.util.Properties`` reads it: the key ends at the
first blank, ``=`` or ``:``; one ``=`` or ``:`` and the blanks around it separate the value."""


def _read_properties(path: Path) -> dict[str, str]:
    """Spark's properties-file format: ``key value``, ``key=value`` or ``key: value`` lines,
    ``#`` and ``!`` comments."""
    result = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        if found := _PROPERTY.fullmatch(line):
            result[found[1]] = found[2].strip()
    return result


def _submit_args_conf(submit_args: str) -> dict[str, str]:
    """Spark properties given in a ``PYSPARK_SUBMIT_ARGS`` string.

    >>> _submit_args_conf("--master local[1] --conf spark.x=1 -c spark.y=a=b pyspark-shell")
    {'spark.master': 'local[1]', 'spark.x': '1', 'spark.y': 'a=b'}
    """
    result: dict[str, str] = {}
    args = shlex.split(submit_args)
    for option, value in pairwise([*args, ""]):  # each argument and the next
        if option in ("--conf", "-c") and "=" in value:
            k, v = value.split("=", 1)
            result[k] = v
        elif option in _SUBMIT_OPTIONS:
            result[_SUBMIT_OPTIONS[option]] = value
    return result


def spark_conf_dir() -> str:
    """Spark's configuration directory: ``$SPARK_CONF_DIR``, else ``conf`` in ``$SPARK_HOME``
    or in pyspark's package, as ``spark-submit`` finds it."""
    import pyspark

    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    return os.environ.get("SPARK_CONF_DIR") or os.path.join(spark_home, "conf")


def launch_conf() -> dict[str, str]:
    """Spark settings a JVM launched from here would get from its environment:
    ``spark-defaults.conf``, ``SPARK_DRIVER_MEMORY``, then ``PYSPARK_SUBMIT_ARGS`` (the same
    precedence as spark-submit's)."""
    found: dict[str, str] = {}
    conf_dir = spark_conf_dir()
    if os.path.isfile(os.path.join(conf_dir, "spark-defaults.conf")):
        found.update(_read_properties(Path(conf_dir, "spark-defaults.conf")))
    if os.environ.get("SPARK_DRIVER_MEMORY"):
        found["spark.driver.memory"] = os.environ["SPARK_DRIVER_MEMORY"]
    found.update(_submit_args_conf(os.environ.get("PYSPARK_SUBMIT_ARGS", "")))
    return found


def ambient_conf() -> dict[str, str]:
    """Spark settings the user already gave outside of ``spark_session``'s arguments: the
    environment's (:func:`launch_conf`), overridden by those of a JVM that already runs."""
    from pyspark import SparkContext

    found = launch_conf()
    active = SparkContext._active_spark_context
    if active is not None:
        found.update(active.getConf().getAll())
    else:
        if "PYSPARK_GATEWAY_PORT" in os.environ:
            # Launched by spark-submit: the JVM already runs and holds `--conf` values as
            # system properties.  Connecting to it is cheap and starts nothing.
            SparkContext._ensure_initialized()
        found.update(SparkConf().getAll())  # empty while no JVM runs
    return {k: v for k, v in found.items() if _applied.get(k) != v}


def session_conf(
    home: Path,
    *,
    app_name: str = "ivm",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    ambient: dict[str, str] | None = None,
    metastore: str | None = None,
    console_progress: bool = False,
) -> tuple[dict[str, str], dict[str, str]]:
    """The settings ``spark_session`` applies: ``(defaults, final)``.

    ``metastore``: the ``host:port`` of a served metastore (:mod:`ivm.runtime.spark.metastore`)
    to use instead of the embedded one. ``console_progress``: Spark's progress bar on stderr
    (``spark.ui.showConsoleProgress``), unless the user set it.

    ``defaults`` are ours (only keys the user did not set); ``final`` is everything to put on
    the builder: defaults, then merged list settings, then the explicit ``conf``.

    >>> d, f = session_conf(Path("/h"), ambient={"spark.sql.shuffle.partitions": "8"})
    >>> f["spark.sql.warehouse.dir"], "spark.sql.shuffle.partitions" in f
    ('/h/warehouse', False)
    >>> d, f = session_conf(Path("/h"), master="yarn", conf={"spark.sql.shuffle.partitions": "9"})
    >>> f["spark.master"], f["spark.sql.shuffle.partitions"], "spark.ui.enabled" in f
    ('yarn', '9', False)
    """
    conf = {k: str(v) for k, v in (conf or {}).items()}
    ambient = ambient or {}
    if master is not None:
        conf.setdefault("spark.master", master)
    effective_master = conf.get("spark.master") or ambient.get("spark.master") or "local[*]"
    ours = _our_settings(home, app_name, effective_master, metastore, console_progress)
    defaults = {k: v for k, v in ours.items() if k not in ambient}
    return defaults, {**defaults, **conf, **_merged_lists(home, conf, ambient)}


def _our_settings(
    home: Path,
    app_name: str,
    master: str,
    metastore: str | None,
    console_progress: bool,
) -> dict[str, str]:
    """Every setting ivm gives a session of ``home`` on ``master`` (see
    :func:`session_conf`), whether or not the user set it."""
    ours = {
        "spark.master": "local[*]",
        "spark.app.name": app_name,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        CODEGEN_CACHE: CODEGEN_CACHE_ENTRIES,
        CONNECTION_URL: f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
    }
    ours.update(connection_conf(metastore) if metastore else {})
    if master.startswith("local"):
        ours.update(LOCAL_DEFAULTS)
    if console_progress:
        ours["spark.ui.showConsoleProgress"] = "true"
    return ours


def _merged_lists(home: Path, conf: dict[str, str], ambient: dict[str, str]) -> dict[str, str]:
    """The list settings of a session of ``home``, the user's (``conf``, else ``ambient``)
    with ours added: Delta's extension, Delta's jars (or packages), the Java options of
    Derby's and Spark's logs."""
    # not at import time: keeps `python -m ivm.runtime.spark.jars` clean
    from ivm.runtime.spark import jars

    def current(key: str) -> str | None:
        return conf.get(key, ambient.get(key))

    merged = {
        "spark.sql.extensions": _merge_list(current("spark.sql.extensions"), [DELTA_EXTENSION])
    }
    cached = jars.cached_jars()
    user_packages = current("spark.jars.packages")
    if cached and not user_packages and "spark.jars.ivy" not in {**ambient, **conf}:
        # Ivy already fetched them: put the jars on the classpath directly.  Same result as
        # resolving the packages, minus Ivy's ~20-line report on every JVM start.
        merged["spark.jars"] = _merge_list(current("spark.jars"), [str(j) for j in cached])
    else:
        merged["spark.jars.packages"] = _merge_list(
            user_packages, jars.delta_packages(), key=_package_key
        )
    java_options = current("spark.driver.extraJavaOptions") or ""
    derby = shlex.quote(f"-D{DERBY_LOG_FLAG}={home / 'derby.log'}")
    flags = [] if DERBY_LOG_FLAG in java_options else [derby]
    flags += logs.log_options(home, java_options, spark_conf_dir())
    if flags:
        merged["spark.driver.extraJavaOptions"] = " ".join([java_options, *flags]).strip()
    return merged


def served_metastore(home: Path, given: str | None, settings: dict[str, str]) -> str | None:
    """The ``host:port`` of the served catalog a session of ``home`` with ``settings`` (the
    user's: ambient, then explicit) uses: ``given`` (``$IVM_METASTORE``); None, the catalog
    opened embedded, for ``embedded``, for a session whose catalog is not the home's Derby
    (a driver in a cluster, a ``ConnectionURL`` of the user's, an in-memory catalog), and
    where Derby's network server cannot be had (its jars; under spark-submit, the client
    driver missing from the driver's classpath); else the home's catalog server, started if
    none runs."""
    from ivm.runtime.spark.metastore import (
        CLIENT_DRIVER,
        EMBEDDED,
        client_classpath,
        server_jars_at_hand,
    )

    if given and given != EMBEDDED:
        return given
    if (
        settings.get("spark.submit.deployMode") == "cluster"  # a driver on another machine
        or CONNECTION_URL in settings
        or settings.get("spark.sql.catalogImplementation", "hive") != "hive"
    ):
        return None
    if given == EMBEDDED:
        catalog_server.open_alone(home, hint=f"unset {METASTORE_ENVIRONMENT} to share it")
        return None
    if not server_jars_at_hand():
        catalog_server.open_alone(
            home, hint="fetch Derby's network server with `make jars` (mvn) to share it"
        )
        return None
    if "PYSPARK_GATEWAY_PORT" in os.environ and not _loadable(CLIENT_DRIVER):
        catalog_server.open_alone(
            home, hint=f"spark-submit --driver-class-path {client_classpath()} shares it"
        )
        return None
    return catalog_server.ensure(home)


def _loadable(name: str) -> bool:
    """Whether the JVM that runs already (spark-submit's) can load the class ``name``."""
    from py4j.protocol import Py4JJavaError
    from pyspark import SparkContext

    jvm: Any = SparkContext._jvm  # py4j: Java packages and classes, found at run time
    try:
        return jvm.org.apache.spark.util.Utils.classIsLoadable(name)
    except Py4JJavaError:  # a class whose superclass is missing fails to link
        return False


@contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` in this process's environment for the block."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def spark_session(
    home: str | os.PathLike | None = None,
    *,
    app_name: str = "ivm",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    metastore: str | None = None,
    remote: str | None = None,
    console_progress: bool = False,
) -> SparkSession:
    """Get or create the SparkSession ivm runs on: Delta Lake plus a persistent Hive catalog.

    ``remote`` (default: ``$SPARK_REMOTE``, Spark's own variable): ``sc://host:port`` of a
    Spark Connect server to be a client of instead, such as one :func:`connect_server_command`
    starts; the server holds Delta, the catalog and the warehouse, so ``home``, ``master``
    and ``metastore`` are the server's business then, and ``conf`` is set on the session.

    ``home`` holds the catalog and the warehouse (default: ``$IVM_HOME``, else ``./ivm_home``).
    Every process of a home shares its catalog through the home's catalog server, which the
    first one starts (:mod:`ivm.runtime.spark.catalog_server`); ``metastore`` (default:
    ``$IVM_METASTORE``) is ``host:port`` of a catalog served otherwise (``ivm metastore``), or
    ``embedded``: the catalog opened by this process alone.
    ``master`` defaults to ``local[*]``; on a local master the UI is off and partition counts
    are small.  ``console_progress``: Spark's progress bar of running stages on stderr, for a
    terminal (off by default: a log would fill with it).  Settings the user already gave
    (spark-submit, spark-defaults.conf, a running SparkContext) win over these defaults and
    ``conf`` wins over everything.  If a session is already active it is returned, with
    ``conf`` applied to it.

    The first start fetches the Delta jars through Spark's Ivy (see ``ivm.runtime.spark.jars``).
    Under ``spark-submit`` the driver JVM already runs, so Delta must be on its classpath from
    the start: ``spark-submit --packages io.delta:delta-spark_2.13:<delta version> ...``.

    For example (it starts a JVM, so it is no doctest)::

        spark = spark_session("/tmp/ivm_home")
        spark.sql("CREATE TABLE t (x INT) USING delta")
    """
    from pyspark import SparkContext

    remote = remote or os.environ.get(REMOTE_ENVIRONMENT)
    if remote:
        return _connect_client(remote, app_name, conf)
    home_path = resolve_home(home)
    if SparkContext._active_spark_context is not None:
        builder = SparkSession.builder
        if conf:
            builder = builder.config(map={k: str(v) for k, v in conf.items()})
        return builder.getOrCreate()
    return _started_session(home_path, app_name, master, conf, metastore, console_progress)


def _connect_client(remote: str, app_name: str, conf: dict[str, str] | None) -> SparkSession:
    """A session that is a client of the Spark Connect server ``remote``, with ``conf`` set
    on it."""
    spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    for key, value in (conf or {}).items():
        spark.conf.set(key, str(value))
    return spark


def _started_session(
    home_path: Path,
    app_name: str,
    master: str | None,
    conf: dict[str, str] | None,
    metastore: str | None,
    console_progress: bool,
) -> SparkSession:
    """Start the session of :func:`spark_session` where no SparkContext runs in this
    process: its catalog served or opened embedded, its settings those of
    :func:`session_conf`."""
    ambient = ambient_conf()
    home_path.mkdir(parents=True, exist_ok=True)
    given = metastore or os.environ.get(METASTORE_ENVIRONMENT)
    served = served_metastore(
        home_path,
        given,
        {**ambient, **({"spark.master": master} if master else {}), **(conf or {})},
    )
    defaults, final = session_conf(
        home_path,
        app_name=app_name,
        master=master,
        conf=conf,
        ambient=ambient,
        metastore=served,
        console_progress=console_progress,
    )
    builder = SparkSession.builder
    if "spark.sql.catalogImplementation" not in ambient:
        builder = builder.enableHiveSupport()
    with _environment(client_environment() if served else {}):  # the JVM launched takes it
        # pyspark annotates map as Dict[str, OptionalPrimitiveType], and Dict is invariant:
        # it rejects the dict[str, str] that config takes at run time
        spark = builder.config(map=final).getOrCreate()  # pyright: ignore[reportArgumentType]
    _applied.clear()
    _applied.update(defaults)
    if logs.routed(final.get("spark.driver.extraJavaOptions", "")):
        quiet_query_error_logs()  # an error reaches its caller as the exception alone
    if is_connect(spark):  # spark.api.mode=connect: a local server with these settings
        return spark
    _prepare_driver(spark, home_path, home_catalog=bool(served and not given))
    return spark


def _prepare_driver(spark: SparkSession, home_path: Path, *, home_catalog: bool) -> None:
    """Prepare the driver of the session ``spark`` just started in this process: Spark's
    log level, the catalog's tables created through the home's catalog server where it uses
    it (``home_catalog``), Derby's log location."""
    spark.sparkContext.setLogLevel("ERROR")
    if home_catalog:
        catalog_server.created(home_path, lambda: spark.sql("SHOW DATABASES").count())
    # Derby reads its log location when it boots (lazily, on first catalog access); this
    # covers JVMs launched without our extraJavaOptions (e.g. by spark-submit).
    jvm: Any = driver_jvm(spark)  # py4j: Java packages and classes, found at run time
    system = jvm.java.lang.System
    if system.getProperty(DERBY_LOG_FLAG) is None:
        system.setProperty(DERBY_LOG_FLAG, str(home_path / "derby.log"))


QUERY_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
"""pyspark's loggers of query errors: each writes an error that points into a query (a SQL
text's position, a DataFrame call) to stderr as JSON with the Java stack trace, when the
error is raised, also where it is caught and handled."""


def quiet_query_error_logs() -> None:
    """Silence :data:`QUERY_ERROR_LOGGERS` in this process, for a program that tells its
    user about errors itself (``ivm``'s ``ivm: ...``), and in a session whose log ivm sends
    to the home, where an error reaches its caller as the exception: the user reads an error
    once, without a Java stack trace."""
    for name in QUERY_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def connect_server_command(
    home: str | os.PathLike | None = None,
    *,
    host: str = "localhost",
    port: int = DEFAULT_CONNECT_PORT,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    metastore: str | None = None,
) -> list[str]:
    """The ``spark-submit`` command line of a Spark Connect server for ivm's clients: the
    session :func:`spark_session` would start here (Delta, the catalog and warehouse of
    ``home``, ``master``, ``conf``, the catalog served at ``metastore``, else embedded),
    serving ``sc://host:port``. The server is the ``spark-connect`` jar that pyspark ships.

    >>> command = connect_server_command("/h", port=15099)
    >>> command[command.index("--class") + 1] == CONNECT_SERVER_CLASS
    True
    >>> "spark.connect.grpc.binding.port=15099" in command
    True

    Its catalog is the home's Hive catalog, as :func:`spark_session`'s (a server started by
    ``spark-submit`` alone would keep its tables in memory, and lose them when it stops):

    >>> "spark.sql.catalogImplementation=hive" in command
    True
    """
    import pyspark

    home_path = resolve_home(home)
    ambient = launch_conf()
    _, final = session_conf(
        home_path,
        app_name="ivm Spark Connect server",
        master=master,
        conf=conf,
        ambient=ambient,
        metastore=metastore,
    )
    if "spark.sql.catalogImplementation" not in ambient:  # as spark_session's enableHiveSupport
        final.setdefault("spark.sql.catalogImplementation", "hive")
    final |= {
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
    }
    command = [
        os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"),
        "--class",
        CONNECT_SERVER_CLASS,
    ]
    for key, value in final.items():
        command += ["--conf", f"{key}={value}"]
    return command
