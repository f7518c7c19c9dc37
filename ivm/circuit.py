"""The delta circuit: the view's plan as a graph of operators, each with its rule.

Nodes are plan nodes (equal subtrees are one node, so a shared subexpression is computed
once); an edge runs from an input to the operator reading it. :func:`explain` renders it.
"""

from __future__ import annotations

from typing import assert_never

import networkx as nx

from ivm.ir import (
    Aggregate,
    Distinct,
    Filter,
    Generate,
    Join,
    JoinKind,
    Project,
    Relation,
    Restrict,
    Scan,
    SetOperation,
    Subquery,
    Union,
    Weighted,
    Window,
    aliases_of,
    children,
    equalities,
    scans,
)
from ivm.names import DIALECT
from ivm.rules import Kind, append, replace, rule_for
from ivm.rules.maintenance import Maintenance
from ivm.zset import Read


def circuit(plan) -> nx.DiGraph:
    """The operators of ``plan``, inputs before the operators that read them."""
    graph = nx.DiGraph()

    def add(node):
        if node in graph:
            return
        graph.add_node(node)
        for child in children(node):
            add(child)
            graph.add_edge(child, node)

    add(plan)
    return graph


def describe(node: Relation) -> str:
    """One line naming an operator and its arguments."""
    match node:
        case Scan():
            return f"scan {node.table} AS {node.alias} ({', '.join(node.columns)})"
        case Join():
            on = node.condition.sql(DIALECT) if node.condition is not None else "TRUE"
            kind = "" if node.kind is JoinKind.INNER else f"{node.kind.value} "
            return f"{kind}join {' ⋈ '.join(_named(i) for i in node.inputs)} ON {on}"
        case Filter():
            return f"filter {node.predicate.sql(DIALECT)}"
        case Project():
            return "project " + ", ".join(n for n, _ in node.columns)
        case Aggregate():
            keys = ", ".join(e.sql(DIALECT) for _, e in node.keys) or "() (one row)"
            calls = ", ".join(c.to_sql().sql(DIALECT) for _, c in node.calls)
            return f"aggregate GROUP BY {keys}: {calls}"
        case Window():
            partition = ", ".join(e.sql(DIALECT) for e in node.partition) or "() (one partition)"
            functions = ", ".join(f.sql(DIALECT) for _, f in node.functions)
            return f"window PARTITION BY {partition}: {functions}"
        case Generate():
            outer = " OUTER" if node.outer else ""
            return f"generate{outer} {node.generator.sql(DIALECT)} AS {', '.join(node.names)}"
        case Distinct():
            return "distinct"
        case Subquery() | Union() | SetOperation() | Restrict() | Weighted():
            return type(node).__name__
        case _:
            assert_never(node)


def _keyless(node: Relation) -> bool:
    """``node``'s operator has no key an affected-key rule could restrict it to."""
    match node:
        case Window():
            return not node.partition
        case Aggregate():
            return not node.keys
        case Join():
            return node.kind is not JoinKind.INNER and not (
                node.condition is not None and equalities(node.condition, *node.inputs)
            )
        case (
            Scan()
            | Subquery()
            | Filter()
            | Project()
            | Generate()
            | Distinct()
            | Union()
            | SetOperation()
            | Restrict()
            | Weighted()
        ):
            return False
        case _:
            assert_never(node)


def _recomputed_whole(node: Relation, rule) -> bool:
    """An affected-key rule over an operator without a key recomputes all of it."""
    return rule.kind is Kind.KEYED and _keyless(node)


def _named(node) -> str:
    """A join input by its alias (several, in parentheses, for a nested join)."""
    aliases = aliases_of(node)
    return aliases[0] if len(aliases) == 1 else f"({', '.join(aliases)})"


def _term_summary(node: Join) -> str:
    """The terms of an inner join's delta: which input is the change, which are snapshots."""
    from ivm.rules import differentiate

    def read(node) -> str:
        if isinstance(node, Restrict):
            return f"{read(node.input)}⋉Δkeys"
        if isinstance(node, Subquery) and isinstance(node.input, Union):  # before: x' − Δx
            after = node.input.inputs[0]
            assert isinstance(after, Project)  # x' with its weight (ivm.rules.join)
            return f"({read(after.input)} − Δ{_named(node)})"
        reads = {s.read for s in scans(node)}
        return (
            f"Δ{_named(node)}"
            if Read.DELTA in reads
            else f"{_named(node)}@{'/'.join(sorted(r.value for r in reads))}"
        )

    summaries = []
    for term in differentiate(node).inputs:
        assert isinstance(term, Join)  # an inner join's delta is a sum of joins
        summaries.append(" ⋈ ".join(read(i) for i in term.inputs))
    return "; ".join(summaries)


