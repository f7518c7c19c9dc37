"""The catalog server of an ivm home: Derby's network server, started on demand and shared by
every process that uses the home.

Embedded Derby, Spark's default metastore, admits one process per database: a second one
fails to boot it. So :func:`~ivm.runtime.spark.session.spark_session` calls :func:`ensure`,
which, under a lock, registers the calling process (``clients/<pid>``) and returns the
address of the home's server, starting one if none runs. The server is a supervisor process
(:func:`supervise`, detached from the terminal) and its Derby JVM, on a free loopback port
recorded in ``address``. Once no registered process has been alive for :data:`IDLE_SECONDS`,
the supervisor stops Derby and exits. All of it lives in ``<home>/metastore_server``, with
the supervisor's and Derby's logs; the database stays ``<home>/metastore_db``, the one
embedded Derby opens.

Where a process holds the database alone (embedded Derby: ``IVM_METASTORE=embedded``, or an
older ivm), no server can open it: :func:`ensure` says so in a :class:`CatalogInUse`, naming
the process, before Spark tries. A process that is to open the database alone
(:func:`open_alone`) stops a server no process uses any more, and is refused beside one that
serves others.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ivm.errors import IvmError
from ivm.runtime.spark import processes
from ivm.runtime.spark.metastore import DATABASE, server_command

DIRECTORY = "metastore_server"
LOOPBACK = "127.0.0.1"
IDLE_SECONDS = 60.0
"""How long the server outlives the last process of its home: a command run a minute after
another finds it still up."""
START_SECONDS = 120.0
"""How long a process waits for a server it started to listen."""
POLL_SECONDS = 1.0


class CatalogInUse(IvmError):
    """Another process has the home's catalog open alone, so this one cannot open it."""


def ensure(home: Path) -> str:
    """The ``host:port`` of the catalog server of ``home``, started if none runs; the calling
    process is registered as one of its clients for as long as it lives."""
    directory = home / DIRECTORY
    (directory / "clients").mkdir(parents=True, exist_ok=True)
    with _locked(directory):
        _register(directory, os.getpid())
        address = running(home)
        if address is not None:
            return address
        _refuse_if_held(
            home,
            hint="that process opened it embedded (IVM_METASTORE=embedded, or an older ivm); "
            "stop it, and the processes of this home share the catalog",
        )
        return _start(home)


def created(home: Path, create: Callable[[], object]) -> None:
    """Run ``create``, a first use of the catalog of ``home`` through its server that creates
    the catalog's tables where they are missing, unless a process did so for this database
    already; one process at a time. The Hive metastore creates its tables, and the
    ``default`` database, on a client's first use: two clients of a new database did it at
    once, and one of them printed the other's rows as a Java stack trace."""
    directory = home / DIRECTORY
    marker = directory / "created"
    if _created_for(marker, home):
        return
    with _locked(directory, "create.lock"):
        if not _created_for(marker, home):
            create()
            processes.write_at_once(marker, str((home / DATABASE).stat().st_ino))


def _created_for(marker: Path, home: Path) -> bool:
    """Whether ``marker`` records the database of ``home`` as it is (not one removed since)."""
    try:
        return marker.read_text() == str((home / DATABASE).stat().st_ino)
    except OSError:
        return False


def running(home: Path) -> str | None:
    """The ``host:port`` of the catalog server of ``home``, if one runs."""
    try:
        recorded = json.loads((home / DIRECTORY / "address").read_text())
        port, pid, started = recorded["port"], recorded["pid"], recorded["started"]
    except (OSError, ValueError, KeyError):
        return None
    if processes.alive(pid, started) and processes.listening(LOOPBACK, port):
        return f"{LOOPBACK}:{port}"
    return None


def open_alone(home: Path, hint: str) -> None:
    """Make way for this process to open the catalog of ``home`` alone (embedded Derby): stop
    the home's catalog server where no process uses it any more; raise
    :class:`CatalogInUse`, with ``hint``, where another process has the catalog open."""
    directory = home / DIRECTORY
    if running(home) is not None:
        with _locked(directory):
            if _clients(directory):
                raise CatalogInUse(
                    f"the catalog of {home} is in use by other processes, through the home's "
                    "catalog server; this one would open it alone",
                    hint=hint,
                )
            _stop_server(directory)
    _refuse_if_held(home, hint)


def _refuse_if_held(home: Path, hint: str) -> None:
    holder = _holder(home / DATABASE)
    if holder is not None:
        process = f"process {holder}" if holder else "another process"
        raise CatalogInUse(f"the catalog of {home} is open in {process} alone", hint=hint)


def _stop_server(directory: Path) -> None:
    """Stop the server of ``directory`` (with its lock held), and wait until it has."""
    with suppress(OSError, ValueError, KeyError):
        recorded = json.loads((directory / "address").read_text())
        os.kill(recorded["pid"], signal.SIGTERM)
        deadline = time.monotonic() + START_SECONDS
        while processes.alive(recorded["pid"], recorded["started"]):
            if time.monotonic() > deadline:
                raise IvmError(f"the catalog server of {directory.parent} did not stop")
            time.sleep(0.1)


