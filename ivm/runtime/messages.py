"""What ivm tells its user: about an error (``ivm``, a generated job), and a size."""

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


def size(n: int | None) -> str:
    """``n`` bytes for a reader: 512 B, 3.4 KiB, 12.0 MiB."""
    if n is None:
        return "size unknown"
    amount: float = n
    for unit in ("B", "KiB", "MiB"):
        if amount < 1024:
            return f"{amount} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GiB"
