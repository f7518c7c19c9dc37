"""What a Spark or Delta failure is: the one place ivm tells its kinds apart.

A failure is recognised by the narrowest signal Spark gives: the error condition of the
failure or of one of its causes (``ARITHMETIC_OVERFLOW``, ``DELTA_CONCURRENT_APPEND``), else
the class of a Java exception in its chain of causes; a message is read only for what Spark
puts there alone (a missing file's path, ``raise_error``'s text). The same error reaches
Python as a ``PySparkException`` (classic or Spark Connect) or a ``Py4JJavaError`` (a call
into the JVM that Spark does not convert), and :func:`classify` reads each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from urllib.parse import urlparse

from ivm.codegen.store import NEGATIVE_COUNT
from ivm.store import OVERFLOW


class Failure(Enum):
    """The kinds of failure ivm acts on; any other is raised as Spark raised it."""

    LOST_RACE = "another write of the table committed first"
    OVERFLOW = "a value overflowed its type"
    STORE_DISAGREES = "a count of the store fell below zero"
    CHANGE_DATA_LOST = "the change data of a source is no longer available"
    FILE_MISSING = "a file a table's log names does not exist"
    UNRESOLVED_NAME = "the query names a table, column or function Spark cannot find"


LOST_RACE_CONDITIONS = frozenset(
    {
        "DELTA_CONCURRENT_APPEND",
        "DELTA_CONCURRENT_DELETE_DELETE",
        "DELTA_CONCURRENT_DELETE_READ",
        "DELTA_CONCURRENT_TRANSACTION",
        "DELTA_CONCURRENT_WRITE",
        "DELTA_METADATA_CHANGED",
        "DELTA_PROTOCOL_CHANGED",
    }
)
"""Delta's conflicts of a commit with one that landed since the write read the table."""
LOST_RACE_CLASS = "io.delta.exceptions."
"""The package of Delta's public conflict exceptions (``ConcurrentAppendException``, …)."""
OVERFLOW_CONDITIONS = frozenset(
    {
        "ARITHMETIC_OVERFLOW",
        "CAST_OVERFLOW",
        "CAST_OVERFLOW_IN_TABLE_INSERT",
        "NUMERIC_VALUE_OUT_OF_RANGE",
    }
)
"""ANSI mode's failures of a value too large for its type."""
CHANGE_DATA_CONDITIONS = frozenset(
    {
        "DELTA_MISSING_CHANGE_DATA",
        "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_DATA_SCHEMA",
        "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE",
    }
)
"""Delta cannot give the change of a version range: not recorded, or not in today's schema."""
VERSION_NOT_FOUND = "org.apache.spark.sql.delta.VersionNotFoundException"
"""Delta's log no longer (or not yet) holds a version: it names no condition."""
MISSING_FILE_CONDITIONS = frozenset(
    {
        "FAILED_READ_FILE.FILE_NOT_EXIST",
        "DELTA_FILE_NOT_FOUND",
        "DELTA_FILE_OR_DIR_NOT_FOUND",
        "PATH_NOT_FOUND",  # a Parquet read of listed files, as it is defined
    }
)
"""A read found a file missing; each names it in the message parameter ``path``."""
FILE_NOT_FOUND = "java.io.FileNotFoundException"
NAME_CONDITIONS = frozenset(
    {
        "UNRESOLVED_ROUTINE",
        "UNRESOLVED_COLUMN",
        "TABLE_OR_VIEW_NOT_FOUND",
        "AMBIGUOUS_REFERENCE",
        "UNRESOLVED_FIELD",
        "UNRESOLVED_MAP_KEY",
    }
)
"""Spark's conditions about the names a query uses: a :class:`~ivm.errors.CatalogError` of
the query, where any other refusal of it is an :class:`~ivm.errors.InvalidQuery`."""
USER_RAISED = "USER_RAISED_EXCEPTION"
"""``raise_error(message)``'s condition; ``message`` is its parameter ``errorMessage``."""


