"""The output of the rules for a whole view: its store, and how to fill and update it."""

from __future__ import annotations

from dataclasses import dataclass

from ivm.ir import Relation
from ivm.rules.base import AnyRule
from ivm.store import Store


@dataclass(frozen=True)
class Maintenance:
    """``full`` computes every store row from the live tables; ``delta`` computes, per
    affected store key, the change of each accumulator from the sources' changes. Folding
    ``delta`` into the store (``Accumulator.fold``) gives ``full`` over the new sources.
    ``inserts_only``, where the view has one, is a cheaper ``delta`` for changes that
    insert rows only (:mod:`ivm.rules.append`). ``replaced``: the operator at the root whose
    rows at the affected keys ``delta`` replaces, reading the old ones from the store
    (:mod:`ivm.rules.replace`); None where ``delta`` derives the whole plan."""

    store: Store
    full: Relation
    delta: Relation
    rule: AnyRule
    inserts_only: Relation | None = None
    replaced: Relation | None = None
