"""Spark Connect sessions: a client of a Spark driver that runs elsewhere (``sc://host:port``).

A Connect client has no JVM of its own. Where a classic session lets ivm read Spark's and
Delta's objects in the driver's JVM directly, the runtime asks :func:`is_connect` and, on a
Connect session, goes through SQL and the DataFrame API instead:

* the Delta log is read by ``DESCRIBE HISTORY`` and ``DESCRIBE DETAIL``
  (:mod:`ivm.runtime.log.delta_log`); the sizes of a change's commits are then unknown, so the
  refresh planner's first rule has no evidence and does not fire;
* what a delta query reads is unknown before it runs (a classic session reads it from the
  optimized plan), so its statements run with Spark's settings, not those for little data,
  and a source's change is kept by a local checkpoint on the server, never collected into
  the client (:func:`~ivm.runtime.refresh.sources.kept`);
* Spark jobs are not counted in a refresh's phases (its seconds are).

Everything a refresh writes, and its exactly-once protocol, is the same: they are SQL
statements and session settings already.
"""

from __future__ import annotations

import copy
import json
import threading
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Union, cast

from pyspark.sql import DataFrame, SparkSession

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

Session = Union[SparkSession, "ConnectSession"]  # noqa: UP007 (a forward reference)
"""A Spark session ivm runs on: classic, with a JVM of its own, or a Connect client."""


def driver_jvm(spark: Session) -> Any:
    """The driver's JVM of a classic session: Java packages and classes, found at run time
    (py4j). A Connect client has none (:func:`is_connect`)."""
    return cast(Any, spark)._jvm


_classes: dict[str, tuple[Any, Any]] = {}


def java_class(spark: Session, name: str) -> Any:
    """The class ``name`` (fully qualified, ``org.apache.spark.sql.delta.DeltaLog``) of a
    classic session's driver JVM, looked up once per JVM: py4j resolves
    ``jvm.org.apache…DeltaLog`` one dotted part at a time, a round trip each, and a refresh
    that takes 0.1 s made a fifth of its ~200 calls to the JVM that way."""
    client = cast(Any, spark).sparkContext._gateway._gateway_client
    kept = _classes.get(name)
    if kept is None or kept[0] is not client:  # a JVM since stopped had it
        kept = _classes[name] = (client, getattr(driver_jvm(spark), name))
    return kept[1]


def java_session(spark: Session) -> Any:
    """The JVM SparkSession behind a classic session."""
    return cast(Any, spark)._jsparkSession


_metastores: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def metastore(spark: Session) -> Any:
    """The catalog behind a classic session's tables (the JVM's ``ExternalCatalog``: the Hive
    metastore), asked directly: each of its calls is one metastore call, where Spark's own
    catalog API and statements make several. Looked up once per session (two calls to the
    JVM each time otherwise)."""
    found = _metastores.get(spark)
    if found is None:
        found = _metastores[spark] = java_session(spark).sharedState().externalCatalog()
    return found


def settings_of(spark: Session) -> dict[str, str]:
    """Every setting of ``spark``, as ``spark.conf.getAll`` gives them, fetched from a classic
    session's JVM as one JSON text: PySpark's ``getAll`` walks the Java map with a py4j call
    per entry and ends on a Java exception it converts, 0.1 s on a busy machine, and a
    refresh asks three times."""
    if is_connect(spark):
        return spark.conf.getAll
    mapper = java_class(spark, "com.fasterxml.jackson.databind.ObjectMapper")()
    return json.loads(mapper.writeValueAsString(java_session(spark).conf().getAllAsJava()))


_spares: list[tuple[Any, dict[str, str]]] = []
_spares_lock = threading.Lock()


def _spare_session(spark: Session) -> tuple[Any, dict[str, str]]:
    """A classic session of ``spark``'s SparkContext that no block uses, and its settings as
    ``newSession`` made them: one given back by an earlier block, else a new one.

    Sessions are used again because Spark keeps the state of every session that ran a query
    (its catalog, analyzer and settings, ~100 KB) for as long as the JVM runs: a new session
    per refresh grew the driver's heap with every refresh. Reused, there are as many as
    blocks ever ran at once."""
    with _spares_lock:
        while _spares:
            own, fresh = _spares.pop()
            if own.sparkContext is spark.sparkContext:  # not of a SparkContext since stopped
                return own, fresh
    own = spark.newSession()
    return own, settings_of(own)


def _give_back(own, fresh: dict[str, str]) -> None:
    """Make ``own`` as ``newSession`` made it — its ``fresh`` settings, no temporary view —
    and keep it for the next block; a session that cannot be made so (its SparkContext
    stopped, say) is not kept."""
    try:
        current = settings_of(own)
        for key in current.keys() - fresh.keys():
            own.conf.unset(key)
        for key, value in fresh.items():
            if current.get(key) != value:
                own.conf.set(key, value)
        own._jsparkSession.sessionState().catalog().clearTempTables()
    except Exception:
        return
    with _spares_lock:
        _spares.append((own, fresh))


def is_connect(spark: Session | DataFrame) -> bool:
    """Whether ``spark`` is a Spark Connect session (or a DataFrame of one)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextmanager
def session_of_its_own(spark: Session) -> Iterator[Any]:
    """A session of its own (settings, temporary views, current database) on the same Spark
    as ``spark`` (a classic or a Connect SparkSession, which share no base class), for the
    block: in a classic session, one made by Spark's ``newSession``, used again by later
    blocks (:func:`_spare_session`). In a Connect session, a second
    server-side session over a client of its own, released after the block, and the
    thread's active session meanwhile: PySpark binds the rows a checkpoint keeps to the
    active session, not to the checkpointed DataFrame's."""
    if not is_connect(spark):
        own, fresh = _spare_session(spark)
        try:
            yield own
        finally:
            _give_back(own, fresh)
        return
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    builder = copy.copy(cast(Any, spark).client._builder)  # the channel the user's session opened
    builder._params = {
        k: v for k, v in builder._params.items() if k != builder.PARAM_SESSION_ID
    }  # a session id of its own
    own = ConnectSession(connection=builder)
    active = ConnectSession._active_session
    before = getattr(active, "session", None)
    active.session = own
    try:
        yield own
    finally:
        active.session = before
        own.client.release_session()
        # Its channel alone: a client's close() also shuts down the thread pool that every
        # client of the process shares, and a Connect session calls it when it is garbage
        # collected, at whatever moment another client may be using that pool.
        own.client._channel.close()
        own.client._closed = True
        own.client.close = lambda: None


def set_settings(spark: Session, settings: dict[str, str]) -> None:
    """Set ``settings`` on ``spark``: in a Connect session in one request, without the
    warnings PySpark raises there for each deprecated setting (a view's CREATE pins some)."""
    if is_connect(spark):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            cast(Any, spark.conf)._set_all(configs=settings, silent=False)
        return
    for key, value in settings.items():
        spark.conf.set(key, value)
