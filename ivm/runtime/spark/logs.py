"""Where the log of a Spark driver ivm starts goes: ``<home>/logs/spark.log``, not the console.

Spark, Delta and Hive log through log4j 2. Without a configuration of the user's, Spark's
default one writes each warning and error to stderr, Java stack traces included: a task that
failed to read a vacuumed change data file (which a refresh then recomputes), Hive's failed
ALTER of a store Delta replaced, Delta refusing a column name before ivm says so in a line,
and notes at every start. ivm's :data:`CONFIGURATION` sends all of it to a file in the home
instead, through the driver's JVM options (``spark.driver.extraJavaOptions``, which
:func:`~ivm.runtime.spark.session.session_conf` merges, so also the Spark Connect server of
``ivm connect-server``). ``SparkContext.setLogLevel`` changes the level only; the lines
still go to the file.

A session started so also keeps pyspark's log of a failed query (JSON, with the Java stack
trace) off the console: the error reaches its caller as the exception
(:func:`~ivm.runtime.spark.session.quiet_query_error_logs`). A configuration of the user's
wins (:func:`user_configured`), and a JVM that runs already (``spark-submit``) keeps the one
it started with. Derby, which does not use log4j, writes its own log to ``<home>/derby.log``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

CONFIGURATION = Path(__file__).with_name("log4j2.properties")
"""ivm's log4j 2 configuration, shipped in the package."""
CONFIGURATION_PROPERTY = "log4j2.configurationFile"
DIRECTORY_PROPERTY = "ivm.log.dir"
"""The system property :data:`CONFIGURATION` reads the directory of its file from."""

USER_PROPERTIES = (CONFIGURATION_PROPERTY, "log4j.configurationFile", "log4j.configuration")
"""The JVM system properties that name a log4j configuration (log4j 2 also reads its 1.x
name)."""
JVM_OPTION_VARIABLES = ("SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")
"""Environment variables whose JVM options the driver's JVM starts with too."""
CONFIGURATION_VARIABLE = "LOG4J_CONFIGURATION_FILE"
"""log4j 2's environment variable for its configuration."""
CONFIGURATION_FILES = tuple(
    f"{name}{extension}"
    for name in ("log4j2-test", "log4j2")
    for extension in (".properties", ".yaml", ".yml", ".json", ".jsn", ".xml")
)
"""The files log4j 2 looks for on the classpath, where Spark puts its configuration directory."""


def log_file(home: Path) -> Path:
    """The file the Spark driver of ``home`` logs to."""
    return home / "logs" / "spark.log"


def user_configured(
    java_options: str, conf_dir: str | None, environment: Mapping[str, str] = os.environ
) -> bool:
    """Whether the user gave log4j a configuration for the driver: in its ``java_options``,
    the environment's, or a file in Spark's configuration directory ``conf_dir``.

    >>> user_configured("-Xss4m -Dlog4j2.configurationFile=/etc/l.xml", None, {})
    True
    >>> user_configured("-Xss4m", None, {"SPARK_SUBMIT_OPTS": "-Dlog4j.configuration=x"})
    True
    >>> user_configured("-Xss4m", None, {})
    False
    """
    options = " ".join([java_options, *(environment.get(v, "") for v in JVM_OPTION_VARIABLES)])
    if any(f"-D{name}=" in options for name in USER_PROPERTIES):
        return True
    if environment.get(CONFIGURATION_VARIABLE):
        return True
    return conf_dir is not None and any(
        os.path.isfile(os.path.join(conf_dir, name)) for name in CONFIGURATION_FILES
    )


def log_options(
    home: Path,
    java_options: str,
    conf_dir: str | None,
    environment: Mapping[str, str] = os.environ,
) -> list[str]:
    """The JVM options that send the driver's log to :func:`log_file` of ``home``; none
    where the user configured log4j (:func:`user_configured`), or where the package's
    :data:`CONFIGURATION` is no file (ivm imported from a zip, as a job's ``--py-files``).

    >>> [o.split("=")[0] for o in log_options(Path("/h"), "-Xss4m", None, {})]
    ['-Dlog4j2.configurationFile', '-Divm.log.dir']
    >>> log_options(Path("/h"), "-Dlog4j.configurationFile=/etc/l.xml", None, {})
    []
    """
    if user_configured(java_options, conf_dir, environment) or not CONFIGURATION.is_file():
        return []
    return [
        shlex.quote(f"-D{CONFIGURATION_PROPERTY}={CONFIGURATION}"),
        shlex.quote(f"-D{DIRECTORY_PROPERTY}={log_file(home).parent}"),
    ]


def routed(java_options: str) -> bool:
    """Whether the JVM options ``java_options`` send the driver's log to the home's file
    (those of :func:`log_options`).

    >>> routed(" ".join(log_options(Path("/h"), "", None, {})))
    True
    >>> routed("-Dlog4j2.configurationFile=/etc/l.xml")
    False
    """
    return f"-D{CONFIGURATION_PROPERTY}={CONFIGURATION}" in shlex.split(java_options)
