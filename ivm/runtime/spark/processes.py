"""What the processes that share an ivm home record there for each other: whether a process
recorded there still runs, whether a server listens, and files written at once."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def started(pid: int) -> str:
    """When process ``pid`` started, in clock ticks since boot (Linux's ``/proc``), or ``""``
    where that is unknown: with its pid, it tells a process from a later one given the same
    pid."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return ""


def alive(pid: int, since: str) -> bool:
    """Whether the process ``pid`` that started at ``since`` (:func:`started`) runs, and is
    no zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return fields[0] != "Z" and (not since or fields[19] == since)
    except FileNotFoundError:
        return False
    except OSError:  # no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's
            return True
        return True


def listening(host: str, port: int) -> bool:
    """Whether a server accepts connections at ``host:port`` (within a second)."""
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def write_at_once(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``path`` (with permissions ``mode``) so that a reader finds the old text or the
    new, never a part."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as file:
        file.write(text)
    os.replace(partial, path)
