"""What a function does to a view's maintenance: the catalogues of functions whose value is
not a function of the rows a query reads (another value each time, the session's, or the order
rows arrive in), consulted by the lowering, which refuses them, and by the passes, which keep
a condition that calls one where it is written."""

from __future__ import annotations

from sqlglot import exp

NONDETERMINISTIC = {
    "rand",
    "random",
    "randn",
    "uuid",
    "shuffle",
    "current_timestamp",
    "now",
    "current_date",
    "curdate",
    "localtimestamp",
    "unix_timestamp",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
}


def function_name(function: exp.Func) -> str:
    """A function's name, lower case (an unknown function by the name it was called by)."""
    return (
        function.sql_name() if not isinstance(function, exp.Anonymous) else function.name
    ).lower()


def nondeterministic(function: exp.Func) -> bool:
    """``function`` may give another value each time it is evaluated on the same arguments.

    >>> from ivm.names import DIALECT
    >>> [nondeterministic(exp.maybe_parse(f, dialect=DIALECT)) for f in ("rand()", "abs(x)")]
    [True, False]
    """
    return function_name(function) in NONDETERMINISTIC or isinstance(
        function, (exp.Rand, exp.Randn, exp.Uuid, exp.CurrentTimestamp, exp.CurrentDate)
    )


SESSION_DEPENDENT = {
    "current_user",
    "user",
    "session_user",
    "current_database",
    "current_schema",
    "current_catalog",
}
"""Functions whose value is the session's: a refresh runs in another session."""

COLLECTIONS = {"collect_list", "array_agg", "collect_set", "array_unique_agg"}
"""Aggregates that collect values into an array, in the order rows arrive in."""
ORDER_DEPENDENT_AGGREGATES = {
    "first",
    "last",
    "first_value",
    "last_value",
    "any_value",
    "string_agg",
    "listagg",
    "group_concat",
} | COLLECTIONS
"""Aggregates whose value depends on the order rows arrive in: no refresh can reproduce it."""
