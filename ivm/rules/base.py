"""What every rule shares: its declared traits, and the Z-set algebra on plan terms.

A delta is a formal sum of *terms*, held as a :class:`~ivm.ir.Union`. Each term is an
ordinary plan over scans that read ``DELTA``, ``BEFORE`` or ``AFTER``; every term reads at
least one ``DELTA`` scan. The weight of a row of a term is the product of the weights of the
``DELTA`` rows it came from (snapshot rows weigh 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar, assert_never

from sqlglot import exp

from ivm.ir import (
    Aggregate,
    Distinct,
    Filter,
    Generate,
    Join,
    Project,
    Relation,
    Restrict,
    Scan,
    SetOperation,
    Subquery,
    Union,
    Weighted,
    Window,
    columns,
)
from ivm.zset import BOOKKEEPING_PREFIX, WEIGHT, Read


class Kind(Enum):
    """How a rule's cost and state relate to the change (cheapest first)."""

    LINEAR = "linear"  # Δop(R) = op(ΔR); no state
    BILINEAR = "bilinear"  # Δ(R ⋈ S) = ΔR ⋈ S + R' ⋈ ΔS; snapshots of the inputs
    INVERTIBLE = "invertible"  # group state ⊕ aggregate of ΔR; the view's own rows
    COUNTING = "counting"  # a count per row; the view's own rows
    KEYED = "affected-key recompute"  # Op(R' ⋉ K) − Op(R ⋉ K); snapshots at affected keys
    LOOKUP = "lookup"  # ΔF enriched once; its state's rows at the changed facts


Differentiate = Callable[[Relation], Union]
"""The delta of any plan (:func:`ivm.rules.differentiate`): a rule derives its operator's delta
from its inputs'."""

Derive = TypeVar("Derive", bound=Callable[..., object], covariant=True)


@dataclass(frozen=True)
class Rule(Generic[Derive]):
    """A derivative rule: the operator it applies to, its traits, and its derivation (a
    :data:`Derivation`, or for a rule that decides how a whole view is stored, the function
    that returns its :class:`~ivm.rules.maintenance.Maintenance`)."""

    operator: type[Relation]
    name: str
    kind: Kind
    formula: str
    reads: str
    derive: Derive


Derivation = Callable[[Any, Differentiate], Union]
"""A rule's derivative: its operator's node (each rule takes its own type) and the
derivative of the inputs, to the node's delta."""

AnyRule = Rule[Callable[..., object]]
"""A rule of either kind."""


def terms(delta: Union) -> tuple[Relation, ...]:
    """The terms of a delta."""
    return delta.inputs


def weight_of(term: Relation) -> exp.Expr | None:
    """The weight of a row of ``term``; None where every row weighs 1.

    >>> print(weight_of(Scan("t", "a", ("x",), Read.DELTA)).sql())
    a._ivm_weight
    >>> weight_of(Scan("t", "a", ("x",), Read.BEFORE)) is None
    True
    """
    match term:
        case Scan():
            return exp.column(WEIGHT, table=term.alias) if term.read is Read.DELTA else None
        case Join():
            factors = [w for w in map(weight_of, term.inputs) if w is not None]
            if not factors:
                return None
            product = factors[0]
            for factor in factors[1:]:
                product = exp.Mul(this=product, expression=factor)
            return product
        case Filter() | Restrict():
            return weight_of(term.input)
        case Weighted():
            inner = weight_of(term.input)
            sign = exp.Literal.number(term.weight)
            return sign if inner is None else exp.Mul(this=sign, expression=inner)
        case Subquery():
            return exp.column(WEIGHT, term.alias) if WEIGHT in columns(term.input) else None
        case Project() | Union() | Generate():
            return exp.column(WEIGHT) if WEIGHT in columns(term) else None
        case Aggregate() | Window() | Distinct() | SetOperation():
            raise TypeError(f"no Z-set weight for {type(term).__name__}")
        case _:
            assert_never(term)


def weighted_project(term: Relation, columns: Iterable[tuple[str, exp.Expr]]) -> Project:
    """Project ``term`` onto ``columns`` and carry its weight along as :data:`WEIGHT`."""
    weight = weight_of(term)
    if weight is None:
        raise ValueError("a delta term reads at least one change")
    return Project(term, tuple(columns) + ((WEIGHT, weight),))


COPY = f"{BOOKKEEPING_PREFIX}copy"
"""The column that repeats a row (:func:`copies`); nothing reads it."""


def copies(count: exp.Expr) -> tuple[str, exp.Expr]:
    """The projected column that repeats a row ``count`` times (an integer): ``EXPLODE`` of
    an array of that many elements."""
    return COPY, exp.Explode(
        this=exp.func(
            "ARRAY_REPEAT", exp.true(), exp.Cast(this=count, to=exp.DataType.build("INT"))
        )
    )
