"""A view whose root is a GROUP BY or a window replaces its rows at the keys a change touches,
the old rows read from its own store.

The affected-key rule (:mod:`ivm.rules.keyed`) recomputes an operator over its input before
the change and after it. At the view's root the rows before the change are the view's own rows
at the affected keys ``K``, as its store holds them::

    ΔV = V(R' ⋉ K) − V ⋉ K,      K = keys of ΔR,   V ⋉ K: the store at K

Read from the store, a retracted row is the stored row bit for bit; recomputed, it need not
be. A floating-point aggregate (SUM or AVG of a DOUBLE, STDDEV, …) depends on the order Spark
adds the rows in, which differs between the query that wrote the row and the one that would
retract it; a retraction that matches no stored row fails the refresh. The store at ``K`` is
also smaller than the input before the change, which the refresh then does not read.

It applies to a view that is, under projections, derived tables and filters (``HAVING``, a
top-N's bound on its rank), a GROUP BY or a window whose keys (partition columns) the view
names as they are.

>>> from sqlglot import exp
>>> from ivm.ir import Aggregate, AggregateCall, Project, Scan, scans
>>> from ivm.rules import differentiate
>>> t = Scan("t", "t", ("k", "v"))
>>> total = Aggregate(t, (("_ivm_key0", exp.column("k", "t")),), (("_ivm_agg0", AggregateCall(
...     "sum", call=exp.Sum(this=exp.column("v", "t")))),))
>>> view = Project(total, (("k", exp.column("_ivm_key0")), ("total", exp.column("_ivm_agg0"))))
>>> operator, delta = replaced_keys(view, differentiate, "db.v")
>>> operator is total, sorted({(s.table, s.read.value) for s in scans(delta)})
(True, [('db.v', 'store'), ('t', 'after'), ('t', 'delta')])
"""

from __future__ import annotations

from sqlglot import exp

from ivm.ir import Aggregate, Filter, Project, Relation, Subquery, Union, Window
from ivm.ir import reading as read_as
from ivm.rules.append import exposed, replaced, replacing, stored_at
from ivm.rules.base import Differentiate, Kind, Rule
from ivm.rules.keyed import affected_keys, restricted
from ivm.zset import Read


def replaced_keys(
    plan: Relation, differentiate: Differentiate, view: str
) -> tuple[Aggregate | Window, Union] | None:
    """The GROUP BY or window at the root of the view ``plan`` (named ``view``, whose store it
    reads) and the view's change as view rows with their weights; None where the rule does not
    apply."""
    operator = replaced_operator(plan)
    if operator is None:
        return None
    keys = _keys(operator)
    found = exposed(plan, _named(operator))
    affected = affected_keys([(differentiate(operator.input), keys)])
    rows = restricted(operator.input, Read.AFTER, keys, affected)
    rebuilt: Relation = (
        Aggregate(rows, operator.keys, operator.calls)
        if isinstance(operator, Aggregate)
        else Window(rows, operator.partition, operator.functions)
    )
    after = read_as(replaced(plan, operator, rebuilt), Read.AFTER)
    stored = stored_at(view, plan, operator, keys, found, affected)
    return operator, replacing(after, stored, plan, not keys, affected)


def replaced_operator(plan: Relation) -> Aggregate | Window | None:
    """The GROUP BY or window under the view's projections, derived tables and filters, where
    the view names its keys as they are; None where there is none."""
    node = plan
    while isinstance(node, (Project, Subquery, Filter)):
        node = node.input
    if not isinstance(node, (Aggregate, Window)):
        return None
    if isinstance(node, Window) and not all(
        isinstance(k, exp.Column) and not k.table for k in node.partition
    ):
        return None  # a window's input is named: its partition, columns of it
    named = _named(node)
    return node if named <= set(exposed(plan, named)) else None


def _keys(operator: Aggregate | Window) -> list[exp.Expr]:
    """The operator's keys: a GROUP BY's expressions, a window's partition columns."""
    if isinstance(operator, Aggregate):
        return [e for _, e in operator.keys]
    return list(operator.partition)


def _named(operator: Aggregate | Window) -> set[str]:
    """The names of the operator's output columns that are its keys."""
    if isinstance(operator, Aggregate):
        return {n for n, _ in operator.keys}
    return {k.name for k in operator.partition if isinstance(k, exp.Column)}


RULE = Rule(
    Project,
    "replace keys",
    Kind.KEYED,
    "ΔV = V(R' ⋉ K) − V ⋉ K, K = keys of ΔR",
    "the input after the change and the view's own rows at the affected keys",
    replaced_keys,
)