def classify(error: Exception, sources: Iterable[str] = ()) -> Failure | None:
    """The kind of ``error``, or None for one ivm does not act on. A missing file is lost
    change data only under the location of one of ``sources`` (the Delta tables a refresh
    reads the change and the snapshots of); elsewhere it is :attr:`Failure.FILE_MISSING`."""
    found = conditions(error)
    classes = java_classes(error)
    if found & LOST_RACE_CONDITIONS or any(c.startswith(LOST_RACE_CLASS) for c in classes):
        return Failure.LOST_RACE
    raised = raised_message(error)
    if found & OVERFLOW_CONDITIONS or raised == OVERFLOW:
        return Failure.OVERFLOW
    if raised == NEGATIVE_COUNT:
        return Failure.STORE_DISAGREES
    if found & CHANGE_DATA_CONDITIONS or VERSION_NOT_FOUND in classes:
        return Failure.CHANGE_DATA_LOST
    path = missing_file(error)
    if path is not None:
        if any(is_under(path, location) for location in sources):
            return Failure.CHANGE_DATA_LOST
        return Failure.FILE_MISSING
    if found & NAME_CONDITIONS:
        return Failure.UNRESOLVED_NAME
    return None


def conditions(error: Exception) -> frozenset[str]:
    """The error conditions of ``error`` and of its causes, each also as its main condition
    (``NUMERIC_VALUE_OUT_OF_RANGE`` beside ``NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION``)."""
    found = set()
    for condition, _ in _spark_throwables(error):
        found |= {condition, condition.split(".")[0]}
    return frozenset(found)


def java_classes(error: Exception) -> list[str]:
    """The Java classes of ``error``'s JVM exception and of its causes, outermost first;
    for Spark Connect, those its server's stack trace names."""
    java = _java_exception(error)
    if java is not None:
        return [throwable.getClass().getName() for throwable in _chain(java)]
    trace = getattr(error, "getStackTrace", lambda: None)() or ""
    return re.findall(r"^(?:Caused by: )?([\w$]+(?:\.[\w$]+)+)(?::|$)", trace, re.MULTILINE)


def missing_file(error: Exception) -> str | None:
    """The path of the file whose absence failed ``error``, if that is what failed it."""
    for condition, parameters in _spark_throwables(error):
        if condition in MISSING_FILE_CONDITIONS and parameters.get("path"):
            return parameters["path"]
    java = _java_exception(error)
    for throwable in _chain(java) if java is not None else ():
        if throwable.getClass().getName() == FILE_NOT_FOUND:
            message = str(throwable.getMessage() or "")
            named = re.fullmatch(r"File (\S+) does not exist", message)
            return named.group(1) if named else message
    return None


def raised_message(error: Exception) -> str | None:
    """The message of the ``raise_error`` that failed ``error``, if one did."""
    for condition, parameters in _spark_throwables(error):
        if condition == USER_RAISED:
            return parameters.get("errorMessage")
    return None


def is_under(path: str, location: str) -> bool:
    """Whether the file ``path`` is inside the directory ``location`` (either a URI or a
    bare path: ``file:/a/b/c`` is under ``/a/b``)."""
    file, directory = urlparse(path), urlparse(location)
    if file.netloc and directory.netloc and file.netloc != directory.netloc:
        return False
    return file.path.startswith(directory.path.rstrip("/") + "/")


def _spark_throwables(error: Exception) -> list[tuple[str, dict[str, str]]]:
    """The condition and message parameters of ``error`` and of each cause that has one."""
    java = _java_exception(error)
    if java is None:  # Spark Connect: the server sends the outermost one's
        condition = getattr(error, "getCondition", lambda: None)()
        parameters = getattr(error, "getMessageParameters", lambda: None)() or {}
        return [(condition, dict(parameters))] if condition else []
    found = []
    for throwable in _chain(java):
        condition = _java_condition(throwable)
        if condition:
            found.append((condition, _java_parameters(throwable)))
    return found


def _java_exception(error: Exception):
    """The JVM exception behind ``error``; None where there is none (Spark Connect)."""
    java = getattr(error, "java_exception", None)  # Py4JJavaError
    return java if java is not None else getattr(error, "_origin", None)  # CapturedException


def _chain(throwable) -> list:
    """``throwable`` and its causes, outermost first."""
    chain = []
    while throwable is not None and len(chain) < 20:
        chain.append(throwable)
        cause = throwable.getCause()
        throwable = None if cause is None or cause.equals(throwable) else cause
    return chain


def _java_condition(throwable) -> str | None:
    """The condition of a JVM exception that is a ``SparkThrowable``, else None."""
    try:
        return throwable.getCondition()
    except Exception:  # no getCondition: not a SparkThrowable
        return None


def _java_parameters(throwable) -> dict[str, str]:
    """The message parameters of a ``SparkThrowable`` (none where it cannot give them)."""
    try:
        return dict(throwable.getMessageParameters())
    except Exception:  # Delta's conflicts fail to give theirs
        return {}
