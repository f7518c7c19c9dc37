"""The layout of a view's store: the Delta table that holds the view and its state.

A store row stands for one group of the view: for an aggregate view a GROUP BY group, for
any other view one distinct output row. Its columns are

* the view's own columns, in order (what ``SELECT * FROM view`` returns),
* hidden group keys that the view does not select,
* *accumulators*: per group, ``Σ weight · contribution`` over the input rows of the group.

Accumulators form an abelian group under addition, so the change of a group's accumulators is
the same sum taken over the change of the input alone, and folding a change into the store
is addition (DBSP's *integrate*). ``_ivm_count`` (Σ weight) is always there: a group whose
count reaches 0 has no input rows left and disappears. A sum is kept NULL while its group has
no non-NULL input, as SQL's ``SUM`` of only NULLs is NULL.

============  ==========================  ===================  =========================
kind          per-row contribution        full query           change (Z-set Δ)
============  ==========================  ===================  =========================
rows          1                           COUNT(*)             SUM(w)
nonnull       1 if x IS NOT NULL else 0   COUNT(x)             SUM(IF(x IS NULL, 0, w))
sum           x                           SUM(x)               SUM(x * w)
============  ==========================  ===================  =========================
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ivm.ir import AggregateCall
from ivm.zset import COUNT


@dataclass(frozen=True)
class Accumulator:
    """A store column holding Σ weight · contribution over a group's input rows.

    ``argument`` is ``x`` over the aggregate's input; ``guard`` (for ``sum``) names the
    ``nonnull`` accumulator of the same ``x``: the sum is NULL exactly where the guard is 0.
    """

    name: str
    kind: str
    argument: exp.Expression | None = None
    guard: str | None = None

    def full_call(self) -> AggregateCall:
        """The aggregate computing this accumulator from scratch (every weight is 1)."""
        return {"rows": AggregateCall("count"),
                "nonnull": AggregateCall("count", self.argument),
                "sum": AggregateCall("sum", self.argument)}[self.kind]

    def change_call(self, argument: exp.Expression | None, weight: exp.Expression
                    ) -> AggregateCall:
        """The aggregate computing this accumulator's change from weighted change rows.

        >>> acc = Accumulator("_ivm_sum0", "sum", exp.column("x"), guard="_ivm_nonnull0")
        >>> acc.change_call(exp.column("a"), exp.column("w")).to_sql().sql()
        'SUM(a * w)'
        """
        if self.kind == "rows":
            return AggregateCall("sum", weight.copy())
        if self.kind == "nonnull":
            return AggregateCall("sum", exp.If(this=exp.Is(this=argument.copy(), expression=exp.Null()),
                                               true=exp.Literal.number(0), false=weight.copy()))
        return AggregateCall("sum", exp.Mul(this=argument.copy(), expression=weight.copy()))

    def fold(self, old: exp.Expression | None, change: exp.Expression,
             guard: exp.Expression | None = None) -> exp.Expression:
        """The accumulator after a change: ``old + change``, or ``change`` for a new group.
        A sum stays NULL where its ``guard`` (the folded non-NULL count) is 0.

        >>> acc = Accumulator("s", "sum", exp.column("x"), guard="n")
        >>> acc.fold(exp.column("s", "t"), exp.column("s", "d"), exp.column("n")).sql()
        'CASE WHEN n > 0 THEN COALESCE(t.s, 0) + COALESCE(d.s, 0) END'
        >>> acc.fold(None, exp.column("s", "d"), exp.column("n")).sql()
        'CASE WHEN n > 0 THEN d.s END'
        """
        if self.kind != "sum":
            return change if old is None else exp.Add(this=old, expression=change)
        total = change if old is None else exp.Add(
            this=exp.func("COALESCE", old, exp.Literal.number(0)),
            expression=exp.func("COALESCE", change, exp.Literal.number(0)))
        return exp.Case(ifs=[exp.If(this=exp.GT(this=parenthesized(guard),
                                                expression=exp.Literal.number(0)),
                                    true=total)])


def parenthesized(expression: exp.Expression) -> exp.Expression:
    """``expression`` safe to put inside a larger one: operators are parenthesized."""
    if isinstance(expression, (exp.Binary, exp.Unary, exp.Not)) and not isinstance(
            expression, exp.Paren):
        return exp.Paren(this=expression)
    return expression


ROWS = Accumulator(COUNT, "rows")
"""The count of input rows of a group, in every store."""


@dataclass(frozen=True)
class Store:
    """How a view is laid out in its store and how a change folds into it.

    ``visible`` gives each view column as an expression over store columns (a key, or
    accumulators). ``repeat_rows``: a stored row stands for ``_ivm_count`` identical view
    rows (a view with duplicates). ``single_row``: a global aggregate, exactly one row always.
    """

    keys: tuple[str, ...]
    visible: tuple[tuple[str, exp.Expression], ...]
    accumulators: tuple[Accumulator, ...]
    repeat_rows: bool = False
    single_row: bool = False

    @property
    def view_columns(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.visible)

    @property
    def hidden_keys(self) -> tuple[str, ...]:
        return tuple(k for k in self.keys if k not in self.view_columns)

    @property
    def columns(self) -> tuple[str, ...]:
        """All store columns, in table order."""
        return (self.view_columns + self.hidden_keys
                + tuple(acc.name for acc in self.accumulators))

    def is_key(self, name: str) -> bool:
        return name in self.keys
