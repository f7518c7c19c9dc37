"""Errors a user can act on: what was wrong, where in the SQL, and what to do instead.

Every error ivm raises on purpose is an :class:`IvmError`. Those about a query carry the
SQL text and a :class:`Position`, and render the offending line with a caret under it.

>>> sql = "SELECT a\\nFROM t ORDER BY a"
>>> print(UnsupportedQuery("ORDER BY", sql, Position(2, 8),
...                        hint="order the rows when you query the view"))
ORDER BY is not supported in a materialized view (line 2, column 8)
  FROM t ORDER BY a
         ^
Hint: order the rows when you query the view
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in the SQL text (column of the first character)."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"


class IvmError(Exception):
    """Base class of every error ivm raises on purpose."""

    def __init__(
        self,
        message: str,
        sql: str | None = None,
        position: Position | None = None,
        hint: str | None = None,
    ):
        self.message = message
        self.sql = sql
        self.position = position
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        text = self.message
        if self.position is not None:
            text += f" ({self.position})"
            if self.sql is not None:
                lines = self.sql.splitlines()
                if 0 < self.position.line <= len(lines):
                    line = lines[self.position.line - 1]
                    text += f"\n  {line}\n  {' ' * (self.position.column - 1)}^"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text


class SqlSyntaxError(IvmError):
    """The SQL text does not parse."""


class CatalogError(IvmError):
    """A table or column the query names does not exist, or is ambiguous."""


class InvalidQuery(IvmError):
    """The query is no valid view definition: Spark refuses it (a type error, a wrong number
    of arguments, a column neither grouped nor aggregated, …), or its result has a computed
    column without a name, or two columns of one name."""


class ReservedName(IvmError):
    """The query names a column as ivm's bookkeeping does (``_ivm_…``)."""


class UnsupportedQuery(IvmError):
    """The query uses a construct that ivm cannot maintain incrementally (yet)."""

    def __init__(
        self,
        construct: str,
        sql: str | None = None,
        position: Position | None = None,
        hint: str | None = None,
        reason: str | None = None,
    ):
        self.construct = construct
        message = f"{construct} is not supported in a materialized view"
        if reason:
            message += f": {reason}"
        super().__init__(message, sql, position, hint)


class SourceError(IvmError):
    """A source table cannot feed a materialized view (not Delta, no change data feed, …)."""


class ViewExists(IvmError):
    """CREATE of a name that already exists."""


class ViewNotFound(IvmError):
    """REFRESH / DROP of a materialized view that does not exist."""


class StateError(IvmError):
    """The stored view is inconsistent with its sources; a full refresh repairs it."""


class ConcurrentRefresh(IvmError):
    """Other refreshes of the same view kept committing first."""


class ViewsNotRefreshed(IvmError):
    """REFRESH ALL left views unrefreshed: ``failures`` says why of each, on one line (its
    refresh's error, or the failed views it reads); ``results`` holds the refreshes it did
    (:class:`~ivm.runtime.catalog.history.RefreshResult`, in the order they were done)."""

    def __init__(self, results: list, failures: dict[str, str]):
        self.results = results
        self.failures = failures
        super().__init__(
            f"{len(failures)} of {len(results) + len(failures)} materialized views were not "
            f"refreshed:\n" + "\n".join(f"  {view}: {why}" for view, why in failures.items()),
            hint="fix the failed views, then run REFRESH ALL MATERIALIZED VIEWS again: it "
            "refreshes the skipped ones too",
        )


class DependencyCycle(IvmError):
    """Materialized views would read each other in a cycle."""


class ViewInUse(IvmError):
    """DROP of a materialized view that other materialized views read."""


class OwnedByView(IvmError):
    """A Spark statement (DROP VIEW, ALTER VIEW, a write) on what a materialized view owns:
    its catalog view, its store, a state table, or the database of its stores."""


class StaleJob(IvmError):
    """A generated job whose SQL is no longer what its view's definition compiles to."""


class SetupError(IvmError):
    """Something ivm needs is missing where it runs (Delta Lake, a JDBC driver)."""


class MissingExtra(SetupError, ImportError):
    """A package of one of ivm's extras is not installed (Hypothesis for ``ivm.testing``):
    an ImportError too, raised where the import failed."""
