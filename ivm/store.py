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

============  =========================  ==========  =======================================
kind          per-row contribution       full query  change (Z-set Δ)
============  =========================  ==========  =======================================
rows          1                          COUNT(*)    SUM(w)
nonnull       1 if x IS NOT NULL else 0  COUNT(x)    SUM(IF(x IS NULL, 0, w))
sum           x                          SUM(x)      SUM(IF(x IS NULL, 0, x * w))
sum, decimal  x                          SUM(x)      SUM(IF(x IS NULL, 0, IF(w > 0, x, -x)))
============  =========================  ==========  =======================================

Sums are exact: only integer and DECIMAL arguments are summed here (floating-point addition
cannot be undone). A decimal is never multiplied by a weight: ``x * w`` has more digits than
DECIMAL(38) holds and Spark would cut its scale. Its change is summed over rows of weight
±1 instead (a row of weight w repeated |w| times), with the type Spark's own SUM has. A
change's sum is NULL only when it overflowed (NULL arguments add 0), and so is a folded sum
while its group has non-NULL input: the fold then fails rather than store a wrong sum.

Because the fold is addition, a store may also keep the changes beside its rows and add them
up when it is read (the ``log`` layout of :mod:`ivm.codegen.store`): any order of folding
gives the same accumulators.
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
    ``decimal``: a sum of a DECIMAL(precision, scale) ``x`` (None: of an integer).
    """

    name: str
    kind: str
    argument: exp.Expr | None = None
    guard: str | None = None
    decimal: tuple[int, int] | None = None

    def full_call(self) -> AggregateCall:
        """The aggregate computing this accumulator from scratch (every weight is 1)."""
        return {
            "rows": AggregateCall("count"),
            "nonnull": AggregateCall("count", self.argument),
            "sum": AggregateCall("sum", self.argument),
        }[self.kind]

    def change_call(self, argument: exp.Expr | None, weight: exp.Expr) -> AggregateCall:
        """The aggregate computing this accumulator's change from weighted change rows
        (for a decimal sum, rows of weight ±1).

        >>> acc = Accumulator("_ivm_sum0", "sum", exp.column("x"), guard="_ivm_nonnull0")
        >>> acc.change_call(exp.column("a"), exp.column("w")).to_sql().sql()
        'SUM(CASE WHEN a IS NULL THEN 0 ELSE a * w END)'
        >>> Accumulator("s", "sum", exp.column("x"), "n", (38, 18)).change_call(
        ...     exp.column("a"), exp.column("w")).to_sql().sql("spark")
        'SUM(IF(a IS NULL, CAST(0 AS DECIMAL(1, 0)), IF(w > 0, a, -a)))'
        """
        if self.kind == "rows":
            return AggregateCall("sum", weight.copy())
        assert argument is not None  # nonnull and sum accumulate an argument
        is_null = exp.Is(this=argument.copy(), expression=exp.Null())
        if self.kind == "nonnull":
            return AggregateCall(
                "sum", exp.If(this=is_null, true=exp.Literal.number(0), false=weight.copy())
            )
        if self.decimal is None:
            return AggregateCall(
                "sum",
                exp.If(
                    this=is_null,
                    true=exp.Literal.number(0),
                    false=exp.Mul(this=argument.copy(), expression=weight.copy()),
                ),
            )
        signed = exp.If(
            this=exp.GT(this=weight.copy(), expression=exp.Literal.number(0)),
            true=argument.copy(),
            false=exp.Neg(this=argument.copy()),
        )
        zero = exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build("DECIMAL(1, 0)"))
        return AggregateCall("sum", exp.If(this=is_null, true=zero, false=signed))

    def fold(
        self,
        old: exp.Expr | None,
        change: exp.Expr,
        guard: exp.Expr | None = None,
        stored: str | None = None,
    ) -> exp.Expr:
        """The accumulator after a change: ``old + change``, or ``change`` for a new group.
        A sum stays NULL where its ``guard`` (the folded non-NULL count) is 0, and fails where
        it is NULL otherwise (it overflowed). ``stored``: the store column's type, if known.

        >>> acc = Accumulator("s", "sum", exp.column("x"), guard="n")
        >>> acc.fold(exp.column("s", "t"), exp.column("s", "d"), exp.column("n")).sql("spark")
        "CASE WHEN n > 0 THEN COALESCE(COALESCE(t.s, 0) + d.s, RAISE_ERROR('ivm: a sum \
overflowed its type in this refresh')) END"

        Spark adds two DECIMAL(38, s) with one digit of scale less (s > 6), so such sums are
        added as DECIMAL(37, s), whose sum is a DECIMAL(38, s); a stored sum of 38 digits
        fails the cast (overflow, so the refresh recomputes).

        >>> acc.fold(exp.column("s", "t"), exp.column("s", "d"), exp.column("n"),
        ...          "decimal(38,18)").sql("spark").split(" THEN ")[1].split("RAISE")[0] + "..."
        'COALESCE(CAST(COALESCE(t.s, 0) AS DECIMAL(37, 18)) + CAST(d.s AS DECIMAL(37, 18)), ...'
        """
        if self.kind != "sum":
            return change if old is None else exp.Add(this=old, expression=change)
        assert guard is not None  # a sum is guarded by its nonnull count
        total = change
        if old is not None:
            old = exp.func("COALESCE", old, exp.Literal.number(0))
            narrow = _narrowed(stored)
            if narrow is not None:
                old, change = (exp.Cast(this=e, to=narrow.copy()) for e in (old, change))
            total = exp.Add(this=old, expression=change)
        overflowed = exp.func("RAISE_ERROR", exp.Literal.string(OVERFLOW))
        return exp.Case(
            ifs=[
                exp.If(
                    this=exp.GT(this=parenthesized(guard), expression=exp.Literal.number(0)),
                    true=exp.func("COALESCE", total, overflowed),
                )
            ]
        )


EXACT_TYPES = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL"})
"""Types whose addition is exact, so that a sum can be undone (sqlglot's names)."""

OVERFLOW = "ivm: a sum overflowed its type in this refresh"
"""The message a fold fails with where a sum overflowed (Spark without ANSI mode gives NULL)."""


def _narrowed(stored: str | None) -> exp.DataType | None:
    """DECIMAL(37, s) for a stored DECIMAL(38, s > 6), whose sums Spark would round."""
    if stored is None:
        return None
    data_type = exp.DataType.build(stored, dialect="spark")
    if data_type.this != exp.DataType.Type.DECIMAL or len(data_type.expressions) != 2:
        return None
    precision, scale = (int(p.name) for p in data_type.expressions)
    if precision < 38 or scale <= 6 or scale >= 38:  # DECIMAL(38, 38): see is_exact
        return None
    return exp.DataType.build(f"DECIMAL(37, {scale})")


def is_exact(stored: str) -> bool:
    """Whether a stored sum of this Spark type folds exactly: an integer, or a DECIMAL whose
    scale leaves room for the one digit an addition may carry.

    >>> is_exact("decimal(38,18)"), is_exact("bigint"), is_exact("double")
    (True, True, False)
    >>> is_exact("decimal(38,38)")
    False
    """
    data_type = exp.DataType.build(stored, dialect="spark")
    return data_type.this.name in EXACT_TYPES and not (
        len(data_type.expressions) == 2 and int(data_type.expressions[1].name) >= 38
    )


def parenthesized(expression: exp.Expr) -> exp.Expr:
    """``expression`` safe to put inside a larger one: operators are parenthesized."""
    if isinstance(expression, (exp.Binary, exp.Unary, exp.Not)) and not isinstance(
        expression, exp.Paren
    ):
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
    visible: tuple[tuple[str, exp.Expr], ...]
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
        return self.view_columns + self.hidden_keys + tuple(acc.name for acc in self.accumulators)

    def is_key(self, name: str) -> bool:
        return name in self.keys
