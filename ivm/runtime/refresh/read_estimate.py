"""What a refresh of a view reads, estimated from its sources' Delta logs (``ivm explain``).

A refresh reads each source's change (Δ) and, where a rule needs one, the source's snapshot
before or after the change. From the logs alone, without a scan:

    reads ≈ Σ change bytes  +  Σ over snapshot reads of the table's bytes   (an upper bound:
                                                                           files the change's
                                                                           keys skip are not read)
    a full recompute reads Σ over sources of the table's bytes.

For a view that exists, the estimate ends with the plan of its next refresh
(:func:`~ivm.runtime.refresh.gather.predict`): what the refresh would do now, and why.
"""

from __future__ import annotations

from ivm.compiler import CompiledView
from ivm.runtime.catalog.tables import store_properties
from ivm.runtime.messages import size
from ivm.runtime.refresh.gather import predict
from ivm.runtime.refresh.sources import source_bytes
from ivm.runtime.spark.connect import Session
from ivm.zset import Read

SNAPSHOTS = (Read.BEFORE, Read.AFTER)


def _snapshot_bytes(kinds: frozenset[Read], table_bytes: int | None) -> int | None:
    """The bytes of a table's snapshots read by reads ``kinds`` (at most all of each)."""
    count = sum(k in kinds for k in SNAPSHOTS) + (Read.TABLE in kinds)
    return 0 if count == 0 else None if table_bytes is None else count * table_bytes


def read_estimate(spark: Session, compiled: CompiledView, view: str | None = None) -> str:
    """The estimate as explain lines, for each state table of the view and then the view;
    ``view`` (qualified) adds their pending change."""
    parts = [
        f"state table {table}:\n"
        + "\n".join(
            "  " + line for line in _estimate(spark, state, table if view else None).splitlines()
        )
        for table, state in compiled.states
    ]
    return "\n".join([*parts, _estimate(spark, compiled, view)])


def _estimate(spark: Session, compiled: CompiledView, view: str | None) -> str:
    reads = compiled.delta_reads
    sizes = source_bytes(spark, compiled.sources)
    lines = ["estimate of what a refresh reads (from the sources' Delta logs):"]
    for table, kinds in sorted(reads.items()):
        if table not in sizes:  # the view's own store (:mod:`ivm.rules.replace`, a lookup state)
            lines.append(f"  {table}: its own rows at the keys the change touches")
            continue
        parts = ["its change (Δ)"] if Read.DELTA in kinds else []
        snapshots = [k.value for k in SNAPSHOTS if k in kinds]
        if snapshots:
            parts.append(f"up to {size(sizes[table])} per snapshot ({', '.join(snapshots)})")
        if Read.TABLE in kinds:
            parts.append(f"all of it ({size(sizes[table])})")
        lines.append(f"  {table} ({size(sizes[table])}): {'; '.join(parts)}")
    snapshot_bytes = sum(
        _snapshot_bytes(kinds, sizes[table]) or 0
        for table, kinds in reads.items()
        if table in sizes
    )
    lines.append(
        f"  a refresh: the change + up to {size(snapshot_bytes)} of snapshots; "
        f"a full recompute: {size(sum(s or 0 for s in sizes.values()))}"
    )
    if view is not None and store_properties(spark, view) is not None:
        lines.append(f"  the next refresh of {view}: {predict(spark, view)}")
    return "\n".join(lines)
