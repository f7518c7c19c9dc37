"""``ivm status`` answered by a running ``ivm run`` from its own session.

As a client of the Spark Connect service of ``ivm run``, ``ivm status`` starts no JVM, but
each of the twenty-odd questions it asks (the catalog, each log's history, each prediction)
is a round trip that Spark plans anew: seconds. ``ivm run`` answers it instead, in a thread
of its own that reads in its driver, where the logs it keeps refreshing are at hand: it
listens on a free loopback port, to clients that present the key recorded beside the port
in ``<home>/status_server`` (its owner's alone), and sends back the lines ``ivm status``
prints. Python's :mod:`multiprocessing.connection` carries the request and the answer, and
authenticates the client with the key.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Client, Listener
from pathlib import Path

from ivm.runtime.spark import processes

RECORD = "status_server"
LOOPBACK = "127.0.0.1"
TIMEOUT_SECONDS = 60.0
"""How long a client waits for an answer before it asks the catalog itself."""


@dataclass(frozen=True)
class Answer:
    """What ``ivm status`` prints: the ``table`` of the views' status (None: no view had
    one), the ``errors`` met for some views, one line each, and ``views``, how many views
    there are."""

    table: str | None
    errors: tuple[str, ...]
    views: int


@contextmanager
def served(spark, home: Path) -> Iterator[None]:
    """Answer ``ivm status`` from ``spark`` for the block, recorded in ``home``."""
    key = secrets.token_bytes(32)
    listener = Listener((LOOPBACK, 0), authkey=key)
    pid = os.getpid()
    entry = {
        "port": listener.address[1],
        "key": key.hex(),
        "pid": pid,
        "started": processes.started(pid),
    }
    processes.write_at_once(home / RECORD, json.dumps(entry), mode=0o600)
    thread = threading.Thread(target=_serve, args=(spark, listener), daemon=True)
    thread.start()
    try:
        yield
    finally:
        with suppress(OSError, ValueError, KeyError):
            if json.loads((home / RECORD).read_text())["pid"] == pid:
                (home / RECORD).unlink()
        listener.close()


def _serve(spark, listener: Listener) -> None:
    """Answer each client of ``listener`` in turn, until it is closed; the first answer is
    worked out before any is asked for, so that the first ``ivm status`` is as quick as the
    next (the first reads of a session plan and load what the next ones reuse)."""
    with suppress(Exception):
        answer(spark, None)
    while True:
        try:
            connection = listener.accept()
        except OSError:  # closed: ivm run stops
            return
        except Exception:  # a client that failed to authenticate, say
            continue
        with connection, suppress(OSError, EOFError):
            views = connection.recv()
            try:
                answered = answer(spark, views)
            except Exception:  # a name that is no view, say: the client says so itself
                answered = None
            connection.send(answered)


def answer(spark, views: list[str] | None) -> Answer:
    """The status of ``views`` (names as given, each a materialized view; None: every
    materialized view), as ``ivm status`` prints it."""
    from ivm.runtime.catalog.definition import view_properties
    from ivm.runtime.catalog.graph import materialized_views
    from ivm.runtime.catalog.tables import qualified_name
    from ivm.runtime.messages import user_message
    from ivm.runtime.observation.status import status_table, view_status

    if views is None:
        names = materialized_views(spark)
    else:
        names = list(dict.fromkeys(qualified_name(spark, v) for v in views))
        for view in names:
            view_properties(spark, view)  # raises for one that is no materialized view
    statuses, errors = [], []
    for view in names:
        try:
            statuses.append(view_status(spark, view))
        except Exception as error:
            errors.append(f"ivm: {view}: {user_message(error) or error}")
    return Answer(status_table(statuses) if statuses else None, tuple(errors), len(names))


def ask(home: Path, views: list[str] | None) -> Answer | None:
    """The answer of the ``ivm run`` of ``home`` for ``views``; None where none runs, or it
    did not answer (the command then asks the catalog itself, and says what is wrong)."""
    try:
        entry = json.loads((home / RECORD).read_text())
        port, key, pid, started = entry["port"], entry["key"], entry["pid"], entry["started"]
    except (OSError, ValueError, KeyError):
        return None
    if not processes.alive(pid, started):
        return None
    try:
        with Client((LOOPBACK, port), authkey=bytes.fromhex(key)) as connection:
            connection.send(views)
            if not connection.poll(TIMEOUT_SECONDS):
                return None
            return connection.recv()
    except (OSError, EOFError, ValueError):
        return None
