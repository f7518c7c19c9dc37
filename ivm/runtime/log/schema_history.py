"""How a table's columns changed over a range of its commits, as its Delta log records them.

A change data feed read over a range of commits carries a column's values only while the
column stays the same column. Under column mapping, a column is known by its *physical name*
(``delta.columnMapping.physicalName`` in the schema's field metadata; without column mapping,
its name): a column dropped and added back under the same name has another physical name, and
its old values are gone though the name is the same; a column renamed keeps its physical name
under another name. So the schema at the two ends of a range says too little: each schema a
commit in the range set must be compared with the one before it, column by column, by
physical name and type.

Turning column mapping on keeps every column's physical name (its name), so the change stays
readable across it; turning it off rewrites a table created with column mapping under new
physical names, and Delta cannot read the change across that.

Schemas here are Delta's JSON (``schemaString``), read as Python values: nothing runs on
Spark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pyspark.sql.types import StructField

PHYSICAL_NAME = "delta.columnMapping.physicalName"
MAPPING_OFF = "none"


def _physical(field: dict[str, Any]) -> str:
    return (field.get("metadata") or {}).get(PHYSICAL_NAME, field["name"])


def _shape(type_: Any) -> Any:
    """A type as far as reading its values goes: the type, with each nested field's name and
    physical name (nullability and comments aside)."""
    if not isinstance(type_, dict):
        return type_
    if type_["type"] == "struct":
        return (
            "struct",
            tuple((f["name"], _physical(f), _shape(f["type"])) for f in type_["fields"]),
        )
    if type_["type"] == "array":
        return ("array", _shape(type_["elementType"]))
    if type_["type"] == "map":
        return ("map", _shape(type_["keyType"]), _shape(type_["valueType"]))
    return type_


def _type_name(field: dict[str, Any]) -> str:
    return StructField.fromJson(field).dataType.simpleString()


def column_changes(before: str, after: str) -> list[str]:
    """What happened to the columns from the schema ``before`` to the schema ``after``
    (Delta's schema JSON), column by column: dropped, added, renamed, or changed in type.

    >>> def schema(*fields):
    ...     return json.dumps({"type": "struct", "fields": [
    ...         {"name": n, "type": t, "nullable": True,
    ...          "metadata": {PHYSICAL_NAME: p} if p else {}} for n, t, p in fields]})
    >>> column_changes(schema(("k", "integer", "c1"), ("w", "integer", "c2")),
    ...                schema(("k", "integer", "c1"), ("w", "integer", "c3")))
    ['w dropped', 'w added']
    >>> column_changes(schema(("w", "integer", "c2")), schema(("v", "long", "c2")))
    ['w renamed to v', 'v changed from int to bigint']
    >>> column_changes(schema(("k", "integer", None)), schema(("k", "integer", "k")))
    []
    """
    old = {_physical(f): f for f in json.loads(before)["fields"]}
    new = {_physical(f): f for f in json.loads(after)["fields"]}
    changes = []
    for physical, field in old.items():
        if physical not in new:
            changes.append(f"{field['name']} dropped")
            continue
        now = new[physical]
        if now["name"] != field["name"]:
            changes.append(f"{field['name']} renamed to {now['name']}")
        if _shape(now["type"]) != _shape(field["type"]):
            changes.append(f"{now['name']} changed from {_type_name(field)} to {_type_name(now)}")
    changes += [f"{field['name']} added" for physical, field in new.items() if physical not in old]
    return changes


def schema_changes(start: tuple[str, str], commits: Iterable) -> list[str]:
    """The commits among ``commits`` (:class:`~ivm.runtime.log.delta_log.Commit`, in order) that
    changed a column since the schema and column mapping mode ``start`` that the table had
    before them, each as ``version N (OPERATION): what changed``; empty when every column is
    the column it was (a change of properties only, column mapping turned on).

    >>> from ivm.runtime.log.delta_log import Commit
    >>> k = '{"type": "struct", "fields": [{"name": "k", "type": "integer", "nullable": true}]}'
    >>> mapped = k.replace('true}', 'true, "metadata": {"%s": "col-1"}}' % PHYSICAL_NAME)
    >>> schema_changes((mapped, "name"), [
    ...     Commit(4, 0, "SET TBLPROPERTIES", True, 0, schema=mapped, column_mapping="name"),
    ...     Commit(5, 0, "REMOVE COLUMN MAPPING", True, 0, schema=k, column_mapping="none")])
    ['version 5 (REMOVE COLUMN MAPPING): column mapping turned off, which stored k anew']
    """
    schema, mode = start
    found = []
    for commit in commits:
        if commit.schema is None:
            continue
        changes = column_changes(schema, commit.schema)
        now = commit.column_mapping or MAPPING_OFF
        if changes and now != mode:
            renamed = sorted({c.split(" ")[0] for c in changes})
            changes = [
                f"column mapping turned {'off' if now == MAPPING_OFF else 'on'}, "
                f"which stored {', '.join(renamed)} anew"
            ]
        if changes:
            found.append(f"version {commit.version} ({commit.operation}): {', '.join(changes)}")
        schema, mode = commit.schema, now
    return found
