"""The dbt adapter's reading of a model's configs (no JVM): the clauses it writes for them,
read back by ivm's own parser, and the configs it cannot read, refused by name."""

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ivm.impl import create_clauses, normalized
from ivm.frontend.statements import CreateView, parse_statement

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(
    "config, freshness, retention, partitioned_by, chosen",
    [
        ({}, None, None, (), None),
        (
            {
                "partition_by": "region",
                "freshness": {"build_after": {"count": 5, "period": "minute"}},
                "retention": "30 days",
                "refresh_policy": "incremental_strict",
            },
            300,
            30 * 86400,
            ("region",),
            "INCREMENTAL STRICT",
        ),
        (
            {"partition_by": ["ds", "hour"], "retention": 3600, "refresh_policy": "Full"},
            None,
            3600,
            ("ds", "hour"),
            "FULL",
        ),
    ],
)
def test_a_models_config_becomes_the_clauses_ivm_parses(
    config, freshness, retention, partitioned_by, chosen
):
    """The clauses the adapter writes for a model's config, read back by ivm's own parser of
    ``CREATE MATERIALIZED VIEW``."""
    parsed = parse_statement(f"CREATE MATERIALIZED VIEW v {create_clauses(config)} AS SELECT 1")
    assert isinstance(parsed, CreateView) and parsed.query.strip() == "SELECT 1"
    assert (parsed.freshness, parsed.retention) == (freshness, retention)
    assert (parsed.partitioned_by, parsed.policy) == (partitioned_by, chosen)


@pytest.mark.parametrize(
    "config",
    [
        {"freshness": {"build_after": {"count": 5, "period": "year"}}},
        {"retention": "soon"},
        {"refresh_policy": "sometimes"},
    ],
)
def test_a_config_ivm_cannot_read_is_refused_by_name(config):
    with pytest.raises(DbtRuntimeError, match=f"config {next(iter(config))} is"):
        create_clauses(config)


def test_a_model_differing_from_its_views_definition_in_comments_and_spacing_alone_is_the_same():
    """ivm keeps a definition from its first token on: a model whose SQL starts with a
    comment is the same view, not a changed one to replace on every run."""

    model = "-- each customer's latest order\nSELECT a,  b\nFROM t -- the source\n;"
    assert normalized(model) == normalized("SELECT a, b FROM t")
    assert normalized("SELECT 'a' FROM t") != normalized("SELECT a FROM t")
    assert normalized("SELECT a FROM t WHERE a > 1") != normalized("SELECT a FROM t WHERE a > 2")