def _start(home: Path) -> str:
    directory = home / DIRECTORY
    root = str(Path(__file__).resolve().parents[3])  # where ivm is imported from
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    with open(directory / "server.log", "ab") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", __name__, str(home), str(IDLE_SECONDS)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,  # out of reach of the terminal's Ctrl-C and hangup
        )
    deadline = time.monotonic() + START_SECONDS
    while (address := running(home)) is None:
        if supervisor.poll() is not None or time.monotonic() > deadline:
            raise IvmError(
                f"the catalog server of {home} did not start",
                hint=f"its log is {directory / 'server.log'}",
            )
        time.sleep(0.1)
    return address


def supervise(home: Path, idle: float) -> int:
    """Serve the catalog of ``home`` until no client of it has been alive for ``idle``
    seconds, or until SIGTERM; then stop Derby. Returns the exit status."""
    directory = home / DIRECTORY
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    for _ in range(3):  # another process may take the free port before Derby binds it
        port = _free_port()
        derby = subprocess.Popen(
            server_command(home, LOOPBACK, port, log=directory / "derby.log"),
            stdin=subprocess.DEVNULL,
            preexec_fn=_end_with_parent,
        )
        try:
            while derby.poll() is None and not processes.listening(LOOPBACK, port):
                time.sleep(0.1)
            if derby.poll() is None:
                pid = os.getpid()
                record = {"port": port, "pid": pid, "started": processes.started(pid)}
                processes.write_at_once(directory / "address", json.dumps(record))
                print(f"serving the catalog of {home} on {LOOPBACK}:{port}", flush=True)
                _serve(directory, derby, idle)
                return 0
        finally:
            _stop(directory, derby)
    print(f"Derby's network server did not start; its log is {directory / 'derby.log'}")
    return 1


def _serve(directory: Path, derby: subprocess.Popen, idle: float) -> None:
    """Serve until Derby ends, or until no client has been alive for ``idle`` seconds; then
    stop, holding the lock :func:`ensure` registers a client under, so that none finds the
    server about to stop, nor its database still open after it stopped."""
    last_client = time.monotonic()
    while derby.poll() is None:
        time.sleep(POLL_SECONDS)
        if _clients(directory):
            last_client = time.monotonic()
        elif time.monotonic() - last_client >= idle:
            with _locked(directory):
                if not _clients(directory):
                    _stop(directory, derby)
                    print(f"no process used the catalog for {idle:g} s: stopped", flush=True)
                    return
    print(f"Derby's network server ended (exit status {derby.returncode})", flush=True)


def _stop(directory: Path, derby: subprocess.Popen) -> None:
    """Stop Derby, and remove the address this process recorded."""
    if derby.poll() is None:
        derby.terminate()
        try:
            derby.wait(timeout=30)
        except subprocess.TimeoutExpired:
            derby.kill()
            derby.wait()
    with suppress(OSError, ValueError, KeyError):
        address = directory / "address"
        if json.loads(address.read_text())["pid"] == os.getpid():
            address.unlink()


def _clients(directory: Path) -> int:
    """How many registered clients are alive; the registrations of the others are removed."""
    alive = 0
    for registration in (directory / "clients").iterdir():
        with suppress(OSError, ValueError):
            if processes.alive(int(registration.name), registration.read_text()):
                alive += 1
                continue
        registration.unlink(missing_ok=True)
    return alive


def _register(directory: Path, pid: int) -> None:
    processes.write_at_once(directory / "clients" / str(pid), processes.started(pid))


def _holder(database: Path) -> int | None:
    """The process that has ``database`` open (Derby locks its ``dbex.lck``, as
    ``FileChannel.tryLock`` does, with a POSIX lock), 0 if that process is unknown, None if
    there is none."""
    try:
        descriptor = os.open(database / "dbex.lck", os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return _locking_process(os.fstat(descriptor).st_ino)
    else:
        fcntl.lockf(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def _locking_process(inode: int) -> int:
    """The process holding a POSIX lock on the file of ``inode``, from Linux's
    ``/proc/locks`` (lines such as ``1: POSIX ADVISORY WRITE 6714 fe:00:9978225 0 EOF``); 0
    where it is not found."""
    with suppress(OSError):
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "POSIX" and fields[5].endswith(f":{inode}"):
                return int(fields[4])
    return 0


@contextmanager
def _locked(directory: Path, name: str = "lock") -> Iterator[None]:
    """Hold the lock ``name`` of the server's ``directory``; by default the one under which one
    process at a time starts a server, and none registers while the server decides to stop."""
    with open(directory / name, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def _end_with_parent() -> None:
    """In Derby's process before it runs: end it with SIGTERM when the supervisor ends, even
    killed (Linux's ``PR_SET_PDEATHSIG``; elsewhere it outlives a killed supervisor)."""
    with suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


if __name__ == "__main__":  # python -m ivm.runtime.spark.catalog_server HOME IDLE_SECONDS
    sys.exit(supervise(Path(sys.argv[1]), float(sys.argv[2])))
