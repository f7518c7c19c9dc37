"""Code generation: plans and stores → sqlglot ASTs → Spark SQL. No SQL is built from strings."""

from ivm.codegen.sql import to_select, to_sql
from ivm.codegen.store import (
    append_statement,
    compaction_statement,
    create_database_statement,
    create_table_statement,
    create_view_statement,
    drop_database_statement,
    drop_statement,
    folded_columns,
    folded_query,
    in_key_order,
    merge_statement,
    overwrite_statement,
    record_only_statement,
    replace_where_statement,
    set_properties_statement,
    stored_query,
    view_query,
)

__all__ = [
    "append_statement",
    "compaction_statement",
    "create_database_statement",
    "create_table_statement",
    "create_view_statement",
    "drop_database_statement",
    "drop_statement",
    "folded_columns",
    "folded_query",
    "in_key_order",
    "merge_statement",
    "overwrite_statement",
    "record_only_statement",
    "replace_where_statement",
    "set_properties_statement",
    "stored_query",
    "to_select",
    "to_sql",
    "view_query",
]
