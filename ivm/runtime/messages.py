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


def one_line(error: Exception) -> str:
    """What went wrong, on one line: ivm's message and hint, Spark's first line, a Java
    exception's message, or else the error's type and message."""
    if isinstance(error, IvmError):
        text = error.message + (f" (hint: {error.hint})" if error.hint else "")
    else:
        from py4j.protocol import Py4JJavaError

        text = user_message(error) or (
            str(error.java_exception)
            if isinstance(error, Py4JJavaError)
            else f"{type(error).__name__}: {error}"
        )
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


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