def _rooted(plan, maintenance: Maintenance):
    """The operator the root rule maintains: the aggregate under a finishing projection, else
    the root itself."""
    return (
        plan.input
        if isinstance(plan, Project)
        and isinstance(plan.input, Aggregate)
        and maintenance.rule.operator is Aggregate
        else plan
    )


def _rule(node, rooted, maintenance: Maintenance):
    """The rule that maintains ``node`` in the view: the root rule for the root operator it
    maintains, :mod:`ivm.rules.replace` for the operator whose rows it replaces."""
    if node is rooted:
        return maintenance.rule
    if node is maintenance.replaced:
        return replace.RULE
    return rule_for(node)


def to_dot(plan, maintenance: Maintenance) -> str:
    """The circuit in Graphviz's DOT language: an operator per node, labelled with its rule;
    an edge from each input to the operator that reads it."""
    graph = circuit(plan)
    numbers = {node: n for n, node in enumerate(nx.topological_sort(graph), start=1)}
    rooted = _rooted(plan, maintenance)

    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = ["digraph delta_circuit {", "  rankdir=BT;", "  node [shape=box, fontname=monospace];"]
    for node, number in numbers.items():
        rule = _rule(node, rooted, maintenance)
        label = f"[{number}] {describe(node)}"
        if node is plan and rooted is not plan:
            label += "\nview columns from the group accumulators"
        elif rule is not None:
            label += f"\n{rule.name} ({rule.kind.value})"
        lines.append(f"  n{number} [label={quoted(label)}];")
    lines += [f"  n{numbers[a]} -> n{numbers[b]};" for a, b in graph.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def explain(plan, maintenance: Maintenance, states: frozenset[str] = frozenset()) -> str:
    """The circuit, bottom-up: each operator, its rule and what that rule reads; ``states``:
    the view's state tables, which an operator reads in place of its input's sources."""
    graph = circuit(plan)
    store = maintenance.store
    lines = ["delta circuit (inputs first):"]
    whole: list[int] = []
    numbers = {}
    rooted = _rooted(plan, maintenance)
    dimensions = {
        d
        for node in graph
        if isinstance(node, Join) and node.kind.lookup
        for d in nx.ancestors(graph, node.inputs[1]) | {node.inputs[1]}
    }
    for node in nx.topological_sort(graph):
        numbers[node] = len(numbers) + 1
        inputs = ", ".join(f"[{numbers[c]}]" for c in children(node))
        rule = _rule(node, rooted, maintenance)
        lines.append(f"  [{numbers[node]}] {describe(node)}" + (f"  ← {inputs}" if inputs else ""))
        if node in dimensions:
            lines.append(
                "      a lookup join's dimension: read as it is now for new fact rows "
                "only; its change is not read"
            )
        elif node is plan and rooted is not plan:
            lines.append("      view columns computed from the group accumulators")
        elif rule is not None:
            lines.append(f"      rule {rule.name} ({rule.kind.value}): {rule.formula}")
            read = {s.table for s in scans(node)}
            if _recomputed_whole(node, rule) and read <= states:
                lines.append(
                    f"      reads state table {', '.join(sorted(read))} whole, before "
                    f"and after the change: its input's result, not its sources"
                )
            elif _recomputed_whole(node, rule):
                whole.append(numbers[node])
                lines.append(
                    "      reads its whole input "
                    + (
                        "after the change"
                        if rule is replace.RULE
                        else "before and after the change"
                    )
                    + " (no key to restrict it to): a full recompute of this operator"
                )
            else:
                lines.append(f"      reads {rule.reads}")
        if isinstance(node, Join) and node.kind is JoinKind.INNER:
            lines.append(f"      terms: {_term_summary(node)}")
    reads = sorted({(s.table, s.read.value) for s in scans(maintenance.delta)})
    by_table: dict[str, list[str]] = {}
    for table, read in reads:
        by_table.setdefault(table, []).append(read)
    lines.append("sources read by a refresh:")
    lines += [f"  {table}: {', '.join(r)}" for table, r in by_table.items()]
    lines.append("store (the view's Delta table):")
    lines.append(
        f"  keyed by ({', '.join(store.keys)})"
        if store.keys
        else "  exactly one row (global aggregate)"
    )
    lines.append(f"  view columns: {', '.join(store.view_columns)}")
    hidden = store.hidden_keys + tuple(a.name for a in store.accumulators)
    lines.append(f"  hidden state: {', '.join(hidden)}")
    if store.repeat_rows:
        lines.append("  each stored row stands for _ivm_count identical view rows")
    lines.append(
        "full recompute: "
        + (
            f"of operator(s) {', '.join(f'[{n}]' for n in whole)} whenever their input changes"
            if whole
            else "never (every operator is maintained incrementally)"
        )
    )
    if maintenance.inserts_only is not None:
        rule = append.RULE
        lines.append(
            f"where every source's change inserts rows only: rule {rule.name}: "
            f"{rule.formula}; reads {rule.reads}"
        )
    return "\n".join(lines)
