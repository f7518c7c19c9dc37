"""Servers the tests start on this machine: a free port, waiting for something to listen on it,
and a Spark Connect server on an ivm home (``ivm connect-server``)."""

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("localhost", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listens on port {port}")


@contextmanager
def connect_server(home: Path, log: Path):
    """A Spark Connect server started by ``ivm connect-server`` on the catalog of ``home``
    (its output in ``log``), for the block: its ``sc://`` address; stopped afterwards, which
    frees the catalog for another process."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ivm.cli",
            "--home",
            str(home),
            "connect-server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
