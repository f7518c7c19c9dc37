"""Frontend: Spark SQL text → qualified sqlglot tree → relational IR; materialized-view
statements (:mod:`ivm.frontend.statements`)."""

from ivm.frontend.lower import lower
from ivm.frontend.parse import parse_query, qualify_query, referenced_tables

__all__ = ["lower", "parse_query", "qualify_query", "referenced_tables"]
