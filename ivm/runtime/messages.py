"""What a command (``ivm``, a generated job) tells its user about an error."""

from __future__ import annotations

from ivm.errors import IvmError


def user_message(error: Exception) -> str | None:
    """What to tell a user of a command about ``error``: ivm's own message, or the first line
    of Spark's (never a JVM stack trace); None for an error that is a bug to report."""
    if isinstance(error, IvmError):
        return str(error)
    if isinstance(error, FileNotFoundError):
        return f"{error.strerror}: {error.filename}"
    from pyspark.errors import PySparkException  # not at import: ivm's own errors need no Spark
    if isinstance(error, PySparkException):
        return f"Spark: {str(error).strip().splitlines()[0]}"
    return None
