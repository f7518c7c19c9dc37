"""The Spark Connect service of a running ivm process, which the ``ivm`` commands of its home
that only read use rather than start a JVM of their own.

``ivm run`` serves Spark Connect from its driver's JVM (:func:`served`): on a free loopback
port, to clients that present a token, both recorded in ``<home>/connect_server``, which
only its owner can read. ``ivm connect-server`` records its address there too
(:func:`record`). ``ivm status``, ``verify``, ``compile`` and ``explain`` without
``--remote`` find it with :func:`running`: they are then Connect clients of that process,
and start no JVM.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ivm.runtime.spark import processes
from ivm.runtime.spark.connect import Session, driver_jvm, is_connect

RECORD = "connect_server"
SERVICE = "org.apache.spark.sql.connect.service.SparkConnectService"


@contextmanager
def served(spark: Session, home: Path) -> Iterator[None]:
    """Serve Spark Connect from the JVM of the classic session ``spark`` for the block,
    recorded in ``home``; nothing for a Connect session, which has no JVM here."""
    if is_connect(spark):
        yield
        return
    jvm: Any = driver_jvm(spark)  # py4j: Java packages and classes, found at run time
    context = jvm.org.apache.spark.SparkContext.getOrCreate()
    token = secrets.token_urlsafe(24)
    settings = context.conf()  # the live settings the service reads as it starts
    settings.set("spark.connect.grpc.binding.address", "127.0.0.1")
    settings.set("spark.connect.grpc.binding.port", "0")  # a free port
    settings.set("spark.connect.authenticate.token", token)
    package = jvm.org.apache.spark.sql.connect.service
    package.SparkConnectService.start(context)
    port = getattr(getattr(package, "SparkConnectService$"), "MODULE$").localPort()
    # the client's local credentials, which carry a token without TLS, need "localhost"
    record(home, f"sc://localhost:{port}/;token={token}")
    try:
        yield
    finally:
        forget(home)


def record(home: Path, url: str) -> None:
    """Record ``url`` in ``home`` as the Connect server of this process."""
    pid = os.getpid()
    entry = {"url": url, "pid": pid, "started": processes.started(pid)}
    processes.write_at_once(home / RECORD, json.dumps(entry), mode=0o600)


def forget(home: Path) -> None:
    """Remove the record of this process's Connect server from ``home``, if it is there."""
    with suppress(OSError, ValueError, KeyError):
        if json.loads((home / RECORD).read_text())["pid"] == os.getpid():
            (home / RECORD).unlink()


def running(home: Path) -> str | None:
    """The ``sc://`` address of the Connect server recorded in ``home``, if it runs and
    listens, and this Python can be its client; else None."""
    try:
        entry = json.loads((home / RECORD).read_text())
        url, pid, started = entry["url"], entry["pid"], entry["started"]
    except (OSError, ValueError, KeyError):
        return None
    address = urlparse(url.replace("sc://", "http://", 1))
    if not (processes.alive(pid, started) and address.hostname and address.port):
        return None
    if not processes.listening(address.hostname, address.port):
        return None
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies(__name__)
    except ImportError:  # ivm[connect] is not installed
        return None
    return url
