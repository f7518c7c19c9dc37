"""The IR's walkers name every node type: one they do not know fails loudly."""

from dataclasses import dataclass
from typing import get_args

import pytest
from sqlglot import exp

from ivm.circuit import describe
from ivm.codegen import to_sql
from ivm.ir import (
    Join,
    JoinKind,
    Relation,
    Restrict,
    Scan,
    Weighted,
    aliases_of,
    children,
    columns,
    with_children,
)
from ivm.rules import RULES, differentiate, rule_for
from ivm.rules.base import weight_of

pytestmark = pytest.mark.fast

SCAN = Scan("t", "t", ("k",))


@dataclass(frozen=True)
class Unknown:
    """A node type the IR does not list."""

    input: Relation


@pytest.mark.parametrize(
    "walk",
    [
        children,
        columns,
        aliases_of,
        lambda node: with_children(node, (SCAN,)),
        to_sql,
        describe,
        weight_of,
    ],
)
def test_a_walker_refuses_a_node_type_it_does_not_know(walk):
    with pytest.raises(AssertionError, match="Unknown"):
        walk(Unknown(SCAN))


@pytest.mark.parametrize("find", [differentiate, rule_for])
def test_a_node_type_without_a_rule_is_not_differentiated(find):
    with pytest.raises(KeyError):
        find(Unknown(SCAN))


def test_every_node_type_has_a_rule_or_is_built_only_inside_deltas():
    assert set(get_args(Relation)) == set(RULES) | {Restrict, Weighted}


def test_a_join_kind_is_a_join_kind_not_its_name():
    with pytest.raises(TypeError):
        Join((SCAN, Scan("u", "u", ("k",))), exp.condition("t.k = u.k"), "left")


@pytest.mark.parametrize("kind", list(JoinKind))
def test_a_join_keeps_the_right_columns_unless_it_only_filters(kind):
    join = Join((SCAN, Scan("u", "u", ("k",))), exp.condition("t.k = u.k"), kind)
    assert columns(join) == (("t.k", "u.k") if kind.keeps_right else ("t.k",))
